//! One file holding several ranks — an Nsight Systems export of `nsys profile torchrun --nproc_per_node=N`,
//! a rocpd or RPD file of several processes or GPUs — read as one trace per rank: each process, and each
//! GPU it drove, is a rank of its own, so budgets never take the union of two GPUs' work.
//!
//! The split is over the model, whatever the format: a GPU op belongs to the process its reader recorded
//! ([`crate::native::TraceBuilder::gpu_op_of`]) and to its device; a call goes with the GPU op it
//! launched (by correlation), else with its process's first GPU; a CPU range or op (the step markers) is
//! copied to every GPU of its process. Only the readers say which process an op ran for, so a file whose
//! reader says nothing (every Kineto trace: one process, one rank by construction) is never split, and a
//! file of one process and one GPU reads exactly as before. How a rank is named — its rank when the file
//! says it ([`crate::native::TraceBuilder::process_rank`]), else its process and GPU — is in its header
//! ([`crate::RankPart`]).

use crate::model::{Flow, GemmRows, GpuOp, OpProcesses, RankPart, Rows, Span, Trace, TrackIds};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// A rank of a file: (process, device); `None` where the file does not say.
type PartKey = (Option<i64>, Option<i64>);

/// The traces of the ranks `trace` holds, in (process, device) order; `trace` itself, unchanged, when it
/// holds one (or its reader recorded no processes).
pub fn split_ranks(trace: Trace) -> Vec<Trace> {
    let keys = part_keys(&trace);
    if keys.len() <= 1 {
        return vec![trace];
    }
    let mut parts = Parts::new(&trace, &keys);
    parts.gpu_ops(&trace);
    parts.launches(&trace);
    parts.cpu_rows(&trace);
    parts.finish(&trace)
}

/// The distinct (process, device) of the GPU ops, sorted.
fn part_keys(t: &Trace) -> Vec<PartKey> {
    // A set, not a list of every op's key: a file has a few ranks and up to millions of ops.
    let mut keys: std::collections::BTreeSet<PartKey> = Default::default();
    for (ops, processes) in ops_and_processes(t) {
        if processes.len() != ops.len() {
            return Vec::new();
        }
        keys.extend(
            ops.iter()
                .zip(processes.iter())
                .map(|(o, p)| (p, t.detail(&o).device)),
        );
    }
    keys.into_iter().collect()
}

fn ops_and_processes(t: &Trace) -> [(&Rows<GpuOp>, &OpProcesses); 3] {
    [
        (&t.kernels, &t.op_processes[0]),
        (&t.memcpys, &t.op_processes[1]),
        (&t.memsets, &t.op_processes[2]),
    ]
}

/// The ranks being filled.
struct Parts {
    keys: Vec<PartKey>,
    traces: Vec<Trace>,
    /// Process → its ranks' indices (one per GPU it drove).
    of_process: BTreeMap<i64, Vec<usize>>,
    /// A GPU op's correlation → the rank of the op (the first, should ops of two ranks share one).
    of_correlation: FxHashMap<u64, usize>,
    left_out: LeftOut,
}

/// CPU rows of processes that drove no GPU: in no rank.
#[derive(Default)]
struct LeftOut {
    rows: u64,
    /// The processes of those rows.
    processes: Vec<String>,
}

/// The ranks of a CPU row's process (its track's pid); none for a process that drove no GPU, counted in
/// `left_out`. A function of the two fields it reads, not of [`Parts`], so that the ranks' rows can be
/// filled while the answer is borrowed (no copy of it per row).
fn ranks_of_track<'a>(
    of_process: &'a BTreeMap<i64, Vec<usize>>,
    left_out: &mut LeftOut,
    ids: &TrackIds,
) -> &'a [usize] {
    let process = ids.pid.as_i64();
    match process.and_then(|p| of_process.get(&p)) {
        Some(v) => v,
        None => {
            left_out.rows += 1;
            let name = ids.pid.to_string();
            if !left_out.processes.contains(&name) {
                left_out.processes.push(name);
            }
            &[]
        }
    }
}

impl Parts {
    fn new(t: &Trace, keys: &[PartKey]) -> Parts {
        let mut of_process: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (i, (p, _)) in keys.iter().enumerate() {
            if let Some(p) = p {
                of_process.entry(*p).or_default().push(i);
            }
        }
        Parts {
            keys: keys.to_vec(),
            traces: keys.iter().map(|_| empty_like(t)).collect(),
            of_process,
            of_correlation: FxHashMap::default(),
            left_out: LeftOut::default(),
        }
    }

    fn index(&self, key: PartKey) -> usize {
        self.keys.binary_search(&key).unwrap_or(0)
    }

    fn gpu_ops(&mut self, t: &Trace) {
        for (kind, (ops, processes)) in ops_and_processes(t).into_iter().enumerate() {
            for (op, process) in ops.iter().zip(processes.iter()) {
                let i = self.index((process, t.detail(&op).device));
                if let Some(c) = op.correlation {
                    self.of_correlation.entry(c.get()).or_insert(i);
                }
                let part = &mut self.traces[i];
                let (to, procs) = match kind {
                    0 => (&mut part.kernels, &mut part.op_processes[0]),
                    1 => (&mut part.memcpys, &mut part.op_processes[1]),
                    _ => (&mut part.memsets, &mut part.op_processes[2]),
                };
                to.push(op);
                // A part's processes are some of the whole trace's, which each had a place: there is
                // room for every one, so this cannot fail.
                let _ = procs.push(process);
            }
        }
    }

    /// Calls: with the GPU op they launched, else with their process's first GPU.
    fn launches(&mut self, t: &Trace) {
        for l in &t.launches {
            let by_op = l
                .correlation
                .and_then(|c| self.of_correlation.get(&c.get()).copied());
            let i = match by_op {
                Some(i) => Some(i),
                None => ranks_of_track(&self.of_process, &mut self.left_out, t.track(l.track))
                    .first()
                    .copied(),
            };
            if let Some(i) = i {
                self.traces[i].launches.push(l);
            }
        }
    }

    /// CPU ops, ranges, Python functions and flows: copied to every GPU of their process; GPU-side
    /// ranges (on a device's track) to the ranks of that device. GEMM input rows follow their CPU op.
    fn cpu_rows(&mut self, t: &Trace) {
        let mut cpu_op_index: Vec<Vec<(usize, u32)>> = vec![Vec::new(); t.cpu_ops.len()];
        for (n, s) in t.cpu_ops.iter().enumerate() {
            for &i in ranks_of_track(&self.of_process, &mut self.left_out, t.track(s.track)) {
                cpu_op_index[n].push((i, self.traces[i].cpu_ops.len() as u32));
                self.traces[i].cpu_ops.push(s);
            }
        }
        for g in &t.gemm_rows {
            for &(i, new) in cpu_op_index.get(g.cpu_op as usize).into_iter().flatten() {
                self.traces[i].gemm_rows.push(GemmRows {
                    cpu_op: new,
                    rows: g.rows,
                });
            }
        }
        self.spans(t, &t.user_annotations, |p| &mut p.user_annotations);
        self.spans(t, &t.python_functions, |p| &mut p.python_functions);
        for s in &t.gpu_user_annotations {
            let device = t.track(s.track).pid.as_i64();
            let mut placed = false;
            for (i, key) in self.keys.iter().enumerate() {
                if key.1 == device {
                    self.traces[i].gpu_user_annotations.push(s);
                    placed = true;
                }
            }
            if !placed {
                self.left_out.rows += 1;
            }
        }
        for f in &t.flows {
            for &i in ranks_of_track(&self.of_process, &mut self.left_out, t.track(f.track)) {
                self.traces[i].flows.push(f.clone());
            }
        }
    }

    fn spans(&mut self, t: &Trace, spans: &Rows<Span>, to: impl Fn(&mut Trace) -> &mut Rows<Span>) {
        for s in spans {
            for &i in ranks_of_track(&self.of_process, &mut self.left_out, t.track(s.track)) {
                to(&mut self.traces[i]).push(s);
            }
        }
    }

    /// Each rank's header (its GPU, its name), time bounds and notes.
    fn finish(self, t: &Trace) -> Vec<Trace> {
        let of = self.keys.len();
        let labels: Vec<String> = self.keys.iter().map(|k| label(t, *k)).collect();
        let all = labels.join(", ");
        let mut out = self.traces;
        for (i, part) in out.iter_mut().enumerate() {
            let (process, device) = self.keys[i];
            let rank = process.and_then(|p| rank_of(t, p, &self.of_process));
            part.header.rank = rank;
            if let Some(d) = device {
                part.header.devices.retain(|p| p.id == Some(d));
            }
            part.header.part = Some(RankPart {
                process,
                device,
                label: labels[i].clone(),
                of,
            });
            part.time_bounds = bounds(part);
            part.counts.events = (part.kernels.len()
                + part.memcpys.len()
                + part.memsets.len()
                + part.launches.len()
                + part.cpu_ops.len()
                + part.user_annotations.len()
                + part.gpu_user_annotations.len()
                + part.python_functions.len()
                + part.flows.len()) as u64;
            // The reader's notes tally the whole file (every rank's rows): said so, not passed off as
            // this rank's own; likewise its queue overruns, whose queues are not told apart by rank.
            for note in &mut part.capture.notes {
                *note = format!("whole file: {note}");
            }
            if part.capture.queue_overruns.is_some_and(|o| o.count > 0) {
                part.capture.notes.push(
                    "whole file: the queue overruns are the file's, over every rank's queues"
                        .into(),
                );
            }
            part.capture.notes.push(format!(
                "this file holds {of} ranks, each a process and the GPU it drove ({all}): this is {}",
                labels[i]
            ));
            if self.left_out.rows > 0 {
                part.capture.notes.push(format!(
                    "{} CPU rows of processes that drove no GPU (pid {}) are in no rank",
                    self.left_out.rows,
                    self.left_out.processes.join(", ")
                ));
            }
        }
        out
    }
}

/// The rank a process's file says it is, when the process drove one GPU (two GPUs of one process share
/// the rank, which two traces of one run may not).
fn rank_of(t: &Trace, process: i64, of_process: &BTreeMap<i64, Vec<usize>>) -> Option<u64> {
    if of_process.get(&process).map_or(0, Vec::len) != 1 {
        return None;
    }
    t.process_ranks
        .iter()
        .find(|&&(p, _)| p == process)
        .map(|&(_, r)| r)
}

/// `pid 4101 gpu 0`, `rank 3 (pid 4101 gpu 0)`.
fn label(t: &Trace, (process, device): PartKey) -> String {
    let gpu = device.map_or_else(|| "gpu ?".to_string(), |d| format!("gpu {d}"));
    let Some(p) = process else {
        return format!("{gpu} (process not recorded)");
    };
    match t.process_ranks.iter().find(|&&(q, _)| q == p) {
        Some((_, r)) => format!("rank {r} (pid {p} {gpu})"),
        None => format!("pid {p} {gpu}"),
    }
}

/// The trace's header, capture, warnings and name, track and GPU-op detail tables, without rows.
fn empty_like(t: &Trace) -> Trace {
    let mut p = Trace {
        header: t.header.clone(),
        capture: t.capture.clone(),
        counts: t.counts.clone(),
        warnings: t.warnings.clone(),
        warnings_total: t.warnings_total,
        salvaged: t.salvaged.clone(),
        ..Trace::default()
    };
    p.names = t.names.clone();
    p.tracks = t.tracks.clone();
    p.details = t.details.clone();
    p.process_ranks = t.process_ranks.clone();
    p
}

/// Earliest start and latest end of a rank's rows.
fn bounds(t: &Trace) -> Option<(i64, i64)> {
    let ops = t
        .kernels
        .iter()
        .chain(&t.memcpys)
        .chain(&t.memsets)
        .map(|o| (o.ts_ns, o.end_ns()));
    let calls = t.launches.iter().map(|l| (l.ts_ns, l.end_ns()));
    let spans = t
        .cpu_ops
        .iter()
        .chain(t.user_annotations.iter())
        .chain(t.gpu_user_annotations.iter())
        .chain(t.python_functions.iter())
        .map(|s| (s.ts_ns, s.end_ns()));
    let flows = t.flows.iter().map(flow_span);
    ops.chain(calls)
        .chain(spans)
        .chain(flows)
        .fold(None, |acc, (a, b)| match acc {
            None => Some((a, b)),
            Some((x, y)) => Some((x.min(a), y.max(b))),
        })
}

fn flow_span(f: &Flow) -> (i64, i64) {
    (f.ts_ns, f.ts_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Api, GpuKind, IdValue, Launch, SpanKind};
    use crate::native::TraceBuilder;

    /// Two processes on two GPUs, and a third that drove none: each GPU op and its call in its rank,
    /// the marker range of process 1 in rank 1 only, the third process's range in no rank (counted in a
    /// note), each rank's time bounds its own rows'.
    #[test]
    fn ops_calls_and_ranges_go_to_their_process_and_gpu() {
        let mut b = TraceBuilder::new(crate::TraceFormat::NsysSqlite);
        for (process, device, t) in [(1, 0, 100), (2, 1, 1000)] {
            let cpu = b.track(IdValue::Num(process), IdValue::Num(process));
            let gpu = b.track(IdValue::Num(device), IdValue::Num(7));
            let name = b.name("kernel");
            let call = b.name("cudaLaunchKernel");
            let c = b.correlation(process as u64, 1);
            b.launch(Launch::at(call, Api::Runtime, t, 10, cpu, c))
                .unwrap();
            let mut op = crate::NewGpuOp::at(name, t + 20, 50, gpu);
            op.detail.device = Some(device);
            op.correlation = c;
            b.gpu_op_of(GpuKind::Kernel, op, Some(process)).unwrap();
        }
        let step = b.name("step");
        let one = b.track(IdValue::Num(1), IdValue::Num(1));
        let three = b.track(IdValue::Num(3), IdValue::Num(3));
        b.span(SpanKind::UserAnnotation, Span::at(step, 0, 500, one))
            .unwrap();
        b.span(SpanKind::UserAnnotation, Span::at(step, 0, 5000, three))
            .unwrap();
        let ranks = split_ranks(b.finish());
        assert_eq!(ranks.len(), 2);
        let [a, c] = [&ranks[0], &ranks[1]];
        assert_eq!(
            (a.kernels.len(), a.launches.len(), a.user_annotations.len()),
            (1, 1, 1)
        );
        assert_eq!(
            (c.kernels.len(), c.launches.len(), c.user_annotations.len()),
            (1, 1, 0)
        );
        assert_eq!(c.launches.row(0).ts_ns, 1000);
        // Rank 1: the range 0..500; rank 2: its call 1000..1010 and kernel 1020..1070.
        assert_eq!(a.time_bounds, Some((0, 500)));
        assert_eq!(c.time_bounds, Some((1000, 1070)));
        let part = a.header.part.as_ref().unwrap();
        assert_eq!((part.process, part.device, part.of), (Some(1), Some(0), 2));
        assert_eq!(part.label, "pid 1 gpu 0");
        assert!(
            c.capture.notes.contains(
                &"1 CPU rows of processes that drove no GPU (pid 3) are in no rank".to_string()
            ),
            "{:?}",
            c.capture.notes
        );
    }

    /// A reader's notes and queue overruns tally the whole file: each rank says so rather than
    /// passing them off as its own (the file's one fill note would otherwise stand in a rank that has
    /// no fill).
    #[test]
    fn each_rank_says_the_files_notes_and_overruns_are_the_whole_files() {
        let mut b = TraceBuilder::new(crate::TraceFormat::RocpdSqlite);
        for device in [0, 1] {
            let gpu = b.track(IdValue::Num(device), IdValue::Num(7));
            let name = b.name("kernel");
            let mut op = crate::NewGpuOp::at(name, 100 * device, 50, gpu);
            op.detail.device = Some(device);
            b.gpu_op_of(GpuKind::Kernel, op, Some(5)).unwrap();
        }
        b.capture()
            .notes
            .push("1 runtime fill kernels counted as fills".into());
        b.capture().queue_overruns = Some(crate::model::Overruns {
            count: 1,
            ..Default::default()
        });
        let ranks = split_ranks(b.finish());
        assert_eq!(ranks.len(), 2);
        for r in &ranks {
            let notes = &r.capture.notes;
            assert_eq!(
                notes[0],
                "whole file: 1 runtime fill kernels counted as fills"
            );
            assert_eq!(
                notes[1],
                "whole file: the queue overruns are the file's, over every rank's queues"
            );
            assert!(notes[2].starts_with("this file holds 2 ranks"), "{notes:?}");
        }
        // One rank, no split: the notes are the file's own, unmarked.
        let mut b = TraceBuilder::new(crate::TraceFormat::RocpdSqlite);
        let gpu = b.track(IdValue::Num(0), IdValue::Num(7));
        let name = b.name("kernel");
        let mut op = crate::NewGpuOp::at(name, 0, 50, gpu);
        op.detail.device = Some(0);
        b.gpu_op_of(GpuKind::Kernel, op, Some(5)).unwrap();
        b.capture().notes.push("a note".into());
        assert_eq!(split_ranks(b.finish())[0].capture.notes, ["a note"]);
    }

    /// A file of one process and one GPU, or whose reader recorded no process, is itself.
    #[test]
    fn one_rank_or_no_processes_is_the_trace_itself() {
        let mut b = TraceBuilder::new(crate::TraceFormat::NsysSqlite);
        let gpu = b.track(IdValue::Num(0), IdValue::Num(7));
        let name = b.name("kernel");
        for (t, process) in [(0, None), (100, None)] {
            let mut op = crate::NewGpuOp::at(name, t, 10, gpu);
            op.detail.device = Some(t);
            b.gpu_op_of(GpuKind::Kernel, op, process).unwrap();
        }
        let t = b.finish();
        let before = format!("{t:?}");
        let ranks = split_ranks(t);
        assert_eq!(ranks.len(), 1);
        assert_eq!(format!("{:?}", ranks[0]), before);
    }
}
