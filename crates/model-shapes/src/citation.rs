//! Where each value in a cited table (the GPU table; `kl1-shapes`' model specs) comes from.
//!
//! In the TOML every value is written as `{ value = …, source = "<reference>", at = "<where in it>" }` or
//! `{ value = …, assumed = "<why>" }`; `<reference>` is a key of the file's `[references]` table, so a source
//! is spelled out once and every citation of it is checked. [`Cited`] is such a value as read, [`Sources`]
//! the file's references that resolve it into a [`Citation`].

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::Error;

/// Where one value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Citation {
    /// Read from a source.
    Cited {
        /// The key of the file's `[references]` table.
        source: String,
        /// That table's description of the source (repository and commit, URL, document).
        reference: String,
        /// Where in the source: a config field, a file and line, a table row.
        at: String,
    },
    /// Not found in any source; chosen for the stated reason. The user's own value should replace it.
    Assumed {
        /// Why this value.
        reason: String,
    },
}

impl Citation {
    /// Whether the value is an assumption rather than a citation.
    pub fn is_assumed(&self) -> bool {
        matches!(self, Citation::Assumed { .. })
    }
}

/// A value with its provenance, as written in TOML; [`Sources::resolve`] checks the provenance.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cited<T> {
    /// The value.
    pub value: T,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    assumed: Option<String>,
}

/// The `[references]` table of one file, and what errors should say the file is.
pub struct Sources<'a> {
    /// What errors call the file (a path, or the name of a built-in file).
    pub origin: &'a str,
    /// The file's `[references]`: key → description of the source.
    pub references: &'a BTreeMap<String, String>,
}

impl Sources<'_> {
    /// An [`Error::Invalid`] about `field` of this file.
    pub fn invalid(&self, field: &str, reason: impl Into<String>) -> Error {
        Error::Invalid {
            origin: self.origin.to_string(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// Checks the `[references]` table itself: every description says something.
    pub fn check_table(&self) -> Result<(), Error> {
        for (key, description) in self.references {
            if key.trim().is_empty() {
                return Err(self.invalid("references", "a reference with an empty key"));
            }
            if description.trim().is_empty() {
                return Err(self.invalid(&format!("references.{key}"), "empty description"));
            }
        }
        Ok(())
    }

    /// The provenance of `field`: exactly one of a citation (`source` and `at`) or `assumed`.
    pub fn resolve<T>(&self, field: &str, cited: &Cited<T>) -> Result<Citation, Error> {
        match (&cited.source, &cited.at, &cited.assumed) {
            (None, None, None) => Err(self.invalid(
                field,
                "no provenance: give `source` (a [references] key) and `at`, or `assumed` with the reason",
            )),
            (Some(_), _, Some(_)) | (None, Some(_), Some(_)) => Err(self.invalid(
                field,
                "both cited and `assumed`: a value is one or the other",
            )),
            (None, None, Some(reason)) => {
                if reason.trim().is_empty() {
                    Err(self.invalid(field, "`assumed` needs the reason, not an empty string"))
                } else {
                    Ok(Citation::Assumed {
                        reason: reason.clone(),
                    })
                }
            }
            (Some(source), Some(at), None) => self.cite(field, source, at),
            (Some(_), None, None) => Err(self.invalid(
                field,
                "`source` without `at`: say where in the source (config field, file:line, table row)",
            )),
            (None, Some(_), None) => Err(self.invalid(field, "`at` without `source`")),
        }
    }

    /// The provenance of a bare citation.
    pub fn cite(&self, field: &str, source: &str, at: &str) -> Result<Citation, Error> {
        let Some(reference) = self.references.get(source) else {
            return Err(self.invalid(
                field,
                format!("source `{source}` is not a key of the file's [references] table"),
            ));
        };
        if at.trim().is_empty() {
            return Err(self.invalid(field, "`at` is empty"));
        }
        Ok(Citation::Cited {
            source: source.to_string(),
            reference: reference.clone(),
            at: at.to_string(),
        })
    }
}
