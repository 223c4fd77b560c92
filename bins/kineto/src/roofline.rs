//! `kineto roofline`: per step and rank, ESTIMATED bytes and FLOPs from a model config (crate `roofline`
//! over `kl1-shapes`), MEASURED time from the trace, the rates against the GPU's CLAIMED peaks. Parses the
//! options, calls `roofline::analyse`, prints; one column list drives table, CSV and JSON.

use crate::out::{self, Stdout, note};
use crate::render::{self, Col, Ctx, Kind, Show, Val};
use clap::Args;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use kl1_shapes::{GpuTable, QuantOverride, RankSplit, RunOptions, TensorGroup, model_from_config};
use roofline::{GpuChoice, Setup, StepRoofline, TraceRoofline};
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How the model is read and split: `kineto roofline`'s and `kineto report --model`'s options.
#[derive(Args)]
pub struct ModelOptions {
    /// Weight format replacing the config's quantization_config: none, bf16, fp8, fp8-block, awq, gptq,
    /// int4-gN (group size N), mxfp4, nvfp4, exl3:BITS.
    #[arg(long, value_name = "Q")]
    quant: Option<String>,
    /// Tensor-parallel ranks: bytes and FLOPs are per rank.
    #[arg(long, default_value_t = 1, value_name = "N")]
    tp: u64,
    /// Expert-parallel ranks: each holds experts/N whole experts.
    #[arg(long, default_value_t = 1, value_name = "N")]
    ep: u64,
    /// KV-cache element type: bf16, fp16, fp8 (default: the config's torch_dtype).
    #[arg(long, value_name = "DTYPE")]
    kv_dtype: Option<String>,
    /// The GPU, by its name in the GPU table (default: from the trace's deviceProperties).
    #[arg(long, value_name = "NAME")]
    gpu: Option<String>,
}

impl ModelOptions {
    /// Whether every option is at its default (nothing that needs a model was asked for).
    pub fn is_default(&self) -> bool {
        self.quant.is_none()
            && self.tp == 1
            && self.ep == 1
            && self.kv_dtype.is_none()
            && self.gpu.is_none()
    }
}

/// `kineto roofline`'s options.
#[derive(Args)]
pub struct RooflineArgs {
    /// The model's Hugging Face config.json (with its quantization_config, if any).
    #[arg(long, value_name = "CONFIG.json")]
    model: PathBuf,
    #[command(flatten)]
    opts: ModelOptions,
    /// Step markers (regex over the whole annotation name, with kineto's step groups); default: the
    /// built-in profiles (vLLM's TraceLens-style `execute_…`, SGLang, KL1, `ProfilerStep#N`).
    #[arg(long, value_name = "RE")]
    step_pattern: Option<String>,
    /// Kernel rule table (TOML), whose `gemm`+`moe` and `attention` buckets are set against the weight and
    /// KV bytes; default: the built-in table.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// One JSON object per line (per step per rank).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV with a header line.
    #[arg(long)]
    csv: bool,
    /// Trace files (.json, .json.gz) or directories of per-rank traces.
    #[arg(required_unless_present = "weights")]
    traces: Vec<PathBuf>,
    /// Print the model's weights table (tensor groups, shapes, formats, per-rank bytes) instead of steps.
    #[arg(long)]
    weights: bool,
    /// Also write a self-contained HTML page: achieved GB/s and TFLOP/s per step against the GPU's roofs,
    /// the ridge point marked (the page embeds the rows `--json` prints).
    #[arg(long, value_name = "FILE", conflicts_with = "weights")]
    html: Option<PathBuf>,
    /// Replace the HTML file if it exists.
    #[arg(long)]
    overwrite: bool,
}

/// A step with the columns that name its trace.
struct Row<'a> {
    file: &'a str,
    rank: Option<u64>,
    gpu: &'a str,
    s: &'a StepRoofline,
}

fn f(x: f64) -> Val<'static> {
    Val::F(x)
}

fn opt(x: Option<f64>) -> Val<'static> {
    x.map_or(Val::Null, Val::F)
}

/// The union of bucket `i`'s kernels ([`roofline::BUCKET_BYTES`] order), µs.
fn bucket_us(r: &Row<'_>, i: usize) -> Val<'static> {
    r.s.buckets
        .get(i)
        .map_or(Val::Null, |b| Val::F(b.time_ns as f64 / 1e3))
}

/// Bucket `i`'s bytes over its time, GB/s (null when the mapping does not hold).
fn bucket_gbps(r: &Row<'_>, i: usize) -> Val<'static> {
    r.s.buckets
        .get(i)
        .and_then(|b| b.gbps)
        .map_or(Val::Null, Val::F)
}

/// GB with one decimal for the table.
fn gb(x: f64) -> Val<'static> {
    Val::Str(Cow::Owned(format!("{:.2}", x / 1e9)))
}

/// The columns, in order. Dotted names nest in JSON (`bytes.weights` → `"bytes":{"weights":…}`).
fn columns<'a>() -> &'a [Col<Row<'a>>] {
    &[
        Col {
            name: "file",
            kind: Kind::Plain,
            head: "file",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.file)),
        },
        Col {
            name: "rank",
            kind: Kind::Plain,
            head: "rank",
            show: Show::Right(4),
            get: |r| Val::u(r.rank),
        },
        Col {
            name: "index",
            kind: Kind::Plain,
            head: "step",
            show: Show::Right(4),
            get: |r| Val::U(r.s.index as u64),
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(&r.s.name)),
        },
        Col {
            name: "phase",
            kind: Kind::Plain,
            head: "phase",
            show: Show::Left(7),
            get: |r| Val::Str(Cow::Borrowed(r.s.tokens.phase())),
        },
        Col {
            name: "requests",
            kind: Kind::Plain,
            head: "reqs",
            show: Show::Right(5),
            get: |r| Val::U(r.s.tokens.requests()),
        },
        Col {
            name: "query_tokens",
            kind: Kind::Plain,
            head: "q tok",
            show: Show::Right(6),
            get: |r| Val::U(r.s.tokens.query_tokens()),
        },
        Col {
            name: "context_tokens",
            kind: Kind::Plain,
            head: "kv tok",
            show: Show::Right(8),
            get: |r| Val::U(r.s.tokens.kv_tokens()),
        },
        Col {
            name: "",
            kind: Kind::Plain,
            head: "GB",
            show: Show::Right(7),
            get: |r| gb(r.s.estimate.bytes.total()),
        },
        Col {
            name: "bytes_total",
            kind: Kind::Plain,
            head: "bytes",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.total()),
        },
        Col {
            name: "bytes.weights",
            kind: Kind::Plain,
            head: "weights",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.weights),
        },
        Col {
            name: "bytes.routed_experts",
            kind: Kind::Plain,
            head: "experts",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.routed_experts),
        },
        Col {
            name: "bytes.kv_read",
            kind: Kind::Plain,
            head: "kv read",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.kv_read),
        },
        Col {
            name: "bytes.kv_write",
            kind: Kind::Plain,
            head: "kv write",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.kv_write),
        },
        Col {
            name: "bytes.lm_head",
            kind: Kind::Plain,
            head: "lm head",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.lm_head),
        },
        Col {
            name: "bytes.embedding",
            kind: Kind::Plain,
            head: "embedding",
            show: Show::No,
            get: |r| f(r.s.estimate.bytes.embedding),
        },
        Col {
            name: "experts.uniform",
            kind: Kind::Plain,
            head: "experts",
            show: Show::No,
            get: |r| f(r.s.estimate.experts.uniform),
        },
        Col {
            name: "experts.top_k_per_request",
            kind: Kind::Plain,
            head: "top-k/req",
            show: Show::No,
            get: |r| f(r.s.estimate.experts.top_k_per_request),
        },
        Col {
            name: "experts.peak_allows",
            kind: Kind::Plain,
            head: "peak allows",
            show: Show::No,
            get: |r| opt(r.s.experts_peak_allows),
        },
        Col {
            name: "experts.on_rank",
            kind: Kind::Plain,
            head: "on rank",
            show: Show::No,
            get: |r| f(r.s.estimate.experts.on_rank),
        },
        Col {
            name: "flops_total",
            kind: Kind::Plain,
            head: "flops",
            show: Show::No,
            get: |r| f(r.s.estimate.flops.total()),
        },
        Col {
            name: "flops.linear",
            kind: Kind::Plain,
            head: "linear",
            show: Show::No,
            get: |r| f(r.s.estimate.flops.linear),
        },
        Col {
            name: "flops.lm_head",
            kind: Kind::Plain,
            head: "lm head",
            show: Show::No,
            get: |r| f(r.s.estimate.flops.lm_head),
        },
        Col {
            name: "flops.attention",
            kind: Kind::Plain,
            head: "attention",
            show: Show::No,
            get: |r| f(r.s.estimate.flops.attention),
        },
        Col {
            name: "span",
            kind: Kind::Dur,
            head: "span",
            show: Show::Right(11),
            get: |r| Val::I(r.s.span_ns),
        },
        Col {
            name: "busy",
            kind: Kind::Dur,
            head: "busy",
            show: Show::Right(11),
            get: |r| Val::I(r.s.busy_ns),
        },
        Col {
            name: "gbps",
            kind: Kind::Plain,
            head: "GB/s",
            show: Show::Right(9),
            get: |r| f(r.s.rates.gbps),
        },
        Col {
            name: "pct_of_peak_gbps",
            kind: Kind::Plain,
            head: "% peak",
            show: Show::Right(7),
            get: |r| f(r.s.rates.pct_of_peak_gbps),
        },
        Col {
            name: "gbps_busy",
            kind: Kind::Plain,
            head: "busy GB/s",
            show: Show::Right(10),
            get: |r| f(r.s.rates.gbps_busy),
        },
        Col {
            name: "pct_of_peak_gbps_busy",
            kind: Kind::Plain,
            head: "% peak",
            show: Show::Right(7),
            get: |r| f(r.s.rates.pct_of_peak_gbps_busy),
        },
        Col {
            name: "tflops",
            kind: Kind::Plain,
            head: "TFLOP/s",
            show: Show::Right(8),
            get: |r| f(r.s.rates.tflops),
        },
        Col {
            name: "tflops_busy",
            kind: Kind::Plain,
            head: "busy TFLOP/s",
            show: Show::No,
            get: |r| f(r.s.rates.tflops_busy),
        },
        Col {
            name: "pct_of_peak_tflops",
            kind: Kind::Plain,
            head: "% peak",
            show: Show::Right(7),
            get: |r| opt(r.s.rates.pct_of_peak_tflops),
        },
        Col {
            name: "peak_gbps",
            kind: Kind::Plain,
            head: "peak GB/s",
            show: Show::No,
            get: |r| f(r.s.rates.peak_gbps),
        },
        Col {
            name: "peak_tflops",
            kind: Kind::Plain,
            head: "peak TFLOP/s",
            show: Show::No,
            get: |r| opt(r.s.rates.peak_tflops),
        },
        Col {
            name: "intensity",
            kind: Kind::Plain,
            head: "FLOP/B",
            show: Show::Right(7),
            get: |r| f(r.s.rates.intensity),
        },
        Col {
            name: "ridge",
            kind: Kind::Plain,
            head: "ridge",
            show: Show::No,
            get: |r| opt(r.s.rates.ridge),
        },
        Col {
            name: "bound",
            kind: Kind::Plain,
            head: "bound",
            show: Show::Left(7),
            get: |r| Val::Str(Cow::Borrowed(r.s.rates.bound.as_str())),
        },
        Col {
            name: "buckets.weights_us",
            kind: Kind::Plain,
            head: "gemm+moe µs",
            show: Show::No,
            get: |r| bucket_us(r, 0),
        },
        Col {
            name: "buckets.weights_gbps",
            kind: Kind::Plain,
            head: "gemm+moe GB/s",
            show: Show::Right(13),
            get: |r| bucket_gbps(r, 0),
        },
        Col {
            name: "buckets.kv_us",
            kind: Kind::Plain,
            head: "attn µs",
            show: Show::No,
            get: |r| bucket_us(r, 1),
        },
        Col {
            name: "buckets.kv_gbps",
            kind: Kind::Plain,
            head: "attn GB/s",
            show: Show::Right(9),
            get: |r| bucket_gbps(r, 1),
        },
        Col {
            name: "dtype",
            kind: Kind::Plain,
            head: "dtype",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.s.dtype)),
        },
        Col {
            name: "gpu",
            kind: Kind::Plain,
            head: "gpu",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.gpu)),
        },
    ]
}

/// The weights table's columns.
fn weight_columns<'a>() -> &'a [Col<TensorGroup>] {
    &[
        Col {
            name: "group",
            kind: Kind::Plain,
            head: "group",
            show: Show::Left(30),
            get: |g| Val::Str(Cow::Borrowed(&g.name)),
        },
        Col {
            name: "in_features",
            kind: Kind::Plain,
            head: "in",
            show: Show::Right(7),
            get: |g| Val::U(g.in_features),
        },
        Col {
            name: "out_features",
            kind: Kind::Plain,
            head: "out",
            show: Show::Right(7),
            get: |g| Val::U(g.out_features),
        },
        Col {
            name: "bias",
            kind: Kind::Plain,
            head: "bias",
            show: Show::No,
            get: |g| Val::Bool(g.bias),
        },
        Col {
            name: "per_layer",
            kind: Kind::Plain,
            head: "×/layer",
            show: Show::Right(7),
            get: |g| Val::U(g.per_layer),
        },
        Col {
            name: "layers",
            kind: Kind::Plain,
            head: "layers",
            show: Show::Right(6),
            get: |g| Val::U(g.layers),
        },
        Col {
            name: "format",
            kind: Kind::Plain,
            head: "format",
            show: Show::Left(14),
            get: |g| Val::Str(Cow::Owned(g.format.to_string())),
        },
        Col {
            name: "reads",
            kind: Kind::Plain,
            head: "reads",
            show: Show::Left(6),
            get: |g| Val::Str(Cow::Borrowed(g.reads.as_str())),
        },
        Col {
            name: "split",
            kind: Kind::Plain,
            head: "split",
            show: Show::Left(10),
            get: |g| {
                Val::Str(Cow::Borrowed(match g.split {
                    RankSplit::Column => "column",
                    RankSplit::Row => "row",
                    RankSplit::Replicated => "replicated",
                }))
            },
        },
        Col {
            name: "rank_in",
            kind: Kind::Plain,
            head: "rank in",
            show: Show::Right(7),
            get: |g| Val::U(g.rank_in),
        },
        Col {
            name: "rank_out",
            kind: Kind::Plain,
            head: "rank out",
            show: Show::Right(8),
            get: |g| Val::U(g.rank_out),
        },
        Col {
            name: "rank_per_layer",
            kind: Kind::Plain,
            head: "rank ×",
            show: Show::Right(6),
            get: |g| Val::U(g.rank_per_layer),
        },
        Col {
            name: "params",
            kind: Kind::Plain,
            head: "params",
            show: Show::Right(14),
            get: |g| Val::U(g.params()),
        },
        Col {
            name: "rank_bytes",
            kind: Kind::Plain,
            head: "rank bytes",
            show: Show::Right(16),
            get: |g| Val::F(g.rank_bytes()),
        },
    ]
}

/// `--weights`: the model's weights table.
fn write_weights(w: &mut Stdout, setup: &Setup, format: render::Format) -> io::Result<()> {
    let cols = weight_columns();
    let ctx = Ctx::default();
    match format {
        render::Format::Csv => render::csv_header(w, cols)?,
        render::Format::Table => render::table_header(w, cols)?,
        render::Format::Json => {}
    }
    for g in &setup.model.groups {
        render::row(w, format, cols, g, &ctx)?;
    }
    Ok(())
}

/// One JSON line: the columns' values, dotted names nested one level.
fn json_row(w: &mut impl Write, row: &Row<'_>) -> io::Result<()> {
    let mut top = serde_json::Map::new();
    let value = |v: Val<'_>| -> serde_json::Value {
        match v {
            Val::Null => serde_json::Value::Null,
            Val::Str(s) => serde_json::Value::String(s.into_owned()),
            Val::U(n) => n.into(),
            Val::I(n) => n.into(),
            Val::Bool(b) => b.into(),
            Val::F(x) => serde_json::Number::from_f64(x)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
        }
    };
    for c in columns().iter().filter(|c| !c.name.is_empty()) {
        let v = (c.get)(row);
        let entries: Vec<(String, serde_json::Value)> = match (c.kind, &v) {
            (Kind::Dur, Val::I(ns)) => vec![
                (format!("{}_us", c.name), value(Val::F(*ns as f64 / 1e3))),
                (format!("{}_ns", c.name), value(Val::I(*ns))),
            ],
            _ => vec![(c.name.to_string(), value(v))],
        };
        for (k, v) in entries {
            match k.split_once('.') {
                Some((outer, inner)) => {
                    let slot = top
                        .entry(outer.to_string())
                        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
                    if let serde_json::Value::Object(m) = slot {
                        m.insert(inner.to_string(), v);
                    }
                }
                None => {
                    top.insert(k, v);
                }
            }
        }
    }
    serde_json::to_writer(&mut *w, &top).map_err(io::Error::from)?;
    w.write_all(b"\n")
}

fn write_trace(
    w: &mut impl Write,
    t: &TraceRoofline,
    format: render::Format,
    first: bool,
) -> io::Result<()> {
    let cols = columns();
    let ctx = Ctx::default();
    if format == render::Format::Table {
        if !first {
            writeln!(w)?;
        }
        writeln!(
            w,
            "{} (rank {}): GPU {} (from {})",
            out::escape(&t.file),
            t.rank.map_or("-".to_string(), |r| r.to_string()),
            t.gpu,
            t.gpu_from
        )?;
        render::table_header(w, cols)?;
    }
    for s in &t.steps {
        let row = Row {
            file: &t.file,
            rank: t.rank,
            gpu: &t.gpu,
            s,
        };
        match format {
            render::Format::Json => json_row(w, &row)?,
            _ => render::row(w, format, cols, &row, &ctx)?,
        }
    }
    Ok(())
}

fn kv_bytes(name: &str) -> Result<u64, String> {
    match name {
        "bf16" | "bfloat16" | "fp16" | "float16" => Ok(2),
        "fp8" | "fp8_e4m3" | "fp8_e5m2" => Ok(1),
        "fp32" | "float32" => Ok(4),
        other => Err(format!(
            "--kv-dtype `{other}`: expected bf16, fp16, fp8 or fp32"
        )),
    }
}

fn setup(a: &RooflineArgs) -> Result<(Vec<PathBuf>, Setup), String> {
    let paths = kineto_trace::expand_paths(&a.traces).map_err(|e| e.to_string())?;
    let pattern = match &a.step_pattern {
        Some(p) => StepPattern::new(p).map_err(|e| e.to_string())?,
        None => StepPattern::builtin(),
    };
    let rules = Rules::load_or_builtin(a.rules.as_deref()).map_err(|e| e.to_string())?;
    let setup = model_setup(&a.model, &a.opts, pattern, rules)?;
    Ok((paths, setup))
}

/// The roofline's setup from a model config and its options, with the steps and kernel families of
/// `pattern` and `rules`; the model's notes go to stderr.
pub fn model_setup(
    config: &Path,
    a: &ModelOptions,
    pattern: StepPattern,
    rules: Rules,
) -> Result<Setup, String> {
    // A regular file, capped (tool-io's rules): a FIFO must not hang, nor /dev/zero grow.
    let text = tool_io::read_input_string(config, "model config", tool_io::caps::CONFIG)
        .map_err(|e| e.to_string())?;
    let quant = a
        .quant
        .as_deref()
        .map(QuantOverride::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    let run = RunOptions {
        tp: a.tp,
        ep: a.ep,
        quant,
    };
    let model =
        model_from_config(&text, &config.display().to_string(), &run).map_err(|e| e.to_string())?;
    let kv = match &a.kv_dtype {
        Some(d) => kv_bytes(d)?,
        None => model.activation_bytes,
    };
    let table = GpuTable::builtin();
    let gpu = match &a.gpu {
        Some(name) => GpuChoice::Named(Box::new(
            table
                .identify(name, None, None)
                .ok()
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "--gpu `{name}` is not in the GPU table ({})",
                        table
                            .gpus()
                            .iter()
                            .map(|g| g.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?,
        )),
        None => GpuChoice::FromTrace,
    };
    for n in &model.notes {
        note(&format!("kineto: note: {n}"));
    }
    Ok(Setup {
        rules,
        model,
        kv_bytes: kv,
        pattern,
        gpu,
        table,
    })
}

/// Analyses each trace in order and hands it to `each` (with its position); says on stderr, after
/// `who:`, what the rows do not show — the model's notes, steps the physics gate refused, a trace in
/// which no step matched, a trace that could not be read — and returns whether any but the notes
/// happened.
pub fn analyse_each(
    paths: &[PathBuf],
    setup: &Setup,
    who: &str,
    mut each: impl FnMut(usize, &TraceRoofline),
) -> bool {
    let mut failed = false;
    for (i, p) in paths.iter().enumerate() {
        failed |= judge(roofline::analyse(p, setup), who, |t| each(i, t));
    }
    failed
}

/// One trace's roofline handed to `each`, its notes, refused steps and a trace where no step matched named
/// on stderr; whether any of that fails the run.
pub fn judge(
    result: Result<TraceRoofline, roofline::Error>,
    who: &str,
    each: impl FnOnce(&TraceRoofline),
) -> bool {
    match result {
        Ok(t) => {
            each(&t);
            let mut failed = false;
            if t.steps.is_empty() && t.failures.is_empty() {
                note(&format!(
                    "{who}: {}: no step matched the step pattern",
                    t.file
                ));
                failed = true;
            }
            for n in &t.notes {
                note(&format!("{who}: note: {n}"));
            }
            for e in &t.failures {
                note(&format!("{who}: {e}"));
                failed = true;
            }
            failed
        }
        Err(e) => {
            note(&format!("{who}: {e}"));
            true
        }
    }
}

/// A trace's steps as the JSON objects `--json` prints, read back (what an HTML page embeds).
pub fn json_rows(t: &TraceRoofline) -> Vec<serde_json::Value> {
    let mut buf = Vec::new();
    if write_trace(&mut buf, t, render::Format::Json, true).is_err() {
        return Vec::new();
    }
    String::from_utf8_lossy(&buf)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs `kineto roofline`.
pub fn run(a: &RooflineArgs) -> ExitCode {
    let page = match a
        .html
        .as_deref()
        .map(|p| tool_io::Claim::new(p, a.overwrite))
        .transpose()
    {
        Ok(c) => c,
        Err(e) => {
            let hint = match e {
                tool_io::Error::Exists { .. } => "; pass --overwrite to replace it",
                _ => "",
            };
            note(&format!("kineto: {e}{hint}"));
            return ExitCode::from(2);
        }
    };
    let mut page_rows: Vec<serde_json::Value> = Vec::new();
    let (paths, setup) = match setup(a) {
        Ok(v) => v,
        Err(e) => {
            note(&format!("kineto: {e}"));
            return ExitCode::from(2);
        }
    };
    let format = if a.json {
        render::Format::Json
    } else if a.csv {
        render::Format::Csv
    } else {
        render::Format::Table
    };
    let mut w = out::stdout();
    if a.weights {
        if format == render::Format::Table {
            let m = &setup.model;
            let head = format!(
                "weights of {} per rank (tp {}, ep {}): {:.3} B parameters, {:.3} B active; ESTIMATED bytes",
                m.model_type,
                m.tp,
                m.ep,
                m.total_params() as f64 / 1e9,
                m.active_params() / 1e9
            );
            if let Err(e) = writeln!(w, "{head}") {
                out::write_failed(e);
            }
        }
        if let Err(e) = write_weights(&mut w, &setup, format) {
            out::write_failed(e);
        }
        out::finish(&mut w);
        return ExitCode::SUCCESS;
    }
    if format == render::Format::Csv
        && let Err(e) = render::csv_header(&mut w, columns())
    {
        out::write_failed(e);
    }
    if format == render::Format::Table {
        let m = &setup.model;
        let head = format!(
            "roofline: {} ({:.2} B parameters, {:.2} B active), tp {} ep {}; bytes and FLOPs ESTIMATED per rank, span and busy MEASURED, peaks CLAIM",
            m.model_type,
            m.total_params() as f64 / 1e9,
            m.active_params() / 1e9,
            m.tp,
            m.ep
        );
        if let Err(e) = writeln!(w, "{head}") {
            out::write_failed(e);
        }
    }
    let mut failed = analyse_each(&paths, &setup, "kineto", |i, t| {
        if let Err(e) = write_trace(&mut w, t, format, i == 0) {
            out::write_failed(e);
        }
        if page.is_some() {
            // The page's rows are the very text `--json` prints, read back.
            page_rows.extend(json_rows(t));
        }
    });
    out::finish(&mut w);
    if let Some(page) = page {
        let rows = serde_json::Value::Array(page_rows);
        let html = html_report::kineto_html(&html_report::KinetoInputs {
            budget: &[],
            top: None,
            roofline: Some(&rows),
        });
        if let Err(e) = page.write_bytes(html.as_bytes()) {
            note(&format!("kineto: {e}"));
            failed = true;
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
