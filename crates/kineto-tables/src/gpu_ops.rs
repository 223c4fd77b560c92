//! `gpu_ops`: one row per kernel, copy and fill (`kineto kernels` prints its kernel rows).

use crate::{Col, col};
use kineto_trace::analysis::Analysis;
use kineto_trace::budget::{MEMCPY, MEMSET};
use kineto_trace::family::{Label, Rules, UNMATCHED};
use kineto_trace::{GpuKind, GpuOp, GpuOpDetail, Launch, Reader, Trace};
use std::collections::HashMap;

/// A kernel, copy or fill with what the analysis says about it.
pub struct GpuOpRow<'a> {
    file: &'a str,
    rank: Option<u64>,
    kind: GpuKind,
    index: u32,
    op: GpuOp,
    detail: &'a GpuOpDetail,
    name: &'a str,
    step: Option<u32>,
    family: Option<&'a str>,
    bucket: &'a str,
    matched: Option<&'static str>,
    how: Option<&'a str>,
    launch: Option<Launch>,
    launch_name: Option<&'a str>,
    launch_tid: Option<String>,
    annotation: Option<&'a str>,
    cpu_op: Option<&'a str>,
    overlap: Option<bool>,
}

/// What the rows of one trace's `gpu_ops` are made from: each op's step, its family's label text, the
/// same-stream overlaps, worked out once per trace.
pub struct GpuOps<'a> {
    file: &'a str,
    trace: &'a Trace,
    analysis: &'a Analysis,
    rules: &'a Rules,
    steps: [Vec<Option<u32>>; 3],
    overlaps: Vec<bool>,
    /// `Rules::how` formats a string; a trace has few distinct labels and many kernels.
    how: HashMap<Label, String>,
}

/// The kinds in the order their rows are listed: kernels (in file order), then copies, then fills.
pub const KINDS: [GpuKind; 3] = GpuKind::ALL;

impl<'a> GpuOps<'a> {
    /// The rows of `trace` (the file as given: `file`), analysed with `rules`.
    pub fn new(
        file: &'a str,
        trace: &'a Trace,
        analysis: &'a Analysis,
        rules: &'a Rules,
    ) -> GpuOps<'a> {
        // The step of each copy and fill, as `Analysis::kernel_steps` gives it for kernels.
        let mut copy_step = vec![None; trace.memcpys.len()];
        let mut fill_step = vec![None; trace.memsets.len()];
        for s in &analysis.steps.steps {
            for (of, list) in [(&mut copy_step, &s.memcpys), (&mut fill_step, &s.memsets)] {
                for &i in list {
                    if let Some(x) = of.get_mut(i as usize) {
                        *x = Some(s.index as u32);
                    }
                }
            }
        }
        let mut how = HashMap::new();
        for i in 0..trace.kernels.len() {
            let label = analysis.classes.label(i);
            how.entry(label).or_insert_with(|| rules.how(label));
        }
        GpuOps {
            file,
            trace,
            analysis,
            rules,
            steps: [analysis.kernel_steps(trace), copy_step, fill_step],
            overlaps: kineto_trace::step::same_stream_overlaps(trace),
            how,
        }
    }

    /// The rows of one kind, in file order: each op decoded once, and its call read forward from
    /// the last (calls and their ops come in nearly the same order).
    pub fn rows(&self, kind: GpuKind) -> impl Iterator<Item = GpuOpRow<'_>> + '_ {
        let mut calls = self.trace.launches.reader();
        self.trace
            .gpu_ops(kind)
            .iter()
            .enumerate()
            .map(move |(i, op)| self.row(kind, i, op, &mut calls))
    }

    /// Every row: kernels, then copies, then fills (the order of the `gpu_ops` table).
    pub fn all(&self) -> impl Iterator<Item = GpuOpRow<'_>> + '_ {
        KINDS.into_iter().flat_map(|k| self.rows(k))
    }

    /// The row of `op`, op `i` of `kind` (`calls`: the trace's calls).
    fn row(
        &self,
        kind: GpuKind,
        i: usize,
        op: GpuOp,
        calls: &mut Reader<'_, Launch>,
    ) -> GpuOpRow<'_> {
        let (t, an, rules) = (self.trace, self.analysis, self.rules);
        let link = an.links.launch_of(kind, i);
        let launch = link.and_then(|l| calls.get(l));
        let (family, bucket, matched, how) = match kind {
            GpuKind::Kernel => {
                let label = an.classes.label(i);
                let family = label.family().map(|f| rules.family(f));
                (
                    family.map(|f| f.name.as_str()),
                    family.map_or(UNMATCHED, |f| f.bucket.as_str()),
                    Some(label.kind().as_str()),
                    self.how.get(&label).map(String::as_str),
                )
            }
            GpuKind::Memcpy => (None, MEMCPY, None, None),
            GpuKind::Memset => (None, MEMSET, None, None),
        };
        GpuOpRow {
            file: self.file,
            rank: t.header.rank,
            kind,
            index: i as u32,
            op,
            detail: t.detail(&op),
            name: t.name(op.name),
            step: self.steps[kind.index()].get(i).copied().flatten(),
            family,
            bucket,
            matched,
            how,
            launch,
            launch_name: launch.map(|l| t.name(l.name)),
            launch_tid: launch.map(|l| t.track(l.track).tid.to_string()),
            annotation: link
                .zip(launch)
                .and_then(|(l, call)| an.links.annotations_at(t, l, call.ts_ns).next())
                .map(|s| t.name(s.name)),
            cpu_op: link
                .zip(launch)
                .and_then(|(l, call)| an.links.cpu_ops_at(t, l, call.ts_ns).next())
                .map(|s| t.name(s.name)),
            overlap: match kind {
                GpuKind::Kernel => self.overlaps.get(i).copied(),
                _ => None,
            },
        }
    }
}

impl GpuOpRow<'_> {
    /// The index of the op's step in `steps` (`None`: in no step).
    pub fn step(&self) -> Option<u32> {
        self.step
    }
}

fn kind_name(k: GpuKind) -> &'static str {
    match k {
        GpuKind::Kernel => "kernel",
        GpuKind::Memcpy => "memcpy",
        GpuKind::Memset => "memset",
    }
}

/// Launch dimensions are 0 in the model when the trace has none (copies, fills, old traces).
fn dim(d: u32) -> Option<u32> {
    (d != 0).then_some(d)
}

/// The columns of `gpu_ops`.
#[rustfmt::skip]
pub fn gpu_op_columns<'a>() -> &'a [Col<GpuOpRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none); in Parquet the Hive partition `rank=N`", |r| r.rank),
        col!("kind", Str, None, "`kernel`, `memcpy` or `memset`", |r| kind_name(r.kind)),
        col!("index", U32, None, "position among the trace's ops of this kind, in file order", |r| r.index),
        col!("step", U32?, None, "index of the op's step in `steps` (null: in no step)", |r| r.step),
        col!("name", Str, None, "kernel name, or the copy/fill event name", |r| r.name),
        col!("family", Str?, None, "kernel family (null: unmatched kernel, copy, fill)", |r| r.family),
        col!("bucket", Str, None, "budget bucket: the family's, `unmatched`, `memcpy` or `memset`", |r| r.bucket),
        col!("matched", Str?, None, "how the family was found: `rule`, `fallback`, `unmatched` (null for copies and fills)", |r| r.matched),
        col!("how", Str?, None, "which rule or fallback word (`rule 12 (line 80)`), `unmatched`; null for copies and fills", |r| r.how),
        col!("ts_ns", I64, TimeNs, "start on the trace's clock (MEASURED)", |r| r.op.ts_ns),
        col!("dur_ns", I64, Ns, "duration (MEASURED)", |r| r.op.dur_ns),
        col!("device", I64?, None, "`args.device`", |r| r.detail.device),
        col!("stream", I64?, None, "`args.stream`", |r| r.detail.stream),
        col!("correlation", U64?, None, "`args.correlation` (the CPU launch's id)", |r| r.op.correlation.map(|c| c.get())),
        col!("launch", Str?, None, "the launching runtime/driver API (`cudaLaunchKernel`, …); null: no launch found", |r| r.launch_name),
        col!("launch_ts_ns", I64?, TimeNs, "the launch's start (queueing delay = ts_ns − launch_ts_ns)", |r| r.launch.map(|l| l.ts_ns)),
        col!("launch_tid", Str?, None, "the launching thread's tid as the trace wrote it", |r| r.launch_tid.as_deref()),
        col!("annotation", Str?, None, "innermost `user_annotation` around the launch", |r| r.annotation),
        col!("cpu_op", Str?, None, "innermost `cpu_op` around the launch", |r| r.cpu_op),
        col!("grid_x", U32?, None, "grid x (null when the trace has no grid)", |r| dim(r.detail.grid[0])),
        col!("grid_y", U32?, None, "grid y", |r| dim(r.detail.grid[1])),
        col!("grid_z", U32?, None, "grid z", |r| dim(r.detail.grid[2])),
        col!("block_x", U32?, None, "block x (null when the trace has no block)", |r| dim(r.detail.block[0])),
        col!("block_y", U32?, None, "block y", |r| dim(r.detail.block[1])),
        col!("block_z", U32?, None, "block z", |r| dim(r.detail.block[2])),
        col!("registers", U32?, None, "registers per thread: CUDA's `registers per thread`; AMD the kernel's architected VGPRs (rocprofv3 `arch_vgpr_count`); null where the trace has none", |r| r.detail.registers),
        col!("shared_memory", U32?, Bytes, "shared memory (LDS) per block, static and dynamic, as the trace gives it; null where it has none", |r| r.detail.shared_memory),
        col!("bytes", U64?, Bytes, "`args.bytes` of a copy or fill (MEASURED by the profiler)", |r| r.detail.bytes),
        col!("same_stream_overlap", Bool?, None, "kernel started before an earlier kernel on its stream ended (null for copies and fills)", |r| r.overlap),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}
