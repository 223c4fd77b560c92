//! Where the host was during launch-bound gaps: on the thread whose launch ended each gap, the
//! innermost recorded span at each instant — ops (`cpu_op`) and the Python frames the trace keeps (`file.py(N): fn`,
//! with `with_stack`; every frame when parsed with `Options::python_frames`, as `kineto doctor` and
//! `kineto report` parse; CPython's built-ins fold into their caller's line) — that overlap the gap, by
//! the time they cover of it. It names what held the host instead of only the kernel that came after the gap.

use crate::TraceInput;
use kineto_trace::{Sym, Track};
use std::collections::{BTreeMap, HashMap};

/// Spans longer than this are enclosing frames (a step, a forward), never what held the host in one
/// gap; leaving them out keeps the overlap search short.
const LONGEST_FRAME_NS: i64 = 100_000_000;

/// One thread's spans (start, end, name) by start, and the running maximum of their ends.
type ThreadSpans = (Vec<(i64, i64, Sym)>, Vec<i64>);

/// The host spans of each thread.
pub(crate) struct HostSpans {
    by_track: HashMap<Track, ThreadSpans>,
}

impl HostSpans {
    pub(crate) fn of(t: &TraceInput<'_>) -> HostSpans {
        let tr = t.trace;
        let mut by: HashMap<Track, Vec<(i64, i64, Sym)>> = HashMap::new();
        let source_frames = tr
            .python_functions
            .iter()
            .filter(|s| is_source_frame(tr.name(s.name)));
        for s in tr.cpu_ops.iter().chain(source_frames) {
            if s.dur_ns > 0 && s.dur_ns < LONGEST_FRAME_NS {
                by.entry(s.track)
                    .or_default()
                    .push((s.ts_ns, s.end_ns(), s.name));
            }
        }
        let by_track = by
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_unstable();
                let mut m = i64::MIN;
                let max_end = v
                    .iter()
                    .map(|s| {
                        m = m.max(s.1);
                        m
                    })
                    .collect();
                (k, (v, max_end))
            })
            .collect();
        HostSpans { by_track }
    }

    /// Adds to `by` (span name → ns) the time each innermost span of `track` covers of `[a, z)`.
    pub(crate) fn attribute(&self, track: Track, a: i64, z: i64, by: &mut BTreeMap<Sym, i64>) {
        let Some((v, max_end)) = self.by_track.get(&track) else {
            return;
        };
        let end = v.partition_point(|s| s.0 < z);
        let mut i = end;
        while i > 0 && max_end[i - 1] > a {
            i -= 1;
        }
        let over: Vec<&(i64, i64, Sym)> = v[i..end].iter().filter(|s| s.1 > a).collect();
        innermost_cover(&over, a, z, by);
    }
}

/// Adds to `by` the time of `[a, z)` each span of `over` covers as the innermost span there (the
/// latest start, then the shortest: a frame's own time, not its callees'). A sweep over the spans'
/// ends, the spans open at each instant kept ordered, so a gap under a hundred thousand Python frames
/// costs n log n, not n² (the trace of a Triton JIT launch loop has that many).
fn innermost_cover<K: Ord + Copy>(
    over: &[&(i64, i64, K)],
    a: i64,
    z: i64,
    by: &mut BTreeMap<K, i64>,
) {
    // (instant, opens, index into `over`); closings sort before openings at the same instant.
    let mut edges: Vec<(i64, bool, usize)> = Vec::with_capacity(2 * over.len());
    for (k, s) in over.iter().enumerate() {
        edges.push((s.0.max(a), true, k));
        edges.push((s.1.min(z), false, k));
    }
    edges.sort_unstable();
    let key = |k: usize| (over[k].0, std::cmp::Reverse(over[k].1), k);
    let mut open: std::collections::BTreeSet<(i64, std::cmp::Reverse<i64>, usize)> =
        std::collections::BTreeSet::new();
    let mut at = a;
    for (x, opens, k) in edges {
        if x > at {
            if let Some(&(_, _, inner)) = open.last() {
                *by.entry(over[inner].2).or_default() += x - at;
            }
            at = x;
        }
        if opens {
            open.insert(key(k));
        } else {
            open.remove(&key(k));
        }
    }
}

/// Whether a Python frame is a line of source (`path.py(N): fn`) rather than CPython's own: a
/// built-in (`<built-in method encode of str object at 0x…>`, `<built-in function isinstance>`) or
/// frozen or generated code (`<frozen os>(717): getenv`, `<string>(2): __init__`). Those are left out,
/// so their time is the time of the line that called them: the line the user can change.
fn is_source_frame(name: &str) -> bool {
    !name.starts_with('<')
}

/// `host in the gaps: `name` 40.0 %, …` over `total` ns, at most `n` named; empty when none.
pub(crate) fn describe(
    t: &TraceInput<'_>,
    by: &BTreeMap<Sym, i64>,
    total: i64,
    n: usize,
) -> String {
    if by.is_empty() || total <= 0 {
        return String::new();
    }
    let mut v: Vec<(&Sym, &i64)> = by.iter().collect();
    v.sort_by(|x, y| {
        y.1.cmp(x.1)
            .then_with(|| t.trace.name(*x.0).cmp(t.trace.name(*y.0)))
    });
    let named: Vec<String> = v
        .iter()
        .take(n)
        .map(|(s, ns)| format!("`{}` {:.1} %", t.trace.name(**s), crate::share(**ns, total)))
        .collect();
    format!(
        "; the host during them (launching thread): {}",
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep against the definition, instant by instant over the cut points: each piece to the
    /// innermost span covering it (latest start, then shortest, then the later in `over`).
    fn by_definition(over: &[&(i64, i64, u32)], a: i64, z: i64) -> BTreeMap<u32, i64> {
        let mut cuts: Vec<i64> = over.iter().flat_map(|s| [s.0, s.1]).chain([a, z]).collect();
        cuts.retain(|&x| x >= a && x <= z);
        cuts.sort_unstable();
        cuts.dedup();
        let mut by = BTreeMap::new();
        for w in cuts.windows(2) {
            let inner = over
                .iter()
                .filter(|s| s.0 <= w[0] && s.1 >= w[1])
                .max_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
            if let Some(s) = inner {
                *by.entry(s.2).or_default() += w[1] - w[0];
            }
        }
        by
    }

    #[test]
    fn the_sweep_gives_each_instant_to_the_innermost_span() {
        // A seeded generator (64-bit LCG): nested and overlapping spans, shared ends, names reused.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        for _ in 0..500 {
            let n = 1 + next(12) as usize;
            let spans: Vec<(i64, i64, u32)> = (0..n)
                .map(|_| {
                    let s = next(40) as i64;
                    (s, s + 1 + next(30) as i64, next(5) as u32)
                })
                .collect();
            let (a, z) = (next(20) as i64, 20 + next(40) as i64);
            let over: Vec<&(i64, i64, u32)> = spans.iter().filter(|s| s.1 > a && s.0 < z).collect();
            let mut got = BTreeMap::new();
            innermost_cover(&over, a, z, &mut got);
            assert_eq!(got, by_definition(&over, a, z), "{spans:?} over [{a}, {z})");
        }
    }
}
