//! The reader of one JSON object's keys: each key taken once, typed, and an error naming its dotted path
//! when it is of the wrong kind or (an integer) past its plausibility bound; what is left at the end must be
//! on a list of known-irrelevant keys.

use serde_json::{Map, Value};

use super::bounds::bound_of;
use crate::Error;

/// The keys of one JSON object, taken one by one; what is left at the end must be known-irrelevant.
pub(super) struct Fields<'a> {
    pub(super) map: Map<String, Value>,
    pub(super) origin: &'a str,
    pub(super) prefix: String,
}

impl<'a> Fields<'a> {
    fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    pub(super) fn invalid(&self, key: &str, reason: impl Into<String>) -> Error {
        Error::Invalid {
            origin: self.origin.to_string(),
            field: self.path(key),
            reason: reason.into(),
        }
    }

    /// The value, `None` when absent or JSON null.
    pub(super) fn opt(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// A non-negative integer within the key's plausibility bound ([`bound_of`]).
    pub(super) fn u64_opt(&mut self, key: &str) -> Result<Option<u64>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => {
                let n = v.as_u64().ok_or_else(|| {
                    self.invalid(key, format!("{v} is not a non-negative integer"))
                })?;
                self.bounded(key, n).map(Some)
            }
        }
    }

    /// `n` if it is within `key`'s plausibility bound.
    fn bounded(&self, key: &str, n: u64) -> Result<u64, Error> {
        let b = bound_of(key);
        if n > b.max {
            return Err(self.invalid(
                key,
                format!(
                    "{n} is past any model's ({}: at most {}); refused rather than counted",
                    b.what, b.max
                ),
            ));
        }
        Ok(n)
    }

    pub(super) fn u64(&mut self, key: &str) -> Result<u64, Error> {
        self.u64_opt(key)?
            .ok_or_else(|| self.invalid(key, "missing: needed for the weight shapes"))
    }

    pub(super) fn positive(&mut self, key: &str) -> Result<u64, Error> {
        let v = self.u64(key)?;
        if v == 0 {
            return Err(self.invalid(key, "must be positive"));
        }
        Ok(v)
    }

    /// A width that may be absent, but is never 0 when given.
    pub(super) fn positive_opt(&mut self, key: &str) -> Result<Option<u64>, Error> {
        match self.u64_opt(key)? {
            Some(0) => Err(self.invalid(key, "must be positive")),
            v => Ok(v),
        }
    }

    pub(super) fn bool_opt(&mut self, key: &str) -> Result<Option<bool>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.invalid(key, format!("{v} is not true or false"))),
        }
    }

    pub(super) fn f64_opt(&mut self, key: &str) -> Result<Option<f64>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.invalid(key, format!("{v} is not a number"))),
        }
    }

    pub(super) fn str_opt(&mut self, key: &str) -> Result<Option<String>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.invalid(key, format!("{v} is not a string"))),
        }
    }

    pub(super) fn strings_opt(&mut self, key: &str) -> Result<Option<Vec<String>>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s),
                    other => Err(self.invalid(key, format!("{other} is not a string"))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.invalid(key, format!("{v} is not a list of strings"))),
        }
    }

    pub(super) fn u64s_opt(&mut self, key: &str) -> Result<Option<Vec<u64>>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|i| {
                    i.as_u64()
                        .ok_or_else(|| self.invalid(key, format!("{i} is not an integer")))
                        .and_then(|n| self.bounded(key, n))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.invalid(key, format!("{v} is not a list of integers"))),
        }
    }

    pub(super) fn object_opt(&mut self, key: &str) -> Result<Option<Fields<'a>>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields {
                map,
                origin: self.origin,
                prefix: self.path(key),
            })),
            Some(v) => Err(self.invalid(key, format!("{v} is not an object"))),
        }
    }

    /// Fails on the first key neither read nor in `ignored`.
    pub(super) fn finish(self, ignored: &[&str]) -> Result<(), Error> {
        for key in self.map.keys() {
            if !ignored.contains(&key.as_str()) {
                return Err(self.invalid(
                    key,
                    "not understood: this tool does not know how it changes the weights, so it will not guess",
                ));
            }
        }
        Ok(())
    }
}
