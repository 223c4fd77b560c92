//! Old report → new report: per capture, rank and number, old → new, Δ % and whether Δ stands out of the
//! per-step spread (`step_stats::EXCEEDS_RULE`); the fail-above-PCT verdict (`step_stats::FAIL_RULE`).
//!
//! Data only: rows and a verdict. Both inputs are the tool's JSON reports; the values compared are the
//! reports' own `mean` entries, so a row's old and new numbers are the ones each file holds. Nothing is
//! dropped silently: a capture, rank or number present on one side only is listed in
//! [`Diff::only_in_old`] / [`Diff::only_in_new`].

pub use run_compare::{
    Change, Comparison as Diff, EXCEEDS_RULE, FAIL_RULE, Gate, MISSING_RULE, Row as DiffRow,
    Verdict,
};
use run_compare::{Number, Partner, Place};
use serde_json::Value;

use crate::spread::{RankSeries, ShapeError, rank_series};

fn key_of<'a>(s: &RankSeries<'a>) -> (&'a str, &'a str, &'a str) {
    (s.window, s.capture, s.rank)
}

/// One rank of one capture as a table's place (`window/capture/rank N`): each number `keep` accepts that
/// the rank's `mean` holds as a number, the report's mean compared, its steps giving the spread.
fn place_of(s: &RankSeries<'_>, keep: &impl Fn(&str) -> bool) -> Place {
    Place {
        label: s.place(),
        steps: s.steps.clone(),
        numbers: s
            .mean
            .iter()
            .filter(|(k, _)| keep(k))
            .filter_map(|(key, value)| {
                Some(Number {
                    key: key.clone(),
                    reported: Some(value.as_f64()?),
                    samples: s.values(key),
                    absent_is_zero: false,
                })
            })
            .collect(),
    }
}

/// Compares every number `keep` accepts (e.g. [`crate::spread::is_headline_key`]) of every rank present in
/// both reports. Rows are in the new report's order, a rank's numbers by key; a rank pairs with the old
/// report's rank of the same window, capture and rank.
pub fn diff(old: &Value, new: &Value, keep: impl Fn(&str) -> bool) -> Result<Diff, ShapeError> {
    let old_series = rank_series(old)?;
    let new_series = rank_series(new)?;
    let partners: Vec<Option<Partner>> = new_series
        .iter()
        .map(|n| {
            let old = old_series.iter().position(|o| key_of(o) == key_of(n))?;
            Some(Partner {
                old,
                label: n.place(),
            })
        })
        .collect();
    let places = |series: &[RankSeries<'_>]| -> Vec<Place> {
        series.iter().map(|s| place_of(s, &keep)).collect()
    };
    // The report's `mean` is a JSON object, whose keys serde_json keeps in name order: the rows' order.
    Ok(run_compare::compare_paired(
        &places(&old_series),
        &places(&new_series),
        &partners,
        str::cmp,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spread::is_headline_key;
    use serde_json::json;

    fn rank(mean_gbps: f64, steps: &[f64]) -> Value {
        json!({"mean": {"dense.all.gbps": mean_gbps, "dense.all.launches": 160.0},
               "step_index": (0..steps.len()).map(|i| 1000 + i).collect::<Vec<_>>(),
               "per_step": steps.iter().map(|g| json!({"dense.all.gbps": g, "dense.all.launches": 160.0}))
                   .collect::<Vec<_>>()})
    }

    #[test]
    fn hand_made_pair() {
        // old rank 0: steps 190, 200 (mean 195, range 10); new rank 0: 170, 176 (mean 173, range 6)
        // old rank 1: 200, 210 (205, range 10);            new rank 1: 203, 209 (206, range 6)
        let old = json!({"windows": {"w": {"c:decode": {"ranks": {
            "0": rank(195.0, &[190.0, 200.0]), "1": rank(205.0, &[200.0, 210.0]),
            "2": rank(100.0, &[100.0])}}}}});
        let new = json!({"windows": {"w": {"c:decode": {"ranks": {
            "0": rank(173.0, &[170.0, 176.0]), "1": rank(206.0, &[203.0, 209.0])}},
            "c:prefill": {"ranks": {"0": rank(1.0, &[1.0])}}}}});
        let d = diff(&old, &new, is_headline_key).unwrap();
        assert_eq!(d.rows.len(), 2, "launches are not headline keys");
        let r0 = &d.rows[0];
        assert_eq!(
            (r0.place.as_str(), r0.key.as_str()),
            ("w/c:decode/rank 0", "dense.all.gbps")
        );
        assert_eq!((r0.change.old, r0.change.new), (195.0, 173.0));
        // (173 − 195) / 195 = −11.28 %; |−22| > max(10, 6)
        assert!((r0.change.delta_pct.unwrap() - (-22.0 / 195.0 * 100.0)).abs() < 1e-12);
        assert_eq!(r0.change.exceeds_spread, Some(true));
        let r1 = &d.rows[1];
        // (206 − 205) / 205 = +0.488 %; |1| ≤ 10: inside the spread
        assert!((r1.change.delta_pct.unwrap() - 100.0 / 205.0).abs() < 1e-12);
        assert_eq!(r1.change.exceeds_spread, Some(false));
        assert_eq!(d.only_in_old, vec!["w/c:decode/rank 2"]);
        assert_eq!(d.only_in_new, vec!["w/c:prefill/rank 0"]);
        // threshold 5 %: rank 0 fails (11.28 % and outside the spread); 12: nothing fails
        let failing = d.failing(5.0);
        assert_eq!(failing.len(), 1);
        assert_eq!(failing[0].place, "w/c:decode/rank 0");
        assert!(d.failing(12.0).is_empty());
        // rank 1 never fails: inside its spread even at 0 %
        assert_eq!(d.failing(0.0).len(), 1);
        // The gate also fails on rank 2 (lost) and the prefill capture (gained) unless they are allowed.
        let gate = |allow_missing| Gate {
            fail_above: step_stats::Threshold::new(12.0).unwrap(),
            allow_missing,
        };
        let v = d.verdict(gate(false));
        assert!(!v.passed(), "{}", v.line());
        assert!(v.line().contains("w/c:decode/rank 2") && v.line().contains("w/c:prefill/rank 0"));
        assert!(d.verdict(gate(true)).passed());
    }

    #[test]
    fn a_report_sharing_nothing_fails_the_gate() {
        let old = json!({"windows": {"w": {"a": {"ranks": {"0": rank(1.0, &[1.0])}}}}});
        let new = json!({"windows": {"w": {"b": {"ranks": {"0": rank(1.0, &[1.0])}}}}});
        let d = diff(&old, &new, is_headline_key).unwrap();
        let gate = Gate {
            fail_above: step_stats::Threshold::new(5.0).unwrap(),
            allow_missing: true,
        };
        let v = d.verdict(gate);
        assert!(
            !v.passed() && v.line().contains("nothing in common"),
            "{}",
            v.line()
        );
    }

    #[test]
    fn a_number_on_one_side_only_is_listed() {
        let old = json!({"windows": {"w": {"c": {"ranks": {"0": {"mean": {"a.gbps": 1.0}}}}}}});
        let new = json!({"windows": {"w": {"c": {"ranks": {"0": {"mean": {"b.gbps": 1.0}}}}}}});
        let d = diff(&old, &new, is_headline_key).unwrap();
        assert!(d.rows.is_empty());
        assert_eq!(d.only_in_old, vec!["w/c/rank 0: a.gbps"]);
        assert_eq!(d.only_in_new, vec!["w/c/rank 0: b.gbps"]);
    }

    #[test]
    fn a_mean_that_is_not_a_number_counts_as_absent() {
        // null is how JSON writes a NaN mean: the number is missing from that report, on either side (it
        // was dropped without a word when the new report's mean was null).
        let old = json!({"windows": {"w": {"c": {"ranks": {"0": {"mean": {"a.gbps": 1.0, "b.gbps": null}}}}}}});
        let new = json!({"windows": {"w": {"c": {"ranks": {"0": {"mean": {"a.gbps": null, "b.gbps": 2.0}}}}}}});
        let d = diff(&old, &new, is_headline_key).unwrap();
        assert!(d.rows.is_empty());
        assert_eq!(d.only_in_old, vec!["w/c/rank 0: a.gbps"]);
        assert_eq!(d.only_in_new, vec!["w/c/rank 0: b.gbps"]);
    }

    #[test]
    fn the_demo_window_against_itself_changes_nothing() {
        let demo =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/windows/demo");
        let report = crate::analyze(
            &[demo],
            &kl1_shapes::Spec::builtin(),
            &crate::Kl1Rules::builtin(),
            None,
        )
        .unwrap();
        let json = serde_json::to_value(&report).unwrap();
        let d = diff(&json, &json, is_headline_key).unwrap();
        assert!(d.rows.len() > 100, "{} rows", d.rows.len());
        assert!(d.rows.iter().all(|r| r.change.delta_pct == Some(0.0)));
        assert!(d.failing(0.0).is_empty());
        assert!(d.only_in_old.is_empty() && d.only_in_new.is_empty());
    }
}
