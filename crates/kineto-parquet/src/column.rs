//! One column list per table drives the Arrow schema, the Parquet encodings and the values written,
//! the way `kineto`'s listings are driven by theirs.

use arrow_array::ArrayRef;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_schema::{DataType, Field};
use std::sync::Arc;

/// The logical type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// UTF-8 text; dictionary-encoded in the Parquet file (names repeat).
    Str,
    /// Signed 64-bit integer (times in ns, ids).
    I64,
    /// Unsigned 64-bit integer (counts, bytes, correlation ids).
    U64,
    /// Unsigned 32-bit integer (indices, launch dimensions).
    U32,
    /// Boolean.
    Bool,
    /// 64-bit float (means, medians and shares derived from integer times; not in the Parquet tables).
    F64,
}

impl Ty {
    /// The Arrow type the column is written with.
    pub fn arrow(self) -> DataType {
        match self {
            Ty::Str => DataType::Utf8,
            Ty::I64 => DataType::Int64,
            Ty::U64 => DataType::UInt64,
            Ty::U32 => DataType::UInt32,
            Ty::Bool => DataType::Boolean,
            Ty::F64 => DataType::Float64,
        }
    }

    /// The name `docs/parquet.md` uses for the type.
    pub fn doc_name(self) -> &'static str {
        match self {
            Ty::Str => "string",
            Ty::I64 => "int64",
            Ty::U64 => "uint64",
            Ty::U32 => "uint32",
            Ty::Bool => "bool",
            Ty::F64 => "float64",
        }
    }
}

/// One value of a row, borrowed from the row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'r> {
    /// Text (or null).
    Str(Option<&'r str>),
    /// Signed integer (or null).
    I64(Option<i64>),
    /// Unsigned integer (or null).
    U64(Option<u64>),
    /// Small unsigned integer (or null).
    U32(Option<u32>),
    /// Flag (or null).
    Bool(Option<bool>),
    /// Float (or null).
    F64(Option<f64>),
}

impl Val<'_> {
    /// The type this value belongs in.
    pub fn ty(&self) -> Ty {
        match self {
            Val::Str(_) => Ty::Str,
            Val::I64(_) => Ty::I64,
            Val::U64(_) => Ty::U64,
            Val::U32(_) => Ty::U32,
            Val::Bool(_) => Ty::Bool,
            Val::F64(_) => Ty::F64,
        }
    }
}

/// A column of a table whose rows are `R`.
pub struct Col<R> {
    /// The column name (Parquet, SQL).
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
    /// Whether it may be null.
    pub nullable: bool,
    /// What it holds, with its unit; `docs/parquet.md` repeats it (a test checks the names).
    pub doc: &'static str,
    /// The value in a row.
    pub get: for<'r> fn(&'r R) -> Val<'r>,
}

impl<R> Col<R> {
    /// The Arrow field.
    pub fn field(&self) -> Field {
        Field::new(self.name, self.ty.arrow(), self.nullable)
    }
}

/// The builder of one column's values for the current batch.
pub(crate) enum Builder {
    Str(StringBuilder),
    I64(Int64Builder),
    U64(UInt64Builder),
    U32(UInt32Builder),
    Bool(BooleanBuilder),
    F64(Float64Builder),
}

impl Builder {
    pub(crate) fn new(ty: Ty, capacity: usize) -> Builder {
        match ty {
            // 32 bytes a name on average is a guess; the builder grows as needed.
            Ty::Str => Builder::Str(StringBuilder::with_capacity(capacity, capacity * 32)),
            Ty::I64 => Builder::I64(Int64Builder::with_capacity(capacity)),
            Ty::U64 => Builder::U64(UInt64Builder::with_capacity(capacity)),
            Ty::U32 => Builder::U32(UInt32Builder::with_capacity(capacity)),
            Ty::Bool => Builder::Bool(BooleanBuilder::with_capacity(capacity)),
            Ty::F64 => Builder::F64(Float64Builder::with_capacity(capacity)),
        }
    }

    /// Appends `v`; `false` when its type is not the builder's (a column list bug, caught by tests).
    pub(crate) fn append(&mut self, v: Val<'_>) -> bool {
        match (self, v) {
            (Builder::Str(b), Val::Str(x)) => b.append_option(x),
            (Builder::I64(b), Val::I64(x)) => b.append_option(x),
            (Builder::U64(b), Val::U64(x)) => b.append_option(x),
            (Builder::U32(b), Val::U32(x)) => b.append_option(x),
            (Builder::Bool(b), Val::Bool(x)) => b.append_option(x),
            (Builder::F64(b), Val::F64(x)) => b.append_option(x),
            _ => return false,
        }
        true
    }

    pub(crate) fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
        }
    }
}
