//! A column: its name, type, unit, nullability, one-line doc and the getter that reads it from a row. Every
//! form a table takes (text table, CSV, JSON, Arrow and Parquet, the Python tables, the column docs) is
//! derived from these fields and nothing else.
//!
//! **The naming rule.** A duration or an absolute time is an integer (or, for means and medians, a float)
//! number of nanoseconds, and its name ends in `_ns` (`dur_ns`, `ts_ns`): that is the column in Arrow,
//! Parquet, Python and JSON. Beside it JSON adds `X_us` (the same value in µs, an f64) and, for an absolute
//! time, `X_rel_us` (µs from the trace's first event); CSV writes `X_us` (and `X_rel_us`) as exact
//! three-decimal text; a text table shows µs (relative for absolute times). `X` is the name without `_ns`.
//! [`Col::keys`] spells the rule out.

use std::borrow::Cow;

/// The logical type of a column's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// UTF-8 text.
    Str,
    /// Boolean.
    Bool,
    /// Unsigned 32-bit integer (indices, launch dimensions).
    U32,
    /// Unsigned 64-bit integer (counts, bytes, ids).
    U64,
    /// Signed 64-bit integer (times in ns, ids).
    I64,
    /// 64-bit float: means, medians and shares derived from integers, and ESTIMATED quantities. Never NaN
    /// or infinite where it is written: such a value is written as null.
    F64,
}

impl Ty {
    /// The name the docs use for the type (Arrow's, in lower case).
    pub fn doc_name(self) -> &'static str {
        match self {
            Ty::Str => "string",
            Ty::Bool => "bool",
            Ty::U32 => "uint32",
            Ty::U64 => "uint64",
            Ty::I64 => "int64",
            Ty::F64 => "float64",
        }
    }
}

/// What a column's numbers are measured in. [`Unit::Ns`] and [`Unit::TimeNs`] also decide the µs
/// conveniences of JSON and CSV (the naming rule, in the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Text, flags, ids, counts and indices.
    None,
    /// A duration in nanoseconds.
    Ns,
    /// An absolute time on the trace's clock, in nanoseconds.
    TimeNs,
    /// Bytes.
    Bytes,
    /// Floating-point operations.
    Flop,
    /// Gigabytes (10⁹ B) per second.
    GBps,
    /// Tera (10¹²) floating-point operations per second.
    TFlops,
    /// Floating-point operations per byte.
    FlopPerByte,
    /// Percent.
    Pct,
}

impl Unit {
    /// The unit as the docs write it (empty for [`Unit::None`]).
    pub fn doc_name(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Ns => "ns",
            Unit::TimeNs => "ns (trace clock)",
            Unit::Bytes => "B",
            Unit::Flop => "FLOP",
            Unit::GBps => "GB/s",
            Unit::TFlops => "TFLOP/s",
            Unit::FlopPerByte => "FLOP/B",
            Unit::Pct => "%",
        }
    }

    /// Whether the column is a duration or a time in ns (named `…_ns`, with µs conveniences).
    pub fn is_ns(self) -> bool {
        matches!(self, Unit::Ns | Unit::TimeNs)
    }
}

/// One value of a row, borrowed from the row where it can be; `None` is null.
#[derive(Debug, Clone, PartialEq)]
pub enum Val<'r> {
    /// Text.
    Str(Option<Cow<'r, str>>),
    /// Flag.
    Bool(Option<bool>),
    /// Small unsigned integer.
    U32(Option<u32>),
    /// Unsigned integer.
    U64(Option<u64>),
    /// Signed integer.
    I64(Option<i64>),
    /// Float.
    F64(Option<f64>),
}

impl Val<'_> {
    /// The type this value belongs to.
    pub fn ty(&self) -> Ty {
        match self {
            Val::Str(_) => Ty::Str,
            Val::Bool(_) => Ty::Bool,
            Val::U32(_) => Ty::U32,
            Val::U64(_) => Ty::U64,
            Val::I64(_) => Ty::I64,
            Val::F64(_) => Ty::F64,
        }
    }

    /// Whether the value is null (a float that is not finite counts as null: it is written as one).
    pub fn is_null(&self) -> bool {
        match self {
            Val::Str(v) => v.is_none(),
            Val::Bool(v) => v.is_none(),
            Val::U32(v) => v.is_none(),
            Val::U64(v) => v.is_none(),
            Val::I64(v) => v.is_none(),
            Val::F64(v) => !v.is_some_and(f64::is_finite),
        }
    }
}

/// A column of a table whose rows are `R`. Written with [`col!`](crate::col), one line each.
pub struct Col<R> {
    /// The column's name: the Arrow, Parquet and Python column and the exact JSON key; `_ns` last for a
    /// duration or time. A dot nests in JSON (`bytes.weights` → `"bytes": {"weights": …}`).
    pub name: &'static str,
    /// The type of its values.
    pub ty: Ty,
    /// The unit of its values.
    pub unit: Unit,
    /// Whether it may be null.
    pub nullable: bool,
    /// What it holds, in one line (with MEASURED, ESTIMATED or CLAIM where it is a number of those).
    pub doc: &'static str,
    /// Its value in a row.
    pub get: for<'r> fn(&'r R) -> Val<'r>,
}

/// What a column is, without its getter: what docs and checks read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColInfo {
    /// [`Col::name`].
    pub name: &'static str,
    /// [`Col::ty`].
    pub ty: Ty,
    /// [`Col::unit`].
    pub unit: Unit,
    /// [`Col::nullable`].
    pub nullable: bool,
    /// [`Col::doc`].
    pub doc: &'static str,
}

/// The keys a column is written under in JSON and in CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// JSON keys, in order: the name, then the µs conveniences.
    pub json: Vec<String>,
    /// CSV header cells.
    pub csv: Vec<String>,
}

impl ColInfo {
    /// The name without its `_ns` (the base of the µs conveniences), for a duration or time.
    pub fn base(&self) -> Option<&'static str> {
        self.unit
            .is_ns()
            .then(|| self.name.strip_suffix("_ns"))
            .flatten()
    }

    /// The JSON and CSV keys by the naming rule (module doc): `X_ns` → JSON `X_us`, `X_ns` (and
    /// `X_rel_us` for a time), CSV `X_us` (and `X_rel_us`); anything else is its name in both.
    pub fn keys(&self) -> Keys {
        match self.base() {
            None => Keys {
                json: vec![self.name.to_string()],
                csv: vec![self.name.to_string()],
            },
            Some(b) => {
                let mut json = vec![format!("{b}_us"), self.name.to_string()];
                let mut csv = vec![format!("{b}_us")];
                if self.unit == Unit::TimeNs {
                    json.push(format!("{b}_rel_us"));
                    csv.push(format!("{b}_rel_us"));
                }
                Keys { json, csv }
            }
        }
    }
}

impl<R> Col<R> {
    /// The column without its getter.
    pub fn info(&self) -> ColInfo {
        ColInfo {
            name: self.name,
            ty: self.ty,
            unit: self.unit,
            nullable: self.nullable,
            doc: self.doc,
        }
    }

    /// [`ColInfo::keys`].
    pub fn keys(&self) -> Keys {
        self.info().keys()
    }
}

/// One column, in one line: `col!(NAME, TYPE, UNIT, DOC, |r| VALUE)` for a column that is never null (the
/// value is the plain type: `&str`/`String` for `Str`, `u64` for `U64`, …), `col!(NAME, TYPE?, …)` for a
/// nullable one (the value is an `Option`).
#[macro_export]
macro_rules! col {
    ($name:literal, $ty:ident ?, $unit:ident, $doc:literal, |$r:ident| $e:expr) => {
        $crate::Col {
            name: $name,
            ty: $crate::Ty::$ty,
            unit: $crate::Unit::$unit,
            nullable: true,
            doc: $doc,
            get: |$r| $crate::col!(@val $ty, $e),
        }
    };
    ($name:literal, $ty:ident, $unit:ident, $doc:literal, |$r:ident| $e:expr) => {
        $crate::Col {
            name: $name,
            ty: $crate::Ty::$ty,
            unit: $crate::Unit::$unit,
            nullable: false,
            doc: $doc,
            get: |$r| $crate::col!(@val $ty, Some($e)),
        }
    };
    (@val Str, $e:expr) => { $crate::Val::Str(($e).map(::std::borrow::Cow::from)) };
    (@val Bool, $e:expr) => { $crate::Val::Bool($e) };
    (@val U32, $e:expr) => { $crate::Val::U32($e) };
    (@val U64, $e:expr) => { $crate::Val::U64($e) };
    (@val I64, $e:expr) => { $crate::Val::I64($e) };
    (@val F64, $e:expr) => { $crate::Val::F64($e) };
}
