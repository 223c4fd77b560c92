//! Folding a range's builder into the model (`Builder::absorb`), and the row vectors a folded range
//! hands on to a later range's builder ([`Spare`], `Builder::reusing`).
//!
//! What it is not: where ranges come from or when one is folded (`super::super::ranges`, the driver).

use super::{BeginEnd, Builder, KEEP_WARNINGS, RangeRows};
use crate::model::{Flow, GemmRows, GpuKind, GpuOp, Launch, Span, Sym, Track};

/// `v`, emptied, its capacity kept.
fn emptied<T>(mut v: Vec<T>) -> Vec<T> {
    v.clear();
    v
}

/// The bytes `v`'s capacity takes.
fn room_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

impl RangeRows {
    /// Emptied, the room kept.
    fn emptied(self) -> RangeRows {
        RangeRows {
            ops: self.ops.map(emptied),
            launches: emptied(self.launches),
            spans: self.spans.map(emptied),
        }
    }

    fn room_bytes(&self) -> usize {
        self.ops.iter().map(room_bytes).sum::<usize>()
            + room_bytes(&self.launches)
            + self.spans.iter().map(room_bytes).sum::<usize>()
    }
}

/// A folded range's row vectors, emptied, their capacity kept, for a later range's builder: growing
/// them anew for every block (page faults, `mremap`, a copy at the heap's edge) gave a two-worker
/// parse of the bench trace 16.9–22.5 k page faults, against 14.6–14.7 k handed on
/// (`docs/parse-costs.md`). Only these vectors pass on, emptied: every other field of the next
/// builder starts new. Each vector keeps the room of the most rows of its kind one range has held,
/// so a spare that has passed through ranges of every kind holds room for each ([`Spare::bytes`] is
/// what the ranges' pool bounds). `gemm_rows` (a row per GEMM op with shapes: few) is not kept.
#[derive(Default)]
pub(in crate::parse) struct Spare {
    flows: Vec<Flow>,
    /// A range's ops, calls and spans, held whole ([`RangeRows`]).
    range: RangeRows,
}

impl Spare {
    /// `b`'s row vectors, rows and all, `b` left with new empty ones (and no range rows).
    pub(in crate::parse) fn take(b: &mut Builder) -> Spare {
        Spare {
            flows: std::mem::take(&mut b.trace.flows),
            range: b.range.take().unwrap_or_default(),
        }
    }

    /// The bytes its vectors' capacity takes.
    pub(in crate::parse) fn bytes(&self) -> usize {
        room_bytes(&self.flows) + self.range.room_bytes()
    }

    /// Puts the vectors into `b`, emptied.
    fn put(self, b: &mut Builder) {
        b.trace.flows = emptied(self.flows);
        b.range = Some(self.range.emptied());
    }

    /// Each table's rows and the bytes of its room: kernels, copies, fills, calls, flows, then the
    /// spans together (held whole in a range, encoded in the model) (for the tests).
    #[cfg(test)]
    pub(super) fn shape(b: &Builder) -> Vec<(usize, usize)> {
        let t = &b.trace;
        let flows = (t.flows.len(), room_bytes(&t.flows));
        if let Some(r) = &b.range {
            let mut shape: Vec<(usize, usize)> =
                r.ops.iter().map(|v| (v.len(), room_bytes(v))).collect();
            shape.push((r.launches.len(), room_bytes(&r.launches)));
            shape.push(flows);
            shape.push((
                r.spans.iter().map(Vec::len).sum(),
                r.spans.iter().map(room_bytes).sum(),
            ));
            return shape;
        }
        let spans = [
            &t.cpu_ops,
            &t.user_annotations,
            &t.gpu_user_annotations,
            &t.python_functions,
        ];
        let mut shape: Vec<(usize, usize)> = [&t.kernels, &t.memcpys, &t.memsets]
            .iter()
            .map(|r| (r.len(), r.held_bytes()))
            .collect();
        shape.push((t.launches.len(), t.launches.held_bytes()));
        shape.push(flows);
        shape.push((
            spans.iter().map(|r| r.len()).sum(),
            spans.iter().map(|r| r.held_bytes()).sum(),
        ));
        shape
    }
}

impl Builder {
    /// An empty model ([`Builder::new`]) whose row vectors are `spare`'s, emptied.
    pub(in crate::parse) fn reusing(python_frames: bool, spare: Spare) -> Builder {
        let mut b = Builder::new(python_frames);
        spare.put(&mut b);
        b
    }

    /// Folds in `part`, a range's builder ([`Builder::reusing`]: its ops, calls and spans held
    /// whole) that read the events right after the ones read here, so that the result is what this
    /// builder would hold had it read them itself: names and tracks get the ids first appearance in
    /// file order gives them, records keep file order, counts and time bounds add up, and the first
    /// [`KEEP_WARNINGS`] warnings overall are kept. The range's row vectors come back emptied, their
    /// capacity kept ([`Spare`]).
    pub(in crate::parse) fn absorb(&mut self, mut part: Builder) -> Spare {
        // A builder of the model itself keeps its rows encoded, which no fold reads.
        debug_assert!(part.range.is_some(), "a range's builder is folded");
        let mut rows = Spare::take(&mut part);
        let names = self.trace.names.absorb(&part.trace.names);
        let details = self.trace.details.absorb(&part.trace.details);
        let part_tracks = std::mem::take(&mut part.trace.tracks);
        let mut keys: Vec<&[u8]> = vec![&[]; part_tracks.len()];
        for (k, &id) in &part.track_map {
            if let Some(slot) = keys.get_mut(id as usize) {
                *slot = k;
            }
        }
        let tracks: Vec<u32> = keys
            .into_iter()
            .zip(part_tracks)
            .map(|(key, ids)| match self.track_map.get(key) {
                Some(&id) => id,
                None => {
                    let id = self.trace.tracks.len() as u32;
                    self.trace.tracks.push(ids);
                    self.track_map.insert(key.into(), id);
                    id
                }
            })
            .collect();
        let sym = |s: Sym| Sym(names.get(s.0 as usize).copied().unwrap_or(s.0));
        let track = |t: Track| Track(tracks.get(t.0 as usize).copied().unwrap_or(t.0));
        // A range's rows are held whole, and encoded here with the model's names, tracks and details.
        let op = |o: GpuOp| GpuOp {
            name: sym(o.name),
            track: track(o.track),
            detail: details
                .get(o.detail.0 as usize)
                .copied()
                .unwrap_or(o.detail),
            ..o
        };
        let t = &mut self.trace;
        let p = part.trace;
        for (kind, held) in GpuKind::ALL.into_iter().zip(&mut rows.range.ops) {
            t.gpu_ops_mut(kind).extend(held.drain(..).map(op));
        }
        let launch = |l: Launch| Launch {
            name: sym(l.name),
            track: track(l.track),
            ..l
        };
        t.launches.extend(rows.range.launches.drain(..).map(launch));
        let cpu_ops = t.cpu_ops.len() as u32;
        let span = |s: Span| Span {
            name: sym(s.name),
            track: track(s.track),
            ..s
        };
        for (to, held) in [
            &mut t.cpu_ops,
            &mut t.user_annotations,
            &mut t.gpu_user_annotations,
            &mut t.python_functions,
        ]
        .into_iter()
        .zip(&mut rows.range.spans)
        {
            to.extend(held.drain(..).map(span));
        }
        t.gemm_rows
            .extend(p.gemm_rows.into_iter().map(|g| GemmRows {
                cpu_op: g.cpu_op + cpu_ops,
                ..g
            }));
        t.flows.extend(rows.flows.drain(..).map(|f| Flow {
            track: track(f.track),
            ..f
        }));
        t.counts.events += p.counts.events;
        for (k, n) in p.counts.other_complete {
            *t.counts.other_complete.entry(k).or_insert(0) += n;
        }
        for (k, n) in p.counts.by_phase {
            *t.counts.by_phase.entry(k).or_insert(0) += n;
        }
        let room = KEEP_WARNINGS.saturating_sub(t.warnings.len());
        t.warnings.extend(p.warnings.into_iter().take(room));
        t.warnings_total += p.warnings_total;
        for (mine, theirs) in self.phase_counts.0.iter_mut().zip(part.phase_counts.0) {
            *mine += theirs;
        }
        self.python_events += part.python_events;
        let remap = |b: BeginEnd| BeginEnd {
            name: sym(b.name),
            track: track(b.track),
            ..b
        };
        self.begin_ends
            .extend(part.begin_ends.into_iter().map(remap));
        self.foreign_unresolved.extend(
            part.foreign_unresolved
                .into_iter()
                .map(|(b, dur)| (remap(b), dur)),
        );
        self.devices.absorb(part.devices);
        if part.timed {
            if self.timed {
                self.min_ts = self.min_ts.min(part.min_ts);
                self.max_end = self.max_end.max(part.max_end);
            } else {
                self.timed = true;
                self.min_ts = part.min_ts;
                self.max_end = part.max_end;
            }
        }
        rows
    }
}
