//! Reading TOML into raw structs (serde derive, `deny_unknown_fields`), with every error naming the
//! field by its full dotted path (`serde_path_to_error`): `model.vocab`, `quant.routed_experts[0].count`,
//! `gpu[GB10].read_bandwidth[1].label`. A misspelt key is reported as itself (`model.hiden`), a missing one
//! as missing.

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use crate::Error;

/// Deserialises TOML `text` into `T` (serde derive with `deny_unknown_fields`), naming the field of any error
/// by its dotted path (`serde_path_to_error`). A value's provenance table (`{ value, source, at }`) is part
/// of its field: an error inside it names the field (`model.vocab`, not `model.vocab.value`;
/// `quant.routed_experts[0].count`).
pub fn from_toml<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T, Error> {
    from_toml_renamed(text, origin, &|p: &str| p.to_string())
}

/// [`from_toml`], with the error's path passed through `rename` (e.g. to name array entries by a key).
pub fn from_toml_renamed<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    rename: &dyn Fn(&str) -> String,
) -> Result<T, Error> {
    let table = text.parse::<Table>().map_err(|e| Error::Parse {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    serde_path_to_error::deserialize(Value::Table(table)).map_err(|e| {
        let mut path = rename(&e.path().to_string());
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
