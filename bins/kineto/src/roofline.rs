//! `kineto roofline`: per step and rank, ESTIMATED bytes and FLOPs from a model config (crate `roofline`
//! over `model-shapes`), MEASURED time from the trace, the rates against the GPU's CLAIMED peaks. Parses the
//! options, calls `roofline::analyse`, prints the `roofline` and `weights` tables of `kineto-tables`.

use crate::out::{self, Stdout, note};
use crate::render::{self, Ctx};
use crate::views;
use clap::Args;
use kineto_tables::RooflineRow;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use model_shapes::{GpuTable, QuantOverride, RunOptions, model_from_config};
use roofline::{GpuChoice, Setup, TraceRoofline};
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
    /// The GPU, by its name in the GPU table (default: from the trace's own GPU table:
    /// Kineto's deviceProperties, nsys TARGET_INFO_GPU, rocprofv3 and rocpd agents).
    #[arg(long, value_name = "NAME")]
    gpu: Option<String>,
    /// Query tokens of each step whose trace does not give them (its marker, GEMM shapes or graph
    /// capture); without, the terms that need them are reported unknown.
    #[arg(long, value_name = "N")]
    tokens: Option<u64>,
    /// Requests of each step whose trace does not give them.
    #[arg(long, value_name = "N")]
    batch: Option<u64>,
    /// KV tokens (Σ over the requests) of each step whose trace does not give them.
    #[arg(long, value_name = "N")]
    kv_tokens: Option<u64>,
    /// A directory of CUDA/HIP-graph capture traces (vLLM's graph_capture_rank_*, SGLang's *_bs_N_*,
    /// TraceLens's execution_details.json) giving the size of each graph replay; default: the
    /// capture_traces/ or graph_capture_profile/ directory beside each trace.
    #[arg(long, value_name = "DIR")]
    pub graph_captures: Option<PathBuf>,
}

impl ModelOptions {
    /// Whether every option is at its default (nothing that needs a model was asked for).
    pub fn is_default(&self) -> bool {
        self.quant.is_none()
            && self.tp == 1
            && self.ep == 1
            && self.kv_dtype.is_none()
            && self.gpu.is_none()
            && self.tokens.is_none()
            && self.batch.is_none()
            && self.kv_tokens.is_none()
            && self.graph_captures.is_none()
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
    #[arg(help = kineto_trace::native::TRACES_HELP, required_unless_present = "weights")]
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

/// `--weights`: the model's weights table.
fn write_weights(w: &mut Stdout, setup: &Setup, format: render::Format) -> io::Result<()> {
    let listing = render::Listing::new(kineto_tables::weight_columns(), views::WEIGHTS);
    let ctx = Ctx::default();
    match format {
        render::Format::Csv => listing.csv_header(w)?,
        render::Format::Table => listing.table_header(w)?,
        render::Format::Json => {}
    }
    for g in &setup.model.groups {
        listing.row(w, format, g, &ctx)?;
    }
    Ok(())
}

fn write_trace(
    w: &mut impl Write,
    t: &TraceRoofline,
    format: render::Format,
    first: bool,
) -> io::Result<()> {
    let listing = render::Listing::new(kineto_tables::roofline_columns(), views::ROOFLINE);
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
        listing.table_header(w)?;
    }
    for s in &t.steps {
        let row = RooflineRow {
            file: &t.file,
            rank: t.rank,
            gpu: &t.gpu,
            step: s,
        };
        listing.row(w, format, &row, &ctx)?;
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

/// The roofline's setup, the session that reads the traces with its pattern and rules (made once), and the
/// trace files the arguments name.
fn setup(a: &RooflineArgs) -> Result<(Vec<PathBuf>, Setup, kineto_trace::Session), String> {
    let pattern = match &a.step_pattern {
        Some(p) => StepPattern::new(p).map_err(|e| e.to_string())?,
        None => StepPattern::builtin(),
    };
    let rules = Rules::load_or_builtin(a.rules.as_deref()).map_err(|e| e.to_string())?;
    let setup = model_setup(&a.model, &a.opts, pattern, rules)?;
    let session = setup.session();
    let paths = session.expand(&a.traces).map_err(|e| e.to_string())?;
    Ok((paths, setup, session))
}

/// The model of a command that takes `--model` optionally (`doctor`, `report`): `None` without one; the
/// model flags without `--model`, or a config that cannot be read, are a usage error (exit 2), named for
/// `cmd`. Read before any trace, so a bad config is named at once.
pub fn optional_model(
    cmd: &str,
    config: Option<&Path>,
    a: &ModelOptions,
    pattern: &StepPattern,
    rules: &Rules,
) -> Result<Option<Setup>, std::process::ExitCode> {
    let Some(config) = config else {
        if !a.is_default() {
            note(&format!(
                "kineto {cmd}: --quant, --tp, --ep, --kv-dtype, --gpu, --tokens, --batch, --kv-tokens and \
                 --graph-captures describe the model: give --model CONFIG.json"
            ));
            return Err(std::process::ExitCode::from(2));
        }
        return Ok(None);
    };
    model_setup(config, a, pattern.clone(), rules.clone())
        .map(Some)
        .map_err(|e| {
            note(&format!("kineto {cmd}: {e}"));
            std::process::ExitCode::from(2)
        })
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
        given: roofline::Given {
            query_tokens: a.tokens,
            requests: a.batch,
            kv_tokens: a.kv_tokens,
        },
        captures: a.graph_captures.clone(),
    })
}

/// Analyses each trace (each rank of a file that holds several) in order and hands it to `each` (with its
/// position); says on stderr, after
/// `who:`, what the rows do not show — the model's notes, steps the physics gate refused, a trace in
/// which no step matched, a trace that could not be read — and returns whether any but the notes
/// happened.
pub fn analyse_each(
    session: &kineto_trace::Session,
    paths: &[PathBuf],
    setup: &Setup,
    who: &str,
    mut each: impl FnMut(usize, &TraceRoofline),
) -> bool {
    let mut failed = false;
    let mut i = 0;
    for p in paths {
        let ranks = match session.open_ranks(p) {
            Ok(ranks) => ranks,
            Err(e) => {
                failed |= judge(Err(roofline::Error::from(e)), who, |_| {});
                continue;
            }
        };
        for t in ranks {
            failed |= judge(roofline::analyse_trace(&t, setup), who, |t| each(i, t));
            i += 1;
        }
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
            if !t.incomplete.is_empty() {
                let steps: Vec<String> = t.incomplete.iter().map(usize::to_string).collect();
                note(&format!(
                    "{who}: note: {}: steps {} lack token counts some terms need (the trace's marker, GEMM shapes or graph capture do not give them; `tokens_from` says what did): those terms, listed in `unknown`, are null; give the counts with --tokens N (query tokens), --batch N (requests), --kv-tokens N (KV tokens)",
                    t.file,
                    steps.join(", ")
                ));
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
    let (paths, setup, session) = match setup(a) {
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
    let mut w = out::stdout(format);
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
        && let Err(e) = render::csv_header(&mut w, kineto_tables::roofline_columns())
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
    let mut failed = analyse_each(&session, &paths, &setup, "kineto", |i, t| {
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
            ..html_report::KinetoInputs::default()
        });
        match page.write_bytes(html.as_bytes()) {
            Ok(w) => out::written("kineto", &w),
            Err(e) => {
                note(&format!("kineto: {e}"));
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
