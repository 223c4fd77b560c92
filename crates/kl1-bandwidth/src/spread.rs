//! Per-step spread of every KL1 number, read from the report as the tool wrote it (its JSON).
//!
//! [`rank_series`] walks a report's `windows → capture → ranks` once and gives each rank's steps with their
//! labels; [`key_spreads`] applies `step_stats::spread` (min, p50, p90, max, count, mean and the outlier
//! steps under `step_stats::OUTLIER_RULE`) to each number. Working from the JSON rather than
//! [`crate::Report`] lets the same code read a report written by an older run (`diff`) and keeps every number
//! a reader sees equal to the one in the file.

use serde_json::{Map, Value};
pub use step_stats::{OUTLIER_RULE, Outlier, Spread};

/// A report whose JSON does not have the shape `docs/kl1-bandwidth.md` describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    /// The JSON path of the offending value, e.g. `windows.demo.prof-short-b1:decode.ranks.0.per_step[1]`.
    pub path: String,
    /// What was expected there.
    pub expected: &'static str,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not a kl1-bandwidth report: `{}` should be {}",
            self.path, self.expected
        )
    }
}

impl std::error::Error for ShapeError {}

/// One rank of one capture: its steps in report order.
#[derive(Debug, Clone)]
pub struct RankSeries<'a> {
    /// Window name (the key under `windows`).
    pub window: &'a str,
    /// Capture label, e.g. `prof-short-b1:decode`.
    pub capture: &'a str,
    /// `decode` or `prefill` (empty when the report does not say).
    pub kind: &'a str,
    /// The rank, as the report's key spells it.
    pub rank: &'a str,
    /// The rank's `mean` object (the tool's own means).
    pub mean: &'a Map<String, Value>,
    /// One label per step: the step's annotation number from `step_index`, else its position.
    pub steps: Vec<String>,
    /// The `per_step` objects, aligned with `steps`.
    pub per_step: Vec<&'a Map<String, Value>>,
}

impl RankSeries<'_> {
    /// `(step label, value)` of `key` over the steps that have it as a number.
    pub fn values(&self, key: &str) -> Vec<(String, f64)> {
        self.steps
            .iter()
            .zip(&self.per_step)
            .filter_map(|(label, step)| Some((label.clone(), step.get(key)?.as_f64()?)))
            .collect()
    }

    /// Where this rank lives, for row labels: `window/capture/rank N`.
    pub fn place(&self) -> String {
        format!("{}/{}/rank {}", self.window, self.capture, self.rank)
    }
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ShapeError> {
    v.as_object().ok_or_else(|| ShapeError {
        path: path.to_owned(),
        expected: "an object",
    })
}

/// Every rank of every capture of every window, in the report's order.
pub fn rank_series(report: &Value) -> Result<Vec<RankSeries<'_>>, ShapeError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(Map::new);
    let root = object(report, "(top level)")?;
    let windows = object(
        root.get("windows").ok_or(ShapeError {
            path: "windows".into(),
            expected: "present",
        })?,
        "windows",
    )?;
    let mut out = Vec::new();
    for (window, captures) in windows {
        for (capture, cap) in object(captures, &format!("windows.{window}"))? {
            let at = format!("windows.{window}.{capture}");
            let cap = object(cap, &at)?;
            let kind = cap.get("kind").and_then(Value::as_str).unwrap_or("");
            let Some(ranks) = cap.get("ranks") else {
                continue;
            };
            for (rank, r) in object(ranks, &format!("{at}.ranks"))? {
                let at = format!("{at}.ranks.{rank}");
                let r = object(r, &at)?;
                let mean = match r.get("mean") {
                    Some(m) => object(m, &format!("{at}.mean"))?,
                    None => empty,
                };
                let per_step: Vec<&Map<String, Value>> = match r.get("per_step") {
                    None => Vec::new(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .enumerate()
                        .map(|(i, s)| object(s, &format!("{at}.per_step[{i}]")))
                        .collect::<Result<_, _>>()?,
                    Some(_) => {
                        return Err(ShapeError {
                            path: format!("{at}.per_step"),
                            expected: "an array",
                        });
                    }
                };
                let index = r.get("step_index").and_then(Value::as_array);
                let steps = (0..per_step.len())
                    .map(|i| match index.and_then(|a| a.get(i)) {
                        Some(Value::Number(n)) => n.to_string(),
                        _ => format!("#{i}"),
                    })
                    .collect();
                out.push(RankSeries {
                    window,
                    capture,
                    kind,
                    rank,
                    mean,
                    steps,
                    per_step,
                });
            }
        }
    }
    Ok(out)
}

/// The KL1 numbers a reader compares first: every GB/s (`*.gbps`, `*gbps_if_*`), SP1's exclusive time
/// budget (`sp1.*`, ms) and the step period.
pub fn is_headline_key(key: &str) -> bool {
    key.contains("gbps") || key.starts_with("sp1.") || key == "period_ms"
}

/// The spread of each key of `series` that `keep` accepts, in the order of the rank's `mean` object (then any
/// key only the steps have), skipping keys with no finite value.
pub fn key_spreads(series: &RankSeries<'_>, keep: impl Fn(&str) -> bool) -> Vec<(String, Spread)> {
    let mut keys: Vec<&str> = series.mean.keys().map(String::as_str).collect();
    for step in &series.per_step {
        for k in step.keys() {
            if !series.mean.contains_key(k) && !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .filter(|k| keep(k))
        .filter_map(|k| Some((k.to_owned(), step_stats::spread(&series.values(k))?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({"type": "kl1-bandwidth", "windows": {"w": {"c:decode": {"kind": "decode", "ranks": {
            "0": {"mean": {"dense.all.gbps": 195.0, "dense.all.launches": 160.0},
                  "step_index": [1000, 1001, 1002, 1003, 1004],
                  "per_step": [{"dense.all.gbps": 190.0, "dense.all.launches": 160.0},
                               {"dense.all.gbps": 200.0, "dense.all.launches": 160.0},
                               {"dense.all.gbps": 195.0, "dense.all.launches": 160.0},
                               {"dense.all.gbps": 196.0, "dense.all.launches": 160.0},
                               {"dense.all.gbps": 120.0, "dense.all.launches": 160.0}]},
            "1": {"mean": {}, "per_step": []}}}}}})
    }

    #[test]
    fn spreads_name_the_outlier_step_by_its_annotation_number() {
        let r = report();
        let series = rank_series(&r).unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].place(), "w/c:decode/rank 0");
        let s = key_spreads(&series[0], is_headline_key);
        assert_eq!(s.len(), 1, "launches is not a headline key");
        let (key, sp) = &s[0];
        assert_eq!(key, "dense.all.gbps");
        // sorted 120, 190, 195, 196, 200: median 195; |x − 195| = 75, 5, 0, 1, 5 → sorted 0,1,5,5,75 → MAD 5
        assert_eq!(
            (sp.count, sp.min, sp.p50, sp.max, sp.mad),
            (5, 120.0, 195.0, 200.0, 5.0)
        );
        assert_eq!(sp.mean, (190.0 + 200.0 + 195.0 + 196.0 + 120.0) / 5.0);
        assert_eq!(sp.outliers.len(), 1);
        assert_eq!(sp.outliers[0].step, "1004"); // 75 > 15
        assert!(key_spreads(&series[1], |_| true).is_empty());
    }

    #[test]
    fn a_wrong_shape_names_its_path() {
        let bad = json!({"windows": {"w": {"c": {"ranks": {"0": {"per_step": [1]}}}}}});
        let e = rank_series(&bad).unwrap_err();
        assert_eq!(e.path, "windows.w.c.ranks.0.per_step[0]");
        assert!(rank_series(&json!([])).is_err());
        assert_eq!(rank_series(&json!({})).unwrap_err().path, "windows");
    }

    #[test]
    fn steps_without_index_are_numbered_by_position() {
        let r = json!({"windows": {"w": {"c": {"ranks": {"0": {"per_step": [{"x": 1.0}, {"x": 2.0}]}}}}}});
        let series = rank_series(&r).unwrap();
        assert_eq!(series[0].steps, vec!["#0", "#1"]);
        assert_eq!(
            series[0].values("x"),
            vec![("#0".to_owned(), 1.0), ("#1".to_owned(), 2.0)]
        );
    }
}
