//! What each listing's text table shows: a view over its table's columns (`kineto-tables`), with headers
//! and widths. The CSV and JSON forms show every column; the table is for reading at a terminal.

use crate::render::{Cell, Fmt, left, rest, right};

/// `kineto steps`.
pub const STEPS: &[Cell] = &[
    right("step", "step", 4),
    left("name", "name", 22),
    left("phase", "phase", 7),
    right("query_tokens", "q tok", 6),
    right("lo_ns", "lo", 12),
    right("hi_ns", "hi", 12),
    right("period_ns", "period", 10),
    right("kernels", "kernels", 7),
    right("kernel_sum_ns", "sum", 11),
    right("kernel_union_ns", "union", 11),
    right("same_stream_overlaps", "ovl", 4),
];

/// `kineto kernels`: family (or `(unmatched)`), how it was matched, then the name, last so it can be long.
pub const KERNELS: &[Cell] = &[
    right("index", "kernel", 6),
    right("step", "step", 4),
    right("ts_ns", "ts", 12),
    right("dur_ns", "dur", 10),
    right("stream", "stream", 6),
    left("family", "family", 20).fmt(Fmt::NullAs("(unmatched)")),
    left("matched", "matched", 8),
    rest("name", "name").fmt(Fmt::Name),
];

/// `kineto budget`'s step columns (the bucket columns follow, one per bucket).
pub const BUDGET: &[Cell] = &[
    right("step", "step", 4),
    left("name", "name", 20),
    right("span_ns", "span", 12),
    right("idle_ns", "idle", 12),
];

/// `kineto top`.
pub const TOP: &[Cell] = &[
    right("count", "count", 7),
    right("total_ns", "total", 12),
    right("pct", "%", 6),
    right("mean_ns", "mean", 10),
    right("median_ns", "median", 10),
    right("max_ns", "max", 10),
    left("matched", "matched", 8),
    rest("name", "name").fmt(Fmt::Name),
];

/// `kineto annotations`.
pub const ANNOTATIONS: &[Cell] = &[
    right("count", "count", 8),
    right("total_ns", "total", 12),
    right("mean_ns", "mean", 10),
    right("gpu_count", "gpu count", 9),
    right("gpu_total_ns", "gpu total", 12),
    rest("name", "name"),
];

/// `kineto ranks`.
pub const RANKS: &[Cell] = &[
    left("quantity", "what", 14),
    right("min_ns", "min", 13),
    right("median_ns", "median", 13),
    right("max_ns", "max", 13),
    right("max_over_median_ns", "max−median", 13),
    left("min_rank", "min rank", 16),
    left("max_rank", "max rank", 16),
];

/// `kineto roofline`.
pub const ROOFLINE: &[Cell] = &[
    right("rank", "rank", 4),
    right("step", "step", 4),
    left("phase", "phase", 7),
    right("requests", "reqs", 5),
    right("query_tokens", "q tok", 6),
    right("context_tokens", "kv tok", 8),
    right("bytes_total", "GB", 7).fmt(Fmt::Giga),
    right("span_ns", "span", 11),
    right("busy_ns", "busy", 11),
    right("gbps", "GB/s", 9),
    right("pct_of_peak_gbps", "% peak", 7),
    right("gbps_busy", "busy GB/s", 10),
    right("pct_of_peak_gbps_busy", "% peak", 7),
    right("tflops", "TFLOP/s", 8),
    right("pct_of_peak_tflops", "% peak", 7),
    right("intensity", "FLOP/B", 7),
    left("bound", "bound", 7),
    right("buckets.weights_gbps", "gemm+moe GB/s", 13),
    right("buckets.kv_gbps", "attn GB/s", 9),
];

/// `kineto roofline --weights`.
pub const WEIGHTS: &[Cell] = &[
    left("group", "group", 30),
    right("in_features", "in", 7),
    right("out_features", "out", 7),
    right("per_layer", "×/layer", 7),
    right("layers", "layers", 6),
    left("format", "format", 14),
    left("reads", "reads", 6),
    left("split", "split", 10),
    right("rank_in", "rank in", 7),
    right("rank_out", "rank out", 8),
    right("rank_per_layer", "rank ×", 6),
    right("params", "params", 14),
    right("rank_bytes", "rank bytes", 16),
];

/// `kineto doctor`: the finding, where, how much, then the evidence (the command follows each row).
pub const DOCTOR: &[Cell] = &[
    left("finding", "finding", 18),
    right("rank", "rank", 5),
    right("time_at_stake_ns", "at stake", 14),
    right("share_pct", "%", 7),
    left("origin", "origin", 9),
    left("step_list", "steps", 12),
    rest("evidence", "evidence"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate as t;
    use crate::render::Listing;

    #[test]
    fn every_view_shows_columns_of_its_table() {
        let unknown = [
            ("steps", Listing::unknown(t::step_columns(), STEPS)),
            ("kernels", Listing::unknown(t::gpu_op_columns(), KERNELS)),
            ("budget", Listing::unknown(t::step_columns(), BUDGET)),
            ("top", Listing::unknown(t::top_columns(), TOP)),
            (
                "annotations",
                Listing::unknown(t::annotation_stats_columns(), ANNOTATIONS),
            ),
            ("ranks", Listing::unknown(t::rank_columns(), RANKS)),
            (
                "roofline",
                Listing::unknown(t::roofline_columns(), ROOFLINE),
            ),
            ("weights", Listing::unknown(t::weight_columns(), WEIGHTS)),
            ("doctor", Listing::unknown(t::doctor_columns(), DOCTOR)),
        ];
        for (view, cols) in unknown {
            assert!(cols.is_empty(), "{view}: {cols:?}");
        }
    }
}
