//! What the analysis must report for each step, computed from the kernels as generated: by role, not by
//! name, pattern or layer grouping, so the analysis's classification and grouping are tested rather than
//! repeated.

use std::collections::BTreeMap;

use kineto_trace::interval::union_within;
use kl1_bandwidth::CaptureKind;
use kl1_shapes::expected_distinct_experts_per_rank;
use serde::Serialize;

use crate::plan::Plan;
use crate::timeline::{Kern, Laid, Model, Role, graph_rows};

/// What the analysis must report for one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepTruth {
    /// The step's index (its annotation's `#N`).
    pub index: u64,
    /// `decode` or `prefill`.
    pub phase: String,
    /// Rows.
    pub rows: u64,
    /// Requests.
    pub requests: u64,
    /// Whether a capture of this step's phase analyses it (it has a next step; a prefill chunk has at least
    /// `prefill.min_rows` rows).
    pub analysed: bool,
    /// Last kernel end − first kernel start, ms: Σ of the `sp1.*` keys must equal it.
    pub span_ms: f64,
    /// Output key → value, as the analysis must report it.
    pub expected: BTreeMap<String, f64>,
}

/// One trace's truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceTruth {
    /// `cell:capture`.
    pub label: String,
    /// Rank.
    pub rank: u64,
    /// File, relative to the window.
    pub file: String,
    /// Its steps.
    pub steps: Vec<StepTruth>,
}

/// What was generated and what the analysis must find in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Truth {
    /// The spec the bytes come from.
    pub spec: String,
    /// The plan.
    pub plan: Plan,
    /// Per trace.
    pub traces: Vec<TraceTruth>,
}

/// The values the analysis must report, from the kernels by role.
pub(crate) fn step_truths(m: &Model<'_>, steps: &[Laid]) -> Vec<StepTruth> {
    let bounds: Vec<(i64, i64)> = steps
        .iter()
        .map(|s| {
            (
                s.kernels.iter().map(|k| k.start).min().unwrap_or(0),
                s.kernels.iter().map(Kern::end).max().unwrap_or(0),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let (lo, hi) = bounds[i];
        let next = bounds.get(i + 1).map(|b| b.0);
        let mut e: BTreeMap<String, f64> = BTreeMap::new();
        e.insert("rows".into(), s.plan.rows as f64);
        if let Some(n) = next {
            e.insert("period_ms".into(), ms(n - lo));
        }
        family_truths(s, (lo, hi), &mut e);
        match s.plan.phase {
            CaptureKind::Decode => decode_truths(m, s, &mut e),
            CaptureKind::Prefill => prefill_truths(m, s, &mut e),
        }
        let analysed =
            next.is_some() && (s.plan.phase == CaptureKind::Decode || s.plan.rows >= m.min_rows);
        out.push(StepTruth {
            index: s.index,
            phase: s.plan.phase.as_str().to_string(),
            rows: s.plan.rows,
            requests: s.plan.requests,
            analysed,
            span_ms: ms(hi - lo),
            expected: e,
        });
    }
    out
}

/// ns as ms.
fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// Bytes over ns: GB/s.
fn gbps(bytes: f64, ns: i64) -> f64 {
    bytes / ns as f64
}

/// Σ dur of the step's kernels of the roles `f` picks, ns.
fn role_ns(s: &Laid, f: &dyn Fn(&Role) -> bool) -> i64 {
    s.kernels.iter().filter(|k| f(&k.role)).map(|k| k.dur).sum()
}

/// How many of the step's kernels have the roles `f` picks.
fn role_count(s: &Laid, f: &dyn Fn(&Role) -> bool) -> usize {
    s.kernels.iter().filter(|k| f(&k.role)).count()
}

/// Each family's sum and union within the step's bounds, and the step's idle time (`sp1.idle`).
fn family_truths(s: &Laid, (lo, hi): (i64, i64), e: &mut BTreeMap<String, f64>) {
    let mut fams: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for k in &s.kernels {
        fams.entry(k.role.family())
            .or_default()
            .push((k.start, k.end()));
    }
    for (f, iv) in &fams {
        let total: i64 = iv.iter().map(|(a, b)| b - a).sum();
        e.insert(format!("family_sum_ms.{f}"), ms(total));
        e.insert(
            format!("family_union_ms.{f}"),
            ms(union_within(iv.iter().copied(), lo, hi)),
        );
    }
    let busy = union_within(s.kernels.iter().map(|k| (k.start, k.end())), lo, hi);
    e.insert("sp1.idle".into(), ms(hi - lo - busy));
}

/// A decode step's dense launches (each, all, LM head, router, mHC prenorm) and its sparse MoE layers.
fn decode_truths(m: &Model<'_>, s: &Laid, e: &mut BTreeMap<String, f64>) {
    let sum = |f: &dyn Fn(&Role) -> bool| role_ns(s, f);
    let count = |f: &dyn Fn(&Role) -> bool| role_count(s, f);
    let mut all_bytes = 0.0;
    for (j, (name, _, bytes)) in m.dense.iter().enumerate() {
        let n = count(&|r| *r == Role::Dense(j));
        let ns = sum(&|r| *r == Role::Dense(j));
        e.insert(format!("dense.{name}.launches"), n as f64);
        e.insert(format!("dense.{name}.us_per_step"), ns as f64 / 1e3);
        e.insert(format!("dense.{name}.gbps"), gbps(bytes * n as f64, ns));
        all_bytes += bytes * n as f64;
    }
    let dense = |r: &Role| matches!(r, Role::Dense(_));
    e.insert("dense.all.launches".into(), count(&dense) as f64);
    e.insert("dense.all.gbps".into(), gbps(all_bytes, sum(&dense)));
    e.insert(
        "dense.lm_head.gbps".into(),
        gbps(m.bytes.lm_head, sum(&|r| matches!(r, Role::Head { .. }))),
    );
    let nr = count(&|r| *r == Role::Router);
    e.insert("dense.router.launches".into(), nr as f64);
    e.insert(
        "dense.router.gbps".into(),
        gbps(m.bytes.router * nr as f64, sum(&|r| *r == Role::Router)),
    );
    let np = count(&|r| *r == Role::Prenorm);
    e.insert("dense.hc_prenorm.launches".into(), np as f64);
    e.insert(
        "dense.hc_prenorm.gbps".into(),
        gbps(
            m.bytes.mhc_prenorm * np as f64,
            sum(&|r| *r == Role::Prenorm),
        ),
    );
    // Sparse MoE: rotation start → down end of each layer, by role and order.
    let rots: Vec<&Kern> = s.kernels.iter().filter(|k| k.role == Role::Rot).collect();
    let gus: Vec<&Kern> = s.kernels.iter().filter(|k| k.role == Role::Gu).collect();
    let downs: Vec<&Kern> = s.kernels.iter().filter(|k| k.role == Role::Down).collect();
    let span: i64 = rots
        .iter()
        .zip(&downs)
        .map(|(r, d)| d.end() - r.start)
        .sum();
    let after: i64 = gus.iter().zip(&downs).map(|(g, d)| d.end() - g.end()).sum();
    let rows = s.plan.rows;
    let experts = expected_distinct_experts_per_rank(m.spec, rows);
    let layers = downs.len() as f64;
    e.insert(
        "smoe.gbps_if_uniform".into(),
        gbps(m.bytes.moe_layer_weight_bytes(experts, rows) * layers, span),
    );
    e.insert("smoe.span_ms".into(), ms(span));
    e.insert("smoe.gu_ms".into(), ms(gus.iter().map(|k| k.dur).sum()));
    e.insert("smoe.rot_ms".into(), ms(rots.iter().map(|k| k.dur).sum()));
    e.insert("smoe.down_after_gu_ms".into(), ms(after));
    let gr = graph_rows(rows);
    e.insert("smoe.graph_rows".into(), gr as f64);
    e.insert("smoe.graph_slots".into(), (gr * (m.top_k + 1)) as f64);
    e.insert("smoe.requests".into(), s.plan.requests as f64);
    e.insert("smoe.unique_uniform".into(), experts);
}

/// A prefill step's token-first MoE layers (full and suffix) and its reconstructions.
fn prefill_truths(m: &Model<'_>, s: &Laid, e: &mut BTreeMap<String, f64>) {
    for (tag, full) in [("full", true), ("suffix", false)] {
        let gu_ns = role_ns(s, &|r| *r == Role::TfGu { full });
        let dn_ns = role_ns(s, &|r| *r == Role::TfDown { full });
        let n = role_count(s, &|r| *r == Role::TfGu { full });
        if n == 0 {
            continue;
        }
        let rows = if full {
            s.plan.rows
        } else {
            m.suffix_rows.min(s.plan.rows)
        };
        let experts = expected_distinct_experts_per_rank(m.spec, rows);
        e.insert(format!("tf.{tag}.layers"), n as f64);
        e.insert(format!("tf.{tag}.rows"), rows as f64);
        e.insert(
            format!("tf.{tag}.gu_gbps_if_uniform"),
            gbps(experts * m.bytes.expert.gate_up * n as f64, gu_ns),
        );
        e.insert(
            format!("tf.{tag}.down_gbps_if_uniform"),
            gbps(experts * m.bytes.expert.down * n as f64, dn_ns),
        );
    }
    let mut rec: BTreeMap<String, (usize, f64, i64)> = BTreeMap::new();
    for k in &s.kernels {
        if let Role::Reconstruct { key, bytes } = &k.role {
            let x = rec.entry(key.clone()).or_default();
            x.0 += 1;
            x.1 += bytes;
            x.2 += k.dur;
        }
    }
    let (mut tb, mut tns, mut tn) = (0.0, 0i64, 0usize);
    for (key, (n, bytes, ns)) in &rec {
        e.insert(format!("reconstruct.{key}.launches"), *n as f64);
        e.insert(format!("reconstruct.{key}.gbps"), gbps(*bytes, *ns));
        tb += bytes;
        tns += ns;
        tn += n;
    }
    if tn > 0 {
        e.insert("reconstruct.all.launches".into(), tn as f64);
        e.insert("reconstruct.all.gbps".into(), gbps(tb, tns));
    }
}
