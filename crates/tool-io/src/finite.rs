//! A serde pass that finds NaN and infinity before anything is written.
//!
//! serde_json writes a non-finite float as `null` without a word, so a broken measurement would look like a
//! missing one. [`crate::Claim::write_json`] walks the value with this checker first.

use serde::ser::{self, Serialize};
use std::fmt;

/// The first NaN or infinity in a value, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct NonFinite {
    /// Its JSON path: `$` for the value itself, else keys joined by `.` and indices in brackets
    /// (`windows.w1.mean[2]`).
    pub json_path: String,
    /// The number (NaN, +inf or -inf).
    pub value: f64,
}

impl fmt::Display for NonFinite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is {}, not a finite number",
            self.json_path, self.value
        )
    }
}

impl std::error::Error for NonFinite {}

/// Fails with the path of the first `f32`/`f64` reached by serialising `value` that is NaN or infinite.
///
/// A value whose `Serialize` itself fails is not this check's business: that error comes back from the
/// serialisation proper, so it is passed over here.
pub fn check_finite<T: Serialize + ?Sized>(value: &T) -> Result<(), NonFinite> {
    let mut checker = Checker { path: Vec::new() };
    match value.serialize(&mut checker) {
        Err(CheckError::NonFinite { path, value }) => Err(NonFinite {
            json_path: path,
            value,
        }),
        Ok(()) | Err(CheckError::Other(_)) => Ok(()),
    }
}

/// One step of a JSON path.
enum Seg {
    Key(String),
    Index(usize),
}

fn join(path: &[Seg]) -> String {
    if path.is_empty() {
        return "$".to_owned();
    }
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

struct Checker {
    path: Vec<Seg>,
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
                path: join(&self.path),
                value: v,
            })
        }
    }

    fn nested<T: Serialize + ?Sized>(&mut self, key: Seg, value: &T) -> Result<(), CheckError> {
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
        self.checker.nested(Seg::Index(i), value)
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
        self.nested(Seg::Key(variant.to_owned()), value)
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
        self.checker.nested(Seg::Key(key), value)
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
        self.checker.nested(Seg::Key(key.to_owned()), value)
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
        self.checker.nested(Seg::Key(key.to_owned()), value)
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
                ys: vec![0.0, -2.0, f32::MAX],
            }),
            map: BTreeMap::from([("k".to_owned(), f64::MIN_POSITIVE)]),
        };
        assert_eq!(check_finite(&v), Ok(()));
    }

    #[test]
    fn nan_in_a_vector_is_named_by_its_json_path() {
        let v = Outer {
            name: "a",
            inner: Some(Inner {
                x: 1.0,
                ys: vec![0.0, f32::NAN],
            }),
            map: BTreeMap::new(),
        };
        let e = check_finite(&v).unwrap_err();
        assert_eq!(e.json_path, "inner.ys[1]");
        assert!(e.value.is_nan());
    }

    #[test]
    fn infinity_in_a_map_is_named_by_key_and_the_first_one_wins() {
        let v = Outer {
            name: "a",
            inner: None,
            map: BTreeMap::from([
                ("a_power".to_owned(), f64::NEG_INFINITY),
                ("b_power".to_owned(), f64::NAN),
            ]),
        };
        let e = check_finite(&v).unwrap_err();
        assert_eq!(e.json_path, "map.a_power");
        assert_eq!(e.value, f64::NEG_INFINITY);
    }

    #[test]
    fn a_bare_number_and_nested_arrays() {
        assert_eq!(check_finite(&f64::INFINITY).unwrap_err().json_path, "$");
        let nested = vec![vec![1.0], vec![2.0, 3.0, f64::NAN]];
        assert_eq!(check_finite(&nested).unwrap_err().json_path, "[1][2]");
        let v = serde_json::json!({"constants": {"gbps": [240.0]}});
        assert_eq!(check_finite(&v), Ok(()));
    }
}
