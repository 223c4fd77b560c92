//! The per-file summary `kineto summary` prints.
//!
//! Every number here is MEASURED: a count of events in the file or a sum of their durations as the
//! profiler recorded them. Durations are reported in microseconds converted from exact integer
//! nanoseconds.

use crate::interval::{StartOrderCover, union};
use crate::model::{Api, Capture, Salvage, Sym, Trace, TraceFormat, Warning};
use crate::read::Parsed;
use crate::time::ns_to_us;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

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
    pub by_kind: BTreeMap<String, CopyKind>,
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

/// The runtime and driver calls, and the runtime's graph launches.
struct CallCounts {
    runtime: u64,
    driver: u64,
    graph_launches: u64,
}

impl CallCounts {
    fn of(t: &Trace) -> CallCounts {
        let mut n = CallCounts {
            runtime: 0,
            driver: 0,
            graph_launches: 0,
        };
        for l in &t.launches {
            match l.api {
                Api::Runtime => {
                    n.runtime += 1;
                    if matches!(t.name(l.name), "cudaGraphLaunch" | "hipGraphLaunch") {
                        n.graph_launches += 1;
                    }
                }
                Api::Driver => n.driver += 1,
            }
        }
        n
    }
}

/// The copies by direction, in one pass: summed by name first (10⁴–10⁵ copies, a handful of names),
/// each name's direction found once.
fn copy_kinds(t: &Trace) -> BTreeMap<String, CopyKind> {
    let mut by_name: FxHashMap<Sym, (u64, u128, i128)> = FxHashMap::default();
    for m in &t.memcpys {
        let e = by_name.entry(m.name).or_default();
        e.0 += 1;
        e.1 += u128::from(t.detail(&m).bytes.unwrap_or(0));
        e.2 += i128::from(m.dur_ns);
    }
    let mut by: BTreeMap<&str, (u64, u128, i128)> = BTreeMap::new();
    for (name, (count, bytes, ns)) in by_name {
        let e = by.entry(copy_kind(t.name(name))).or_default();
        e.0 += count;
        e.1 += bytes;
        e.2 += ns;
    }
    by.into_iter()
        .map(|(k, (count, bytes, ns))| {
            let gbps = (ns > 0).then(|| bytes as f64 / ns as f64);
            (
                k.to_string(),
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

/// Distinct `ProfilerStep#N` names over the annotations and CPU ops. The names that are step markers
/// are found in the names table (each tested once); the rows are read only until each of them has
/// been seen there, and not at all when there is none (a marker's name may also be a kernel's or a
/// call's, so the rows decide). A trace's markers are among its first annotations, so this reads a
/// few thousand rows where the CPU ops are 10⁵–10⁶.
fn profiler_steps(t: &Trace) -> u64 {
    let mut is_step: Vec<bool> = (0..t.distinct_names())
        .map(|i| is_profiler_step(t.name(Sym(i as u32))))
        .collect();
    let mut unseen = is_step.iter().filter(|&&s| s).count();
    if unseen == 0 {
        return 0;
    }
    let mut steps: BTreeSet<&str> = BTreeSet::new();
    for s in t
        .user_annotations
        .iter()
        .chain(&t.gpu_user_annotations)
        .chain(&t.cpu_ops)
    {
        // Marked off when first seen: `unseen` counts the step names not yet found.
        if let Some(slot) = is_step.get_mut(s.name.0 as usize)
            && std::mem::take(slot)
        {
            steps.insert(t.name(s.name));
            unseen -= 1;
            if unseen == 0 {
                break;
            }
        }
    }
    steps.len() as u64
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
        // One pass over each table, and no more of it than the numbers need (the summary runs after
        // the parse, on one core, over rows kept encoded: every row read is decoded, ~10 ns).
        // Widened: each duration fits in i64 ns, a sum of many need not.
        let mut kernel_sum: i128 = 0;
        let mut streams: BTreeSet<(Option<i64>, Option<i64>)> = BTreeSet::new();
        let mut cover = StartOrderCover::default();
        for k in &t.kernels {
            kernel_sum += i128::from(k.dur_ns);
            let d = t.detail(&k);
            streams.insert((d.device, d.stream));
            cover.push(k.ts_ns, k.end_ns());
        }
        let kernel_union = cover
            .covered()
            .unwrap_or_else(|| union(t.kernels.iter().map(|k| (k.ts_ns, k.end_ns()))));
        let steps = profiler_steps(t);
        let copies = copy_kinds(t);
        let (memset_bytes, memset_ns) = t.memsets.iter().fold((0u128, 0i128), |(b, ns), m| {
            (
                b + u128::from(t.detail(&m).bytes.unwrap_or(0)),
                ns + i128::from(m.dur_ns),
            )
        });
        let span = t.time_bounds.map_or(0, |(a, b)| b - a);
        let calls = CallCounts::of(t);
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
                bytes: copies.values().map(|k| k.bytes).sum(),
                sum_us: ns_to_us(copies.values().map(|k| k.sum_ns).sum::<i128>()),
                by_kind: copies,
            },
            memset: FillStats {
                count: t.memsets.len() as u64,
                bytes: memset_bytes,
                sum_us: ns_to_us(memset_ns),
            },
            runtime: Count {
                count: calls.runtime,
            },
            driver: Count {
                count: calls.driver,
            },
            graph_launches: calls.graph_launches,
            cpu_ops: t.cpu_ops.len() as u64,
            user_annotations: t.user_annotations.len() as u64,
            gpu_user_annotations: t.gpu_user_annotations.len() as u64,
            flows: t.flows.len() as u64,
            profiler_steps: steps,
            salvaged: t.salvaged.is_some(),
            salvage: t.salvaged.clone(),
            warnings: t.warnings.clone(),
            warnings_total: t.warnings_total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_of(events: &str) -> Summary {
        let text = format!(r#"{{"traceEvents":[{events}]}}"#);
        let (trace, json_bytes) = crate::parse_reader(
            std::path::Path::new("t.json"),
            &mut text.as_bytes(),
            false,
            false,
        )
        .unwrap();
        Summary::of(&Parsed {
            path: "t.json".into(),
            sha256: None,
            gzip: false,
            json_bytes,
            trace,
        })
    }

    #[test]
    fn profiler_steps_are_the_marker_names_of_annotations_and_cpu_ops() {
        let s = summary_of(
            r#"
            {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":50},
            {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#1","pid":0,"tid":7,"ts":1,"dur":40},
            {"ph":"X","cat":"user_annotation","name":"ProfilerStep#x","pid":1,"tid":1,"ts":60,"dur":5},
            {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":2,"dur":3},
            {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":6,"dur":3},
            {"ph":"X","cat":"cpu_op","name":"ProfilerStep#2","pid":1,"tid":1,"ts":70,"dur":9},
            {"ph":"X","cat":"kernel","name":"ProfilerStep#3","pid":0,"tid":7,"ts":10,"dur":2,"args":{"device":0,"stream":7}}
            "#,
        );
        // #1 twice (mirrored on the GPU: once), #2 as a CPU op; `#x` is no step, and #3 is only a
        // kernel's name.
        assert_eq!(s.profiler_steps, 2);
        assert_eq!(
            summary_of(
                r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":2,"dur":3}"#
            )
            .profiler_steps,
            0
        );
    }

    #[test]
    fn copies_by_direction_add_up_to_the_copies() {
        let s = summary_of(
            r#"
            {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":0,"dur":2,"args":{"bytes":100}},
            {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":7,"ts":3,"dur":3,"args":{"bytes":50}},
            {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":7,"ts":7,"dur":4},
            {"ph":"X","cat":"gpu_memcpy","name":"copy","pid":0,"tid":7,"ts":12,"dur":1,"args":{"bytes":8}},
            {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":20,"dur":5,"args":{"bytes":64}},
            {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":30,"dur":1}
            "#,
        );
        let m = &s.memcpy;
        // 4 copies; bytes 100 + 50 + (none) + 8 = 158; 2 + 3 + 4 + 1 = 10 µs.
        assert_eq!((m.count, m.bytes, m.sum_us), (4, 158, 10.0));
        let kinds: Vec<(&str, u64, u128, i128)> = m
            .by_kind
            .iter()
            .map(|(k, c)| (k.as_str(), c.count, c.bytes, c.sum_ns))
            .collect();
        // Two names of one direction are one row: HtoD 2 copies, 150 bytes, 5 000 ns.
        assert_eq!(
            kinds,
            [
                ("DtoH", 1, 0, 4_000),
                ("HtoD", 2, 150, 5_000),
                ("other", 1, 8, 1_000)
            ]
        );
        // HtoD: 150 bytes over 5 000 ns = 0.03 GB/s.
        assert_eq!(m.by_kind["HtoD"].gbps, Some(150.0 / 5_000.0));
        // Fills: 64 + (none) bytes, 5 + 1 µs.
        assert_eq!(
            (s.memset.count, s.memset.bytes, s.memset.sum_us),
            (2, 64, 6.0)
        );
    }
}
