//! A column of `kineto-tables` as Arrow: its data type and field, and the builder of its values.

use arrow_array::ArrayRef;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_schema::{DataType, Field};
use kineto_tables::{Col, Ty, Val};
use std::sync::Arc;

/// The Arrow type a column of type `ty` is written with.
pub fn arrow_type(ty: Ty) -> DataType {
    match ty {
        Ty::Str => DataType::Utf8,
        Ty::Bool => DataType::Boolean,
        Ty::U32 => DataType::UInt32,
        Ty::U64 => DataType::UInt64,
        Ty::I64 => DataType::Int64,
        Ty::F64 => DataType::Float64,
    }
}

/// The Arrow field of a column.
pub fn field<R>(c: &Col<R>) -> Field {
    Field::new(c.name, arrow_type(c.ty), c.nullable)
}

/// The builder of one column's values for the current batch.
pub(crate) enum Builder {
    Str(StringBuilder),
    Bool(BooleanBuilder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    I64(Int64Builder),
    F64(Float64Builder),
}

impl Builder {
    pub(crate) fn new(ty: Ty, capacity: usize) -> Builder {
        match ty {
            // 32 bytes a name on average is a guess; the builder grows as needed.
            Ty::Str => Builder::Str(StringBuilder::with_capacity(capacity, capacity * 32)),
            Ty::Bool => Builder::Bool(BooleanBuilder::with_capacity(capacity)),
            Ty::U32 => Builder::U32(UInt32Builder::with_capacity(capacity)),
            Ty::U64 => Builder::U64(UInt64Builder::with_capacity(capacity)),
            Ty::I64 => Builder::I64(Int64Builder::with_capacity(capacity)),
            Ty::F64 => Builder::F64(Float64Builder::with_capacity(capacity)),
        }
    }

    /// Appends `v`; `false` when its type is not the builder's (a column list bug, caught by tests).
    pub(crate) fn append(&mut self, v: &Val<'_>) -> bool {
        match (self, v) {
            (Builder::Str(b), Val::Str(x)) => b.append_option(x.as_deref()),
            (Builder::Bool(b), Val::Bool(x)) => b.append_option(*x),
            (Builder::U32(b), Val::U32(x)) => b.append_option(*x),
            (Builder::U64(b), Val::U64(x)) => b.append_option(*x),
            (Builder::I64(b), Val::I64(x)) => b.append_option(*x),
            (Builder::F64(b), Val::F64(x)) => b.append_option(*x),
            _ => return false,
        }
        true
    }

    pub(crate) fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
        }
    }
}
