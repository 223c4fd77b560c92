//! Did it get faster? Two samples of one time (per-step spans, a bucket's per-step time, a kernel's
//! per-launch durations, a benchmark's per-round times) → the change of the mean in %, its confidence
//! interval, and a call: [`Call::Faster`], [`Call::Slower`], [`Call::Unchanged`] or [`Call::Inconclusive`].
//!
//! The method ([`METHOD`], docs/verdict.md): the interval is Welch's t-interval on the log of the ratio of
//! the means, `ln(m_new / m_old) ± t(ν, 1 − α/2) · √(s²_new / (n_new·m²_new) + s²_old / (n_old·m²_old))`
//! (the delta method's standard error of a log-mean, Welch–Satterthwaite's ν), mapped back to Δ % by
//! `100 · (e^x − 1)`. It is closed-form, so it needs no seed and gives the same answer on every machine; on
//! the log scale the interval of a ratio stays above −100 % and is not symmetric where a ratio is not.
//! Every sample is a time: lower is better.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of the interval, unless the caller asks for another.
pub const LEVEL: f64 = 0.95;

/// The equivalence margin, %: an interval lying inside ±this is [`Call::Unchanged`].
pub const MARGIN_PCT: f64 = 2.0;

/// The fewest samples a side must have for an interval (two give a variance; three give it one degree of
/// freedom to spare, and a t quantile under 4.31 at 95 %).
pub const MIN_SAMPLES: usize = 3;

/// The method, in words, as the tables print it.
pub const METHOD: &str = "Δ % = 100 · (mean new / mean old − 1); its interval is Welch's t-interval on \
     ln(mean new / mean old) (delta-method standard errors, Welch–Satterthwaite degrees of freedom) at the \
     stated level; faster / slower when the interval excludes 0, unchanged when it lies inside ±margin, \
     inconclusive otherwise or with fewer than 3 samples a side (docs/verdict.md)";

/// The call on one compared number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    /// The interval lies below 0 (and not inside the margin): the new run takes less time.
    Faster,
    /// The interval lies above 0 (and not inside the margin): the new run takes more time.
    Slower,
    /// The interval lies inside ±margin: any change is smaller than the margin.
    Unchanged,
    /// Too few samples, or an interval holding 0 and reaching past the margin.
    Inconclusive,
}

impl Call {
    /// The word the rows carry.
    pub fn as_str(self) -> &'static str {
        match self {
            Call::Faster => "faster",
            Call::Slower => "slower",
            Call::Unchanged => "unchanged",
            Call::Inconclusive => "inconclusive",
        }
    }
}

/// How a call is made: the level of the interval and the equivalence margin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Method {
    /// Confidence level, in (0, 1).
    pub level: f64,
    /// Equivalence margin, % (≥ 0).
    pub margin_pct: f64,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            level: LEVEL,
            margin_pct: MARGIN_PCT,
        }
    }
}

/// The change of one number between two samples, and the call on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judged {
    /// The call.
    pub verdict: Call,
    /// 100 · (mean new / mean old − 1); infinite when the old mean is 0 and the new one is not (JSON:
    /// null); `None` when a mean is below 0 or a side has no samples.
    pub delta_pct: Option<f64>,
    /// The interval's lower end, %; `None` without an interval (too few samples, a mean not above 0).
    pub ci_low_pct: Option<f64>,
    /// … its upper end.
    pub ci_high_pct: Option<f64>,
    /// Finite samples of the old side.
    pub n_old: usize,
    /// … of the new side.
    pub n_new: usize,
    /// For an inconclusive call with an interval: about how many more samples each side needs, at the
    /// spread measured, for the interval to exclude 0 or to fit the margin.
    pub more_samples: Option<usize>,
    /// Why the call is what it is, when that needs saying (too few samples, non-finite samples left out).
    pub reasons: Vec<String>,
}

impl Judged {
    /// Whether this is a slowdown a fail-above-`pct` gate fails on: significant (the interval lies above
    /// 0: [`Call::Slower`]) and its estimate above `pct` %.
    pub fn fails_above(&self, pct: f64) -> bool {
        self.verdict == Call::Slower && self.delta_pct.is_some_and(|d| d > pct)
    }
}

/// What a side's samples give the method: their count, mean and variance (n − 1; 0 for one sample). From
/// the samples ([`Summary::of`]), or as a tool states them (pytest-benchmark's `rounds`, `mean`, `stddev`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Samples.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Their variance, n − 1 in the denominator.
    pub var: f64,
}

impl Summary {
    /// The summary of finite samples (`None` for none).
    pub fn of(x: &[f64]) -> Option<Summary> {
        if x.is_empty() {
            return None;
        }
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let var = if x.len() > 1 {
            x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Some(Summary {
            n: x.len(),
            mean,
            var,
        })
    }
}

fn pct_of_log(x: f64) -> f64 {
    100.0 * x.exp_m1()
}

/// Judges `old` against `new` (times: lower is better) by [`METHOD`]; non-finite samples are left out,
/// saying so.
pub fn judge(old: &[f64], new: &[f64], method: Method) -> Judged {
    let finite = |x: &[f64]| {
        x.iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect::<Vec<_>>()
    };
    let (o, n) = (finite(old), finite(new));
    let mut left_out = Vec::new();
    for (side, all, kept) in [("old", old, &o), ("new", new, &n)] {
        if kept.len() < all.len() {
            left_out.push(format!(
                "{} non-finite {side} sample(s) left out",
                all.len() - kept.len()
            ));
        }
    }
    let mut out = judge_summary(Summary::of(&o), Summary::of(&n), method);
    left_out.append(&mut out.reasons);
    out.reasons = left_out;
    out
}

/// Judges two sides given by their [`Summary`] (`None`: a side without samples) by [`METHOD`].
pub fn judge_summary(old: Option<Summary>, new: Option<Summary>, method: Method) -> Judged {
    let mut out = Judged {
        verdict: Call::Inconclusive,
        delta_pct: None,
        ci_low_pct: None,
        ci_high_pct: None,
        n_old: old.map_or(0, |s| s.n),
        n_new: new.map_or(0, |s| s.n),
        more_samples: None,
        reasons: Vec::new(),
    };
    let (Some(o), Some(n)) = (old, new) else {
        out.reasons.push("a side has no samples".to_owned());
        return out;
    };
    let (mo, vo, mn, vn) = (o.mean, o.var, n.mean, n.var);
    if mo == 0.0 && mn == 0.0 && vo == 0.0 && vn == 0.0 {
        // Nothing of it in either run (a bucket no step ran): unchanged, exactly.
        out.delta_pct = Some(0.0);
        out.ci_low_pct = Some(0.0);
        out.ci_high_pct = Some(0.0);
        out.verdict = Call::Unchanged;
        return out;
    }
    if mo == 0.0 && mn > 0.0 {
        // It appeared: an infinite Δ % (serialised as null), which a gate fails.
        out.delta_pct = Some(f64::INFINITY);
        out.reasons
            .push("0 in the old run: the change is infinite".to_owned());
        return out;
    }
    if !(mo > 0.0 && mn > 0.0 && vo >= 0.0 && vn >= 0.0) {
        out.reasons.push(format!(
            "a mean is not above 0 (old {mo}, new {mn}) or a variance is not a number: no ratio to judge"
        ));
        return out;
    }
    let log_ratio = (mn / mo).ln();
    out.delta_pct = Some(pct_of_log(log_ratio));
    if o.n < MIN_SAMPLES || n.n < MIN_SAMPLES {
        out.reasons.push(format!(
            "too few samples for an interval: {} old, {} new (at least {MIN_SAMPLES} a side)",
            o.n, n.n
        ));
        out.more_samples = Some(MIN_SAMPLES - o.n.min(n.n));
        return out;
    }
    // Squared standard errors of ln(mean), by the delta method: Var(x̄) / x̄².
    let a = vn / (n.n as f64 * mn * mn);
    let b = vo / (o.n as f64 * mo * mo);
    let half = if a + b == 0.0 {
        // Both sides constant: the interval is the point.
        0.0
    } else {
        let df = (a + b).powi(2) / (a * a / (n.n as f64 - 1.0) + b * b / (o.n as f64 - 1.0));
        t_quantile(df, 1.0 - (1.0 - method.level) / 2.0) * (a + b).sqrt()
    };
    let (lo, hi) = (pct_of_log(log_ratio - half), pct_of_log(log_ratio + half));
    out.ci_low_pct = Some(lo);
    out.ci_high_pct = Some(hi);
    let m = method.margin_pct;
    out.verdict = if lo >= -m && hi <= m {
        Call::Unchanged
    } else if lo > 0.0 {
        Call::Slower
    } else if hi < 0.0 {
        Call::Faster
    } else {
        out.more_samples = Some(more_samples(log_ratio, half, m, o.n.max(n.n)));
        out.reasons.push(format!(
            "the interval holds 0 and reaches past the ±{m} % margin"
        ));
        Call::Inconclusive
    };
    out
}

/// The t quantile at `p` with `df` degrees of freedom (a normal one when statrs refuses the df).
fn t_quantile(df: f64, p: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        // df is finite and > 0 whenever a + b > 0 and both sides have ≥ 2 samples; kept total all the same.
        Err(_) => 1.959_963_984_540_054,
    }
}

/// About how many more samples a side needs for an interval around `log_ratio` of half-width `half` (from
/// `n` samples a side) to decide: to fit the margin (half ≤ ln(1 + m) − |x|) when the estimate lies inside
/// it, or to exclude 0 (half < |x|). The half-width shrinks as 1/√n at the spread measured.
fn more_samples(log_ratio: f64, half: f64, margin_pct: f64, n: usize) -> usize {
    let x = log_ratio.abs();
    let fit = (1.0 + margin_pct / 100.0).ln() - x;
    let target = fit.max(x);
    if target <= 0.0 || half <= 0.0 {
        return 0;
    }
    let scale = (half / target).powi(2);
    let needed = (n as f64 * scale).ceil();
    (needed as usize).saturating_sub(n).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_worked_interval() {
        // old 10, 11, 12 (mean 11, s² 1); new 12, 13, 14 (mean 13, s² 1).
        // a = 1 / (3 · 169), b = 1 / (3 · 121); ν = (a + b)² / (a²/2 + b²/2).
        let j = judge(&[10.0, 11.0, 12.0], &[12.0, 13.0, 14.0], Method::default());
        let (a, b) = (1.0 / (3.0 * 169.0), 1.0_f64 / (3.0 * 121.0));
        let df = (a + b).powi(2) / (a * a / 2.0 + b * b / 2.0);
        let t = StudentsT::new(0.0, 1.0, df).unwrap().inverse_cdf(0.975);
        let x = (13.0_f64 / 11.0).ln();
        let lo = 100.0 * ((x - t * (a + b).sqrt()).exp() - 1.0);
        let hi = 100.0 * ((x + t * (a + b).sqrt()).exp() - 1.0);
        assert!((j.delta_pct.unwrap() - 200.0 / 11.0).abs() < 1e-9);
        assert!((j.ci_low_pct.unwrap() - lo).abs() < 1e-9);
        assert!((j.ci_high_pct.unwrap() - hi).abs() < 1e-9);
        // ν ≈ 3.96, t ≈ 2.78, half-width ≈ 2.78 · 0.0669 = 0.186 > ln(13/11) = 0.167: the interval holds 0.
        assert!(lo < 0.0 && hi > 0.0, "{lo} {hi}");
        assert_eq!(j.verdict, Call::Inconclusive);
        // More samples: (half / |x|)² · 3, rounded up, minus 3.
        let need = ((3.0 * (t * (a + b).sqrt() / x).powi(2)).ceil() as usize) - 3;
        assert_eq!(j.more_samples, Some(need.max(1)));
    }

    #[test]
    fn too_few_or_unreadable_samples_are_inconclusive_and_say_why() {
        let j = judge(&[10.0], &[5.0], Method::default());
        assert_eq!(j.verdict, Call::Inconclusive);
        assert_eq!(j.delta_pct, Some(-50.0));
        assert_eq!((j.ci_low_pct, j.more_samples), (None, Some(2)));
        assert!(j.reasons[0].contains("too few samples"), "{:?}", j.reasons);
        let j = judge(
            &[1.0, f64::NAN, 1.0, 1.0],
            &[0.0, 0.0, 0.0],
            Method::default(),
        );
        assert_eq!(
            (j.verdict, j.n_old, j.delta_pct),
            (Call::Inconclusive, 3, None)
        );
        assert!(j.reasons.iter().any(|r| r.contains("1 non-finite old")));
        assert!(j.reasons.iter().any(|r| r.contains("not above 0")));
    }

    #[test]
    fn stated_stats_give_the_interval_their_samples_give() {
        // pytest-benchmark states rounds, mean and stddev when it kept no per-round data: the same call.
        let (old, new) = ([10.0, 11.0, 12.0, 13.0], [12.0, 13.5, 14.0, 15.0]);
        let from_samples = judge(&old, &new, Method::default());
        let stated = |x: &[f64]| {
            let s = Summary::of(x).unwrap();
            Some(Summary {
                n: x.len(),
                mean: s.mean,
                var: s.var.sqrt().powi(2),
            })
        };
        let from_stats = judge_summary(stated(&old), stated(&new), Method::default());
        assert_eq!(from_samples.verdict, from_stats.verdict);
        assert!((from_samples.ci_low_pct.unwrap() - from_stats.ci_low_pct.unwrap()).abs() < 1e-9);
        // mean 11.5 → 13.625: Δ = 2.125 / 11.5.
        assert!((from_stats.delta_pct.unwrap() - 212.5 / 11.5).abs() < 1e-9);
    }

    #[test]
    fn constant_samples_are_judged_on_the_point() {
        let m = Method::default();
        assert_eq!(judge(&[100.0; 3], &[101.0; 3], m).verdict, Call::Unchanged);
        assert_eq!(judge(&[100.0; 3], &[103.0; 3], m).verdict, Call::Slower);
        assert_eq!(judge(&[100.0; 3], &[97.0; 3], m).verdict, Call::Faster);
        let j = judge(&[100.0; 3], &[120.0; 3], m);
        assert!(j.fails_above(19.0) && !j.fails_above(20.0));
    }
}
