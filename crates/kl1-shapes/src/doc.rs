//! Reading a TOML document key by key, so that every error names the field's full dotted path.
//!
//! Deserialising a whole file in one go would report a wrong type or an unknown key with a line number
//! only, and only when the key happens to be on that line; taking values out one key at a time lets each
//! error say `model.vocab` or `gpu[GB10].read_bandwidth[1]`. Each table's keys are checked against the known
//! ones first, so a misspelt key is reported as itself.

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use crate::Error;

/// A TOML table being taken apart, with its dotted path for errors.
pub(crate) struct Node<'a> {
    origin: &'a str,
    path: String,
    table: Table,
}

impl<'a> Node<'a> {
    /// Parses `text` as the root table. Syntax errors keep the parser's line and column.
    pub(crate) fn parse(text: &str, origin: &'a str) -> Result<Node<'a>, Error> {
        let table = text.parse::<Table>().map_err(|e| Error::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        Ok(Node {
            origin,
            path: String::new(),
            table,
        })
    }

    /// `path.key`, or `key` at the root.
    pub(crate) fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(crate) fn invalid(&self, field: &str, reason: impl Into<String>) -> Error {
        Error::Invalid {
            origin: self.origin.to_string(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    fn take_value(&mut self, key: &str) -> Result<Value, Error> {
        self.table
            .remove(key)
            .ok_or_else(|| self.invalid(&self.path_of(key), "missing"))
    }

    /// Takes `key` and deserialises it as `T`.
    pub(crate) fn take<T: DeserializeOwned>(&mut self, key: &str) -> Result<T, Error> {
        let value = self.take_value(key)?;
        self.convert(&self.path_of(key), value)
    }

    /// Takes `key` if present.
    pub(crate) fn take_opt<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, Error> {
        match self.table.remove(key) {
            None => Ok(None),
            Some(value) => self.convert(&self.path_of(key), value).map(Some),
        }
    }

    /// Deserialises a value taken from this node, naming `field` if it does not fit.
    pub(crate) fn convert<T: DeserializeOwned>(
        &self,
        field: &str,
        value: Value,
    ) -> Result<T, Error> {
        value
            .try_into()
            .map_err(|e: toml::de::Error| self.invalid(field, e.message().trim().to_string()))
    }

    /// Takes `key` as an array of tables, each a node with path `key[i]`.
    pub(crate) fn array(&mut self, key: &str) -> Result<Vec<Node<'a>>, Error> {
        let path = self.path_of(key);
        let Some(value) = self.table.remove(key) else {
            return Ok(Vec::new());
        };
        let Value::Array(items) = value else {
            return Err(self.invalid(
                &path,
                format!("a {}, not an array of tables", value.type_str()),
            ));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Table(table) => Ok(Node {
                    origin: self.origin,
                    path: format!("{path}[{i}]"),
                    table,
                }),
                other => Err(self.invalid(
                    &format!("{path}[{i}]"),
                    format!("a {}, not a table", other.type_str()),
                )),
            })
            .collect()
    }

    /// Gives this node another path, e.g. `gpu[GB10]` once the GPU's name is known.
    pub(crate) fn rename(&mut self, path: String) {
        self.path = path;
    }

    /// This node's path.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Fails on the first key not in `known`, so a misspelt key is reported as itself rather than as the
    /// key it was meant to be going missing.
    pub(crate) fn only(&self, known: &[&str]) -> Result<(), Error> {
        match self.table.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(self.invalid(
                &self.path_of(key),
                format!("unknown key (known here: {})", known.join(", ")),
            )),
        }
    }
}

/// Deserialises TOML `text` into `T` (serde derive with `deny_unknown_fields`), naming the field of any error
/// by its dotted path (`serde_path_to_error`). A value's provenance table (`{ value, source, at }`) is part
/// of its field: an error inside it names the field (`model.vocab`, not `model.vocab.value`;
/// `quant.routed_experts[0].count`).
pub(crate) fn from_toml<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T, Error> {
    let table = text.parse::<Table>().map_err(|e| Error::Parse {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    serde_path_to_error::deserialize(Value::Table(table)).map_err(|e| {
        let mut path = e.path().to_string();
        if path == "." {
            path.clear();
        }
        // The `value` of a `{ value, source, at }` table is the field itself.
        path = path.replace(".value[", "[").replace(".value.", ".");
        if let Some(p) = path.strip_suffix(".value") {
            path = p.to_string();
        }
        let message = e.into_inner().message().trim().to_string();
        let quoted = |prefix: &str| {
            message
                .strip_prefix(prefix)
                .and_then(|rest| rest.split('`').next())
                .map(str::to_string)
        };
        let join = |key: &str| {
            if path == key || path.ends_with(&format!(".{key}")) {
                path.clone()
            } else if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            }
        };
        let (field, reason) = if let Some(key) = quoted("unknown field `") {
            (
                join(&key),
                format!(
                    "unknown key{}",
                    message
                        .split_once(',')
                        .map_or(String::new(), |(_, rest)| format!(" ({})", rest.trim()))
                ),
            )
        } else if let Some(key) = quoted("missing field `") {
            (join(&key), "missing".to_string())
        } else {
            (path.clone(), message.clone())
        };
        Error::Invalid {
            origin: origin.to_string(),
            field: if field.is_empty() {
                "(top level)".to_string()
            } else {
                field
            },
            reason,
        }
    })
}
