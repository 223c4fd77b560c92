//! The verdict rows of `kineto diff` (and the same rows of `provenance diff`): one [`VerdictRow`] per
//! compared number and phase, step time first (what the user feels), then idle and the buckets, then the
//! kernels, each judged by [`crate::verdict::judge`]; and the gate over them ([`Gated`]).
//!
//! Phases are never pooled: the steps of each phase (`Step.phase` as the step model gives it; steps without
//! one are the phase [`UNPHASED`]) are compared as their own budgets ([`crate::budget::compare`], with its
//! pairing of ranks), and each kernel's launches by phase. Kernels pair by [`crate::kernel_name::normalise`]
//! over every rank of a side, so two captures without step markers — one window each, holding different
//! numbers of iterations — still say which kernels changed, while their step time is inconclusive, saying why.

use serde::Serialize;

use crate::budget::{self, BudgetStep};
use crate::verdict::{Call, Judged, Method, judge};
use crate::{Comparison, Row};

/// The phase of steps the step model gave none.
pub const UNPHASED: &str = "unphased";

/// The name `kineto budget` gives the one step of a trace without step markers.
const WHOLE_TRACE: &str = "(whole trace)";

/// What the gate fails on, in words (rows of a window without step markers are not gated: their time
/// follows how much work the capture held).
pub const GATE_RULE: &str = "A fail-above-PCT gate fails a row whose slowdown is significant (the interval \
     lies above 0) and whose Δ % is above PCT, or that has no interval (fewer than 3 samples a side) and a Δ % \
     above PCT; it fails when nothing was compared, when a rank or number is in one run only (unless missing \
     ones are allowed), and when the runs are judged not comparable (unless that is allowed)";

/// One compared number of one phase: the change, its interval and the call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictRow {
    /// Always `verdict`: the rows of `--json` say what they are.
    pub kind: &'static str,
    /// `step_time`, `idle`, `bucket`, `kernel` (or `benchmark`).
    pub metric: &'static str,
    /// The bucket, kernel (normalised) or benchmark; `None` for the step time and idle.
    pub name: Option<String>,
    /// Where: a rank (`rank 0`), or `all ranks` for kernels.
    pub place: String,
    /// The steps' phase, or [`UNPHASED`].
    pub phase: String,
    /// The change and the call.
    #[serde(flatten)]
    pub judged: Judged,
    /// Whether the two runs can be compared (from their provenance; true with a note when unknown).
    pub comparable: bool,
    /// Whether the gate judges this row: false for a window without step markers, whose time follows how
    /// much work the capture held.
    pub gated: bool,
}

impl VerdictRow {
    /// The row of `metric` (`name`) at `place` in `phase`, judged: comparable and gated until told
    /// otherwise ([`Comparability::apply`], a window without step markers).
    pub fn new(
        metric: &'static str,
        name: Option<String>,
        place: String,
        phase: String,
        judged: Judged,
    ) -> VerdictRow {
        VerdictRow {
            kind: "verdict",
            metric,
            name,
            place,
            phase,
            judged,
            comparable: true,
            gated: true,
        }
    }

    /// How the gate names this row: `rank 0 decode step_time`, `all ranks unphased kernel volta_sgemm_#_nn`.
    pub fn label(&self) -> String {
        self.label_with(" ")
    }

    /// The row's place, phase, metric and name (when it has one), joined by `sep`.
    pub fn label_with(&self, sep: &str) -> String {
        let mut parts = vec![self.place.as_str(), self.phase.as_str(), self.metric];
        parts.extend(self.name.as_deref());
        parts.join(sep)
    }

    /// Whether this is the verdict on `row` of phase `phase`'s budget comparison.
    pub fn judges(&self, phase: &str, row: &Row) -> bool {
        let (metric, name) = metric_of_key(&row.key);
        self.phase == phase
            && self.place == row.place
            && self.metric == metric
            && self.name.as_deref() == name
    }

    /// Whether a fail-above-`pct` gate fails this row ([`GATE_RULE`]).
    pub fn fails_above(&self, pct: f64) -> bool {
        if !self.gated {
            return false;
        }
        let without_interval = self.judged.ci_low_pct.is_none();
        self.judged.fails_above(pct)
            || (without_interval && self.judged.delta_pct.is_some_and(|d| d > pct))
    }
}

/// One kernel launch of a run: where it ran, its step's phase, its name and duration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelLaunch {
    /// The phase of the step it was launched in (`None`: unphased).
    pub phase: Option<String>,
    /// The kernel's name as the trace gives it.
    pub name: String,
    /// Its duration, µs.
    pub dur_us: f64,
}

/// The phases of both sides, in order of first appearance (old, then new).
fn phases<'a>(old: &'a [BudgetStep], new: &'a [BudgetStep]) -> Vec<Option<&'a str>> {
    let mut out: Vec<Option<&str>> = Vec::new();
    for s in old.iter().chain(new) {
        let p = s.phase.as_deref();
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn phase_name(p: Option<&str>) -> String {
    p.unwrap_or(UNPHASED).to_owned()
}

/// The metric and name a budget comparison's row is judged as, by its key: `span_us` the step time,
/// `idle_us` idle, any other key the bucket of that name.
pub fn metric_of_key(key: &str) -> (&'static str, Option<&str>) {
    match key {
        "span_us" => ("step_time", None),
        "idle_us" => ("idle", None),
        k => ("bucket", Some(k)),
    }
}

/// The verdict of one compared row of a phase's budget comparison.
fn row_verdict(r: &Row, phase: &str, method: Method) -> VerdictRow {
    let values = |s: &crate::Samples| s.iter().map(|(_, v)| *v).collect::<Vec<_>>();
    let mut judged = judge(&values(&r.old_samples), &values(&r.new_samples), method);
    let (metric, name) = metric_of_key(&r.key);
    let name = name.map(str::to_owned);
    let whole = |s: &crate::Samples| s.iter().any(|(l, _)| l == WHOLE_TRACE);
    // A window's span, idle and bucket times follow how much work the capture held: no verdict, no gate.
    let window = whole(&r.old_samples) || whole(&r.new_samples);
    if window {
        judged.reasons.push(
            "a capture without step markers is one window, whose work may differ between the runs: \
             compare its kernels, or mark steps"
                .to_owned(),
        );
        judged.verdict = Call::Inconclusive;
    }
    VerdictRow {
        gated: !window,
        ..VerdictRow::new(metric, name, r.place.clone(), phase.to_owned(), judged)
    }
}

/// Two runs' budgets compared phase by phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseDiff {
    /// The verdict rows: step time, then idle, then buckets, each over every phase.
    pub rows: Vec<VerdictRow>,
    /// What the old run has and the new one lacks (`place`, `place: key`, with `phase: ` before them for
    /// phased steps).
    pub only_in_old: Vec<String>,
    /// … the other way.
    pub only_in_new: Vec<String>,
    /// Each phase's budget comparison (the per-bucket rows of means and spreads).
    pub phases: Vec<(String, Comparison)>,
}

/// Two runs' budgets, phase by phase ([`PhaseDiff`]). An error names the side whose ranks clash.
pub fn budget_verdicts(
    old: &[BudgetStep],
    new: &[BudgetStep],
    method: Method,
) -> Result<PhaseDiff, String> {
    let mut rows = Vec::new();
    let (mut only_old, mut only_new) = (Vec::new(), Vec::new());
    let mut compared = Vec::new();
    for p in phases(old, new) {
        let of = |side: &[BudgetStep]| {
            side.iter()
                .filter(|s| s.phase.as_deref() == p)
                .cloned()
                .collect::<Vec<_>>()
        };
        let (o, n) = (of(old), of(new));
        let name = phase_name(p);
        let c: Comparison = budget::compare(&o, &n)?;
        rows.extend(c.rows.iter().map(|r| row_verdict(r, &name, method)));
        // What one run lacks is named with its phase, when it has one (`decode: rank 1`).
        let listed = |x: &String| match p {
            Some(_) => format!("{name}: {x}"),
            None => x.clone(),
        };
        only_old.extend(c.only_in_old.iter().map(listed));
        only_new.extend(c.only_in_new.iter().map(listed));
        // A phase one run lacks: each of its ranks is listed by the comparison (`decode: rank 0`).
        compared.push((name, c));
    }
    // Step time first, then idle, then buckets; within each, phase order then the comparison's order.
    rows.sort_by_key(|r| match r.metric {
        "step_time" => 0,
        "idle" => 1,
        _ => 2,
    });
    Ok(PhaseDiff {
        rows,
        only_in_old: only_old,
        only_in_new: only_new,
        phases: compared,
    })
}

/// Two runs' kernel launches: per phase and normalised name, the verdict on the per-launch durations;
/// names in one run only are listed (`kernel NAME (phase)`). Rows by the time they took in both runs,
/// most first.
pub fn kernel_verdicts(
    old: &[KernelLaunch],
    new: &[KernelLaunch],
    method: Method,
) -> (Vec<VerdictRow>, Vec<String>, Vec<String>) {
    type Groups = std::collections::BTreeMap<(String, String), Vec<f64>>;
    let group = |side: &[KernelLaunch]| {
        let mut g = Groups::new();
        for k in side {
            g.entry((
                phase_name(k.phase.as_deref()),
                crate::kernel_name::normalise(&k.name),
            ))
            .or_default()
            .push(k.dur_us);
        }
        g
    };
    let (o, n) = (group(old), group(new));
    let mut rows = Vec::new();
    let (mut only_old, mut only_new) = (Vec::new(), Vec::new());
    let listed = |(phase, name): &(String, String)| format!("kernel {name} ({phase})");
    for (key, ov) in &o {
        match n.get(key) {
            Some(nv) => {
                let total: f64 = ov.iter().chain(nv).sum();
                rows.push((
                    total,
                    VerdictRow::new(
                        "kernel",
                        Some(key.1.clone()),
                        "all ranks".to_owned(),
                        key.0.clone(),
                        judge(ov, nv, method),
                    ),
                ));
            }
            None => only_old.push(listed(key)),
        }
    }
    only_new.extend(n.keys().filter(|k| !o.contains_key(*k)).map(listed));
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    (
        rows.into_iter().map(|(_, r)| r).collect(),
        only_old,
        only_new,
    )
}

/// Whether two runs can be compared, and why (or why not, or that nobody could tell).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Comparability {
    /// False when a provenance record shows a difference that moves times (another GPU, driver,
    /// throttling, …).
    pub comparable: bool,
    /// The reasons, each a sentence; notes (no record) too.
    pub reasons: Vec<String>,
}

impl Comparability {
    /// From the two runs' provenance records: `judge` (the provenance crate's) when both have one; else
    /// comparable, with a note naming the side(s) without a record, since nothing could be checked.
    pub fn of_records(
        old: Option<&serde_json::Value>,
        new: Option<&serde_json::Value>,
        judge: impl FnOnce(&serde_json::Value, &serde_json::Value) -> Comparability,
    ) -> Comparability {
        if let (Some(o), Some(n)) = (old, new) {
            return judge(o, n);
        }
        let missing: Vec<&str> = [("OLD", old.is_none()), ("NEW", new.is_none())]
            .into_iter()
            .filter(|(_, m)| *m)
            .map(|(s, _)| s)
            .collect();
        Comparability {
            comparable: true,
            reasons: vec![format!(
                "no provenance record for {}: comparability not checked",
                missing.join(" and ")
            )],
        }
    }

    /// [`Comparability::of_records`] judged by the provenance crate ([`provenance::diff::comparable`]): what
    /// `kineto diff` and `provenance diff` of benchmark results both print beside their verdicts.
    #[cfg(feature = "provenance")]
    pub fn of_provenance(
        old: Option<&serde_json::Value>,
        new: Option<&serde_json::Value>,
    ) -> Comparability {
        Comparability::of_records(old, new, |o, n| {
            let c = provenance::diff::comparable(o, n);
            Comparability {
                comparable: c.comparable,
                reasons: c.reasons,
            }
        })
    }

    /// Marks every row with this comparability: `comparable`, and the reasons added to each row's.
    pub fn apply(&self, rows: &mut [VerdictRow]) {
        for r in rows {
            r.comparable = self.comparable;
            r.judged.reasons.extend(self.reasons.iter().cloned());
        }
    }
}

/// The gate's options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GateOptions {
    /// The threshold, %.
    pub fail_above: step_stats::Threshold,
    /// Ranks, numbers or phases in one run only do not fail.
    pub allow_missing: bool,
    /// Runs judged not comparable do not fail.
    pub allow_incomparable: bool,
}

/// The gate's row of `kineto diff --json` and `provenance diff --json` (`kind: "gate"`), the text output's
/// line beside the reasons it gives: both from [`Gated::reasons`], computed once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateRow {
    /// Always `gate`.
    pub kind: &'static str,
    /// Whether the gate passes: no reason to fail.
    pub passed: bool,
    /// `PASS: …`, or `FAIL: ` and every reason joined by `. `: the line the text output ends with.
    pub line: String,
    /// Every reason the gate fails, each a sentence; empty on a pass.
    pub reasons: Vec<String>,
}

/// The gate's judgement of a diff's verdict rows ([`GATE_RULE`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gated {
    /// The options.
    pub gate: GateOptions,
    /// Step-time (or benchmark) rows judged: places (ranks and phases, or benchmarks) the runs share.
    pub compared: usize,
    /// The failing rows' labels.
    pub failing: Vec<String>,
    /// Why the runs are not comparable (empty when they are).
    pub incomparable: Vec<String>,
    /// What one run lacks: old only, new only.
    pub only_in_old: Vec<String>,
    /// … new only.
    pub only_in_new: Vec<String>,
}

impl Gated {
    /// Judges `rows` with what is in one run only and the runs' comparability.
    pub fn judge(
        gate: GateOptions,
        rows: &[VerdictRow],
        only_in_old: &[String],
        only_in_new: &[String],
        comparability: &Comparability,
    ) -> Gated {
        Gated {
            gate,
            // Kernels pair over every rank: runs sharing no rank share no step time, whatever kernels match.
            compared: rows
                .iter()
                .filter(|r| matches!(r.metric, "step_time" | "benchmark"))
                .count(),
            failing: rows
                .iter()
                .filter(|r| r.fails_above(gate.fail_above.pct()))
                .map(VerdictRow::label)
                .collect(),
            incomparable: if comparability.comparable {
                Vec::new()
            } else {
                comparability.reasons.clone()
            },
            only_in_old: only_in_old.to_vec(),
            only_in_new: only_in_new.to_vec(),
        }
    }

    /// Every reason the gate fails; empty for a pass.
    pub fn reasons(&self) -> Vec<String> {
        // Nothing compared and what one run lacks are the one rule every diff's gate follows
        // (`step_stats::Verdict`, [`crate::MISSING_RULE`]); the failing rows and comparability are this gate's.
        let shared = step_stats::Verdict {
            gate: step_stats::Gate {
                fail_above: self.gate.fail_above,
                allow_missing: self.gate.allow_missing,
            },
            compared: self.compared,
            failing: Vec::new(),
            only_in_old: self.only_in_old.clone(),
            only_in_new: self.only_in_new.clone(),
        }
        .reasons();
        let mut out = Vec::new();
        if !self.failing.is_empty() {
            out.push(format!(
                "{} row(s) slower by more than {} % (significant, or with no interval): {}",
                self.failing.len(),
                self.gate.fail_above,
                self.failing.join("; ")
            ));
        }
        if !self.incomparable.is_empty() && !self.gate.allow_incomparable {
            out.push(format!(
                "the runs are not comparable: {} (unless that is allowed)",
                self.incomparable.join("; ")
            ));
        }
        shared.into_iter().chain(out).collect()
    }

    /// Whether the gate passes.
    pub fn passed(&self) -> bool {
        self.reasons().is_empty()
    }

    /// `PASS: …` or `FAIL: …`, every reason given.
    pub fn line(&self) -> String {
        self.line_of(&self.reasons())
    }

    /// The gate's row of `--json` ([`GateRow`]): its pass, line and reasons from one list of reasons.
    pub fn row(&self) -> GateRow {
        let reasons = self.reasons();
        GateRow {
            kind: "gate",
            passed: reasons.is_empty(),
            line: self.line_of(&reasons),
            reasons,
        }
    }

    /// The line of a gate failing for `reasons` (passing when there are none).
    fn line_of(&self, reasons: &[String]) -> String {
        if reasons.is_empty() {
            format!(
                "PASS: {} step time(s) compared, no row significantly slower by more than {} %",
                self.compared, self.gate.fail_above
            )
        } else {
            format!("FAIL: {}", reasons.join(". "))
        }
    }
}
