//! KL1 bandwidth: achieved GB/s per kernel family per serving step, from the profiler windows of a KL1
//! server (the Kineto traces of every rank, listed with their sha256 in a manifest).
//!
//! What it is: the seed-004 analysis rebuilt. For each known capture ([`captures::CAPTURES`]) and rank it
//! splits the trace into steps (the server's step annotations, [`rules`]), classifies every kernel into a
//! family and bucket (the rule table, `rules/kl1.toml` by default), and reports per step: SP1's exclusive
//! time budget three ways, MoE wall-time unions, per-family union and sum, and — dividing bytes ESTIMATED
//! by `kl1-shapes` from a model spec by durations MEASURED in the trace — the GB/s of the dense decode
//! launches, the LM head, router and mHC pre-norm, the sparse-MoE decode layers, the prefill expert path and
//! the reconstruct kernels; per rank, the mean of every number. The output keeps the seed's JSON keys and
//! nesting; every key is labelled MEASURED, ESTIMATED or CLAIM ([`labels`]). Its tests analyse synthetic
//! windows with known GB/s, written by the `kl1-window-gen` crate.
//!
//! What it is not: a trace parser (that is `kineto-trace`), a byte model (that is `kl1-shapes`), or a
//! measurement of DRAM traffic: no trace records how many distinct experts a step's rows picked, so the
//! routed-expert figures are given at stated expert counts, and every GB/s is of a profiled run.
//!
//! The formats it reads are the contract in `docs/kl1-window.md`; the numbers it writes are described in
//! `docs/kl1-bandwidth.md`.
//!
//! ```
//! use kl1_bandwidth::{Kl1Rules, analyze};
//! use kl1_shapes::Spec;
//!
//! let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/windows/demo");
//! let report = analyze(&[demo], &Spec::builtin(), &Kl1Rules::builtin(), None)?;
//! let decode = &report.windows[0].captures[0];
//! assert_eq!(decode.label, "prof-short-b1:decode");
//! // ESTIMATED bytes of the four dense launches of every layer / their MEASURED time, mean over steps.
//! let gbps = decode.ranks[0].mean["dense.all.gbps"];
//! assert!(gbps > 150.0 && gbps < Spec::builtin().gpu().spec_bandwidth_gbps);
//! # Ok::<(), kl1_bandwidth::Error>(())
//! ```
#![deny(missing_docs)]

mod analysis;
pub mod captures;
pub mod diff;
mod error;
pub mod labels;
pub mod manifest;
mod physics;
pub mod report;
pub mod rules;
pub mod spread;
pub mod steps;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use kl1_shapes::Spec;
use rayon::prelude::*;

pub use captures::{CAPTURES, CaptureKind, KnownCapture};
pub use error::Error;
pub use labels::{FIELD_LABELS, FieldLabel, Label};
pub use manifest::{MANIFEST, ManifestRow};
pub use report::{CaptureReport, RankReport, Report, WindowReport};
pub use rules::{KL1_RULES_TOML, KL1_STEP_PATTERN, Kl1Rules, Prefill};

use analysis::{Ctx, Fault};
use manifest::{Entry, Window};

/// What a unit of work is: a trace to analyse, or a skipped capture's file whose sha256 is still checked.
enum Job<'w> {
    Analyse {
        window: &'w Window,
        entry: &'w Entry,
        kind: CaptureKind,
    },
    Hash {
        window: &'w Window,
        entry: &'w Entry,
    },
}

/// Analyses windows: every known capture of each, every rank, in parallel.
///
/// `progress` (if given) is called with (traces done, traces in all) after each trace; it may be called from
/// any thread. The first error in window, capture-table and rank order is returned, whatever order the
/// parallel work finished in.
pub fn analyze(
    windows: &[PathBuf],
    spec: &Spec,
    rules: &Kl1Rules,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Report, Error> {
    let ctx = Ctx::new(spec, rules)?;
    let mut loaded: Vec<Window> = Vec::with_capacity(windows.len());
    let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in windows {
        let w = manifest::load(dir)?;
        if let Some(first) = names.insert(w.name.clone(), w.root.clone()) {
            return Err(Error::DuplicateWindow {
                name: w.name,
                first,
                second: dir.clone(),
            });
        }
        loaded.push(w);
    }

    let mut jobs: Vec<Job<'_>> = Vec::new();
    for w in &loaded {
        let mut known: Vec<&Entry> = w.entries.iter().collect();
        known.sort_by_key(|e| (captures::position(&e.label), e.rank));
        for e in known {
            if let Some(c) = captures::capture(&e.label) {
                jobs.push(Job::Analyse {
                    window: w,
                    entry: e,
                    kind: c.kind,
                });
            }
        }
        for e in &w.skipped {
            jobs.push(Job::Hash {
                window: w,
                entry: e,
            });
        }
    }
    let total = jobs.len();
    let done = AtomicUsize::new(0);
    let results: Vec<Result<Option<RankReport>, Error>> = jobs
        .par_iter()
        .map(|job| {
            let r = match job {
                Job::Analyse {
                    window,
                    entry,
                    kind,
                } => analyse_rank(&ctx, window, entry, *kind).map(Some),
                Job::Hash { window, entry } => check_sha(window, entry).map(|()| None),
            };
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(p) = progress {
                p(n, total);
            }
            r
        })
        .collect();

    let mut by_window: Vec<WindowReport> = loaded
        .iter()
        .map(|w| WindowReport {
            name: w.name.clone(),
            captures: Vec::new(),
            skipped: w.skipped_labels(),
        })
        .collect();
    for (job, result) in jobs.iter().zip(results) {
        let Some(rank) = result? else { continue };
        let Job::Analyse {
            window,
            entry,
            kind,
        } = job
        else {
            continue;
        };
        let wi = loaded
            .iter()
            .position(|w| std::ptr::eq(w, *window))
            .unwrap_or(0);
        let caps = &mut by_window[wi].captures;
        match caps.iter_mut().find(|c| c.label == entry.label) {
            Some(c) => c.ranks.push(rank),
            None => caps.push(CaptureReport {
                label: entry.label.clone(),
                kind: *kind,
                ranks: vec![rank],
            }),
        }
    }
    let report = Report {
        constants: constants(&ctx)?,
        windows: by_window,
    };
    report.check_finite()?;
    Ok(report)
}

fn check_sha(window: &Window, entry: &Entry) -> Result<(), Error> {
    let actual = manifest::sha256_file(&entry.path).map_err(|error| Error::Io {
        path: entry.path.clone(),
        error,
    })?;
    if actual != entry.sha256 {
        return Err(sha_differs(window, entry, &actual, ""));
    }
    Ok(())
}

/// The manifest error for a file whose sha256 is not the manifest's; `more` is appended to the reason.
fn sha_differs(window: &Window, entry: &Entry, actual: &str, more: &str) -> Error {
    Error::Manifest {
        window: window.name.clone(),
        reason: format!(
            "{MANIFEST} row {} ({} rank {}): {}: sha256 {actual} differs from the manifest's {}{more}",
            entry.row,
            entry.label,
            entry.rank,
            relative(window, &entry.path),
            entry.sha256
        ),
    }
}

fn relative(window: &Window, path: &Path) -> String {
    path.strip_prefix(&window.root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Parses one rank's trace, checks it against the manifest, and analyses its steps of `kind`.
fn analyse_rank(
    ctx: &Ctx<'_>,
    window: &Window,
    entry: &Entry,
    kind: CaptureKind,
) -> Result<RankReport, Error> {
    let (wname, label, rank) = (window.name.clone(), entry.label.clone(), entry.rank);
    let rank_err = |reason: String| Error::Rank {
        window: wname.clone(),
        label: label.clone(),
        rank,
        reason,
    };
    let opts = kineto_trace::Options {
        salvage: false,
        sha256: true,
        // Files are already processed in parallel, one per rayon thread.
        feed: kineto_trace::Feed::Inline,
        ..kineto_trace::Options::default()
    };
    let parsed = match kineto_trace::parse_file(&entry.path, &opts) {
        Ok(p) => p,
        Err(error) => {
            // A file changed or cut after the manifest was written is a manifest error first: the parser
            // stopped before it could finish the hash, so hash the file on its own.
            if let Ok(actual) = manifest::sha256_file(&entry.path)
                && actual != entry.sha256
            {
                return Err(sha_differs(
                    window,
                    entry,
                    &actual,
                    "; the file was changed after the manifest was written (it does not parse either)",
                ));
            }
            return Err(Error::Trace {
                window: wname,
                label,
                rank,
                error: Box::new(error),
            });
        }
    };
    let file = relative(window, &entry.path);
    let sha = parsed.sha256.clone().unwrap_or_default();
    if sha != entry.sha256 {
        return Err(sha_differs(window, entry, &sha, ""));
    }
    let trace = &parsed.trace;
    if let Some(r) = trace.header.rank
        && r != rank
    {
        return Err(rank_err(format!(
            "{file} says it is rank {r} (distributedInfo.rank), the manifest says rank {rank}"
        )));
    }
    let st = steps::steps(trace, ctx.rules);
    let mut per: Vec<(u64, BTreeMap<String, f64>)> = Vec::new();
    let (mut of_kind, mut small, mut overlaps) = (0usize, 0usize, 0u64);
    let mut dropped: BTreeMap<String, u64> = BTreeMap::new();
    for s in st.steps.iter().filter(|s| s.phase == kind.as_str()) {
        of_kind += 1;
        if kind == CaptureKind::Prefill && s.rows.is_some_and(|r| r < ctx.rules.prefill().min_rows)
        {
            small += 1;
        }
        if s.period.is_none() {
            let why = s.no_period.unwrap_or(steps::DropReason::LastStep);
            *dropped.entry(why.as_str().to_string()).or_default() += 1;
            continue;
        }
        match analysis::step_row(ctx, kind, s) {
            Ok(Some(row)) => {
                overlaps = overlaps.saturating_add(s.same_stream_overlaps);
                per.push((s.index, row.values));
            }
            Ok(None) => {}
            Err(Fault::Step { step, reason }) => {
                return Err(Error::Step {
                    window: wname,
                    label,
                    rank,
                    step,
                    reason,
                });
            }
            Err(Fault::NonFinite { step, field, value }) => {
                return Err(Error::NonFinite {
                    window: wname,
                    label,
                    rank,
                    step,
                    field,
                    value,
                });
            }
        }
    }
    if let Some(&n) = st.empty_markers.get(kind.as_str()) {
        of_kind += n as usize;
        *dropped
            .entry(steps::DropReason::NoKernels.as_str().to_string())
            .or_default() += n;
    }
    if per.is_empty() {
        return Err(rank_err(format!(
            "{file}: no complete {kind} steps ({} step annotations match `{}`; {} steps with kernels, {of_kind} of \
             them {kind}; {small} under prefill.min_rows; dropped for having no period: {}){}",
            st.markers,
            ctx.rules.step_pattern().as_str(),
            st.steps.len(),
            if dropped.is_empty() {
                "none".to_string()
            } else {
                dropped
                    .iter()
                    .map(|(why, n)| format!("{n} ({why})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if st.warnings.is_empty() {
                String::new()
            } else {
                format!("; marker warnings: {}", st.warnings.join("; "))
            }
        )));
    }
    let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
    for (_, row) in &per {
        let rows = row.get("rows").copied().unwrap_or(0.0) as u64;
        *hist.entry(rows).or_default() += 1;
    }
    let (mean, mean_steps) = mean_over_present(per.iter().map(|(_, r)| r));
    Ok(RankReport {
        rank,
        file,
        file_sha256: sha,
        steps: per.len(),
        rows_hist: hist.into_iter().collect(),
        mean,
        mean_steps,
        step_index: per.iter().map(|(i, _)| *i).collect(),
        per_step: per.into_iter().map(|(_, r)| r).collect(),
        kernels_outside_steps: st.kernels_outside,
        kernels_outside_steps_ms: st.kernels_outside_ns as f64 / 1e6,
        same_stream_overlaps: overlaps,
        steps_dropped: dropped,
    })
}

/// The mean of every key over the rows that have it, and, for each key some rows lack, how many rows have
/// it. (The seed filled a missing key with 0, so one step without an LM-head kernel halved its mean.)
fn mean_over_present<'a>(
    rows: impl Iterator<Item = &'a BTreeMap<String, f64>> + Clone,
) -> (BTreeMap<String, f64>, BTreeMap<String, u64>) {
    let total = rows.clone().count() as u64;
    let mut acc: BTreeMap<&str, (f64, u64)> = BTreeMap::new();
    for row in rows {
        for (k, v) in row {
            let e = acc.entry(k.as_str()).or_default();
            e.0 += v;
            e.1 += 1;
        }
    }
    let mean = acc
        .iter()
        .map(|(k, (sum, n))| (k.to_string(), sum / *n as f64))
        .collect();
    let partial = acc
        .iter()
        .filter(|(_, (_, n))| *n < total)
        .map(|(k, (_, n))| (k.to_string(), *n))
        .collect();
    (mean, partial)
}

/// A constant as a JSON number, or an error naming it: `json!(f64::NAN)` would silently be `null`, out of
/// reach of [`Report::check_finite`].
fn finite(name: &str, x: f64) -> Result<serde_json::Value, Error> {
    serde_json::Number::from_f64(x)
        .map(serde_json::Value::Number)
        .ok_or_else(|| Error::Output {
            reason: format!("constant `constants.{name}` is {x}, not a finite number"),
        })
}

/// The constants block: what the spec makes of one rank's bytes, the GPU's bandwidths with their labels, the
/// rules' prefill structure, and the label of every per-step key. Every number is checked finite as it is
/// made ([`finite`]).
fn constants(ctx: &Ctx<'_>) -> Result<serde_json::Value, Error> {
    use serde_json::json;
    let spec = ctx.spec;
    let gpu = spec.gpu();
    let bytes = &ctx.bytes;
    let dense = bytes
        .dense
        .iter()
        .map(|l| {
            let v = finite(&format!("dense_mb_per_layer.{}", l.name), l.bytes() / 1e6)?;
            Ok((l.name.to_string(), v))
        })
        .collect::<Result<serde_json::Map<String, serde_json::Value>, Error>>()?;
    // The seed's list shape, `[low, high]`: scripts written for it read `source_read_gbps[1]` as the claimed
    // read figure (240 GB/s on GB10). Both come from the GPU table's first read bandwidth labelled CLAIM;
    // the list is empty when it has none.
    let claim = gpu
        .read_bandwidths
        .iter()
        .find(|r| r.label == model_shapes::BandwidthLabel::Claim);
    let source_read = match claim {
        Some(r) => vec![
            finite("source_read_gbps[0]", r.low_gbps)?,
            finite("source_read_gbps[1]", r.high_gbps)?,
        ],
        None => Vec::new(),
    };
    let source_read_label = match claim {
        Some(r) => format!(
            "CLAIM: [low, high] of the GPU table's read bandwidth `{}` (the seed's shape; [1] is the figure it used)",
            r.id
        ),
        None => "CLAIM: empty, the GPU table has no read bandwidth labelled CLAIM".to_string(),
    };
    let reads = gpu
        .read_bandwidths
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let at = |k: &str| format!("gpu.read_bandwidths[{i}].{k}");
            Ok(json!({
                "id": r.id, "label": r.label.to_string(),
                "low_gbps": finite(&at("low_gbps"), r.low_gbps)?,
                "high_gbps": finite(&at("high_gbps"), r.high_gbps)?,
                "source": provenance_text(&r.provenance), "note": r.note,
            }))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let ceilings = ctx
        .ceilings
        .iter()
        .map(|c| {
            let key = format!("unique_max_at_{}", c.key);
            let v = finite(&format!("smoe_ceilings_gbps.{key}"), c.gbps)?;
            Ok((key, v))
        })
        .collect::<Result<serde_json::Map<String, serde_json::Value>, Error>>()?;
    let p = ctx.rules.prefill();
    let k_arg: serde_json::Map<String, serde_json::Value> = rules::K_ARG
        .iter()
        .map(|(f, pos)| (f.to_string(), json!(pos)))
        .collect();
    Ok(json!({
        "status": format!(
            "ESTIMATED bytes (kl1-shapes, spec {}); MEASURED kineto durations (profiled run); CLAIM bandwidths \
             (the GPU table's specified and claimed figures). GB/s = ESTIMATED bytes / MEASURED time.",
            spec.name()
        ),
        "labels": {
            "mean_k": "ESTIMATED", "expert_gu_mb": "ESTIMATED", "expert_down_mb": "ESTIMATED",
            "shared_expert_mb": "ESTIMATED", "dense_mb_per_layer": "ESTIMATED", "lm_head_mb": "ESTIMATED",
            "router_mb": "ESTIMATED", "mhc_mb": "ESTIMATED",
            "gb10_spec_gbps": "CLAIM (the vendor's specified bandwidth of the spec's GPU)",
            "source_read_gbps": source_read_label,
            "source_decode_gbps": "CLAIM: empty, the GPU table holds no decode-rate claim and none is invented",
            "gpu.spec_gbps": "CLAIM", "gpu.read_bandwidths": "each entry's own label (MEASURED or CLAIM)",
            "smoe_ceilings_gbps": "CLAIM (the figures smoe.unique_max_at_* are computed at)",
            "spec": "input: the spec's values, each cited or assumed in the spec file",
            "prefill": "input: the KL1 prefill structure (the command's prefill options)",
            "per-step keys": "see field_labels",
        },
        "mean_k": finite("mean_k", kl1_shapes::mean_routed_k(spec))?,
        "expert_gu_mb": finite("expert_gu_mb", bytes.expert.gate_up / 1e6)?,
        "expert_down_mb": finite("expert_down_mb", bytes.expert.down / 1e6)?,
        "shared_expert_mb": finite("shared_expert_mb", bytes.shared_expert / 1e6)?,
        "dense_mb_per_layer": dense,
        "lm_head_mb": finite("lm_head_mb", bytes.lm_head / 1e6)?,
        "router_mb": finite("router_mb", bytes.router / 1e6)?,
        "mhc_mb": finite("mhc_mb", bytes.mhc_prenorm / 1e6)?,
        "gb10_spec_gbps": finite("gb10_spec_gbps", gpu.spec_bandwidth_gbps)?,
        "source_read_gbps": source_read,
        "source_decode_gbps": [],
        "gpu": {
            "name": gpu.name,
            "spec_gbps": finite("gpu.spec_gbps", gpu.spec_bandwidth_gbps)?,
            "spec_label": "CLAIM",
            "spec_source": provenance_text(&gpu.spec_bandwidth_provenance),
            "read_bandwidths": reads,
        },
        "smoe_ceilings_gbps": ceilings,
        "spec": {
            "name": spec.name(),
            "origin": spec.origin(),
            "description": spec.description(),
            "moe_layers": spec.model().moe_layers,
            "top_k": spec.model().top_k,
            "ranks": spec.parallelism().ranks,
            "assumed_fields": spec.assumed_fields(),
        },
        "rules": {
            "origin": ctx.rules.origin(),
            "step_pattern": ctx.rules.step_pattern().as_str(),
            "k_arg": k_arg,
        },
        "prefill": { "full_layers": p.full_layers, "suffix_rows": p.suffix_rows, "min_rows": p.min_rows },
        "field_labels": labels::FIELD_LABELS,
    }))
}

fn provenance_text(p: &model_shapes::Citation) -> String {
    match p {
        model_shapes::Citation::Cited { reference, at, .. } => format!("{reference}: {at}"),
        model_shapes::Citation::Assumed { reason } => format!("assumed: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_constant_is_an_error_naming_it_not_null() {
        assert_eq!(finite("x", 1.5).ok(), Some(serde_json::json!(1.5)));
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            match finite("gpu.spec_gbps", bad) {
                Err(Error::Output { reason }) => {
                    assert!(reason.contains("constants.gpu.spec_gbps"), "{reason}");
                }
                other => panic!("expected an output error, got {other:?}"),
            }
        }
        // What this guards against: the `json!` macro turns a NaN into `null`.
        assert_eq!(serde_json::json!(f64::NAN), serde_json::Value::Null);
    }
}
