//! `Probe<T>`: one optional measurement, holding either its value or the reason there is none.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Key of the placeholder object an unavailable probe serialises to, before [`lift_reasons`] turns it into
/// `null` and moves the reason to the record's `unavailable` map.
pub(crate) const UNAVAILABLE_MARKER: &str = "__provenance_unavailable__";

/// The outcome of one optional probe: the value, or the reason there is none.
///
/// A probe never fails the record: a missing tool, an unreadable file or a command that exits non-zero all
/// become [`Probe::Unavailable`] with a sentence saying why. Inside a [`crate::Record`] an unavailable probe is
/// written as `null`, and its reason is listed under the record's `unavailable` key, at the dotted path of the
/// field (`"git.commit": "not a git repository …"`). Serialised on its own, outside a record, it is the object
/// `{"__provenance_unavailable__": reason}`.
///
/// ```
/// use provenance::Probe;
/// let p: Probe<u32> = Probe::unavailable("no driver");
/// assert_eq!(p.reason(), Some("no driver"));
/// assert_eq!(Probe::Value(2).map(|x| x * 2).value(), Some(&4));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Probe<T> {
    /// The probe worked.
    Value(T),
    /// The probe could not run or gave nothing usable; the string says why.
    Unavailable(String),
}

impl<T> Probe<T> {
    /// An unavailable probe with its reason.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Probe::Unavailable(reason.into())
    }

    /// The value, if there is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Probe::Value(v) => Some(v),
            Probe::Unavailable(_) => None,
        }
    }

    /// The value by move, if there is one.
    pub fn into_value(self) -> Option<T> {
        match self {
            Probe::Value(v) => Some(v),
            Probe::Unavailable(_) => None,
        }
    }

    /// Why there is no value, if there is none.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Probe::Value(_) => None,
            Probe::Unavailable(r) => Some(r),
        }
    }

    /// Maps the value, keeping the reason.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Probe<U> {
        match self {
            Probe::Value(v) => Probe::Value(f(v)),
            Probe::Unavailable(r) => Probe::Unavailable(r),
        }
    }

    /// Chains a second probe that needs the first one's value.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Probe<U>) -> Probe<U> {
        match self {
            Probe::Value(v) => f(v),
            Probe::Unavailable(r) => Probe::Unavailable(r),
        }
    }

    /// Borrows the value inside.
    pub fn as_ref(&self) -> Probe<&T> {
        match self {
            Probe::Value(v) => Probe::Value(v),
            Probe::Unavailable(r) => Probe::Unavailable(r.clone()),
        }
    }
}

impl<T, E: fmt::Display> From<Result<T, E>> for Probe<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Probe::Value(v),
            Err(e) => Probe::Unavailable(e.to_string()),
        }
    }
}

impl<T: Serialize> Serialize for Probe<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Probe::Value(v) => v.serialize(s),
            Probe::Unavailable(reason) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(UNAVAILABLE_MARKER, reason)?;
                m.end()
            }
        }
    }
}

/// Replaces every unavailable-probe placeholder under `value` by `null` and records its reason in `reasons`,
/// keyed by the dotted path from the record's root (`prefix` is the path of `value` itself).
pub(crate) fn lift_reasons(
    value: &mut Value,
    prefix: &str,
    reasons: &mut BTreeMap<String, String>,
) {
    match value {
        Value::Object(map) => {
            if let Some(reason) = placeholder_reason(map) {
                reasons.insert(prefix.to_owned(), reason);
                *value = Value::Null;
                return;
            }
            for (k, v) in map.iter_mut() {
                lift_reasons(v, &join(prefix, k), reasons);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                lift_reasons(v, &join(prefix, &i.to_string()), reasons);
            }
        }
        _ => {}
    }
}

fn placeholder_reason(map: &Map<String, Value>) -> Option<String> {
    if map.len() != 1 {
        return None;
    }
    match map.get(UNAVAILABLE_MARKER) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lifting_turns_placeholders_into_null_and_keeps_the_path() {
        let mut v = json!({
            "a": Probe::<u32>::unavailable("no tool"),
            "b": {"c": [1, Probe::<u32>::unavailable("gone")]},
            "d": Probe::Value(3),
        });
        let mut reasons = BTreeMap::new();
        lift_reasons(&mut v, "", &mut reasons);
        assert_eq!(v, json!({"a": null, "b": {"c": [1, null]}, "d": 3}));
        assert_eq!(reasons.get("a").map(String::as_str), Some("no tool"));
        assert_eq!(reasons.get("b.c.1").map(String::as_str), Some("gone"));
        assert_eq!(reasons.len(), 2);
    }

    #[test]
    fn an_ordinary_object_with_other_keys_is_left_alone() {
        let mut v = json!({UNAVAILABLE_MARKER: "x", "other": 1});
        let mut reasons = BTreeMap::new();
        lift_reasons(&mut v, "p", &mut reasons);
        assert!(reasons.is_empty());
        assert_eq!(v["other"], 1);
    }
}
