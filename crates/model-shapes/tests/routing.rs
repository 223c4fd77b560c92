//! Distinct experts under uniform routing: hand values and the bounds that hold for any routing.
#![allow(clippy::expect_used)] // test helpers outside #[test] functions

use model_shapes::uniform_distinct_experts;
use proptest::prelude::*;

fn close(actual: f64, expected: f64) {
    let tolerance = 1e-9 * expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not {expected} (±{tolerance})"
    );
}

#[test]
fn distinct_experts_by_hand() {
    // No rows read nothing; one row picks exactly top_k distinct experts.
    close(uniform_distinct_experts(384, 6, 0).expect("valid"), 0.0);
    close(uniform_distinct_experts(384, 6, 1).expect("valid"), 6.0);
    // Two rows: 384·(1 − (378/384)²) = 384 − 378²/384 = 384 − 372.09375.
    close(
        uniform_distinct_experts(384, 6, 2).expect("valid"),
        11.906_25,
    );
    // top_k = E: every row picks every expert.
    close(uniform_distinct_experts(8, 8, 3).expect("valid"), 8.0);
    // 2 of 4 over 2 rows: 4·(1 − (1/2)²) = 3.
    close(uniform_distinct_experts(4, 2, 2).expect("valid"), 3.0);
    assert!(uniform_distinct_experts(0, 0, 1).is_err());
    assert!(uniform_distinct_experts(4, 5, 1).is_err());
    assert!(uniform_distinct_experts(4, 0, 1).is_err());
}

proptest! {
    #[test]
    fn distinct_experts_are_bounded_and_monotone(e in 1u64..=1024, k_frac in 0.0f64..1.0, m in 0u64..100_000) {
        let k = 1 + ((e - 1) as f64 * k_frac) as u64;
        let d = uniform_distinct_experts(e, k, m).expect("valid");
        let next = uniform_distinct_experts(e, k, m + 1).expect("valid");
        // Never more experts than exist, nor more than the picks made.
        let bound = (e as f64).min(m as f64 * k as f64);
        prop_assert!(d <= bound * (1.0 + 1e-12), "{} > {}", d, bound);
        // At least one row's picks once there is a row.
        if m >= 1 {
            prop_assert!(d >= k as f64 * (1.0 - 1e-12), "{} < {}", d, k);
        }
        prop_assert!(next >= d, "{} rows: {} then {}", m, d, next);
    }
}
