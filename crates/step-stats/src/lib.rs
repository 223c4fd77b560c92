//! step-stats: the spread of one number over the steps it was measured in, and which steps are outliers.
//!
//! What it is: one generic function, [`spread`], over `(step label, value)` pairs: count, mean, min, p50,
//! p90, max, the median absolute deviation (MAD) and the outlier steps by name, under one stated rule
//! ([`OUTLIER_RULE`]). It serves every per-step number in the workspace: KL1 GB/s per family
//! (`kl1-bandwidth`'s `spread` module), kineto budget buckets and roofline points (`html-report`), and the
//! "does Δ exceed the spread" test of the diffs.
//!
//! What it is not: a statistics library. There is no confidence interval and no test of significance; the
//! spread says how much a number moved between steps of one run, which is what a reader needs before
//! believing a change between two runs.
//!
//! Quantiles interpolate linearly between the two nearest order statistics (Hyndman & Fan type 7, the
//! default of numpy and R): for sorted `x[0..n]` and `p` in [0, 1], `h = (n − 1)·p`, `q = x[⌊h⌋] + (h −
//! ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`.
//!
//! ```
//! let s = step_stats::spread(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0), ("e", 100.0)]).unwrap();
//! assert_eq!((s.count, s.p50, s.max), (5, 3.0, 100.0));
//! assert_eq!(s.outliers[0].step, "e"); // |100 − 3| = 97 > 3 × MAD (MAD = 1)
//! ```
#![deny(missing_docs)]

use serde::Serialize;

/// How many MADs from the median make a step an outlier.
pub const OUTLIER_MADS: f64 = 3.0;

/// The outlier rule in words, for reports to print beside the flags.
pub const OUTLIER_RULE: &str = "a step is an outlier when |value − median| > 3 × MAD, where MAD = \
     median(|value − median|) over the run's steps (unscaled); with MAD = 0 every step that differs from \
     the median is flagged";

/// The spread of one number over the steps of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    /// Steps with a finite value.
    pub count: usize,
    /// Arithmetic mean of the finite values.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Median (linear interpolation, see the crate doc).
    pub p50: f64,
    /// 90th percentile (linear interpolation).
    pub p90: f64,
    /// Largest value.
    pub max: f64,
    /// Median absolute deviation from the median, unscaled.
    pub mad: f64,
    /// Steps whose value is more than [`OUTLIER_MADS`] MADs from the median, in input order.
    pub outliers: Vec<Outlier>,
    /// Values left out because they were NaN or infinite (named, never dropped silently).
    pub non_finite: Vec<String>,
}

/// One outlier step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outlier {
    /// The step's label as given.
    pub step: String,
    /// Its value.
    pub value: f64,
    /// |value − median| / MAD; `None` when MAD is 0.
    pub mads_from_median: Option<f64>,
}

impl Spread {
    /// max − min: the widest step-to-step movement of the run.
    pub fn range(&self) -> f64 {
        self.max - self.min
    }
}

/// The quantile `p` (0 ≤ p ≤ 1) of already sorted, finite values by linear interpolation (type 7);
/// `None` for an empty slice.
pub fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = last as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(last);
    let (a, b) = (sorted[lo], sorted[hi]);
    Some(a + (h - lo as f64) * (b - a))
}

/// The spread of `steps`, `(label, value)` in step order. `None` when no value is finite.
pub fn spread<L: AsRef<str>>(steps: &[(L, f64)]) -> Option<Spread> {
    let non_finite: Vec<String> = steps
        .iter()
        .filter(|(_, v)| !v.is_finite())
        .map(|(l, _)| l.as_ref().to_owned())
        .collect();
    let finite: Vec<(&str, f64)> = steps
        .iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(l, v)| (l.as_ref(), *v))
        .collect();
    let mut sorted: Vec<f64> = finite.iter().map(|(_, v)| *v).collect();
    sorted.sort_by(f64::total_cmp);
    let p50 = quantile(&sorted, 0.5)?;
    let p90 = quantile(&sorted, 0.9)?;
    let mut deviations: Vec<f64> = sorted.iter().map(|v| (v - p50).abs()).collect();
    deviations.sort_by(f64::total_cmp);
    let mad = quantile(&deviations, 0.5)?;
    let outliers = finite
        .iter()
        .filter(|(_, v)| (v - p50).abs() > OUTLIER_MADS * mad)
        .map(|(l, v)| Outlier {
            step: (*l).to_owned(),
            value: *v,
            mads_from_median: (mad > 0.0).then(|| (v - p50).abs() / mad),
        })
        .collect();
    Some(Spread {
        count: sorted.len(),
        mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
        min: sorted[0],
        p50,
        p90,
        max: sorted[sorted.len() - 1],
        mad,
        outliers,
        non_finite,
    })
}

/// The rule by which a change between two runs is compared with their per-step spread, in words.
pub const EXCEEDS_RULE: &str = "Δ exceeds the spread when |new − old| is larger than the wider of the two \
     runs' per-step ranges (max − min); unknown when either run has fewer than 2 steps";

/// The rule of a fail-above-PCT verdict (a CI gate), in words.
pub const FAIL_RULE: &str = "A row fails when |Δ %| > PCT and Δ does not lie within the per-step spread \
     (it exceeds it, or the spread is unknown); a value that was 0 and is no longer counts as an infinite Δ %";

/// The rule for what a diff has on one side only, in words.
pub const MISSING_RULE: &str = "A rank, capture or number present in one run only fails the gate (the new \
     run lost or gained it) unless missing ones are allowed; a diff with nothing in common fails always: \
     there is nothing to judge";

/// A fail-above threshold: a percentage, finite and not negative (`NaN` would pass every change).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
pub struct Threshold(f64);

impl Threshold {
    /// The threshold `pct` %, refused when NaN, infinite or negative.
    pub fn new(pct: f64) -> Result<Threshold, String> {
        if pct.is_finite() && pct >= 0.0 {
            // -0 is 0.
            Ok(Threshold(pct.abs()))
        } else {
            Err(format!(
                "{pct} is not a threshold: give a finite percentage ≥ 0 (such as 5 for 5 %)"
            ))
        }
    }

    /// The percentage.
    pub fn pct(self) -> f64 {
        self.0
    }
}

impl std::str::FromStr for Threshold {
    type Err = String;

    fn from_str(s: &str) -> Result<Threshold, String> {
        let pct: f64 = s.trim().parse().map_err(|_| {
            format!("`{s}` is not a number: give a finite percentage ≥ 0 (such as 5 for 5 %)")
        })?;
        Threshold::new(pct)
    }
}

impl std::fmt::Display for Threshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A fail-above gate: the threshold, and whether what is present in one run only may pass.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Gate {
    /// Rows moving by more than this (and outside the spread) fail ([`FAIL_RULE`]).
    pub fail_above: Threshold,
    /// Ranks, captures or numbers in one run only do not fail the gate ([`MISSING_RULE`]).
    pub allow_missing: bool,
}

/// A gate's verdict on one diff: the rows that failed and what is on one side only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The gate.
    pub gate: Gate,
    /// Rows compared (present in both runs).
    pub compared: usize,
    /// Where each failing row is (`rank 1: gemm`), in row order.
    pub failing: Vec<String>,
    /// What the old run has and the new one lacks.
    pub only_in_old: Vec<String>,
    /// What the new run has and the old one lacks.
    pub only_in_new: Vec<String>,
}

impl Verdict {
    /// Judges `rows` (where, change) and the one-sided lists under `gate`.
    pub fn judge<'c>(
        gate: Gate,
        rows: impl IntoIterator<Item = (String, &'c Change)>,
        only_in_old: &[String],
        only_in_new: &[String],
    ) -> Verdict {
        let mut compared = 0;
        let mut failing = Vec::new();
        for (place, c) in rows {
            compared += 1;
            if c.fails_above(gate.fail_above.pct()) {
                failing.push(place);
            }
        }
        Verdict {
            gate,
            compared,
            failing,
            only_in_old: only_in_old.to_vec(),
            only_in_new: only_in_new.to_vec(),
        }
    }

    /// Whether the gate passes: something compared, no row failing, and nothing on one side only
    /// unless allowed.
    pub fn passed(&self) -> bool {
        self.reasons().is_empty()
    }

    /// Every reason the gate fails, in words; empty for a pass.
    pub fn reasons(&self) -> Vec<String> {
        let pct = self.gate.fail_above;
        let mut out = Vec::new();
        if self.compared == 0 {
            out.push("the two runs have nothing in common: nothing was compared".to_owned());
        }
        if !self.failing.is_empty() {
            out.push(format!(
                "{} row(s) moved by more than {pct} % outside their spread: {}",
                self.failing.len(),
                self.failing.join("; ")
            ));
        }
        if !self.gate.allow_missing {
            for (list, side, what) in [
                (&self.only_in_old, "OLD", "the new run lost it"),
                (&self.only_in_new, "NEW", "the old run lacks it"),
            ] {
                if !list.is_empty() {
                    out.push(format!(
                        "{} only in {side} ({what}): {}",
                        list.len(),
                        list.join("; ")
                    ));
                }
            }
        }
        out
    }

    /// The verdict in one line: `PASS: …` or `FAIL: …`, every reason given.
    pub fn line(&self) -> String {
        let reasons = self.reasons();
        if reasons.is_empty() {
            let mut s = format!(
                "PASS: {} row(s) compared, none moved by more than {} % outside its spread",
                self.compared, self.gate.fail_above
            );
            let missing = self.only_in_old.len() + self.only_in_new.len();
            if missing > 0 {
                s.push_str(&format!("; {missing} present in one run only, allowed"));
            }
            s
        } else {
            format!("FAIL: {}", reasons.join(". "))
        }
    }
}

/// One number in an old and a new run: the change and whether it stands out of the step-to-step noise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The old run's value (as that tool reported it).
    pub old: f64,
    /// The new run's value.
    pub new: f64,
    /// (new − old) / |old| × 100; `None` when old is 0 and new is not (an infinite change); 0 when both are 0.
    pub delta_pct: Option<f64>,
    /// The old run's per-step spread, when it has steps.
    pub old_spread: Option<Spread>,
    /// The new run's per-step spread.
    pub new_spread: Option<Spread>,
    /// [`EXCEEDS_RULE`]; `None` when either side has fewer than 2 steps.
    pub exceeds_spread: Option<bool>,
}

impl Change {
    /// Compares `old` with `new`, each with its run's spread (if any).
    pub fn between(
        old: f64,
        new: f64,
        old_spread: Option<Spread>,
        new_spread: Option<Spread>,
    ) -> Self {
        let delta_pct = if old != 0.0 {
            Some((new - old) / old.abs() * 100.0)
        } else if new == 0.0 {
            Some(0.0)
        } else {
            None
        };
        let exceeds_spread = match (&old_spread, &new_spread) {
            (Some(a), Some(b)) if a.count >= 2 && b.count >= 2 => {
                Some((new - old).abs() > a.range().max(b.range()))
            }
            _ => None,
        };
        Change {
            old,
            new,
            delta_pct,
            old_spread,
            new_spread,
            exceeds_spread,
        }
    }

    /// Whether this change fails a fail-above-`pct` verdict ([`FAIL_RULE`]).
    pub fn fails_above(&self, pct: f64) -> bool {
        let big = self.delta_pct.is_none_or(|d| d.abs() > pct);
        big && self.exceeds_spread != Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn five_steps_one_far_out() {
        let s = spread(&[
            ("s0", 1.0),
            ("s1", 2.0),
            ("s2", 3.0),
            ("s3", 4.0),
            ("s4", 100.0),
        ])
        .unwrap();
        assert_eq!(s.count, 5);
        assert!(close(s.mean, (1.0 + 2.0 + 3.0 + 4.0 + 100.0) / 5.0)); // 22
        assert_eq!((s.min, s.p50, s.max), (1.0, 3.0, 100.0));
        // h = 4 · 0.9 = 3.6 → x[3] + 0.6 · (x[4] − x[3]) = 4 + 0.6 · 96
        assert!(close(s.p90, 4.0 + 0.6 * 96.0));
        // |x − 3| = 2, 1, 0, 1, 97 → sorted 0, 1, 1, 2, 97 → MAD 1; only 97 > 3
        assert_eq!(s.mad, 1.0);
        assert_eq!(s.outliers.len(), 1);
        assert_eq!(s.outliers[0].step, "s4");
        assert_eq!(s.outliers[0].mads_from_median, Some(97.0));
        assert_eq!(s.range(), 99.0);
    }

    #[test]
    fn two_steps_are_never_outliers() {
        // median 195, deviations 5 and 5 → MAD 5; |x − 195| = 5 is not > 15
        let s = spread(&[("1000", 190.0), ("1001", 200.0)]).unwrap();
        assert_eq!((s.p50, s.mad), (195.0, 5.0));
        assert!(close(s.p90, 190.0 + 0.9 * 10.0)); // h = 0.9
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn zero_mad_flags_every_step_off_the_median() {
        let s = spread(&[
            ("a", 10.0),
            ("b", 10.0),
            ("c", 50.0),
            ("d", 10.0),
            ("e", 10.0),
        ])
        .unwrap();
        assert_eq!((s.p50, s.mad), (10.0, 0.0));
        assert_eq!(s.outliers.len(), 1);
        assert_eq!(s.outliers[0].step, "c");
        assert_eq!(s.outliers[0].mads_from_median, None);
    }

    #[test]
    fn boundary_is_strictly_greater_than_three_mads() {
        // 9 values 0,1,2,3,4,5,5.5,6,7: median 4; |x − 4| = 4,3,2,1,0,1,1.5,2,3
        // sorted 0,1,1,1.5,2,2,3,3,4 → MAD 2; 3·MAD = 6: nothing is more than 6 from 4.
        let v = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.5, 6.0, 7.0];
        let steps: Vec<(String, f64)> = v.iter().map(|x| (x.to_string(), *x)).collect();
        let s = spread(&steps).unwrap();
        assert_eq!((s.p50, s.mad), (4.0, 2.0));
        assert!(s.outliers.is_empty());
        // 0,4,4,4,8,10: median 4 (h = 2.5), deviations 4,0,0,0,4,6 → sorted 0,0,0,4,4,6 → MAD (0+4)/2 = 2; 10 − 4 = 6 = 3·MAD: kept.
        let s = spread(&[
            ("a", 0.0),
            ("b", 4.0),
            ("c", 4.0),
            ("d", 4.0),
            ("e", 8.0),
            ("f", 10.0),
        ])
        .unwrap();
        assert_eq!((s.p50, s.mad), (4.0, 2.0));
        assert!(s.outliers.is_empty(), "{:?}", s.outliers);
    }

    #[test]
    fn empty_and_non_finite() {
        assert_eq!(spread::<&str>(&[]), None);
        assert_eq!(spread(&[("x", f64::NAN)]), None);
        let s = spread(&[("x", f64::NAN), ("y", 2.0), ("z", f64::INFINITY)]).unwrap();
        assert_eq!((s.count, s.mean, s.p90), (1, 2.0, 2.0));
        assert_eq!(s.non_finite, vec!["x", "z"]);
    }

    #[test]
    fn quantile_endpoints() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[7.0], 0.9), Some(7.0));
        assert_eq!(quantile(&[1.0, 3.0], 0.0), Some(1.0));
        assert_eq!(quantile(&[1.0, 3.0], 1.0), Some(3.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.5)); // h = 1.5
    }

    #[test]
    fn thresholds_are_finite_and_not_negative() {
        for bad in [
            "NaN", "nan", "inf", "-inf", "1e400", "-1", "-0.5", "five", "",
        ] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
        assert_eq!("5".parse::<Threshold>().unwrap().pct(), 5.0);
        assert_eq!("-0".parse::<Threshold>().unwrap().pct(), 0.0);
        assert!(Threshold::new(f64::NAN).is_err());
    }

    #[test]
    fn a_verdict_fails_on_rows_on_missing_sides_and_on_nothing_compared() {
        let gate = Gate {
            fail_above: Threshold::new(5.0).unwrap(),
            allow_missing: false,
        };
        let steady = Change::between(100.0, 101.0, None, None); // +1 %
        let moved = Change::between(100.0, 110.0, None, None); // +10 %, spread unknown
        let v = Verdict::judge(gate, [("rank 0: gemm".to_owned(), &steady)], &[], &[]);
        assert!(v.passed(), "{}", v.line());
        let v = Verdict::judge(gate, [("rank 0: gemm".to_owned(), &moved)], &[], &[]);
        assert_eq!(v.failing, ["rank 0: gemm"]);
        assert!(!v.passed());
        let lost = ["rank 1".to_owned()];
        let v = Verdict::judge(gate, [("rank 0: gemm".to_owned(), &steady)], &lost, &[]);
        assert!(
            !v.passed() && v.line().contains("only in OLD"),
            "{}",
            v.line()
        );
        let allowed = Gate {
            allow_missing: true,
            ..gate
        };
        let v = Verdict::judge(allowed, [("rank 0: gemm".to_owned(), &steady)], &lost, &[]);
        assert!(v.passed() && v.line().contains("allowed"), "{}", v.line());
        // Nothing compared: a fail, allowed or not.
        let v = Verdict::judge(allowed, [], &lost, &["rank 2".to_owned()]);
        assert!(
            !v.passed() && v.line().contains("nothing in common"),
            "{}",
            v.line()
        );
    }

    #[test]
    fn change_against_spread() {
        let old = spread(&[("1", 190.0), ("2", 200.0)]); // mean 195, range 10
        let new = spread(&[("1", 170.0), ("2", 176.0)]); // mean 173, range 6
        let c = Change::between(195.0, 173.0, old.clone(), new.clone());
        // (173 − 195) / 195 × 100 = −11.282…
        assert!(close(c.delta_pct.unwrap(), -22.0 / 195.0 * 100.0));
        assert_eq!(c.exceeds_spread, Some(true)); // 22 > max(10, 6)
        assert!(c.fails_above(10.0));
        assert!(!c.fails_above(12.0)); // 11.28 ≤ 12
        // 195 → 190: 5 ≤ 10, inside the spread, so never fails however low PCT is
        let c = Change::between(195.0, 190.0, old.clone(), new);
        assert_eq!(c.exceeds_spread, Some(false));
        assert!(!c.fails_above(0.0));
        // one step on a side: spread unknown, so the size alone decides
        let c = Change::between(195.0, 190.0, old, spread(&[("1", 190.0)]));
        assert_eq!(c.exceeds_spread, None);
        assert!(c.fails_above(2.0)); // |−5/195| = 2.56 % > 2
        // 0 → something is an infinite change; 0 → 0 is none
        let c = Change::between(0.0, 3.0, None, None);
        assert_eq!(c.delta_pct, None);
        assert!(c.fails_above(1e9));
        assert_eq!(Change::between(0.0, 0.0, None, None).delta_pct, Some(0.0));
    }
}
