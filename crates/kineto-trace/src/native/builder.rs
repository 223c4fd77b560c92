//! [`TraceBuilder`]: how a reader of any format fills the one [`Trace`] model — names and tracks
//! interned, every time checked against the model's bound, correlation ids made unique across the
//! processes of a file, and the rows put in time order at the end.
//!
//! What it is not: a reader of any format; the vendor readers (and `kineto-sqlite`'s) decide what each row is.

use crate::model::{
    Api, Capture, Flow, GpuKind, GpuOp, GpuOpDetail, Header, IdValue, Launch, NewGpuOp,
    OpProcesses, Overruns, Salvage, Span, SpanKind, Sym, Trace, TraceFormat, Track, TrackIds,
    Warning,
};
use crate::read::detect::{put_varint, unzigzag, varint, zigzag};
use crate::time::{MAX_ABS_NS, RANGE};
use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// Warnings kept in full (the rest are counted), as the Kineto parser keeps them.
pub const KEEP_WARNINGS: usize = 100;

/// Builds a [`Trace`] row by row. Readers outside this crate (the SQLite formats) use it too, so every
/// format ends in the same model with the same invariants: times within ±[`MAX_ABS_NS`], no negative
/// duration, names interned, [`Trace::time_bounds`] over every timed row.
#[derive(Debug)]
pub struct TraceBuilder {
    trace: Trace,
    tracks: FxHashMap<TrackIds, u32>,
    correlations: super::correlations::Correlations,
    bounds: Option<(i64, i64)>,
    /// Instant markers since the last [`TraceBuilder::note_instant_marks`].
    instant_marks: u64,
}

impl TraceBuilder {
    /// An empty trace of a format.
    pub fn new(format: TraceFormat) -> TraceBuilder {
        let mut trace = Trace::default();
        trace.header.format = format;
        TraceBuilder {
            trace,
            tracks: FxHashMap::default(),
            correlations: Default::default(),
            bounds: None,
            instant_marks: 0,
        }
    }

    /// The header, to fill in.
    pub fn header(&mut self) -> &mut Header {
        &mut self.trace.header
    }

    /// The capture facts, to fill in.
    pub fn capture(&mut self) -> &mut Capture {
        &mut self.trace.capture
    }

    /// Interns a name.
    pub fn name(&mut self, text: &str) -> Sym {
        Sym(self.trace.names.intern(text.as_bytes()))
    }

    /// Interns a (pid, tid) pair: a thread, or a device and stream.
    pub fn track(&mut self, pid: IdValue, tid: IdValue) -> Track {
        let ids = TrackIds { pid, tid };
        if let Some(&t) = self.tracks.get(&ids) {
            return Track(t);
        }
        let t = self.trace.tracks.len() as u32;
        self.trace.tracks.push(ids.clone());
        self.tracks.insert(ids, t);
        Track(t)
    }

    /// A correlation id unique in the trace for the id `raw` of `scope` (a process: nsys and rocprof
    /// number correlations per process, and two processes of one file reuse ids). `raw` 0 means none.
    pub fn correlation(&mut self, scope: u64, raw: u64) -> Option<NonZeroU64> {
        self.correlations.id(scope, raw)
    }

    /// The id [`Self::correlation`] handed out for `raw` of `scope`, if it did; none is handed out.
    pub fn correlation_seen(&self, scope: u64, raw: u64) -> Option<NonZeroU64> {
        self.correlations.get(scope, raw)
    }

    /// Checks a `[start, end]` interval against the model's rules; the message says which is broken.
    pub fn check(start: i64, end: i64) -> Result<(), String> {
        if start.unsigned_abs() > MAX_ABS_NS.unsigned_abs()
            || end.unsigned_abs() > MAX_ABS_NS.unsigned_abs()
        {
            return Err(format!("time out of range ({start}..{end} ns): {RANGE}"));
        }
        if end < start {
            return Err(format!(
                "ends before it starts (start {start} ns, end {end} ns)"
            ));
        }
        Ok(())
    }

    fn timed(&mut self, start: i64, end: i64) -> Result<(), String> {
        Self::check(start, end)?;
        self.bounds = Some(match self.bounds {
            None => (start, end),
            Some((a, b)) => (a.min(start), b.max(end)),
        });
        self.trace.counts.events += 1;
        Ok(())
    }

    /// Adds a kernel, copy or fill.
    pub fn gpu_op(&mut self, kind: GpuKind, op: NewGpuOp) -> Result<(), String> {
        self.gpu_op_of(kind, op, None)
    }

    /// Adds a kernel, copy or fill that ran for `process` (the pid the file's CPU rows are on), so that a
    /// file of several processes can be read as one trace per rank ([`crate::split`]).
    pub fn gpu_op_of(
        &mut self,
        kind: GpuKind,
        op: NewGpuOp,
        process: Option<i64>,
    ) -> Result<(), String> {
        self.timed(op.ts_ns, op.ts_ns.saturating_add(op.dur_ns))?;
        let i = kind.index();
        self.trace.push_gpu_op(kind, op);
        let before = self.trace.gpu_ops(kind).len() - 1;
        // No process is held while none was given (most files): the list is filled in at the first.
        let processes = &mut self.trace.op_processes[i];
        if process.is_some() || !processes.is_empty() {
            processes.resize(before);
            processes.push(process)?;
        }
        Ok(())
    }

    /// Sets which process each GPU op added so far ran for, `process_of(kind, its place in the order
    /// added, op)`, in place of what [`Self::gpu_op_of`] was given: for a reader that learns it only
    /// after adding the ops (an RPD op's process is its API call's, whose row is read after the ops).
    /// An error as [`Self::gpu_op_of`] gives one: more distinct processes than the model holds.
    pub fn set_op_processes(
        &mut self,
        mut process_of: impl FnMut(GpuKind, usize, &GpuOp) -> Option<i64>,
    ) -> Result<(), String> {
        for kind in GpuKind::ALL {
            let mut processes = OpProcesses::default();
            for (i, op) in self.trace.gpu_ops(kind).iter().enumerate() {
                processes.push(process_of(kind, i, &op))?;
            }
            // Held as gpu_op_of holds them: nothing while no op has a process.
            self.trace.op_processes[kind.index()] = if processes.any() {
                processes
            } else {
                OpProcesses::default()
            };
        }
        Ok(())
    }

    /// The file says which rank `process` is (an environment, a launcher's argument).
    pub fn process_rank(&mut self, process: i64, rank: u64) {
        if !self.trace.process_ranks.iter().any(|&(p, _)| p == process) {
            self.trace.process_ranks.push((process, rank));
        }
    }

    /// Adds a runtime or driver call.
    pub fn launch(&mut self, l: Launch) -> Result<(), String> {
        self.timed(l.ts_ns, l.end_ns())?;
        self.trace.launches.push(l);
        Ok(())
    }

    /// Adds a CPU op or an annotation (an NVTX, roctx or RPD marker range is a `UserAnnotation`).
    pub fn span(&mut self, kind: SpanKind, s: Span) -> Result<(), String> {
        self.timed(s.ts_ns, s.end_ns())?;
        match kind {
            SpanKind::CpuOp => self.trace.cpu_ops.push(s),
            SpanKind::UserAnnotation => self.trace.user_annotations.push(s),
            SpanKind::GpuUserAnnotation => self.trace.gpu_user_annotations.push(s),
        }
        Ok(())
    }

    /// Adds a Python frame kept (a `python_function` event that
    /// [`crate::profiles::keep_python_frame`] keeps); the caller counts every one it reads.
    pub fn python_function(&mut self, s: Span) -> Result<(), String> {
        self.timed(s.ts_ns, s.end_ns())?;
        self.trace.python_functions.push(s);
        Ok(())
    }

    /// Adds one end of a CPU→GPU flow.
    pub fn flow(&mut self, f: Flow) {
        // A flow's time passed the same check as its event's; only the bounds are widened.
        if Self::check(f.ts_ns, f.ts_ns).is_ok() {
            let _ = self.timed(f.ts_ns, f.ts_ns);
        }
        self.trace.flows.push(f);
    }

    /// Marks the trace salvaged: the input was cut at `cut_offset` and the rows before it are kept.
    pub(crate) fn trace_salvaged(&mut self, cut_offset: u64, reason: String) {
        self.trace.salvaged = Some(Salvage { cut_offset, reason });
    }

    /// Counts a timed row the model does not keep (an instant marker, a counter sample) under `what`,
    /// so that `time_bounds` and the counts still see it.
    pub fn other(&mut self, what: &str, start: i64, end: i64) -> Result<(), String> {
        self.timed(start, end)?;
        *self
            .trace
            .counts
            .other_complete
            .entry(what.to_string())
            .or_insert(0) += 1;
        Ok(())
    }

    /// Counts a row by its kind (`by_phase` for JSON events, the table or record kind otherwise).
    pub fn count(&mut self, kind: &str) {
        *self
            .trace
            .counts
            .by_phase
            .entry(kind.to_string())
            .or_insert(0) += 1;
    }

    /// A problem that did not stop the read. `offset` is a byte offset where the format has one
    /// (JSON), else 0 with the place named in the message (table and row, file and line).
    pub fn warn(&mut self, offset: u64, message: String) {
        self.trace.warnings_total += 1;
        if self.trace.warnings.len() < KEEP_WARNINGS {
            self.trace.warnings.push(Warning { offset, message });
        }
    }

    /// A line for [`Capture::notes`].
    pub fn note(&mut self, message: String) {
        self.trace.capture.notes.push(message);
    }

    /// A marker (NVTX, roctx, RPD `UserMarker`): a range is a [`Self::marker_range`]; one that ends
    /// where it starts is an instant, counted under `mark` (see [`Self::instant_mark`]).
    pub fn marker(
        &mut self,
        text: &str,
        start: i64,
        end: i64,
        track: Track,
        mark: &str,
    ) -> Result<(), String> {
        if end == start {
            return self.instant_mark(mark, start);
        }
        self.marker_range(text, start, end, track)
    }

    /// A marker range: a `UserAnnotation`, which a step can be.
    pub fn marker_range(
        &mut self,
        text: &str,
        start: i64,
        end: i64,
        track: Track,
    ) -> Result<(), String> {
        let name = self.name(text);
        self.span(
            SpanKind::UserAnnotation,
            Span::at(name, start, end - start, track),
        )
    }

    /// An instant marker, counted under `mark` (its time still bounds the trace) and in the count that
    /// [`Self::note_instant_marks`] reports.
    pub fn instant_mark(&mut self, mark: &str, at: i64) -> Result<(), String> {
        self.other(mark, at, at)?;
        self.instant_marks += 1;
        Ok(())
    }

    /// The note for the instant markers of `what` (NVTX, roctx, …) since the last call, when there were
    /// any: the model keeps ranges, and a step needs a range.
    pub fn note_instant_marks(&mut self, what: &str) {
        let count = std::mem::take(&mut self.instant_marks);
        if count > 0 {
            self.note(format!(
                "{count} {what} marks (instants) are not ranges: counted, not steps"
            ));
        }
    }

    /// The rows added so far, for a reader's own checks.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The finished trace: rows in time order (start, then end; ties keep the order added), time
    /// bounds set, the name table frozen.
    pub fn finish(mut self) -> Trace {
        let t = &mut self.trace;
        let known = t.op_processes.iter().any(OpProcesses::any);
        for (ops, processes) in [&mut t.kernels, &mut t.memcpys, &mut t.memsets]
            .into_iter()
            .zip(t.op_processes.iter_mut())
        {
            let mut order = ops.sort_stable_by_key_order(|o| (o.ts_ns, o.end_ns()));
            if known {
                // Each op keeps its process through the sort.
                processes.resize(ops.len());
                permute(&mut order, |a, b| processes.swap(a, b));
            } else {
                processes.clear();
            }
        }
        t.launches.sort_stable_by_key(|l| (l.ts_ns, l.end_ns()));
        for spans in [
            &mut t.cpu_ops,
            &mut t.user_annotations,
            &mut t.gpu_user_annotations,
            &mut t.python_functions,
        ] {
            // Longer first at equal starts, so an enclosing range precedes what it encloses.
            spans.sort_stable_by_key(|s| (s.ts_ns, std::cmp::Reverse(s.dur_ns)));
        }
        t.time_bounds = self.bounds;
        t.names.freeze();
        t.details.freeze();
        self.trace
    }
}

/// Puts rows in `order` ([`crate::Rows::sort_stable_by_key_order`]'s: for each place, the place its
/// row is at now; empty: in order already) in place by `swap`ping them along each of its cycles;
/// `order` is spent.
fn permute(order: &mut [u32], mut swap: impl FnMut(usize, usize)) {
    for start in 0..order.len() {
        let mut at = start;
        // A place already put (or in place) says itself.
        while order[at] as usize != at {
            let from = order[at] as usize;
            order[at] = at as u32;
            if from == start {
                break;
            }
            swap(at, from);
            at = from;
        }
    }
}

/// The kernel dispatches of a ROCm trace as they are read: each on its queue, for the same-queue
/// overruns, and how many were the runtime's fill and copy kernels ([`super::names::blit_kind`]).
#[derive(Default)]
pub(crate) struct DispatchTally {
    /// Each dispatch on its queue.
    queue_rows: QueueRows,
    fills: u64,
    copy_kernels: u64,
}

impl DispatchTally {
    /// One dispatch of `kind`, on queue number `queue`.
    pub(crate) fn add(&mut self, kind: GpuKind, queue: QueueKey, start: i64, end: i64) {
        match kind {
            GpuKind::Memset => self.fills += 1,
            GpuKind::Memcpy => self.copy_kernels += 1,
            GpuKind::Kernel => {}
        }
        self.queue_rows.add(queue, start, end);
    }

    /// Into the trace: the note on runtime fill and copy kernels, and the queue overruns.
    pub(crate) fn finish(self, b: &mut TraceBuilder) {
        let (fills, copy_kernels) = (self.fills, self.copy_kernels);
        if fills + copy_kernels > 0 {
            b.note(format!(
                "{fills} runtime fill kernels (__amd_rocclr_fill*) counted as fills, {copy_kernels} runtime copy kernels (__amd_rocclr_copy*) as copies"
            ));
        }
        b.capture().queue_overruns = Some(self.queue_rows.overruns());
    }
}

/// A GPU queue as its reader names it: (scope, agent, queue) — a process or 0, the device or agent,
/// the queue's id or handle (integers as the file gives them, any sign, read as their bits).
pub type QueueKey = [u64; 3];

/// Dispatches' `(start, end)` on each GPU queue, for the same-queue overruns: about 6 bytes a
/// dispatch where its two `i64`s took 16 (a queue's rows are kept as varints).
#[derive(Debug, Default)]
pub struct QueueRows {
    /// Each queue's number, in the order first seen.
    numbers: FxHashMap<QueueKey, usize>,
    /// The rows of queue number `q` at index `q`.
    queues: Vec<QueueLog>,
}

/// One queue's rows in the order added, each as two zigzag varints: its start less the row before's
/// (a queue's dispatches come a few µs apart, so 2–4 bytes) and its end less its start (its duration).
/// The differences wrap, so every pair of `i64`s comes back exactly, whatever the file's numbers.
#[derive(Debug, Default)]
struct QueueLog {
    bytes: Vec<u8>,
    /// The last row added.
    last: (i64, i64),
    /// Whether a row came before the one added before it in order of `(start, end)`, as the overruns
    /// read them. While none has, the rows are read as kept, with no list of them sorted.
    out_of_order: bool,
}

impl QueueLog {
    fn add(&mut self, start: i64, end: i64) {
        if !self.bytes.is_empty() && (start, end) < self.last {
            self.out_of_order = true;
        }
        put_varint(&mut self.bytes, zigzag(start.wrapping_sub(self.last.0)));
        put_varint(&mut self.bytes, zigzag(end.wrapping_sub(start)));
        self.last = (start, end);
    }

    /// The rows in the order added.
    fn rows(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        let mut rest = self.bytes.as_slice();
        let mut start = 0i64;
        std::iter::from_fn(move || {
            let (step, after) = varint(rest)?;
            let (dur, after) = varint(after)?;
            rest = after;
            start = start.wrapping_add(unzigzag(step));
            Some((start, start.wrapping_add(unzigzag(dur))))
        })
    }
}

impl QueueRows {
    /// A dispatch on `queue`.
    pub fn add(&mut self, queue: QueueKey, start: i64, end: i64) {
        let next = self.queues.len();
        let q = *self.numbers.entry(queue).or_insert(next);
        if q == next {
            self.queues.push(QueueLog::default());
        }
        self.queues[q].add(start, end);
    }

    /// The overruns: on each queue, rows in order of (start, end), a row that starts before the latest
    /// end so far on its queue overruns by `min(that end, its end) − its start`. A queue whose rows
    /// came out of that order is sorted on its own (one queue's rows held at a time).
    pub fn overruns(self) -> Overruns {
        let mut out = Overruns::default();
        for log in &self.queues {
            if log.out_of_order {
                let mut rows: Vec<(i64, i64)> = log.rows().collect();
                rows.sort_unstable();
                add_overruns(rows.into_iter(), &mut out);
            } else {
                add_overruns(log.rows(), &mut out);
            }
        }
        out
    }
}

/// Adds the overruns of one queue's rows, given in order of (start, end).
fn add_overruns(rows: impl Iterator<Item = (i64, i64)>, out: &mut Overruns) {
    let mut latest: Option<i64> = None;
    for (start, end) in rows {
        if let Some(latest) = latest
            && start < latest
        {
            out.count += 1;
            out.max_ns = out.max_ns.max(latest - start);
            out.sum_ns = out.sum_ns.saturating_add(latest.min(end) - start);
        }
        latest = Some(latest.map_or(end, |l| l.max(end)));
    }
}

impl Span {
    /// A span with no external id (the native formats have none).
    pub fn at(name: Sym, ts_ns: i64, dur_ns: i64, track: Track) -> Span {
        Span {
            name,
            ts_ns,
            dur_ns,
            track,
            external_id: None,
        }
    }
}

impl Launch {
    /// A runtime or driver call with no external id or callback id (the native formats have neither).
    pub fn at(
        name: Sym,
        api: Api,
        ts_ns: i64,
        dur_ns: i64,
        track: Track,
        correlation: Option<NonZeroU64>,
    ) -> Launch {
        Launch {
            name,
            api,
            ts_ns,
            dur_ns,
            track,
            correlation,
            external_id: None,
            cbid: None,
        }
    }
}

impl NewGpuOp {
    /// A GPU op with only its name, times and track; the other fields empty, to be set by the reader.
    pub fn at(name: Sym, ts_ns: i64, dur_ns: i64, track: Track) -> NewGpuOp {
        NewGpuOp {
            name,
            ts_ns,
            dur_ns,
            track,
            correlation: None,
            external_id: None,
            detail: GpuOpDetail::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_put_in_order_keep_ties_in_the_order_added_and_a_list_beside_follows() {
        // (key, the order added): keys with ties, in cycles of several lengths and fixed points.
        let keys = [5, 3, 5, 1, 3, 9, 0, 5, 2, 2, 7, 1];
        let span = |(key, added): (i64, usize)| Span::at(Sym(added as u32), key, 0, Track(0));
        let mut rows: crate::Rows<Span> = keys.iter().copied().zip(0..).map(span).collect();
        // A list kept beside the rows (as a GPU op's process is): each row's place as added.
        let mut beside: Vec<usize> = (0..keys.len()).collect();
        let mut order = rows.sort_stable_by_key_order(|s| s.ts_ns);
        permute(&mut order, |a, b| beside.swap(a, b));
        // By hand: 0 (added 6th), the 1s (3rd, 11th), the 2s (8th, 9th), …
        let want = [6, 3, 11, 8, 9, 1, 4, 0, 2, 7, 10, 5];
        let added: Vec<usize> = rows.iter().map(|s| s.name.0 as usize).collect();
        assert_eq!(added, want);
        assert_eq!(beside, want);
        // Rows in order already: no order is held, and they stay as they are.
        assert!(rows.sort_stable_by_key_order(|s| s.ts_ns).is_empty());
        assert_eq!(
            rows.iter().map(|s| s.name.0 as usize).collect::<Vec<_>>(),
            want
        );
    }

    #[test]
    fn overruns_count_each_row_that_starts_before_its_queue_is_free() {
        // Queue 1: [0, 10), [9, 20) overruns by 1; [25, 30) does not; [26, 28) inside [25, 30) by 2.
        // Queue 2: [5, 15) alone.
        let mut rows = QueueRows::default();
        for (q, start, end) in [(1, 25, 30), (1, 0, 10), (2, 5, 15), (1, 9, 20), (1, 26, 28)] {
            rows.add([0, 0, q], start, end);
        }
        let o = rows.overruns();
        assert_eq!(o.count, 2);
        assert_eq!(o.max_ns, 30 - 26);
        assert_eq!(o.sum_ns, (10 - 9) + (28 - 26));
    }

    #[test]
    fn a_queue_keeps_its_rows_exactly_in_a_few_bytes_each() {
        // The extremes wrap through the differences and come back whole.
        let rows = [
            (i64::MIN, i64::MAX),
            (i64::MAX, i64::MIN),
            (0, 0),
            (-5, 3),
            (1_700_000_000_000_000_000, 1_700_000_000_000_012_345),
        ];
        let mut log = QueueLog::default();
        for (start, end) in rows {
            log.add(start, end);
        }
        assert_eq!(log.rows().collect::<Vec<_>>(), rows);
        assert!(log.out_of_order);
        // Dispatches 5 µs apart that run 2 µs: after the first, a start step of 5 000 ns is zigzag
        // 10 000, two varint bytes (< 2^14), and a duration of 2 000 ns is 4 000, two bytes: 4 a row.
        let mut log = QueueLog::default();
        for i in 0..100i64 {
            log.add(1_000_000_000 + 5_000 * i, 1_000_000_000 + 5_000 * i + 2_000);
        }
        let first = varint_len(zigzag(1_000_000_000)) + varint_len(zigzag(2_000));
        assert_eq!(log.bytes.len(), first + 99 * 4);
        assert!(!log.out_of_order);
    }

    fn varint_len(v: u64) -> usize {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out.len()
    }

    proptest::proptest! {
        /// The overruns of rows kept as varints and read in order (or sorted one queue at a time) are
        /// those of every row held whole and sorted, the way they were counted before.
        #[test]
        fn overruns_from_kept_rows_are_those_of_the_rows_sorted(
            // Durations below zero too: a row's end before its start is kept as given.
            rows in proptest::collection::vec((0u64..3, -50i64..50, -40i64..40), 0..60),
            sorted_first in proptest::bool::ANY,
        ) {
            let mut rows: Vec<(u64, i64, i64)> =
                rows.into_iter().map(|(q, s, d)| (q, s, s + d)).collect();
            if sorted_first {
                rows.sort_unstable();
            }
            let mut kept = QueueRows::default();
            for &(q, start, end) in &rows {
                kept.add([0, 1, q], start, end);
            }
            let mut want = Overruns::default();
            for q in 0..3 {
                let mut on_q: Vec<(i64, i64)> =
                    rows.iter().filter(|r| r.0 == q).map(|r| (r.1, r.2)).collect();
                on_q.sort_unstable();
                let mut latest: Option<i64> = None;
                for (start, end) in on_q {
                    if let Some(l) = latest && start < l {
                        want.count += 1;
                        want.max_ns = want.max_ns.max(l - start);
                        want.sum_ns += l.min(end) - start;
                    }
                    latest = Some(latest.map_or(end, |l| l.max(end)));
                }
            }
            let got = kept.overruns();
            proptest::prop_assert_eq!(
                (got.count, got.max_ns, got.sum_ns),
                (want.count, want.max_ns, want.sum_ns)
            );
        }
    }

    #[test]
    fn a_dispatch_tally_notes_runtime_blits_and_gives_the_queue_overruns() {
        let mut t = DispatchTally::default();
        // Queue 0: a fill [0, 10) then a kernel [4, 20), which overruns it by 10 - 4; queue 1: a copy alone.
        t.add(GpuKind::Memset, [0, 0, 0], 0, 10);
        t.add(GpuKind::Kernel, [0, 0, 0], 4, 20);
        t.add(GpuKind::Memcpy, [0, 0, 1], 0, 3);
        let mut b = TraceBuilder::new(TraceFormat::Rocprofv3Csv);
        t.finish(&mut b);
        let trace = b.finish();
        assert_eq!(
            trace.capture.notes,
            vec![
                "1 runtime fill kernels (__amd_rocclr_fill*) counted as fills, 1 runtime copy kernels \
                 (__amd_rocclr_copy*) as copies"
                    .to_string()
            ]
        );
        let o = trace.capture.queue_overruns.unwrap_or_default();
        assert_eq!((o.count, o.max_ns, o.sum_ns), (1, 10 - 4, 10 - 4));
        // Only ordinary kernels: no note.
        let mut t = DispatchTally::default();
        t.add(GpuKind::Kernel, [0, 0, 0], 0, 1);
        let mut b = TraceBuilder::new(TraceFormat::Rocprofv3Csv);
        t.finish(&mut b);
        assert!(b.finish().capture.notes.is_empty());
    }

    #[test]
    fn correlations_are_per_scope_and_zero_is_none() {
        let mut b = TraceBuilder::new(TraceFormat::NsysSqlite);
        let a = b.correlation(7, 5);
        assert_eq!(b.correlation(7, 5), a);
        assert_ne!(b.correlation(8, 5), a);
        assert_eq!(b.correlation(7, 0), None);
    }

    #[test]
    fn bad_intervals_are_refused_with_the_reason() {
        assert!(
            TraceBuilder::check(5, 4)
                .unwrap_err()
                .contains("ends before")
        );
        assert!(
            TraceBuilder::check(0, i64::MAX)
                .unwrap_err()
                .contains("out of range")
        );
        assert!(TraceBuilder::check(3, 3).is_ok());
    }
}
