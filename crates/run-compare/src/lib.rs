//! run-compare: two runs compared row by row, the one comparison behind `kineto diff` and
//! `kl1-bandwidth diff`.
//!
//! What it is: a generic diff over a table's rows. A run is a list of [`Place`]s (a rank, a capture's rank, a
//! trace file), each holding [`Number`]s: a key and its per-step samples, with the value the run reports
//! for it when it reports one. [`compare`] pairs the places of two runs (by label, or by a pairing the
//! caller worked out: [`compare_paired`]), pairs their numbers by key and gives one [`Row`] per number
//! present in both, with the samples of both sides kept beside the [`Change`] (Δ %, and whether Δ exceeds
//! the per-step spread: [`EXCEEDS_RULE`]); what is in one run only is listed by name, never dropped. A
//! [`Comparison`] judges itself under a fail-above [`Gate`] ([`FAIL_RULE`], [`MISSING_RULE`]).
//! [`budget`] turns `kineto budget` rows (typed: [`budget::BudgetStep`]) into such a table, with the
//! budget's own pairing of ranks and files.
//!
//! What it is not: a renderer (the text tables live in the binaries, the pages in `html-report`), a reader
//! of a tool's files (the callers parse their inputs), nor a statistics library: the rule of one number's
//! change, its spread and the gate are `step-stats`' (re-exported here); a row keeps its samples so that a
//! test of significance over them can be added beside [`Change`] without changing the tables.
#![deny(missing_docs)]

pub mod bench;
pub mod budget;
pub mod kernel_name;
pub mod verdict;
pub mod verdict_rows;

use std::cmp::Ordering;

use serde::Serialize;
pub use step_stats::{Change, EXCEEDS_RULE, FAIL_RULE, Gate, MISSING_RULE, Threshold, Verdict};

/// One step's value of a number: `(step label, value)`, in step order.
pub type Samples = Vec<(String, f64)>;

/// One number of one place in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Number {
    /// What the number is (a budget bucket, `dense.all.gbps`, …); numbers pair by it.
    pub key: String,
    /// The value the run itself reports (a report's `mean`); `None`: the mean of the finite samples.
    pub reported: Option<f64>,
    /// Its value in each step of the run.
    pub samples: Samples,
    /// When the other run's place lacks this key, that run had none of it: 0 in each of its
    /// [`Place::steps`] (a budget bucket no kernel of the step fell in), rather than a number on one side only.
    pub absent_is_zero: bool,
}

impl Number {
    /// The value compared: the reported one, else the mean of the finite samples; `None` when there is
    /// neither (the number is then as good as absent).
    fn value(&self, spread: Option<&step_stats::Spread>) -> Option<f64> {
        self.reported.or(spread.map(|s| s.mean))
    }
}

/// One place of a run (a rank, a capture's rank, a trace file) and its numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Place {
    /// How rows and the one-side lists name it (`rank 0`, `demo/prof-short-b1:decode/rank 1`).
    pub label: String,
    /// Its step labels: where a number the other run has and this one lacks counts 0, for numbers
    /// marked [`Number::absent_is_zero`].
    pub steps: Vec<String>,
    /// Its numbers, one per key.
    pub numbers: Vec<Number>,
}

impl Place {
    fn number(&self, key: &str) -> Option<&Number> {
        self.numbers.iter().find(|n| n.key == key)
    }

    /// 0 in each step: a number this place never had.
    fn zeros(&self) -> Samples {
        self.steps.iter().map(|s| (s.clone(), 0.0)).collect()
    }
}

/// One number of one place, in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The place (its pair's label).
    pub place: String,
    /// The number's key.
    pub key: String,
    /// Old → new, with Δ % and the spread test.
    #[serde(flatten)]
    pub change: Change,
    /// The old run's samples (zeros for a number it lacked, see [`Number::absent_is_zero`]).
    pub old_samples: Samples,
    /// The new run's samples.
    pub new_samples: Samples,
}

impl Row {
    /// `place: key`, as the verdict names a row.
    pub fn name(&self) -> String {
        format!("{}: {}", self.place, self.key)
    }
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// One row per number in both runs: places in the new run's order, keys in the caller's key order.
    pub rows: Vec<Row>,
    /// Places (`label`) and numbers (`label: key`) only in the old run.
    pub only_in_old: Vec<String>,
    /// … only in the new run.
    pub only_in_new: Vec<String>,
}

impl Comparison {
    /// The rows that fail a fail-above-`pct` verdict ([`FAIL_RULE`]); an empty list is a pass.
    pub fn failing(&self, pct: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.change.fails_above(pct))
            .collect()
    }

    /// The gate's verdict: the failing rows, and what is in one run only ([`MISSING_RULE`]).
    pub fn verdict(&self, gate: Gate) -> Verdict {
        Verdict::judge(
            gate,
            self.rows.iter().map(|r| (r.name(), &r.change)),
            &self.only_in_old,
            &self.only_in_new,
        )
    }
}

/// A new place's partner in the old run, and the label their rows carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partner {
    /// Index of the old place.
    pub old: usize,
    /// The pair's label.
    pub label: String,
}

/// Compares two runs whose places pair by equal labels; keys in `key_order`.
pub fn compare(
    old: &[Place],
    new: &[Place],
    key_order: impl Fn(&str, &str) -> Ordering,
) -> Comparison {
    let partners: Vec<Option<Partner>> = new
        .iter()
        .map(|n| {
            let old = old.iter().position(|o| o.label == n.label)?;
            Some(Partner {
                old,
                label: n.label.clone(),
            })
        })
        .collect();
    compare_paired(old, new, &partners, key_order)
}

/// Compares two runs: `partners[k]` is new place `k`'s partner in the old run, if any. Old places no new
/// place pairs with are listed first (old order), then each new place in order: unpaired, it is listed;
/// paired, the union of both sides' keys in `key_order` gives a row each, or a `label: key` entry on the side
/// that has it when the other lacks it (and it is not [`Number::absent_is_zero`]) or has no value for it.
pub fn compare_paired(
    old: &[Place],
    new: &[Place],
    partners: &[Option<Partner>],
    key_order: impl Fn(&str, &str) -> Ordering,
) -> Comparison {
    let mut out = Comparison {
        rows: Vec::new(),
        only_in_old: Vec::new(),
        only_in_new: Vec::new(),
    };
    for (i, place) in old.iter().enumerate() {
        if !partners.iter().flatten().any(|p| p.old == i) {
            out.only_in_old.push(place.label.clone());
        }
    }
    for (k, new_place) in new.iter().enumerate() {
        match partners.get(k).cloned().flatten() {
            Some(p) => compare_places(&mut out, &old[p.old], new_place, &p.label, &key_order),
            None => out.only_in_new.push(new_place.label.clone()),
        }
    }
    out
}

/// One side's samples of `key`, and the number they belong to: its own, or zeros when the other side's
/// number says absence is 0; `None` when the key is on the other side only.
fn side_of<'p>(
    place: &'p Place,
    other: &'p Place,
    key: &str,
) -> Option<(Samples, Option<&'p Number>)> {
    match (place.number(key), other.number(key)) {
        (Some(n), _) => Some((n.samples.clone(), Some(n))),
        (None, Some(o)) if o.absent_is_zero => Some((place.zeros(), None)),
        _ => None,
    }
}

/// The rows and one-side entries of one pair of places.
fn compare_places(
    out: &mut Comparison,
    old: &Place,
    new: &Place,
    label: &str,
    key_order: &impl Fn(&str, &str) -> Ordering,
) {
    let mut keys: Vec<&str> = old
        .numbers
        .iter()
        .chain(&new.numbers)
        .map(|n| n.key.as_str())
        .collect();
    keys.sort_by(|a, b| key_order(a, b));
    keys.dedup();
    for key in keys {
        let valued = |side: Option<(Samples, Option<&Number>)>| {
            let (samples, number) = side?;
            let spread = step_stats::spread(&samples);
            let value = match number {
                Some(n) => n.value(spread.as_ref()),
                None => spread.as_ref().map(|s| s.mean),
            }?;
            Some((value, spread, samples))
        };
        match (
            valued(side_of(old, new, key)),
            valued(side_of(new, old, key)),
        ) {
            (Some((ov, os, old_samples)), Some((nv, ns, new_samples))) => out.rows.push(Row {
                place: label.to_owned(),
                key: key.to_owned(),
                change: Change::between(ov, nv, os, ns),
                old_samples,
                new_samples,
            }),
            (Some(_), None) => out.only_in_old.push(format!("{label}: {key}")),
            (None, Some(_)) => out.only_in_new.push(format!("{label}: {key}")),
            // Neither run has a value for it: nothing to compare and nothing either run lost.
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(values: &[f64]) -> Samples {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("s{i}"), *v))
            .collect()
    }

    fn number(key: &str, reported: Option<f64>, values: &[f64]) -> Number {
        Number {
            key: key.to_owned(),
            reported,
            samples: samples(values),
            absent_is_zero: false,
        }
    }

    fn place(label: &str, steps: usize, numbers: Vec<Number>) -> Place {
        Place {
            label: label.to_owned(),
            steps: (0..steps).map(|i| format!("s{i}")).collect(),
            numbers,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn a_number_in_both_runs_is_a_row_with_its_samples() {
        // old x: 10, 14 (mean 12, range 4); new x: 15, 17 (mean 16, range 2).
        // Δ = (16 − 12) / 12 = +33.33 %; |16 − 12| = 4 is not > max(4, 2) = 4: inside the spread.
        let old = [place("r", 2, vec![number("x", None, &[10.0, 14.0])])];
        let new = [place("r", 2, vec![number("x", None, &[15.0, 17.0])])];
        let c = compare(&old, &new, str::cmp);
        assert_eq!(c.rows.len(), 1);
        let r = &c.rows[0];
        assert_eq!((r.place.as_str(), r.key.as_str()), ("r", "x"));
        assert_eq!((r.change.old, r.change.new), (12.0, 16.0));
        assert!(close(r.change.delta_pct.unwrap(), 4.0 / 12.0 * 100.0));
        assert_eq!(r.change.exceeds_spread, Some(false));
        assert_eq!(r.old_samples, samples(&[10.0, 14.0]));
        assert_eq!(r.new_samples, samples(&[15.0, 17.0]));
        assert_eq!(r.name(), "r: x");
        // Inside its spread: fails no threshold, even 0 %.
        assert!(c.failing(0.0).is_empty());
    }

    #[test]
    fn a_reported_value_is_compared_and_the_samples_give_the_spread() {
        // Reported 100 → 90 (Δ = −10 %), samples 99, 101 (range 2) and 89, 90 (range 1): |−10| > 2.
        let old = [place(
            "r",
            2,
            vec![number("x", Some(100.0), &[99.0, 101.0])],
        )];
        let new = [place("r", 2, vec![number("x", Some(90.0), &[89.0, 90.0])])];
        let c = compare(&old, &new, str::cmp);
        let ch = &c.rows[0].change;
        assert_eq!((ch.old, ch.new), (100.0, 90.0));
        assert!(close(ch.delta_pct.unwrap(), -10.0));
        assert_eq!(ch.exceeds_spread, Some(true));
        // --fail-above 9: |−10 %| > 9 and outside the spread: fails; 10: |−10| is not > 10.
        assert_eq!(c.failing(9.0).len(), 1);
        assert!(c.failing(10.0).is_empty());
    }

    #[test]
    fn what_one_run_lacks_is_listed_on_the_other_side() {
        let old = [
            place(
                "a",
                1,
                vec![number("x", None, &[1.0]), number("y", None, &[2.0])],
            ),
            place("gone", 1, vec![number("x", None, &[1.0])]),
        ];
        let new = [
            place("fresh", 1, vec![number("x", None, &[1.0])]),
            place(
                "a",
                1,
                vec![number("x", None, &[1.0]), number("z", None, &[3.0])],
            ),
        ];
        let c = compare(&old, &new, str::cmp);
        assert_eq!(c.only_in_old, vec!["gone", "a: y"]);
        assert_eq!(c.only_in_new, vec!["fresh", "a: z"]);
        assert_eq!(c.rows.len(), 1);
        // One step a side: the spread test is unknown, so a move fails once it is over the threshold.
        assert_eq!(c.rows[0].change.exceeds_spread, None);
        let gate = |allow_missing| Gate {
            fail_above: Threshold::new(5.0).unwrap(),
            allow_missing,
        };
        let v = c.verdict(gate(false));
        assert!(!v.passed());
        assert_eq!(v.only_in_old, vec!["gone", "a: y"]);
        assert!(
            c.verdict(gate(true)).passed(),
            "{}",
            c.verdict(gate(true)).line()
        );
    }

    #[test]
    fn a_number_without_a_value_counts_as_absent() {
        // New x has no finite sample and reports nothing: x is the old run's only.
        let old = [place("a", 1, vec![number("x", None, &[5.0])])];
        let new = [place("a", 1, vec![number("x", None, &[f64::NAN])])];
        let c = compare(&old, &new, str::cmp);
        assert!(c.rows.is_empty());
        assert_eq!(c.only_in_old, vec!["a: x"]);
        assert!(c.only_in_new.is_empty());
    }

    #[test]
    fn an_absent_bucket_counts_zero_in_each_step() {
        // Old b: 4, 6 (mean 5, range 2); the new place (3 steps) has no b: 0, 0, 0 (mean 0, range 0).
        // Δ = (0 − 5) / 5 = −100 %; |−5| > max(2, 0).
        let mut b = number("b", None, &[4.0, 6.0]);
        b.absent_is_zero = true;
        let old = [place("r", 2, vec![b])];
        let new = [place("r", 3, vec![])];
        let c = compare(&old, &new, str::cmp);
        let r = &c.rows[0];
        assert_eq!((r.change.old, r.change.new), (5.0, 0.0));
        assert_eq!(r.change.delta_pct, Some(-100.0));
        assert_eq!(r.change.exceeds_spread, Some(true));
        assert_eq!(r.new_samples, samples(&[0.0, 0.0, 0.0]));
        // The other way round: 0 → 5 is an infinite Δ %.
        let c = compare(&new, &old, str::cmp);
        assert_eq!(c.rows[0].change.delta_pct, None);
        assert!(c.only_in_old.is_empty() && c.only_in_new.is_empty());
    }

    #[test]
    fn keys_follow_the_given_order_and_pairs_their_label() {
        let nums = |keys: &[&str]| keys.iter().map(|k| number(k, None, &[1.0])).collect();
        let old = [place("old name", 1, nums(&["b", "span"]))];
        let new = [place("new name", 1, nums(&["a", "span", "b"]))];
        let span_first = |a: &str, b: &str| (a != "span", a).cmp(&(b != "span", b));
        let partners = [Some(Partner {
            old: 0,
            label: "old name → new name".into(),
        })];
        let c = compare_paired(&old, &new, &partners, span_first);
        let keys: Vec<&str> = c.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, vec!["span", "b"]);
        assert_eq!(c.only_in_new, vec!["old name → new name: a"]);
        assert!(c.rows.iter().all(|r| r.place == "old name → new name"));
    }

    #[test]
    fn runs_sharing_nothing_fail_any_gate() {
        let c = compare(
            &[place("a", 1, vec![number("x", None, &[1.0])])],
            &[place("b", 1, vec![number("x", None, &[1.0])])],
            str::cmp,
        );
        let v = c.verdict(Gate {
            fail_above: Threshold::new(50.0).unwrap(),
            allow_missing: true,
        });
        assert_eq!(v.compared, 0);
        assert!(!v.passed() && v.line().contains("nothing in common"));
    }
}
