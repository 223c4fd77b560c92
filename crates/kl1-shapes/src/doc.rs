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

    /// Takes `key` as a sub-table.
    pub(crate) fn section(&mut self, key: &str) -> Result<Node<'a>, Error> {
        let path = self.path_of(key);
        match self.take_value(key)? {
            Value::Table(table) => Ok(Node {
                origin: self.origin,
                path,
                table,
            }),
            other => Err(self.invalid(&path, format!("a {}, not a table", other.type_str()))),
        }
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
