//! The verdict engine on generated samples of a known change and a known noise: the interval holds the
//! true Δ at the promised rate, and runs with no change are called significant at no more than the rate
//! the level allows. Each count's tolerance is worked out from the binomial in the test.

#![allow(clippy::unwrap_used)]

use run_compare::verdict::{Call, Method, judge};

/// SplitMix64: a fixed, seedable generator (no dependency), and standard normals by Box–Muller.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// `n` step times: `mean` with Gaussian noise of standard deviation `sd`.
    fn times(&mut self, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| mean + sd * self.normal()).collect()
    }
}

const SEEDS: u64 = 500;

/// The binomial's bounds on a count of misses over `SEEDS` tries at rate `p`: mean ± 3.5 standard
/// deviations (a bound a correct method leaves with probability ≈ 5 · 10⁻⁴).
fn bounds(p: f64) -> (f64, f64) {
    let n = SEEDS as f64;
    let (mean, sd) = (n * p, (n * p * (1.0 - p)).sqrt());
    (mean - 3.5 * sd, mean + 3.5 * sd)
}

#[test]
fn the_interval_holds_the_true_change_at_its_level() {
    // Old: mean 1000 µs, noise sd 30 µs (3 %); new: ×1.10 (true Δ = +10 %), the same noise; 20 steps a side.
    // At 95 % the interval misses +10 % in 5 % of runs: 25 of 500, sd √(500 · 0.05 · 0.95) = 4.87, so the
    // misses lie in 25 ± 3.5 · 4.87 = [7.9, 42.1].
    let mut misses = 0;
    let mut slower = 0;
    for seed in 0..SEEDS {
        let mut r = Rng(seed);
        let old = r.times(20, 1000.0, 30.0);
        let new = r.times(20, 1100.0, 30.0);
        let j = judge(&old, &new, Method::default());
        let (lo, hi) = (j.ci_low_pct.unwrap(), j.ci_high_pct.unwrap());
        if !(lo <= 10.0 && 10.0 <= hi) {
            misses += 1;
        }
        if j.verdict == Call::Slower {
            slower += 1;
        }
    }
    let (lo, hi) = bounds(0.05);
    assert!(
        (lo..=hi).contains(&(misses as f64)),
        "{misses} misses of {SEEDS}, expected within [{lo:.1}, {hi:.1}]"
    );
    // A 10 % change against a 3 % noise over 20 steps: the standard error of the log ratio is
    // √(2 · 0.03² / 20) ≈ 0.0095, ln 1.1 = 0.095 is 10 of them: every run finds it.
    assert_eq!(slower, SEEDS, "every run must call +10 % slower");
}

#[test]
fn no_change_is_called_significant_at_no_more_than_the_level_allows() {
    // Both sides from one distribution (mean 500, sd 25, 15 steps a side): a 95 % interval excludes 0 in
    // 5 % of runs at most: ≤ 25 + 3.5 · 4.87 = 42.1 of 500.
    let mut significant = 0;
    let mut unchanged = 0;
    for seed in 0..SEEDS {
        let mut r = Rng(1_000_000 + seed);
        let old = r.times(15, 500.0, 25.0);
        let new = r.times(15, 500.0, 25.0);
        match judge(&old, &new, Method::default()).verdict {
            Call::Faster | Call::Slower => significant += 1,
            Call::Unchanged => unchanged += 1,
            Call::Inconclusive => {}
        }
    }
    let (_, hi) = bounds(0.05);
    assert!(
        (significant as f64) <= hi,
        "{significant} of {SEEDS} no-change runs called significant, at most {hi:.1} allowed"
    );
    // And not zero: a method that never calls anything significant would pass the bound above.
    let (lo, _) = bounds(0.05);
    assert!(
        (significant as f64) >= lo,
        "{significant} significant, expected ≥ {lo:.1}"
    );
    // Noise 5 % over 15 steps: half-width ≈ 2.05 · √(2 · 0.05² / 15) ≈ 3.7 % > the 2 % margin, so no
    // run can be called unchanged; with 400 steps a side (half-width ≈ 0.7 %) nearly all are.
    assert_eq!(unchanged, 0);
    let mut unchanged = 0;
    for seed in 0..100 {
        let mut r = Rng(2_000_000 + seed);
        let (old, new) = (r.times(400, 500.0, 25.0), r.times(400, 500.0, 25.0));
        if judge(&old, &new, Method::default()).verdict == Call::Unchanged {
            unchanged += 1;
        }
    }
    // Unchanged needs |Δ̂| ≤ 2 − 0.7 = 1.3 %, with Δ̂'s sd ≈ 0.35 %: 3.7 sd, so each run is unchanged with
    // probability > 0.999; 100 runs: all of them but for a chance of < 2 %.
    assert!(
        unchanged >= 99,
        "{unchanged} of 100 large no-change runs unchanged"
    );
}

#[test]
fn an_inconclusive_call_says_how_many_more_samples_would_decide() {
    // A true +4 % against a 10 % noise, 5 steps a side: inconclusive for most seeds. The engine's estimate
    // of the samples needed, taken for each side, decides the call in most runs that had that many.
    let mut decided = 0;
    let mut asked = 0;
    for seed in 0..200 {
        let mut r = Rng(3_000_000 + seed);
        let (old, new) = (r.times(5, 100.0, 10.0), r.times(5, 104.0, 10.0));
        let j = judge(&old, &new, Method::default());
        if j.verdict != Call::Inconclusive {
            continue;
        }
        let more = j.more_samples.unwrap();
        assert!(more >= 1);
        asked += 1;
        let mut old = old;
        let mut new = new;
        old.extend(r.times(more, 100.0, 10.0));
        new.extend(r.times(more, 104.0, 10.0));
        if judge(&old, &new, Method::default()).verdict != Call::Inconclusive {
            decided += 1;
        }
    }
    // The estimate aims the half-width at the estimate's distance from 0 (or the margin): about half the
    // reruns land on the deciding side of it, more where the first estimate was too small; require ≥ 40 %.
    assert!(asked > 100, "{asked}");
    assert!(
        decided as f64 >= 0.4 * asked as f64,
        "{decided} of {asked} decided"
    );
}
