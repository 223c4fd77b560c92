//! Where the host was during launch-bound gaps: on the thread whose launch ended each gap, the
//! innermost recorded span at each instant — ops (`cpu_op`) and the Python frames the trace keeps (`file.py(N): fn`,
//! with `with_stack`) — that overlap the gap, by the time they cover of it. It names what held the
//! host instead of only the kernel that came after the gap.

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
        for s in tr.cpu_ops.iter().chain(&tr.python_functions) {
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
        // Each instant of the gap goes to the innermost span covering it (latest start, then the
        // shortest): a frame's own time, not its callees'.
        let mut cuts: Vec<i64> = over
            .iter()
            .flat_map(|s| [s.0, s.1])
            .filter(|&x| x > a && x < z)
            .chain([a, z])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let (x, y) = (w[0], w[1]);
            let inner = over
                .iter()
                .filter(|s| s.0 <= x && s.1 >= y)
                .max_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
            if let Some(s) = inner {
                *by.entry(s.2).or_default() += y - x;
            }
        }
    }
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
