//! One rank's trace as Kineto JSON, written by hand (the generator's own small writer): metadata, the CPU
//! step annotations and launches carrying their kernels' correlation, the kernels.

use std::fmt::Write as _;

use kl1_shapes::Spec;

use crate::annotation;
use crate::plan::CapturePlan;
use crate::timeline::{BASE_TIME_NS, Kern, Laid, MAIN_STREAM, PID_GPU, SIDE_STREAM, Via};

/// Relative µs with three decimals, as current Kineto writes `ts` and `dur`.
fn us(ns: i64) -> String {
    kineto_trace::ns_to_us_string(ns)
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// One rank's trace as Kineto JSON.
pub(crate) fn trace_json(
    spec: &Spec,
    c: &CapturePlan,
    rank: u64,
    ranks: u64,
    steps: &[Laid],
) -> String {
    let pid_cpu = 4242 + rank;
    let tid_cpu = pid_cpu;
    let mut ev = metadata_events(pid_cpu, tid_cpu);
    let mut corr: u64 = 100 + rank * 7;
    let mut cpu_free: i64 = 0;
    for (ext, st) in (1u64..).zip(steps) {
        let lo = st.kernels.iter().map(|k| k.start).min().unwrap_or(0);
        let hi = st.kernels.iter().map(Kern::end).max().unwrap_or(0);
        // The CPU runs ahead of the GPU: the step's launches start 40 µs before its first kernel, 2.5 µs apart,
        // each at least 3 µs before its first kernel.
        let ann_start = (lo - 45_000).max(cpu_free + 2_000);
        let mut cpu = ann_start + 5_000;
        let mut last_end = cpu;
        for (via, idx) in &launch_groups(st) {
            corr += 1;
            let ts = cpu.min(st.kernels[idx[0]].start - 3_000);
            launch_events(&mut ev, st, (*via, idx), (corr, ts), (pid_cpu, tid_cpu));
            last_end = ts + 2_000;
            cpu = ts + 2_500;
        }
        let ann_end = last_end + 5_000;
        cpu_free = ann_end;
        let name = annotation(st.index, st.plan.phase, st.plan.rows, st.plan.requests);
        ev.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": {pid_cpu}, "tid": {tid_cpu}, "ts": {}, "dur": {}, "args": {{"External id": {ext}, "Record function id": 0, "Ev Idx": {ext}}}}}"#,
            us(ann_start),
            us(ann_end - ann_start)
        ));
        ev.push(format!(
            r#"{{"ph": "X", "cat": "gpu_user_annotation", "name": "{name}", "pid": {PID_GPU}, "tid": {MAIN_STREAM}, "ts": {}, "dur": {}, "args": {{"External id": {ext}}}}}"#,
            us(lo),
            us(hi - lo)
        ));
    }
    let end = steps
        .iter()
        .flat_map(|s| s.kernels.iter().map(Kern::end))
        .max()
        .unwrap_or(0);
    ev.push(format!(
        r#"{{"ph": "i", "cat": "", "name": "Record Window End", "s": "g", "pid": "", "tid": "", "ts": {}}}"#,
        us(end + 1_000)
    ));
    document(spec, c, (rank, ranks), ev)
}

/// The process and thread names of the CPU thread and the GPU's streams.
fn metadata_events(pid_cpu: u64, tid_cpu: u64) -> Vec<String> {
    let mut ev: Vec<String> = Vec::new();
    ev.push(format!(
        r#"{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {pid_cpu}, "tid": 0, "args": {{"name": "python3"}}}}"#
    ));
    ev.push(format!(
        r#"{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {pid_cpu}, "tid": {tid_cpu}, "args": {{"name": "thread {tid_cpu} (python3)"}}}}"#
    ));
    ev.push(format!(
        r#"{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {PID_GPU}, "tid": 0, "args": {{"name": "GPU {PID_GPU}"}}}}"#
    ));
    for st in [MAIN_STREAM, SIDE_STREAM] {
        ev.push(format!(
            r#"{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {PID_GPU}, "tid": {st}, "args": {{"name": "stream {st}"}}}}"#
        ));
    }
    ev
}

/// A step's launch groups in kernel order: one launch per eager kernel, one per graph replay (the
/// consecutive kernels of one graph).
fn launch_groups(st: &Laid) -> Vec<(Via, Vec<usize>)> {
    let mut order: Vec<usize> = (0..st.kernels.len()).collect();
    order.sort_by_key(|&i| (st.kernels[i].start, i));
    let mut groups: Vec<(Via, Vec<usize>)> = Vec::new();
    for i in order {
        let via = st.kernels[i].via;
        match (via, groups.last_mut()) {
            (Via::Graph(g), Some((Via::Graph(h), v))) if g == *h => v.push(i),
            _ => groups.push((via, vec![i])),
        }
    }
    groups
}

/// One launch at `ts` with correlation `corr` on the CPU thread: its call, its flow to the first kernel,
/// and its kernels (`idx` into the step's kernels).
fn launch_events(
    ev: &mut Vec<String>,
    st: &Laid,
    (via, idx): (Via, &[usize]),
    (corr, ts): (u64, i64),
    (pid_cpu, tid_cpu): (u64, u64),
) {
    let first = &st.kernels[idx[0]];
    let (cat, name, cbid) = match via {
        Via::Runtime => ("cuda_runtime", "cudaLaunchKernel", 211),
        Via::Driver => ("cuda_driver", "cuLaunchKernel", 307),
        Via::Graph(_) => ("cuda_runtime", "cudaGraphLaunch", 311),
    };
    ev.push(format!(
        r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid_cpu}, "tid": {tid_cpu}, "ts": {}, "dur": {}, "args": {{"cbid": {cbid}, "correlation": {corr}}}}}"#,
        us(ts),
        us(2_000)
    ));
    ev.push(format!(
        r#"{{"ph": "s", "id": {corr}, "pid": {pid_cpu}, "tid": {tid_cpu}, "ts": {}, "cat": "ac2g", "name": "ac2g"}}"#,
        us(ts)
    ));
    ev.push(format!(
        r#"{{"ph": "f", "id": {corr}, "pid": {PID_GPU}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}"#,
        first.stream,
        us(first.start)
    ));
    for (node, &i) in idx.iter().enumerate() {
        let k = &st.kernels[i];
        let graph = match via {
            Via::Graph(g) => format!(r#", "graph id": {g}, "graph node id": {}"#, node + 1),
            _ => String::new(),
        };
        ev.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{}", "pid": {PID_GPU}, "tid": {}, "ts": {}, "dur": {}, "args": {{"queued": 0, "device": {PID_GPU}, "context": 1, "stream": {}, "correlation": {corr}, "registers per thread": 96, "shared memory": 49152, "blocks per SM": 1.0, "warps per SM": 8.0, "grid": [{}, {}, {}], "block": [{}, {}, {}], "est. achieved occupancy %": 12{graph}}}}}"#,
            escape(&k.name),
            k.stream,
            us(k.start),
            us(k.dur),
            k.stream,
            k.grid[0],
            k.grid[1],
            k.grid[2],
            k.block[0],
            k.block[1],
            k.block[2],
        ));
    }
}

/// The trace document: header (device, distributed info, generator) around the events.
fn document(spec: &Spec, c: &CapturePlan, (rank, ranks): (u64, u64), ev: Vec<String>) -> String {
    let gpu = spec.gpu();
    let mut out = String::with_capacity(ev.iter().map(|e| e.len() + 4).sum::<usize>() + 2048);
    let _ = write!(
        out,
        r#"{{
  "schemaVersion": 1,
  "deviceProperties": [
    {{"id": 0, "name": "NVIDIA {} (synthetic)", "totalGlobalMem": 128526278656, "computeMajor": 12, "computeMinor": 1, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 1536, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 48, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 101376, "sharedMemPerMultiprocessor": 102400}}
  ],
  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {ranks}, "pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": {ranks}, "ranks": []}}], "nccl_version": "2.27.3"}},
  "kl1_generator": "kl1-bandwidth synth: {} {}:{}",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": {BASE_TIME_NS},
  "traceEvents": [
"#,
        escape(&gpu.name),
        escape(spec.name()),
        escape(&c.cell),
        escape(&c.capture)
    );
    let n = ev.len();
    for (i, e) in ev.into_iter().enumerate() {
        out.push_str("  ");
        out.push_str(&e);
        out.push_str(if i + 1 < n { ",\n" } else { "\n" });
    }
    let _ = write!(
        out,
        r#"  ],
  "traceName": "{}.{}.rank{rank}.pt.trace.json"
}}
"#,
        escape(&c.cell),
        escape(&c.capture)
    );
    out
}
