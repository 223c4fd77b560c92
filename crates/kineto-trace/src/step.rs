//! Steps: the iterations of a training loop or a serving engine, found from their CPU-side markers,
//! with the GPU work launched inside each.
//!
//! How each bound is derived (docs/steps-and-budgets.md says the same, with the reasons):
//! * **markers**: `user_annotation` and `cpu_op` spans whose whole name matches the [`StepPattern`]
//!   (by default `ProfilerStep#N`, which traces before 2022 record as a `cpu_op`). The
//!   `gpu_user_annotation` mirror of a step, on a GPU stream, is never a marker, so a mirrored step
//!   counts once; a span recorded as both annotation and op with the same name, thread, start and
//!   duration also counts once.
//! * **cpu_lo, cpu_hi**: the marker's start and end.
//! * **inside**: a GPU op belongs to the step when its launch (linked by correlation, see
//!   [`crate::correlate`]) was called on *any thread of the marker's process* at a time `t` with
//!   `cpu_lo <= t < cpu_hi`. Any thread, because PyTorch runs the backward pass on autograd threads
//!   and NCCL work on others, while the step marker is on the Python thread; the same process,
//!   because another process's clock interval says nothing about this one's work. When markers of a
//!   process nest or overlap, the launch goes to the innermost (latest-starting) one. CUDA-graph
//!   replays follow their one `cudaGraphLaunch`.
//! * **lo, hi**: the first start and the last end of the step's kernels (copies and fills are listed
//!   but do not set the bounds); `None` for a step without kernels.
//! * **period**: the next step's `lo` (next in start order among the same process's steps) minus this
//!   `lo`; `None` for the last step or when either has no kernels.
//! * **same-stream overlaps**: kernels of the step that start before an earlier-starting kernel on
//!   their (device, stream) has ended (PDL, ROCm duration overflow), counted over the whole trace.

use crate::correlate::Links;
use crate::error::{Error, Result};
use crate::interval::union;
use crate::model::{IdValue, Span, Sym, Trace, Track};
use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};

/// The default step marker: `ProfilerStep#N`, N captured as `step`.
pub const PROFILER_STEP: &str = r"ProfilerStep#(?P<step>\d+)";

/// Which annotation names mark steps: a regex matched against the *whole* name, whose named groups
/// give the step's fields — `phase` (text), `rows`, `requests` and `step` (integers).
///
/// ```
/// use kineto_trace::step::StepPattern;
/// // SGLang-style markers.
/// let p = StepPattern::new(r"step\[(?P<phase>[A-Z]+) bs=(?P<rows>\d+)\]").unwrap();
/// assert!(p.is_match("step[DECODE bs=32]") && !p.is_match("xstep[DECODE bs=32]"));
/// ```
#[derive(Debug, Clone)]
pub struct StepPattern {
    source: String,
    regex: Regex,
}

impl Default for StepPattern {
    fn default() -> Self {
        StepPattern::profiler_step()
    }
}

impl StepPattern {
    /// `ProfilerStep#N`.
    pub fn profiler_step() -> StepPattern {
        // A constant pattern, tested below; failing here would be a build defect.
        #[allow(clippy::expect_used)]
        StepPattern::new(PROFILER_STEP).expect("the ProfilerStep pattern compiles")
    }

    /// A pattern from a regex. It must match the whole annotation name (it is anchored here), and
    /// the groups `rows`, `requests` and `step`, when present, must capture integers.
    pub fn new(pattern: &str) -> Result<StepPattern> {
        let fail = |message: String| Error::StepPattern {
            pattern: pattern.to_string(),
            message,
        };
        let regex = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| fail(e.to_string()))?;
        let known = ["phase", "rows", "requests", "step"];
        for name in regex.capture_names().flatten() {
            if !known.contains(&name) {
                return Err(fail(format!(
                    "unknown group `{name}`: the groups that set step fields are {}",
                    known.join(", ")
                )));
            }
        }
        Ok(StepPattern {
            source: pattern.to_string(),
            regex,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether a name is a step marker.
    pub fn is_match(&self, name: &str) -> bool {
        self.regex.is_match(name)
    }
}

/// One step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 0-based position among the trace's steps, in order of CPU start.
    pub index: usize,
    /// The marker's name.
    pub name: String,
    /// The `step` group (N of `ProfilerStep#N`).
    pub number: Option<u64>,
    /// The `phase` group, as written (`DECODE`, `prefill`, …).
    pub phase: Option<String>,
    /// The `rows` group (batch rows / tokens).
    pub rows: Option<u64>,
    /// The `requests` group.
    pub requests: Option<u64>,
    /// The marker's thread.
    pub track: Track,
    /// Marker start, ns.
    pub cpu_lo_ns: i64,
    /// Marker end, ns.
    pub cpu_hi_ns: i64,
    /// First start of the step's kernels, ns.
    pub lo_ns: Option<i64>,
    /// Last end of the step's kernels, ns.
    pub hi_ns: Option<i64>,
    /// Next step's `lo` minus this one's, ns.
    pub period_ns: Option<i64>,
    /// The step's kernels: indices into `Trace::kernels`, by start (then end, then index).
    pub kernels: Vec<u32>,
    /// The step's copies: indices into `Trace::memcpys`, by start.
    pub memcpys: Vec<u32>,
    /// The step's fills: indices into `Trace::memsets`, by start.
    pub memsets: Vec<u32>,
    /// Σ kernel dur, ns.
    pub kernel_sum_ns: i64,
    /// Time covered by at least one of the step's kernels, ns.
    pub kernel_union_ns: i64,
    /// Kernels of this step that started before an earlier kernel on their stream had ended.
    pub same_stream_overlaps: u64,
}

/// The steps of a trace and what fell outside them.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// The steps, by index.
    pub steps: Vec<Step>,
    /// Kernels with a launch that is in no step (before the first, between steps, another process).
    pub kernels_outside: u64,
    /// Kernels with no launch at all (see [`crate::correlate::LinkReport`]): in no step.
    pub kernels_unlinked: u64,
    /// Same-stream overlaps over the whole trace.
    pub same_stream_overlaps: u64,
    /// Markers whose `rows`, `requests` or `step` group did not read as an integer (the field is then
    /// `None`), one line each (first 20).
    pub warnings: Vec<String>,
    /// How the steps were found, when that is not the plain reading of the pattern (no marker, so
    /// the whole GPU window is one step; a pattern that matched nothing), one line each.
    pub notes: Vec<String>,
}

/// Finds the steps of a trace. O(n log n) in events.
pub fn find_steps(trace: &Trace, links: &Links, pattern: &StepPattern) -> Steps {
    let mut warnings = Vec::new();
    let markers = markers(trace, pattern);

    // Process of each track, interned, so a launch and a marker are compared by pid only.
    let mut pids: FxHashMap<&IdValue, u64> = FxHashMap::default();
    let mut pid_of = |t: Track| -> u64 {
        let n = pids.len() as u64;
        *pids.entry(&trace.track(t).pid).or_insert(n)
    };

    let mut steps: Vec<Step> = Vec::with_capacity(markers.len());
    let mut step_pid: Vec<u64> = Vec::with_capacity(markers.len());
    for (index, m) in markers.iter().enumerate() {
        let name = trace.name(m.name);
        let caps = pattern.regex.captures(name);
        let text = |g: &str| caps.as_ref().and_then(|c| c.name(g)).map(|m| m.as_str());
        let mut int = |g: &str| -> Option<u64> {
            let t = text(g)?;
            let v = t.parse().ok();
            if v.is_none() && warnings.len() < 20 {
                warnings.push(format!(
                    "step {index} `{name}`: group `{g}` = `{t}` is not an integer"
                ));
            }
            v
        };
        let (number, rows, requests) = (int("step"), int("rows"), int("requests"));
        steps.push(Step {
            index,
            name: name.to_string(),
            number,
            phase: text("phase").map(str::to_string),
            rows,
            requests,
            track: m.track,
            cpu_lo_ns: m.ts_ns,
            cpu_hi_ns: m.end_ns(),
            lo_ns: None,
            hi_ns: None,
            period_ns: None,
            kernels: Vec::new(),
            memcpys: Vec::new(),
            memsets: Vec::new(),
            kernel_sum_ns: 0,
            kernel_union_ns: 0,
            same_stream_overlaps: 0,
        });
        step_pid.push(pid_of(m.track));
    }

    // The step of each launch: the innermost marker of the launch's process containing its start.
    let spans: Vec<(u64, i64, i64)> = steps
        .iter()
        .zip(&step_pid)
        .map(|(s, &p)| (p, s.cpu_lo_ns, s.cpu_hi_ns))
        .collect();
    let points: Vec<(u64, i64)> = trace
        .launches
        .iter()
        .map(|l| (pid_of(l.track), l.ts_ns))
        .collect();
    let (_, launch_step) = crate::correlate::stab(&spans, &points);

    let overlaps = same_stream_overlaps(trace);
    let mut out = Steps {
        same_stream_overlaps: overlaps.iter().filter(|&&o| o).count() as u64,
        ..Steps::default()
    };
    let step_of = |launch: Option<u32>| launch.and_then(|l| launch_step[l as usize]);
    for (k, &l) in links.kernel_launch.iter().enumerate() {
        match (l, step_of(l)) {
            (None, _) => out.kernels_unlinked += 1,
            (Some(_), None) => out.kernels_outside += 1,
            (Some(_), Some(s)) => {
                let st = &mut steps[s as usize];
                st.kernels.push(k as u32);
                st.same_stream_overlaps += u64::from(overlaps[k]);
            }
        }
    }
    for (m, &l) in links.memcpy_launch.iter().enumerate() {
        if let Some(s) = step_of(l) {
            steps[s as usize].memcpys.push(m as u32);
        }
    }
    for (m, &l) in links.memset_launch.iter().enumerate() {
        if let Some(s) = step_of(l) {
            steps[s as usize].memsets.push(m as u32);
        }
    }

    for st in &mut steps {
        let ks = &trace.kernels;
        st.kernels
            .sort_unstable_by_key(|&i| (ks[i as usize].ts_ns, ks[i as usize].end_ns(), i));
        st.memcpys
            .sort_unstable_by_key(|&i| (trace.memcpys[i as usize].ts_ns, i));
        st.memsets
            .sort_unstable_by_key(|&i| (trace.memsets[i as usize].ts_ns, i));
        st.lo_ns = st.kernels.iter().map(|&i| ks[i as usize].ts_ns).min();
        st.hi_ns = st.kernels.iter().map(|&i| ks[i as usize].end_ns()).max();
        st.kernel_sum_ns = st
            .kernels
            .iter()
            .fold(0i64, |acc, &i| acc.saturating_add(ks[i as usize].dur_ns));
        st.kernel_union_ns = union(
            st.kernels
                .iter()
                .map(|&i| (ks[i as usize].ts_ns, ks[i as usize].end_ns())),
        );
    }
    // Period: to the next step of the same process.
    let mut next_of_pid: FxHashMap<u64, usize> = FxHashMap::default();
    for i in (0..steps.len()).rev() {
        let p = step_pid[i];
        if let Some(&n) = next_of_pid.get(&p) {
            steps[i].period_ns = match (steps[i].lo_ns, steps[n].lo_ns) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
        }
        next_of_pid.insert(p, i);
    }
    out.steps = steps;
    out.warnings = warnings;
    out
}

/// The marker spans, deduplicated, in order of (start, longer first, file order).
fn markers<'t>(trace: &'t Trace, pattern: &StepPattern) -> Vec<&'t Span> {
    let mut matches: FxHashMap<Sym, bool> = FxHashMap::default();
    let mut seen: FxHashSet<(Sym, Track, i64, i64)> = FxHashSet::default();
    let mut out: Vec<&Span> = Vec::new();
    for s in trace.user_annotations.iter().chain(&trace.cpu_ops) {
        let is = *matches
            .entry(s.name)
            .or_insert_with(|| pattern.is_match(trace.name(s.name)));
        if is && seen.insert((s.name, s.track, s.ts_ns, s.dur_ns)) {
            out.push(s);
        }
    }
    // Stable: equal starts and durations keep file order.
    out.sort_by_key(|s| (s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    out
}

/// Per kernel: whether it started before an earlier-starting kernel on its (device, stream) — or
/// its track, when the trace gives no device and stream — had ended. Compared with the latest end
/// so far on the stream, not only the previous kernel's, so one kernel with an overlong duration
/// counts every kernel it covers.
pub fn same_stream_overlaps(trace: &Trace) -> Vec<bool> {
    #[derive(PartialEq, Eq, Hash, PartialOrd, Ord, Clone, Copy)]
    enum Stream {
        Ids(i64, i64),
        Track(Track),
    }
    let ks = &trace.kernels;
    let stream = |i: usize| match (ks[i].device, ks[i].stream) {
        (Some(d), Some(s)) => Stream::Ids(d, s),
        _ => Stream::Track(ks[i].track),
    };
    let mut order: Vec<usize> = (0..ks.len()).collect();
    order.sort_unstable_by_key(|&i| (stream(i), ks[i].ts_ns, ks[i].end_ns(), i));
    let mut out = vec![false; ks.len()];
    let mut prev: Option<(Stream, i64)> = None;
    for i in order {
        let s = stream(i);
        match prev {
            Some((ps, end)) if ps == s => {
                out[i] = ks[i].ts_ns < end;
                prev = Some((s, end.max(ks[i].end_ns())));
            }
            _ => prev = Some((s, ks[i].end_ns())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiler_step_pattern() {
        let p = StepPattern::profiler_step();
        assert!(p.is_match("ProfilerStep#12"));
        assert!(!p.is_match("ProfilerStep#"));
        assert!(!p.is_match("ProfilerStep#12 x"));
        assert!(!p.is_match("## ProfilerStep#12"));
    }

    #[test]
    fn bad_patterns_name_themselves() {
        let e = StepPattern::new("step[").unwrap_err().to_string();
        assert!(e.starts_with("step pattern `step[`:"), "{e}");
        let e = StepPattern::new("(?P<batch>\\d+)").unwrap_err().to_string();
        assert!(e.contains("unknown group `batch`"), "{e}");
    }
}
