//! How many distinct experts a batch of rows reads under uniform routing.

use crate::Error;

/// Expected number of distinct experts when `rows` rows each pick `top_k` of `experts` uniformly and
/// independently: E·(1 − (1 − k/E)^m).
///
/// Each row picks k distinct experts, so an expert escapes one row with probability 1 − k/E and all m rows
/// with (1 − k/E)^m. It is an upper bound for real routing: 1 − (1 − p)^m is concave in an expert's pick
/// probability p, so for the same Σp = k any unevenness among experts lowers the sum (Jensen), and rows of the
/// same request, which pick alike, lower it further. It never exceeds min(E, m·k). Computed as
/// −E·expm1(m·ln1p(−k/E)) to stay accurate when k/E is small.
pub fn uniform_distinct_experts(experts: u64, top_k: u64, rows: u64) -> Result<f64, Error> {
    if experts == 0 || top_k == 0 || top_k > experts {
        return Err(Error::Routing {
            experts,
            top_k,
            reason: "needs at least one expert and 1 ≤ top_k ≤ experts".to_string(),
        });
    }
    if rows == 0 {
        return Ok(0.0);
    }
    let e = experts as f64;
    let p = top_k as f64 / e;
    // At k = E, ln1p(−1) = −∞ and expm1(−∞) = −1: every expert is picked, as it should be.
    Ok(-e * (rows as f64 * (-p).ln_1p()).exp_m1())
}
