//! How a rocprofv3 JSON text is walked as it streams: the top object, the process list, each process
//! object's keys (its tables kept, its `buffer_records` lists handed to [`super::ProcessRead`] record by
//! record), with serde's errors for a derived struct (a key twice, one missing, a value of another
//! type); and where serde_json places an error in the whole text ([`LineLengths`]).
//!
//! What it is not: what a record becomes in the model (`super`, `rows.rs`).

use super::{ApiRecord, Copy, Dispatch, List, Mode, Process, ProcessRead, Reading, Records};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::io::{self, Read};

/// Lines whose lengths are kept (the last ones read).
const KEPT_LINES: usize = 4096;

/// The text as serde_json reads it, with the lengths of its last lines: serde_json's error position
/// read from a stream is one byte past where reading the text whole puts it when the parser had looked
/// at the next byte without taking it; [`LineLengths::position_of`] gives the whole text's.
pub(super) struct LineLengths<R> {
    inner: R,
    /// Line (from 1) and column (bytes) of the next byte.
    line: usize,
    column: usize,
    /// `lengths[l % KEPT_LINES]`: the length of line `l`, for the last lines read.
    lengths: Vec<u32>,
    /// The text ended.
    ended: bool,
}

impl<R: Read> LineLengths<R> {
    pub(super) fn of(inner: R) -> LineLengths<R> {
        LineLengths {
            inner,
            line: 1,
            column: 0,
            lengths: vec![0; KEPT_LINES],
            ended: false,
        }
    }

    /// The position of `e` as serde_json gives it for the whole text: for the errors it places after a
    /// byte it looked at without taking (a number's end, the `:` after a key given twice, the `{` or
    /// `[` of a value of another type), the position before that byte.
    pub(super) fn position_of(&self, e: &serde_json::Error) -> (usize, usize) {
        let (line, column) = (e.line(), e.column());
        let text = e.to_string();
        let looked_ahead = e.classify() == serde_json::error::Category::Data
            && [
                "duplicate field",
                "invalid type: map",
                "invalid type: sequence",
                "invalid type: integer",
                "invalid type: floating point",
                "invalid value: integer",
                "invalid value: floating point",
            ]
            .iter()
            .any(|p| text.starts_with(p));
        let at_end = self.ended && (line, column) == (self.line, self.column);
        if !looked_ahead || at_end || line == 0 {
            return (line, column);
        }
        if column > 0 {
            return (line, column - 1);
        }
        // The byte looked at ended the line before.
        let before = line - 1;
        let kept = before >= 1 && self.line - before < KEPT_LINES;
        let length = if kept {
            self.lengths[before % KEPT_LINES]
        } else {
            0
        };
        (before, length as usize)
    }
}

impl<R: Read> Read for LineLengths<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.ended |= n == 0 && !buf.is_empty();
        let mut rest = &buf[..n];
        while let Some(at) = rest.iter().position(|&c| c == b'\n') {
            self.lengths[self.line % KEPT_LINES] = (self.column + at) as u32;
            self.line += 1;
            self.column = 0;
            rest = &rest[at + 1..];
        }
        self.column += rest.len();
        Ok(n)
    }
}

/// The top object: `{"rocprofiler-sdk-tool": [process…]}`, other keys skipped (as serde's derived
/// struct reads it: the same errors for a duplicate or missing key, or another type).
pub(super) struct TopSeed<'a, 'f>(pub(super) &'a mut Reading<'f>);

#[derive(Deserialize)]
#[serde(field_identifier)]
enum TopKey {
    #[serde(rename = "rocprofiler-sdk-tool")]
    Tool,
    #[serde(other)]
    Other,
}

const TOOL: &str = "rocprofiler-sdk-tool";

impl<'de> DeserializeSeed<'de> for TopSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_struct("Top", &[TOOL], self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct Top")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        match seq.next_element_seed(ProcessesSeed(self.0))? {
            Some(()) => Ok(()),
            None => Err(de::Error::invalid_length(0, &"struct Top with 1 element")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<TopKey>()? {
            match key {
                TopKey::Tool if seen => return Err(de::Error::duplicate_field(TOOL)),
                TopKey::Tool => {
                    seen = true;
                    map.next_value_seed(ProcessesSeed(&mut *self.0))?;
                }
                TopKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match seen {
            true => Ok(()),
            false => Err(de::Error::missing_field(TOOL)),
        }
    }
}

/// The process list: each process read, and built, in turn.
struct ProcessesSeed<'a, 'f>(&'a mut Reading<'f>);

impl<'de> DeserializeSeed<'de> for ProcessesSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ProcessesSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let mut index = 0;
        while let Some(()) = seq.next_element_seed(ProcessSeed {
            r: &mut *self.0,
            index,
        })? {
            index += 1;
        }
        Ok(())
    }
}

/// One process object, its tables kept and its lists built as [`ProcessRead`] says.
struct ProcessSeed<'a, 'f> {
    r: &'a mut Reading<'f>,
    index: usize,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ProcessKey {
    Metadata,
    Agents,
    Strings,
    KernelSymbols,
    BufferRecords,
    #[serde(other)]
    Other,
}

const PROCESS_KEYS: &[&str] = &[
    "metadata",
    "agents",
    "strings",
    "kernel_symbols",
    "buffer_records",
];

/// A table's value, or serde's error for a key given twice.
fn table<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    key: &'static str,
) -> std::result::Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(key));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> DeserializeSeed<'de> for ProcessSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_struct("Process", PROCESS_KEYS, self)
    }
}

impl<'de> Visitor<'de> for ProcessSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct Process")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        let whole = Process::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        ProcessRead::whole(self.index, whole).finish(self.r);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut p = ProcessRead::new(self.index);
        let mut records_seen = false;
        while let Some(key) = map.next_key::<ProcessKey>()? {
            match key {
                ProcessKey::Metadata => table(&mut map, &mut p.metadata, "metadata")?,
                ProcessKey::Agents => table(&mut map, &mut p.agents, "agents")?,
                ProcessKey::Strings => table(&mut map, &mut p.strings, "strings")?,
                ProcessKey::KernelSymbols => {
                    table(&mut map, &mut p.kernel_symbols, "kernel_symbols")?
                }
                ProcessKey::BufferRecords if records_seen => {
                    return Err(de::Error::duplicate_field("buffer_records"));
                }
                ProcessKey::BufferRecords => {
                    records_seen = true;
                    map.next_value_seed(RecordsSeed {
                        r: &mut *self.r,
                        p: &mut p,
                    })?;
                    p.records_read = true;
                    p.advance(self.r, false);
                }
                ProcessKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        p.finish(self.r);
        Ok(())
    }
}

/// A process's `buffer_records`: each list built as it is read, or held.
struct RecordsSeed<'a, 'f> {
    r: &'a mut Reading<'f>,
    p: &'a mut ProcessRead,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum RecordsKey {
    KernelDispatch,
    HipApi,
    HsaApi,
    MarkerApi,
    RcclApi,
    MemoryCopy,
    #[serde(other)]
    Other,
}

impl RecordsKey {
    fn list(&self) -> Option<List> {
        Some(match self {
            RecordsKey::KernelDispatch => List::KernelDispatch,
            RecordsKey::HipApi => List::HipApi,
            RecordsKey::HsaApi => List::HsaApi,
            RecordsKey::MarkerApi => List::MarkerApi,
            RecordsKey::RcclApi => List::RcclApi,
            RecordsKey::MemoryCopy => List::MemoryCopy,
            RecordsKey::Other => return None,
        })
    }
}

const RECORDS_KEYS: &[&str] = &[
    "kernel_dispatch",
    "hip_api",
    "hsa_api",
    "marker_api",
    "rccl_api",
    "memory_copy",
];

impl<'de> DeserializeSeed<'de> for RecordsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_struct("Records", RECORDS_KEYS, self)
    }
}

impl<'de> Visitor<'de> for RecordsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct Records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        self.p.held = Records::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        self.p.read = [true; 6];
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seen = [false; 6];
        while let Some(key) = map.next_key::<RecordsKey>()? {
            let Some(list) = key.list() else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if std::mem::replace(&mut seen[list.place()], true) {
                return Err(de::Error::duplicate_field(list.key()));
            }
            map.next_value_seed(ListSeed {
                r: &mut *self.r,
                p: &mut *self.p,
                list,
            })?;
        }
        Ok(())
    }
}

/// One record list: each record built as it is read, or held, or (after a refused row) checked only.
struct ListSeed<'a, 'f> {
    r: &'a mut Reading<'f>,
    p: &'a mut ProcessRead,
    list: List,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let (r, p, list) = (self.r, self.p, self.list);
        let mode = p.mode(r, list);
        let mut i = 0;
        match list {
            List::KernelDispatch => {
                while let Some(d) = seq.next_element::<Dispatch>()? {
                    match mode {
                        Mode::Build => p.dispatch(r, i, &d),
                        Mode::Hold => p.held.kernel_dispatch.push(d),
                        Mode::Drop => {}
                    }
                    i += 1;
                }
            }
            List::MemoryCopy => {
                while let Some(c) = seq.next_element::<Copy>()? {
                    match mode {
                        Mode::Build => p.copy(r, i, &c),
                        Mode::Hold => p.held.memory_copy.push(c),
                        Mode::Drop => {}
                    }
                    i += 1;
                }
            }
            _ => {
                while let Some(a) = seq.next_element::<ApiRecord>()? {
                    match mode {
                        Mode::Build => p.api_record(r, list, i, &a),
                        Mode::Hold => p.held_api(list).push(a),
                        Mode::Drop => {}
                    }
                    i += 1;
                }
            }
        }
        p.list_read(r, list, mode);
        Ok(())
    }
}
