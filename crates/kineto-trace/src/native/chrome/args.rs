//! An event's `args`, read field by field: a field of a form that cannot be used (a `grid` that is not
//! three integers, a fractional `correlation`) is left absent and named, a duplicate key is named (the
//! later value kept, as the Kineto parser keeps it), and every other field is still read.
//!
//! What it is not: which fields matter for an event (that is its role's; see `Odd::for_role`).

use crate::native::TraceBuilder;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The fields of `args` the reader uses, as raw values (read when the event's role needs them).
#[derive(Default)]
pub(super) struct Args<'a> {
    pub(super) desc: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) correlation: Option<&'a RawValue>,
    pub(super) external_id: Option<&'a RawValue>,
    pub(super) device: Option<&'a RawValue>,
    pub(super) stream: Option<&'a RawValue>,
    pub(super) bytes: Option<&'a RawValue>,
    /// The legacy rocprof's exact times.
    pub(super) begin_ns: Option<&'a RawValue>,
    pub(super) end_ns: Option<&'a RawValue>,
    /// Exact times beside the µs `ts`/`dur`, as nsys converters write them.
    pub(super) start_ns: Option<&'a RawValue>,
    pub(super) stop_ns: Option<&'a RawValue>,
    pub(super) dev_id: Option<&'a RawValue>,
    /// The legacy rocprof's kernel table names the device `gpu-id`, its op table `dev-id`.
    pub(super) gpu_id: Option<&'a RawValue>,
    pub(super) stream_id: Option<&'a RawValue>,
    pub(super) grid: Option<&'a RawValue>,
    pub(super) block: Option<&'a RawValue>,
    /// Kineto's kernel facts, read as the Kineto parser reads them.
    pub(super) registers: Option<&'a RawValue>,
    pub(super) shared_memory: Option<&'a RawValue>,
    pub(super) graph_id: Option<&'a RawValue>,
    pub(super) graph_node_id: Option<&'a RawValue>,
    /// A key written twice (the first such key).
    pub(super) duplicate: Option<String>,
    /// `args` was present but not an object.
    pub(super) not_object: bool,
}

/// Reads `args` (absent: all fields absent). Never fails: the event's own fields are still read.
pub(super) fn read(raw: Option<&RawValue>) -> Args<'_> {
    let Some(raw) = raw else {
        return Args::default();
    };
    let mut de = serde_json::Deserializer::from_str(raw.get());
    match (&mut de).deserialize_map(ArgsVisitor) {
        Ok(a) => a,
        Err(_) => Args {
            not_object: true,
            ..Args::default()
        },
    }
}

struct ArgsVisitor;

impl<'de> Visitor<'de> for ArgsVisitor {
    type Value = Args<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an args object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Args<'de>, M::Error> {
        let mut a = Args::default();
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            let key = key.0;
            if seen.contains(&key) {
                a.duplicate.get_or_insert_with(|| key.to_string());
            }
            let slot = match key.as_ref() {
                "desc" => {
                    a.desc = string(value);
                    None
                }
                "name" => {
                    a.name = string(value);
                    None
                }
                // `correlationId`: nsys2json's spelling (brycelelbach/nsys2json, `cuda_api` events).
                "correlation" | "correlationId" => Some(&mut a.correlation),
                "External id" | "external id" => Some(&mut a.external_id),
                "device" => Some(&mut a.device),
                "stream" => Some(&mut a.stream),
                "bytes" => Some(&mut a.bytes),
                "BeginNs" => Some(&mut a.begin_ns),
                "EndNs" => Some(&mut a.end_ns),
                "start_ns" => Some(&mut a.start_ns),
                "end_ns" => Some(&mut a.stop_ns),
                "dev-id" => Some(&mut a.dev_id),
                "gpu-id" => Some(&mut a.gpu_id),
                "stream-id" => Some(&mut a.stream_id),
                "grid" => Some(&mut a.grid),
                "block" => Some(&mut a.block),
                "registers per thread" => Some(&mut a.registers),
                "shared memory" => Some(&mut a.shared_memory),
                "graph id" => Some(&mut a.graph_id),
                "graph node id" => Some(&mut a.graph_node_id),
                _ => None,
            };
            if let Some(slot) = slot {
                *slot = Some(value);
            }
            seen.push(key);
        }
        Ok(a)
    }
}

/// A key, borrowed from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string value's content (`None` for any other value).
fn string(v: &RawValue) -> Option<Cow<'_, str>> {
    let s = v.get();
    if !s.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(s) {
        Ok(b) => Some(Cow::Borrowed(b)),
        Err(_) => serde_json::from_str::<String>(s).ok().map(Cow::Owned),
    }
}

/// A value's text: a string's content, or a number's token.
pub(super) fn text(v: &RawValue) -> Cow<'_, str> {
    string(v).unwrap_or(Cow::Borrowed(v.get()))
}

/// The fields an event's odd values were in, as bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Odd(u16);

impl Odd {
    pub(super) const CORRELATION: Odd = Odd(1);
    pub(super) const EXTERNAL_ID: Odd = Odd(1 << 1);
    pub(super) const DEVICE: Odd = Odd(1 << 2);
    pub(super) const STREAM: Odd = Odd(1 << 3);
    pub(super) const BYTES: Odd = Odd(1 << 4);
    pub(super) const GRID: Odd = Odd(1 << 5);
    pub(super) const BLOCK: Odd = Odd(1 << 6);
    pub(super) const REGISTERS: Odd = Odd(1 << 7);
    pub(super) const SHARED_MEMORY: Odd = Odd(1 << 8);
    pub(super) const GRAPH_ID: Odd = Odd(1 << 9);
    pub(super) const GRAPH_NODE_ID: Odd = Odd(1 << 10);
    const NAMES: [&'static str; 11] = [
        "correlation",
        "External id",
        "device",
        "stream",
        "bytes",
        "grid",
        "block",
        "registers per thread",
        "shared memory",
        "graph id",
        "graph node id",
    ];
    /// What a launch or an annotation reads.
    pub(super) const LINKS: Odd = Odd(Self::CORRELATION.0 | Self::EXTERNAL_ID.0);
    /// What a GPU op reads.
    pub(super) const ALL: Odd = Odd((1 << Self::NAMES.len()) - 1);

    pub(super) fn add(&mut self, o: Odd) {
        self.0 |= o.0;
    }

    /// The bits, to keep encoded (`super::apart`), and back.
    pub(super) fn bits(self) -> u16 {
        self.0
    }

    pub(super) fn of_bits(bits: u16) -> Odd {
        Odd(bits)
    }

    /// The names of the fields in `self` that `wanted` reads.
    pub(super) fn names(self, wanted: Odd) -> impl Iterator<Item = &'static str> {
        let bits = self.0 & wanted.0;
        Self::NAMES
            .into_iter()
            .enumerate()
            .filter(move |(i, _)| bits & (1 << i) != 0)
            .map(|(_, n)| n)
    }
}

/// An integer field: absent for `null` or no field; absent and marked odd for any other
/// non-integer (a string of digits is an integer: rpd2tracing writes them).
pub(super) fn int(v: Option<&RawValue>, odd: &mut Odd, field: Odd) -> Option<i64> {
    let v = v?;
    if v.get() == "null" {
        return None;
    }
    let r = int_text(v);
    if r.is_none() {
        odd.add(field);
    }
    r
}

/// A value as an integer: a number's token, or a string's content, that is one.
pub(super) fn int_text(v: &RawValue) -> Option<i64> {
    text(v).trim().parse().ok()
}

/// A non-negative integer field (an id, a byte count), as [`int`]; a negative one is odd.
pub(super) fn uint(v: Option<&RawValue>, odd: &mut Odd, field: Odd) -> Option<u64> {
    let n = int(v, odd, field)?;
    let r = u64::try_from(n).ok();
    if r.is_none() {
        odd.add(field);
    }
    r
}

/// A non-negative integer field that fits a u32 (registers, shared memory), as [`uint`]; a larger one
/// is odd, as the Kineto parser has it.
pub(super) fn small(v: Option<&RawValue>, odd: &mut Odd, field: Odd) -> Option<u32> {
    let n = uint(v, odd, field)?;
    let r = u32::try_from(n).ok();
    if r.is_none() {
        odd.add(field);
    }
    r
}

/// `grid`/`block`: three non-negative integers that fit a u32.
pub(super) fn dims(v: Option<&RawValue>, odd: &mut Odd, field: Odd) -> [u32; 3] {
    let Some(v) = v else { return [0; 3] };
    if v.get() == "null" {
        return [0; 3];
    }
    serde_json::from_str::<[u32; 3]>(v.get()).unwrap_or_else(|_| {
        odd.add(field);
        [0; 3]
    })
}

/// The warnings of an event's odd `args` (at byte `offset`): the fields of `odd` its role `reads`, and
/// `odd_args` (a key written twice, or `"args"` when `args` was no object) when it reads any.
pub(super) fn warn_odd(
    b: &mut TraceBuilder,
    offset: u64,
    odd: Odd,
    odd_args: Option<&str>,
    reads: Odd,
) {
    if reads == Odd::default() {
        return;
    }
    if let Some(field) = odd_args {
        let what = if field == "args" {
            "\"args\" is not an object; its fields are absent".to_string()
        } else {
            format!("args has the key \"{field}\" twice; the later value kept")
        };
        b.warn(offset, what);
    }
    for field in odd.names(reads) {
        b.warn(offset, crate::trace_events::odd_arg(field));
    }
}
