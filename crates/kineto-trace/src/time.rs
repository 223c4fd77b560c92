//! Microsecond text to integer nanoseconds, exactly.
//!
//! Kineto writes `ts`/`dur` as integer microseconds (≤ 2024) or microseconds with three decimals
//! (PyTorch ≥ 2.4); traces re-serialised by Python tools carry whatever float repr gave (one decimal,
//! or an exponent). Going through `f64` would lose nanoseconds on absolute epoch times (1.7e15 µs has a
//! float resolution of 0.25 µs), so the decimal text is converted digit by digit. Digits past the third
//! decimal are rounded half up on the fourth (the rule the independent Python check uses too).

/// The largest magnitude of a time the model holds, ns: 2^62 − 1 (about 146 years). Every start and
/// end of an event lies within ±`MAX_ABS_NS` of the trace's zero, so the difference of any two times
/// — a span, a duration, a union — fits in an `i64` of nanoseconds exactly. Absolute epoch times
/// (1.7e18 ns in 2024) are well inside; relative ones far more so.
pub const MAX_ABS_NS: i64 = (1 << 62) - 1;

/// [`MAX_ABS_NS`] in words, for errors.
pub(crate) const RANGE: &str = "times must lie within ±(2^62 − 1) ns (146 years) of the trace's zero, so that every span fits \
     in i64 nanoseconds";

/// Converts a JSON number token in microseconds to nanoseconds. `None` when the value does not fit in
/// an `i64` of nanoseconds (±292 years).
pub(crate) fn us_to_ns(tok: &[u8]) -> Option<i64> {
    let (neg, digits) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, tok),
    };
    let mut int: i64 = 0;
    let mut i = 0;
    while i < digits.len() && digits[i].is_ascii_digit() {
        int = int
            .checked_mul(10)?
            .checked_add(i64::from(digits[i] - b'0'))?;
        i += 1;
    }
    let mut frac: i64 = 0;
    let mut frac_digits = 0;
    let mut round_up = false;
    if i < digits.len() && digits[i] == b'.' {
        i += 1;
        while i < digits.len() && digits[i].is_ascii_digit() {
            if frac_digits < 3 {
                frac = frac * 10 + i64::from(digits[i] - b'0');
            } else if frac_digits == 3 {
                round_up = digits[i] >= b'5';
            }
            frac_digits += 1;
            i += 1;
        }
    }
    if i < digits.len() {
        // An exponent: rare enough (Python repr of very small or large floats) to take the exact slow
        // path through a decimal string rebuilt without it.
        return exp_to_ns(tok);
    }
    for _ in frac_digits.min(3)..3 {
        frac *= 10;
    }
    let ns = int
        .checked_mul(1000)?
        .checked_add(frac)?
        .checked_add(i64::from(round_up))?;
    Some(if neg { -ns } else { ns })
}

/// Handles `1.5e3`-style tokens by shifting the decimal point in the text, then reusing [`us_to_ns`].
fn exp_to_ns(tok: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(tok).ok()?;
    let (mant, exp) = s.split_once(['e', 'E'])?;
    let exp: i64 = match exp.parse() {
        Ok(e) => e,
        // An exponent beyond i64 is either absurdly small (0 ns) or absurdly large (out of range).
        Err(_) => return exp.starts_with('-').then_some(0),
    };
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    let mut digits: String = format!("{ip}{fp}");
    // Position of the decimal point within `digits`.
    let mut point = (ip.len() as i64).saturating_add(exp);
    // Four or more zeros after the point leave nothing above the rounding digit: 0 ns. Checked before
    // padding, so `1e-2000000000` costs nothing rather than two gigabytes of zeros.
    if point <= -4 {
        return Some(0);
    }
    if point < 0 {
        digits.insert_str(0, &"0".repeat(usize::try_from(-point).ok()?));
        point = 0;
    }
    let point = usize::try_from(point).ok()?;
    if point > 40 {
        return None;
    }
    if digits.len() < point {
        digits.push_str(&"0".repeat(point - digits.len()));
    }
    let (a, b) = digits.split_at(point);
    let a = if a.is_empty() { "0" } else { a };
    let text = if neg {
        format!("-{a}.{b}0")
    } else {
        format!("{a}.{b}0")
    };
    us_to_ns(text.as_bytes())
}

/// Formats nanoseconds as microseconds with three decimals, the way current Kineto writes them.
pub fn ns_to_us_string(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// Nanoseconds as floating microseconds, for JSON output (exact to the nanosecond below 2^53 ns).
/// Takes any integer up to `i128`, so that sums over many events convert without overflowing first.
pub fn ns_to_us(ns: impl Into<i128>) -> f64 {
    ns.into() as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_every_form_kineto_and_python_write() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("100", 100_000),
            ("63.813", 63_813),
            ("1712195495519695.8", 1_712_195_495_519_695_800),
            ("1610366662254362", 1_610_366_662_254_362_000),
            ("4.9", 4_900),
            ("4.0005", 4_001),
            ("4.00049", 4_000),
            ("-1.5", -1_500),
            ("1.5e3", 1_500_000),
            ("2E-3", 2),
            ("1.2345e1", 12_345),
            ("5e-4", 1),
            ("4.9e-4", 0),
            ("9e-5", 0),
            ("1e-2000000000", 0),
            ("1e-99999999999999999999", 0),
        ];
        for (tok, want) in cases {
            assert_eq!(us_to_ns(tok.as_bytes()), Some(*want), "{tok}");
        }
    }

    #[test]
    fn refuses_values_that_do_not_fit() {
        assert_eq!(us_to_ns(b"9999999999999999999"), None);
        assert_eq!(us_to_ns(b"1e300"), None);
        assert_eq!(us_to_ns(b"1e2000000000"), None);
        assert_eq!(us_to_ns(b"1e99999999999999999999"), None);
    }

    #[test]
    fn formats_back_to_three_decimals() {
        assert_eq!(ns_to_us_string(63_813), "63.813");
        assert_eq!(ns_to_us_string(-1_500), "-1.500");
        assert_eq!(ns_to_us_string(7), "0.007");
    }
}
