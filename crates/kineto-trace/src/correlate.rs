//! Links each GPU activity to the CPU call that launched it, and each launch to the annotations and
//! ops around it on its thread.
//!
//! * GPU op → launch: by CUPTI correlation id, shared by a kernel / copy / fill and the runtime or
//!   driver call that enqueued it. A CUDA-graph replay is one `cudaGraphLaunch` whose correlation id
//!   every kernel of the replay carries, so all of them link to that one launch (domain.md §5.4).
//! * launch → annotations: the `user_annotation` and `cpu_op` spans on the launch's own thread (same
//!   pid and tid) that contain its start, innermost first. Found by a sweep over each thread's spans
//!   sorted by start, with a stack of open spans: O(n log n) for n spans and launches.
//!
//! What does not link is counted and reported ([`LinkReport`]), never silently dropped.

use crate::model::{GpuKind, GpuOp, Rows, Span, Trace};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// How many named examples a report keeps per kind of unlinked event.
const EXAMPLES: usize = 5;

/// The links of one trace. Indices refer to the trace's vectors (`kernels`, `launches`, …).
#[derive(Debug, Clone, Default)]
pub struct Links {
    /// Per kernel: the index of its launch in `Trace::launches`.
    pub kernel_launch: Vec<Option<u32>>,
    /// Per copy: its launch.
    pub memcpy_launch: Vec<Option<u32>>,
    /// Per fill: its launch.
    pub memset_launch: Vec<Option<u32>>,
    /// Per launch: how many GPU ops (kernels, copies, fills) link to it.
    pub launch_gpu_ops: Vec<u32>,
    /// Per launch: the innermost `user_annotation` on its thread containing its start.
    pub launch_annotation: Vec<Option<u32>>,
    /// Per launch: the innermost `cpu_op` on its thread containing its start.
    pub launch_cpu_op: Vec<Option<u32>>,
    /// Per `user_annotation`: the innermost other annotation on its thread containing its start.
    pub annotation_parent: Vec<Option<u32>>,
    /// Per `cpu_op`: the innermost other op on its thread containing its start.
    pub cpu_op_parent: Vec<Option<u32>>,
    /// What did not link.
    pub report: LinkReport,
}

/// Counts of what did not link, and of CUDA-graph replays.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LinkReport {
    /// Kernels whose correlation id matches no launch (or that have none).
    pub kernels_without_launch: Unlinked,
    /// Copies without a launch.
    pub memcpys_without_launch: Unlinked,
    /// Fills without a launch.
    pub memsets_without_launch: Unlinked,
    /// Launch calls (API names with `Launch`, `Memcpy` or `Memset` in them) that no GPU op links to,
    /// by API name. Other runtime calls (`cudaStreamSynchronize`, `cudaEventRecord`, …) enqueue no
    /// GPU op and are not counted.
    pub launches_without_gpu_op: BTreeMap<String, u64>,
    /// `cudaGraphLaunch` / `hipGraphLaunch` / `cuGraphLaunch` calls.
    pub graph_launches: u64,
    /// Kernels linked to a graph launch.
    pub graph_kernels: u64,
    /// Correlation ids carried by more than one launch; the first in file order (runtime before
    /// driver) is the one linked.
    pub duplicate_correlations: u64,
}

/// GPU ops of one kind that did not link to a launch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Unlinked {
    /// How many.
    pub count: u64,
    /// Σ dur, ns.
    pub sum_ns: i64,
    /// The most frequent names, with their counts (at most 5).
    pub examples: Vec<(String, u64)>,
}

/// True for API calls that enqueue GPU work: kernel and graph launches, copies, fills.
pub fn is_launch_api(name: &str) -> bool {
    name.contains("Launch") || name.contains("Memcpy") || name.contains("Memset")
}

/// True for CUDA/HIP graph launches.
pub fn is_graph_launch(name: &str) -> bool {
    name.contains("GraphLaunch")
}

impl Links {
    /// Builds the links of a trace: O(n) hashing for correlation, O(n log n) for the annotation
    /// sweeps.
    pub fn build(trace: &Trace) -> Links {
        let mut by_corr: FxHashMap<u64, u32> = FxHashMap::default();
        let mut duplicate_correlations = 0;
        let mut link_id = |c: u64, i: u32| match by_corr.entry(c) {
            std::collections::hash_map::Entry::Occupied(_) => duplicate_correlations += 1,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
        };
        // One pass over the calls (each pass decodes them all, `Rows`): what the links need of each
        // is kept here. Runtime calls are linked first: should a driver call share a runtime call's
        // id, the runtime call is the one the program made.
        let mut names = Vec::with_capacity(trace.launches.len());
        let mut points: Vec<(u64, i64)> = Vec::with_capacity(trace.launches.len());
        let mut driver: Vec<(u64, u32)> = Vec::new();
        for (i, l) in trace.launches.iter().enumerate() {
            names.push(l.name);
            points.push((u64::from(l.track.0), l.ts_ns));
            if let Some(c) = l.correlation {
                match l.api {
                    crate::model::Api::Runtime => link_id(c.get(), i as u32),
                    crate::model::Api::Driver => driver.push((c.get(), i as u32)),
                }
            }
        }
        for (c, i) in driver {
            link_id(c, i);
        }

        let mut launch_gpu_ops = vec![0u32; trace.launches.len()];
        let mut link = |ops: &Rows<GpuOp>| -> (Vec<Option<u32>>, Unlinked) {
            let mut out = Vec::with_capacity(ops.len());
            let mut missing: FxHashMap<crate::model::Sym, u64> = FxHashMap::default();
            let mut unlinked = Unlinked::default();
            for op in ops {
                let l = op.correlation.and_then(|c| by_corr.get(&c.get()).copied());
                match l {
                    Some(i) => launch_gpu_ops[i as usize] += 1,
                    None => {
                        unlinked.count += 1;
                        unlinked.sum_ns = unlinked.sum_ns.saturating_add(op.dur_ns);
                        *missing.entry(op.name).or_default() += 1;
                    }
                }
                out.push(l);
            }
            unlinked.examples = top_names(trace, missing);
            (out, unlinked)
        };
        let (kernel_launch, kernels_without_launch) = link(&trace.kernels);
        let (memcpy_launch, memcpys_without_launch) = link(&trace.memcpys);
        let (memset_launch, memsets_without_launch) = link(&trace.memsets);

        let mut launches_without_gpu_op: BTreeMap<String, u64> = BTreeMap::new();
        let mut graph_launches = 0;
        let mut graph_launch_set = vec![false; trace.launches.len()];
        for (i, &sym) in names.iter().enumerate() {
            let name = trace.name(sym);
            if is_graph_launch(name) {
                graph_launches += 1;
                graph_launch_set[i] = true;
            }
            if launch_gpu_ops[i] == 0 && is_launch_api(name) {
                *launches_without_gpu_op.entry(name.to_string()).or_default() += 1;
            }
        }
        let graph_kernels = kernel_launch
            .iter()
            .filter(|l| l.is_some_and(|i| graph_launch_set[i as usize]))
            .count() as u64;

        let (annotation_parent, launch_annotation) =
            stab(&spans_on_tracks(&trace.user_annotations), &points);
        let (cpu_op_parent, launch_cpu_op) = stab(&spans_on_tracks(&trace.cpu_ops), &points);

        Links {
            kernel_launch,
            memcpy_launch,
            memset_launch,
            launch_gpu_ops,
            launch_annotation,
            launch_cpu_op,
            annotation_parent,
            cpu_op_parent,
            report: LinkReport {
                kernels_without_launch,
                memcpys_without_launch,
                memsets_without_launch,
                launches_without_gpu_op,
                graph_launches,
                graph_kernels,
                duplicate_correlations,
            },
        }
    }

    /// The launch of GPU op `index` of a kind.
    pub fn launch_of(&self, kind: GpuKind, index: usize) -> Option<usize> {
        let v = match kind {
            GpuKind::Kernel => &self.kernel_launch,
            GpuKind::Memcpy => &self.memcpy_launch,
            GpuKind::Memset => &self.memset_launch,
        };
        v.get(index).copied().flatten().map(|i| i as usize)
    }

    /// The `user_annotation`s on launch `launch`'s thread that contain its start, innermost first.
    pub fn annotations<'t>(
        &'t self,
        trace: &'t Trace,
        launch: usize,
    ) -> impl Iterator<Item = Span> + 't {
        let at = trace.launches.get(launch).map_or(0, |l| l.ts_ns);
        self.annotations_at(trace, launch, at)
    }

    /// [`Links::annotations`] of launch `launch`, which starts at `at`: for a caller that has the call
    /// decoded already (reading it again by its place decodes up to a block of calls).
    pub fn annotations_at<'t>(
        &'t self,
        trace: &'t Trace,
        launch: usize,
        at: i64,
    ) -> impl Iterator<Item = Span> + 't {
        chain(
            &trace.user_annotations,
            &self.annotation_parent,
            self.launch_annotation.get(launch).copied().flatten(),
            at,
        )
    }

    /// The `cpu_op`s on launch `launch`'s thread that contain its start, innermost first.
    pub fn cpu_ops<'t>(
        &'t self,
        trace: &'t Trace,
        launch: usize,
    ) -> impl Iterator<Item = Span> + 't {
        let at = trace.launches.get(launch).map_or(0, |l| l.ts_ns);
        self.cpu_ops_at(trace, launch, at)
    }

    /// [`Links::cpu_ops`] of launch `launch`, which starts at `at` (as [`Links::annotations_at`]).
    pub fn cpu_ops_at<'t>(
        &'t self,
        trace: &'t Trace,
        launch: usize,
        at: i64,
    ) -> impl Iterator<Item = Span> + 't {
        chain(
            &trace.cpu_ops,
            &self.cpu_op_parent,
            self.launch_cpu_op.get(launch).copied().flatten(),
            at,
        )
    }
}

/// Follows parent links from `first`, keeping the spans that contain `at`: with partly overlapping
/// (not nested) spans a parent need not contain the child's launch.
fn chain<'t>(
    spans: &'t Rows<Span>,
    parent: &'t [Option<u32>],
    first: Option<u32>,
    at: i64,
) -> impl Iterator<Item = Span> + 't {
    std::iter::successors(first, move |&i| parent.get(i as usize).copied().flatten())
        .take(spans.len())
        .filter_map(move |i| spans.get(i as usize))
        .filter(move |s| s.ts_ns <= at && at < s.end_ns())
}

fn spans_on_tracks(spans: &Rows<Span>) -> Vec<(u64, i64, i64)> {
    spans
        .iter()
        .map(|s| (u64::from(s.track.0), s.ts_ns, s.end_ns()))
        .collect()
}

/// The most frequent names in a count map, most frequent first (ties by name).
pub(crate) fn top_names(
    trace: &Trace,
    counts: FxHashMap<crate::model::Sym, u64>,
) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts
        .into_iter()
        .map(|(s, n)| (trace.name(s).to_string(), n))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(EXAMPLES);
    v
}

/// Interval stabbing per key. `spans` are `(key, start, end)` (half-open), `points` are `(key, t)`.
/// Returns, for each span, the innermost *other* span of its key containing its start, and for each
/// point the innermost span of its key containing it — "innermost" being the latest-starting
/// (ties: the shortest, then the later in input order).
///
/// One sweep per key over spans sorted by (start, longest first) and points sorted by time, with a
/// stack of open spans: before each item, spans that ended at or before its time are popped from the
/// top; the top is then the innermost open span. A span lower in the stack may have ended while a
/// later, partly overlapping one is still open; it is popped once it reaches the top, and it cannot
/// be reported before then, so every answer contains its point. O((n + m) log(n + m)).
pub(crate) fn stab(
    spans: &[(u64, i64, i64)],
    points: &[(u64, i64)],
) -> (Vec<Option<u32>>, Vec<Option<u32>>) {
    let mut s_order: Vec<u32> = (0..spans.len() as u32).collect();
    s_order.sort_unstable_by(|&a, &b| {
        let (x, y) = (&spans[a as usize], &spans[b as usize]);
        (x.0, x.1, std::cmp::Reverse(x.2), a).cmp(&(y.0, y.1, std::cmp::Reverse(y.2), b))
    });
    let mut p_order: Vec<u32> = (0..points.len() as u32).collect();
    p_order.sort_unstable_by_key(|&i| (points[i as usize], i));

    let mut parent = vec![None; spans.len()];
    let mut inner = vec![None; points.len()];
    let mut stack: Vec<u32> = Vec::new();
    let mut key: Option<u64> = None;
    let (mut i, mut j) = (0, 0);
    loop {
        // Spans before points at the same (key, time): a span starting at a launch contains it.
        let next_span = s_order
            .get(i)
            .map(|&s| (spans[s as usize].0, spans[s as usize].1));
        let next_point = p_order.get(j).map(|&p| points[p as usize]);
        let take_span = match (next_span, next_point) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(s), Some(p)) => s <= p,
        };
        let (k, t) = if take_span {
            next_span.unwrap_or_default()
        } else {
            next_point.unwrap_or_default()
        };
        if key != Some(k) {
            stack.clear();
            key = Some(k);
        }
        while let Some(&top) = stack.last() {
            if spans[top as usize].2 <= t {
                stack.pop();
            } else {
                break;
            }
        }
        if take_span {
            let s = s_order[i];
            parent[s as usize] = stack.last().copied();
            if spans[s as usize].2 > spans[s as usize].1 {
                stack.push(s);
            }
            i += 1;
        } else {
            inner[p_order[j] as usize] = stack.last().copied();
            j += 1;
        }
    }
    (parent, inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stabbing_nested_partial_and_separate_keys() {
        // Key 1: A [0,100) ⊃ B [10,50) ⊃ C [20,30); D [40,120) overlaps B and A partly.
        let spans = [
            (1, 0, 100),
            (1, 10, 50),
            (1, 20, 30),
            (1, 40, 120),
            (2, 0, 1000),
        ];
        let points = [
            (1, 25),  // C
            (1, 35),  // B
            (1, 45),  // D (latest start)
            (1, 110), // D, after A ended below it
            (1, 130), // nothing
            (2, 25),  // the other key's span
            (3, 25),  // a key with no spans
            (1, 10),  // B starts exactly here
            (1, 50),  // B ends here (half-open): D
        ];
        let (parent, inner) = stab(&spans, &points);
        assert_eq!(parent, [None, Some(0), Some(1), Some(1), None]);
        assert_eq!(
            inner,
            [
                Some(2),
                Some(1),
                Some(3),
                Some(3),
                None,
                Some(4),
                None,
                Some(1),
                Some(3)
            ]
        );
    }

    #[test]
    fn zero_length_spans_contain_nothing() {
        let (parent, inner) = stab(&[(0, 5, 5), (0, 0, 10)], &[(0, 5)]);
        assert_eq!(inner, [Some(1)]);
        assert_eq!(parent, [Some(1), None]);
    }

    #[test]
    fn launch_api_names() {
        for n in [
            "cudaLaunchKernel",
            "cuLaunchKernel",
            "cudaGraphLaunch",
            "cudaMemcpyAsync",
            "hipExtModuleLaunchKernel",
            "cudaMemsetAsync",
            "hipMemcpyWithStream",
        ] {
            assert!(is_launch_api(n), "{n}");
        }
        for n in [
            "cudaStreamSynchronize",
            "cudaEventRecord",
            "INVALID",
            "cudaFree",
        ] {
            assert!(!is_launch_api(n), "{n}");
        }
        assert!(is_graph_launch("cudaGraphLaunch") && !is_graph_launch("cudaLaunchKernel"));
    }
}
