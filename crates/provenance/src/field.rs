//! User fields: `key=value` arguments, the record's own keys kept out, numbers never rounded silently.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

use crate::{Error, RESERVED_KEYS};
/// Fails with [`Error::NonFinite`] naming the dotted path under `key` of the first NaN or infinity in `value`.
pub(crate) fn check_finite<T: Serialize + ?Sized>(value: &T, key: &str) -> Result<(), Error> {
    tool_io::check_finite(value).map_err(|e| Error::NonFinite {
        path: match e.json_path.as_str() {
            "$" => key.to_owned(),
            p if p.starts_with('[') => format!("{key}{p}"),
            p => format!("{key}.{p}"),
        },
        value: e.value,
    })
}

pub(crate) fn insert_field(
    fields: &mut BTreeMap<String, Value>,
    key: String,
    value: impl Serialize,
) -> Result<(), Error> {
    if RESERVED_KEYS.contains(&key.as_str()) {
        return Err(Error::ReservedField { name: key });
    }
    check_finite(&value, &key)?;
    let v = serde_json::to_value(value).map_err(|e| Error::Serialize {
        what: key.clone(),
        message: e.to_string(),
    })?;
    fields.insert(key, v);
    Ok(())
}

/// Parses a `key=value` field argument. The value is read as JSON when it is valid JSON (`n=3`, `ok=true`,
/// `tags=["a"]`) and kept as a string otherwise (`weights=bf16`); quote it to force a string (`v="3"`).
///
/// A number is never rounded silently: a value whose numbers JSON as written here cannot hold exactly (an
/// integer beyond 64 bits, a decimal with more digits than a double keeps) is kept as the string given.
///
/// ```
/// use serde_json::json;
/// assert_eq!(provenance::parse_field("n=3")?, ("n".to_owned(), json!(3)));
/// assert_eq!(provenance::parse_field("weights=bf16")?.1, json!("bf16"));
/// assert_eq!(
///     provenance::parse_field("id=123456789012345678901234567890")?.1,
///     json!("123456789012345678901234567890")
/// );
/// assert!(provenance::parse_field("no-equals").is_err());
/// # Ok::<(), provenance::Error>(())
/// ```
pub fn parse_field(arg: &str) -> Result<(String, Value), Error> {
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| Error::BadField(arg.to_owned()))?;
    if k.is_empty() {
        return Err(Error::BadField(arg.to_owned()));
    }
    let value = match serde_json::from_str::<Value>(v) {
        Ok(parsed) if numbers_exact(v) => parsed,
        _ => Value::String(v.to_owned()),
    };
    Ok((k.to_owned(), value))
}

/// Whether every number in the JSON text `json` keeps its exact value once parsed: an integer within i64 or
/// u64 (kept as an integer), or a decimal whose double prints back as the same decimal value.
fn numbers_exact(json: &str) -> bool {
    let b = json.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                if !number_exact(&json[start..i]) {
                    return false;
                }
            }
            _ => i += 1,
        }
    }
    true
}

fn number_exact(literal: &str) -> bool {
    if !literal.contains(['.', 'e', 'E']) {
        return literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok();
    }
    match literal.parse::<f64>() {
        // `{:e}` prints the shortest decimal that reads back as the same double.
        Ok(x) if x.is_finite() => decimal(literal) == decimal(&format!("{x:e}")),
        _ => false,
    }
}

/// A decimal literal's value: (negative, significant digits without leading or trailing zeros, power of ten
/// of the last digit); zero is `(false, "", 0)`.
fn decimal(literal: &str) -> (bool, String, i64) {
    let (negative, rest) = match literal.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, literal),
    };
    let (mantissa, mut exp) = match rest.find(['e', 'E']) {
        Some(i) => (
            &rest[..i],
            rest[i + 1..].parse::<i64>().unwrap_or(i64::MAX / 2),
        ),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    exp = exp.saturating_sub(frac.len() as i64);
    let mut digits = format!("{int}{frac}").trim_start_matches('0').to_owned();
    while digits.ends_with('0') {
        digits.pop();
        exp = exp.saturating_add(1);
    }
    if digits.is_empty() {
        return (false, String::new(), 0);
    }
    (negative, digits, exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_kept_only_when_exact() {
        for exact in [
            "3",
            "-9223372036854775808",
            "18446744073709551615",
            "0.1",
            "1e2",
            "2.50",
            "-0.0",
        ] {
            assert!(number_exact(exact), "{exact}");
        }
        for rounded in [
            "123456789012345678901234567890",
            "18446744073709551616",
            "0.30000000000000001",
            "1e400",
            "9007199254740993.0",
        ] {
            assert!(!number_exact(rounded), "{rounded}");
        }
        // Numbers inside strings are text, not numbers.
        assert!(numbers_exact(
            r#"{"id": "123456789012345678901234567890", "n": [1, 2.5]}"#
        ));
        assert!(!numbers_exact(
            r#"{"s": "a\"b", "n": 98765432109876543210}"#
        ));
    }
}
