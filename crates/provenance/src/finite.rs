//! A serde pass that refuses NaN and infinity.
//!
//! serde_json writes a non-finite float as `null` without a word, so a broken measurement would look like a
//! missing one. Records are walked with this checker before they are written, and a non-finite number becomes
//! an error naming its path.

use serde::ser::{self, Serialize};
use std::fmt;

use crate::Error;

/// Fails with [`Error::NonFinite`] if any `f32`/`f64` reached by serialising `value` is NaN or infinite.
/// `root` is the dotted path of `value` itself, used in the error.
pub(crate) fn check_finite<T: Serialize + ?Sized>(value: &T, root: &str) -> Result<(), Error> {
    let mut checker = Checker { path: Vec::new() };
    if !root.is_empty() {
        checker.path.push(root.to_owned());
    }
    match value.serialize(&mut checker) {
        Ok(()) => Ok(()),
        Err(CheckError::NonFinite { path, value }) => Err(Error::NonFinite { path, value }),
        Err(CheckError::Other(message)) => Err(Error::Serialize {
            what: root.to_owned(),
            message,
        }),
    }
}

struct Checker {
    path: Vec<String>,
}

#[derive(Debug)]
enum CheckError {
    NonFinite { path: String, value: f64 },
    Other(String),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::NonFinite { path, value } => write!(f, "non-finite {value} at {path}"),
            CheckError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CheckError {}

impl ser::Error for CheckError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CheckError::Other(msg.to_string())
    }
}

impl Checker {
    fn float(&self, v: f64) -> Result<(), CheckError> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(CheckError::NonFinite {
                path: self.path.join("."),
                value: v,
            })
        }
    }

    fn nested<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<(), CheckError> {
        self.path.push(key);
        let r = value.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// State of one sequence, tuple, map or struct being walked.
struct Compound<'a> {
    checker: &'a mut Checker,
    index: usize,
    key: Option<String>,
}

impl<'a> Compound<'a> {
    fn new(checker: &'a mut Checker) -> Self {
        Compound {
            checker,
            index: 0,
            key: None,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        let i = self.index;
        self.index += 1;
        self.checker.nested(i.to_string(), value)
    }
}

impl<'a> ser::Serializer for &'a mut Checker {
    type Ok = ();
    type Error = CheckError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, _: bool) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_i128(self, _: i128) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_u128(self, _: u128) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), CheckError> {
        self.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), CheckError> {
        self.float(v)
    }
    fn serialize_char(self, _: char) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CheckError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.nested(variant.to_owned(), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CheckError> {
        Ok(Compound::new(self))
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CheckError> {
        // Keys are only needed for the error's path; a key that is not a plain string still gets a readable one.
        self.key = Some(match serde_json::to_value(key) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => "?".to_owned(),
        });
        key.serialize(&mut *self.checker)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        let key = self.key.take().unwrap_or_else(|| "?".to_owned());
        self.checker.nested(key, value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.checker.nested(key.to_owned(), value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.checker.nested(key.to_owned(), value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Inner {
        x: f64,
        ys: Vec<f32>,
    }

    #[derive(Serialize)]
    struct Outer {
        name: &'static str,
        inner: Option<Inner>,
        map: BTreeMap<String, f64>,
    }

    #[test]
    fn finite_values_pass() {
        let v = Outer {
            name: "a",
            inner: Some(Inner {
                x: 1.5,
                ys: vec![0.0, -2.0],
            }),
            map: BTreeMap::from([("k".to_owned(), 3.0)]),
        };
        assert!(check_finite(&v, "").is_ok());
    }

    #[test]
    fn nan_in_a_vector_is_named_by_path() {
        let v = Outer {
            name: "a",
            inner: Some(Inner {
                x: 1.0,
                ys: vec![0.0, f32::NAN],
            }),
            map: BTreeMap::new(),
        };
        match check_finite(&v, "during") {
            Err(Error::NonFinite { path, value }) => {
                assert_eq!(path, "during.inner.ys.1");
                assert!(value.is_nan());
            }
            other => panic!("expected NonFinite, got {other:?}"),
        }
    }

    #[test]
    fn infinity_in_a_map_is_named_by_key() {
        let v = Outer {
            name: "a",
            inner: None,
            map: BTreeMap::from([("power".to_owned(), f64::INFINITY)]),
        };
        match check_finite(&v, "") {
            Err(Error::NonFinite { path, .. }) => assert_eq!(path, "map.power"),
            other => panic!("expected NonFinite, got {other:?}"),
        }
    }
}
