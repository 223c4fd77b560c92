//! What kind of number each output key is: MEASURED, ESTIMATED or an upstream CLAIM.
//!
//! * **MEASURED**: read from the trace — a duration or time union Kineto recorded, a count of kernels, a
//!   launch grid, a template argument, or a number the server wrote into its step annotation. Profiled runs
//!   are slower than unprofiled ones; a MEASURED duration is of the profiled run.
//! * **ESTIMATED**: computed from the model spec by `kl1-shapes` (bytes, expected expert counts), or a GB/s
//!   that divides such bytes by a MEASURED time, or a count derived from a CLAIM bandwidth.
//! * **CLAIM**: a figure someone states (a vendor's specified bandwidth, a figure without a method), taken
//!   from the GPU table as it is.
//!
//! Every per-step key matches one pattern of [`FIELD_LABELS`] (a test checks it on generated windows); `*`
//! stands for any text within one dot-separated segment.

use serde::Serialize;

/// The kind of a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Label {
    /// Read from the trace.
    #[serde(rename = "MEASURED")]
    Measured,
    /// Computed from the spec, or from spec bytes over measured time.
    #[serde(rename = "ESTIMATED")]
    Estimated,
    /// Stated by someone else.
    #[serde(rename = "CLAIM")]
    Claim,
}

impl Label {
    /// `MEASURED`, `ESTIMATED` or `CLAIM`.
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Measured => "MEASURED",
            Label::Estimated => "ESTIMATED",
            Label::Claim => "CLAIM",
        }
    }
}

/// A per-step key pattern, its label and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldLabel {
    /// The key, `*` standing for text within one segment.
    pub key: &'static str,
    /// Its kind.
    pub label: Label,
    /// What it is, with its unit.
    pub meaning: &'static str,
}

const fn m(key: &'static str, meaning: &'static str) -> FieldLabel {
    FieldLabel {
        key,
        label: Label::Measured,
        meaning,
    }
}

const fn e(key: &'static str, meaning: &'static str) -> FieldLabel {
    FieldLabel {
        key,
        label: Label::Estimated,
        meaning,
    }
}

/// Every per-step key, first match wins.
pub const FIELD_LABELS: &[FieldLabel] = &[
    m(
        "period_ms",
        "the next step's first kernel start − this step's first kernel start, ms",
    ),
    m(
        "rows",
        "live rows (tokens) of the step, from its annotation",
    ),
    m(
        "sp1.*",
        "exclusive time of a bucket (rules' buckets; each instant split equally among active buckets), ms; `idle`: no kernel running",
    ),
    m(
        "l2pf_apart.*",
        "as sp1.*, with l2pf kernels in a bucket of their own, ms",
    ),
    m("no_l2pf.*", "as sp1.*, without l2pf kernels, ms"),
    m(
        "moe_union_ms",
        "time covered by router, top-k and expert kernels, ms",
    ),
    m("expert_union_ms", "time covered by expert kernels, ms"),
    m(
        "router_topk_union_ms",
        "time covered by router and top-k kernels, ms",
    ),
    m(
        "family_union_ms.*",
        "time covered by at least one kernel of the family, ms",
    ),
    m(
        "family_sum_ms.*",
        "sum of the family's kernel durations, ms",
    ),
    m("dense.*.launches", "launches in the step"),
    m("dense.*.us_per_step", "sum of their durations, µs"),
    e(
        "dense.*.mb_per_launch",
        "weight bytes one launch reads on this rank, 10⁶ B (docs/formulas.md §8, §10, §11)",
    ),
    e(
        "dense.*.mb_per_step",
        "weight bytes the launches read in the step, 10⁶ B (§8, §9)",
    ),
    e("dense.*.gbps", "ESTIMATED bytes / MEASURED time, GB/s"),
    m("smoe.rows", "live rows, from the step annotation"),
    m("smoe.requests", "requests, from the step annotation"),
    e(
        "smoe.graph_slots",
        "expert slots the decode graph was captured for: MEASURED gate|up grid x / the spec's I_rank/128",
    ),
    e(
        "smoe.graph_rows",
        "rows the graph was captured for: slots / (the spec's top_k + 1)",
    ),
    m(
        "smoe.span_ms",
        "Σ over MoE layers of first expert kernel start → down end, ms",
    ),
    m("smoe.gu_ms", "Σ gate|up kernel durations, ms"),
    m(
        "smoe.down_after_gu_ms",
        "Σ time the down kernel runs after gate|up ended, ms",
    ),
    m("smoe.rot_ms", "Σ rotation kernel durations, ms"),
    e(
        "smoe.shared_runs",
        "reads of the shared expert a layer: ceil(rows / 8) (§5)",
    ),
    e(
        "smoe.unique_uniform",
        "expected distinct routed experts a rank reads, uniform independent routing: an upper bound (§6)",
    ),
    e(
        "smoe.gbps_if_uniform",
        "layers × moe(unique_uniform, rows) bytes / span, GB/s (§7)",
    ),
    e(
        "smoe.gbps_if_6_per_request",
        "as gbps_if_uniform with min(unique_uniform, top_k × requests) experts, GB/s",
    ),
    e(
        "smoe.unique_max_at_*",
        "routed experts a layer's mean span could have read at the named GB/s (a CLAIM: the GPU's specified or claimed bandwidth) after the shared expert (§7)",
    ),
    m("tf.*.layers", "MoE layers in the group"),
    m("tf.full.rows", "rows of the full layers: the step's rows"),
    e(
        "tf.suffix.rows",
        "rows of the suffix layers: prefill.suffix_rows of the rules (a configured assumption)",
    ),
    e(
        "tf.*.unique_uniform",
        "expected distinct routed experts for those rows, uniform routing (§6)",
    ),
    m("tf.*.gu_ms", "Σ gate|up kernel durations, ms"),
    m("tf.*.down_ms", "Σ down kernel durations, ms"),
    e(
        "tf.*.gu_gbps_if_uniform",
        "layers × unique_uniform × mean gate|up bytes / gate|up time, GB/s (§3, §4)",
    ),
    e(
        "tf.*.down_gbps_if_uniform",
        "layers × unique_uniform × mean down bytes / down time, GB/s",
    ),
    m(
        "tf.*.span_ms",
        "Σ over the layers of gate|up start → down end, ms",
    ),
    m("reconstruct.*.launches", "launches"),
    m(
        "reconstruct.*.K",
        "K from the kernels' template (mean when launches differ)",
    ),
    m("reconstruct.*.us", "sum of durations, µs"),
    e(
        "reconstruct.*.gb",
        "bytes read + written by the launches, 10⁹ B (§12)",
    ),
    e(
        "reconstruct.*.gbps",
        "(read + written) ESTIMATED bytes / MEASURED time, GB/s (§12)",
    ),
];

fn segment_matches(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((pre, post)) => {
            text.len() >= pre.len() + post.len() && text.starts_with(pre) && text.ends_with(post)
        }
    }
}

/// The label pattern a per-step key falls under.
pub fn label_of(key: &str) -> Option<&'static FieldLabel> {
    FIELD_LABELS.iter().find(|f| {
        let p: Vec<&str> = f.key.split('.').collect();
        // A trailing `*` segment swallows the rest (bucket names have no dots, but family names in
        // `family_sum_ms.*` come from the rule file, which forbids dots too; this is only defensive).
        let t: Vec<&str> = key.splitn(p.len(), '.').collect();
        p.len() == t.len() && p.iter().zip(&t).all(|(a, b)| segment_matches(a, b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_by_hand() {
        let l = |k: &str| label_of(k).map(|f| f.label);
        assert_eq!(l("dense.wq_a+wkv.gbps"), Some(Label::Estimated));
        assert_eq!(l("dense.wq_b.us_per_step"), Some(Label::Measured));
        assert_eq!(l("sp1.routed_moe"), Some(Label::Measured));
        assert_eq!(l("smoe.unique_max_at_273"), Some(Label::Estimated));
        assert_eq!(l("tf.suffix.rows"), Some(Label::Estimated));
        assert_eq!(l("tf.full.rows"), Some(Label::Measured));
        // A MEASURED grid divided by spec constants.
        assert_eq!(l("smoe.graph_slots"), Some(Label::Estimated));
        assert_eq!(l("smoe.graph_rows"), Some(Label::Estimated));
        assert_eq!(l("reconstruct.5120x1280.K"), Some(Label::Measured));
        assert_eq!(l("nonsense"), None);
        assert_eq!(l("dense.gbps"), None);
    }
}
