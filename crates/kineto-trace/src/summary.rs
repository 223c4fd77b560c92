//! The per-file summary `kineto summary` prints.
//!
//! Every number here is MEASURED: a count of events in the file or a sum of their durations as the
//! profiler recorded them. Durations are reported in microseconds converted from exact integer
//! nanoseconds.

use crate::interval::union_by_start;
use crate::model::{Api, Capture, Salvage, Trace, TraceFormat, Warning};
use crate::read::Parsed;
use crate::time::ns_to_us;
use serde::Serialize;
use std::collections::BTreeSet;

/// One trace file in numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The path as given.
    pub file: String,
    /// sha256 of the file as stored.
    pub sha256: Option<String>,
    /// The file's format (`kineto`, `nsys_sqlite`, `rocprofv3_json`, …).
    pub format: TraceFormat,
    /// The format's version as the file states it (Kineto `schemaVersion`, nsys export schema, …).
    pub format_version: Option<String>,
    /// The program that wrote the file, as the file names it.
    pub producer: Option<String>,
    /// False when some GPU work is only in whole-graph replay rows (nsys `Graph` mode): kernel counts
    /// and per-kernel tables then miss the kernels inside the replays.
    pub kernels_complete: bool,
    /// How the GPU work was captured: graph-trace mode, whole-graph replays, same-queue overruns,
    /// reader notes.
    pub capture: Capture,
    /// `schemaVersion`.
    pub schema_version: Option<i64>,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u64>,
    /// Objects in `traceEvents`.
    pub events: u64,
    /// Latest end minus earliest start over every timed event (`X`, `i`, `s`, `f`), µs.
    pub span_us: f64,
    /// Kernels.
    pub kernels: KernelStats,
    /// Copies.
    pub memcpy: CopyStats,
    /// Fills.
    pub memset: FillStats,
    /// `cuda_runtime` calls (`Runtime` in old traces).
    pub runtime: Count,
    /// `cuda_driver` calls.
    pub driver: Count,
    /// `cudaGraphLaunch` / `hipGraphLaunch` runtime calls.
    pub graph_launches: u64,
    /// `cpu_op` events.
    pub cpu_ops: u64,
    /// `user_annotation` events.
    pub user_annotations: u64,
    /// `gpu_user_annotation` events.
    pub gpu_user_annotations: u64,
    /// CPU→GPU flow events (both ends).
    pub flows: u64,
    /// Distinct `ProfilerStep#N` names over CPU and GPU annotations (a mirrored step counts once).
    pub profiler_steps: u64,
    /// Whether the file was cut and only the events before the cut were kept.
    pub salvaged: bool,
    /// Where and why, when salvaged.
    pub salvage: Option<Salvage>,
    /// Problems that did not stop the parse (first 100).
    pub warnings: Vec<Warning>,
    /// All warnings.
    pub warnings_total: u64,
}

/// Kernel totals.
#[derive(Debug, Clone, Serialize)]
pub struct KernelStats {
    /// Number of kernels.
    pub count: u64,
    /// Σ dur, µs.
    pub sum_us: f64,
    /// Time covered by at least one kernel on any device or stream, µs.
    pub union_us: f64,
    /// Distinct (device, stream) pairs that ran a kernel.
    pub streams: u64,
}

/// Copy totals.
#[derive(Debug, Clone, Serialize)]
pub struct CopyStats {
    /// Number of copies.
    pub count: u64,
    /// Σ `args.bytes` (u128: each count is a u64, their sum need not fit one).
    pub bytes: u128,
    /// Σ dur, µs.
    pub sum_us: f64,
    /// Per direction (`HtoD`, `DtoH`, `DtoD`, `PtoP`, …: the word after `Memcpy` in the copy's name,
    /// `other` when the name has none), in name order.
    pub by_kind: std::collections::BTreeMap<String, CopyKind>,
}

/// Copies of one direction.
#[derive(Debug, Clone, Serialize)]
pub struct CopyKind {
    /// Number of copies.
    pub count: u64,
    /// Σ `args.bytes` (copies without `bytes` add nothing; u128: each copy's count is a u64, their sum
    /// need not fit one).
    pub bytes: u128,
    /// Σ dur, µs.
    pub sum_us: f64,
    /// Σ dur, exact ns (i128: each duration fits i64 ns, a sum of many need not).
    pub sum_ns: i128,
    /// `bytes / sum_ns` (bytes per ns = GB/s, 10⁹ bytes): the mean achieved bandwidth weighted by
    /// time; `None` when the copies took no time.
    pub gbps: Option<f64>,
}

/// A copy's direction from its name: `Memcpy HtoD (Pageable -> Device)` → `HtoD`.
pub fn copy_kind(name: &str) -> &str {
    let mut words = name.split_whitespace();
    match (words.next(), words.next()) {
        (Some(m), Some(k)) if m.eq_ignore_ascii_case("memcpy") => k,
        _ => "other",
    }
}

fn copy_kinds(t: &Trace) -> std::collections::BTreeMap<String, CopyKind> {
    let mut by: std::collections::BTreeMap<String, (u64, u128, i128)> = Default::default();
    for m in &t.memcpys {
        let e = by.entry(copy_kind(t.name(m.name)).to_string()).or_default();
        e.0 += 1;
        e.1 += u128::from(t.detail(&m).bytes.unwrap_or(0));
        e.2 += i128::from(m.dur_ns);
    }
    by.into_iter()
        .map(|(k, (count, bytes, ns))| {
            let gbps = (ns > 0).then(|| bytes as f64 / ns as f64);
            (
                k,
                CopyKind {
                    count,
                    bytes,
                    sum_us: ns_to_us(ns),
                    sum_ns: ns,
                    gbps,
                },
            )
        })
        .collect()
}

/// Fill totals.
#[derive(Debug, Clone, Serialize)]
pub struct FillStats {
    /// Number of fills.
    pub count: u64,
    /// Σ `args.bytes` (u128: each count is a u64, their sum need not fit one).
    pub bytes: u128,
    /// Σ dur, µs.
    pub sum_us: f64,
}

/// A bare count.
#[derive(Debug, Clone, Serialize)]
pub struct Count {
    /// How many.
    pub count: u64,
}

/// True for `ProfilerStep#<digits>`.
pub fn is_profiler_step(name: &str) -> bool {
    name.strip_prefix("ProfilerStep#")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl Summary {
    /// Summarises a parsed file.
    pub fn of(p: &Parsed) -> Summary {
        let t: &Trace = &p.trace;
        // One pass over each table (the summary runs after the parse, on one core, over rows long out
        // of cache: each extra pass over 10⁵ kernels or launches costs about a millisecond of memory
        // traffic). Widened: each duration fits in i64 ns, a sum of many need not.
        let mut kernel_sum: i128 = 0;
        let mut streams: BTreeSet<(Option<i64>, Option<i64>)> = BTreeSet::new();
        for k in &t.kernels {
            kernel_sum += i128::from(k.dur_ns);
            let d = t.detail(&k);
            streams.insert((d.device, d.stream));
        }
        let kernel_union = union_by_start(t.kernels.iter().map(|k| (k.ts_ns, k.end_ns())));
        // Each distinct name is tested once (10⁵ spans, 10³ names); equal ids are equal text.
        let mut is_step: Vec<Option<bool>> = vec![None; t.names.len()];
        let mut steps: BTreeSet<&str> = BTreeSet::new();
        for s in t
            .user_annotations
            .iter()
            .chain(&t.gpu_user_annotations)
            .chain(&t.cpu_ops)
        {
            let known = is_step.get_mut(s.name.0 as usize);
            let step = match known {
                Some(Some(v)) => *v,
                Some(slot) => *slot.insert(is_profiler_step(t.name(s.name))),
                None => is_profiler_step(t.name(s.name)),
            };
            if step {
                steps.insert(t.name(s.name));
            }
        }
        let (mut runtime, mut driver, mut graph_launches) = (0u64, 0u64, 0u64);
        for l in &t.launches {
            match l.api {
                Api::Runtime => {
                    runtime += 1;
                    if matches!(t.name(l.name), "cudaGraphLaunch" | "hipGraphLaunch") {
                        graph_launches += 1;
                    }
                }
                Api::Driver => driver += 1,
            }
        }
        let span = t.time_bounds.map_or(0, |(a, b)| b - a);
        Summary {
            file: p.path.display().to_string(),
            sha256: p.sha256.clone(),
            format: t.header.format,
            format_version: t.header.format_version.clone(),
            producer: t.header.producer.clone(),
            kernels_complete: t.capture.kernels_complete(),
            capture: t.capture.clone(),
            schema_version: t.header.schema_version,
            rank: t.header.rank,
            world_size: t.header.world_size,
            events: t.counts.events,
            span_us: ns_to_us(span),
            kernels: KernelStats {
                count: t.kernels.len() as u64,
                sum_us: ns_to_us(kernel_sum),
                union_us: ns_to_us(kernel_union),
                streams: streams.len() as u64,
            },
            memcpy: CopyStats {
                count: t.memcpys.len() as u64,
                bytes: t
                    .memcpys
                    .iter()
                    .filter_map(|m| t.detail(&m).bytes)
                    .map(u128::from)
                    .sum(),
                sum_us: ns_to_us(t.memcpys.iter().map(|m| i128::from(m.dur_ns)).sum::<i128>()),
                by_kind: copy_kinds(t),
            },
            memset: FillStats {
                count: t.memsets.len() as u64,
                bytes: t
                    .memsets
                    .iter()
                    .filter_map(|m| t.detail(&m).bytes)
                    .map(u128::from)
                    .sum(),
                sum_us: ns_to_us(t.memsets.iter().map(|m| i128::from(m.dur_ns)).sum::<i128>()),
            },
            runtime: Count { count: runtime },
            driver: Count { count: driver },
            graph_launches,
            cpu_ops: t.cpu_ops.len() as u64,
            user_annotations: t.user_annotations.len() as u64,
            gpu_user_annotations: t.gpu_user_annotations.len() as u64,
            flows: t.flows.len() as u64,
            profiler_steps: steps.len() as u64,
            salvaged: t.salvaged.is_some(),
            salvage: t.salvaged.clone(),
            warnings: t.warnings.clone(),
            warnings_total: t.warnings_total,
        }
    }
}
