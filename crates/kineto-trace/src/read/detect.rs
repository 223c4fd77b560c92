//! Which format a file is, told by its first bytes (inflated first when they are gzip), never by
//! its name: the SQLite header, the JSON value's shape and first key, a rocprofv3 CSV header line
//! (the columns of its kernel, API or copy trace, by `native::rocprof_csv`'s one rule), the first
//! field of an XPlane protobuf, the first packet of a Perfetto trace.
//!
//! What it is not: a check that the file is what its first bytes say (each format's reader does that,
//! and a file none of them takes goes to the Kineto parser, whose error names the byte).

use crate::native::rocprof_csv::{CsvTable, table_of};
use flate2::read::MultiGzDecoder;
use std::io::{self, Read};

/// Bytes looked at: enough for the SQLite header, a JSON object's first key (after a long run of
/// whitespace) and a CSV header line.
pub(crate) const SNIFF: usize = 64 * 1024;

/// The file's kind, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// A JSON object whose first key is not rocprofv3's: the Kineto parser reads it (and says what is
    /// wrong if it is not a Kineto trace).
    KinetoObject,
    /// A JSON array of events.
    ChromeArray,
    /// `{ "traceEvents":[{}` …: the legacy rocprof's (v1/v2) JSON, whose writer opens the event array
    /// with an empty event (a Kineto trace never holds one).
    RocprofLegacyJson,
    /// `{"rocprofiler-sdk-tool": [...]}`.
    Rocprofv3Json,
    /// A CSV whose header names the columns of a rocprofv3 trace table: its kernel trace, an API
    /// trace (HIP, HSA, markers, RCCL) or its memory-copy trace.
    Rocprofv3Csv,
    /// A rocprofv3 CSV that is no trace by itself (its agent list, a `--stats` table): what it is,
    /// for the error.
    Rocprofv3CsvNotTrace(&'static str),
    /// An SQLite database (Nsight Systems, rocpd or RPD: the tables tell which).
    Sqlite,
    /// An XPlane protobuf (`XSpace`, JAX/TensorFlow/XLA), told by `is_xspace`.
    XPlane,
    /// A Perfetto protobuf trace (`TracePacket`s), told by `is_perfetto_trace`.
    Perfetto,
    /// Nothing read here: the Kineto parser's error names the byte.
    Unknown,
}

/// What was looked for, for the error on a file that is none of them.
pub const LOOKED_FOR: &str = "a Kineto JSON object with \"traceEvents\", a Chrome-trace JSON array, \
     the legacy rocprof's JSON (`{ \"traceEvents\":[{}`), \
     rocprofv3 JSON (\"rocprofiler-sdk-tool\"), a rocprofv3 CSV trace (Kernel_Name, or Domain and \
     Function, or Direction, with Start_Timestamp, …) or an SQLite \
     database (Nsight Systems, rocpd, RPD), an XPlane protobuf (JAX/TensorFlow `*.xplane.pb`) or a \
     Perfetto protobuf trace (`.pftrace`), each optionally gzip";

/// The formats read, as a command's help names them for its trace arguments (`kineto`, `kineto-export`).
pub const TRACES_HELP: &str = "Trace files (Kineto or Chrome-trace JSON, rocprofv3 JSON or CSV, legacy \
     rocprof JSON, Nsight Systems, rocpd or RPD SQLite, XPlane or Perfetto protobuf; any of them .gz) or \
     directories of per-rank traces";

/// The first bytes of a stored stream, for telling its format: up to [`SNIFF`] bytes.
pub(crate) fn read_head(raw: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(SNIFF);
    raw.take(SNIFF as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The first bytes of a file as stored (`raw`): whether it is gzip, and up to [`SNIFF`] bytes of its
/// content (inflated when gzip; a cut or corrupt gzip head gives what inflated before the fault).
pub(crate) fn head(raw: &[u8]) -> (bool, Vec<u8>) {
    let gzip = crate::stored::is_gzip(raw);
    if !gzip {
        return (false, raw[..raw.len().min(SNIFF)].to_vec());
    }
    let mut out = Vec::with_capacity(SNIFF);
    let mut d = MultiGzDecoder::new(raw);
    let mut buf = [0u8; 8192];
    while out.len() < SNIFF {
        match d.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out.truncate(SNIFF);
    (true, out)
}

/// Classifies a file by its first bytes as stored (inflated here when they are gzip).
pub fn sniff_stored(raw: &[u8]) -> Sniffed {
    sniff(&head(raw).1)
}

/// Classifies a file by its (inflated) first bytes.
pub fn sniff(content: &[u8]) -> Sniffed {
    if content.starts_with(b"SQLite format 3\0") {
        return Sniffed::Sqlite;
    }
    if is_xspace(content) {
        return Sniffed::XPlane;
    }
    if is_perfetto_trace(content) {
        return Sniffed::Perfetto;
    }
    let text = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
    let start = text.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| (i, text[i])) {
        Some((_, b'[')) => Sniffed::ChromeArray,
        Some((i, b'{')) => match first_key(&text[i + 1..]) {
            Some(b"rocprofiler-sdk-tool") => Sniffed::Rocprofv3Json,
            Some(b"traceEvents") if opens_with_empty_event(&text[i + 1..]) => {
                Sniffed::RocprofLegacyJson
            }
            _ => Sniffed::KinetoObject,
        },
        _ => rocprof_csv_header(text),
    }
}

/// True when the bytes open as an `XSpace` protobuf: its first field is `planes` (field 1, length-
/// delimited: byte `0x0A`, then the plane's length), and that plane opens with its optional `id`
/// (field 1, varint) and then its `name` (field 2, length-delimited), a non-empty UTF-8 text without
/// control characters that ends inside the head. Protobuf writers emit fields in number order, so
/// every `XSpace` with a plane starts this way. No text format is taken for one: a JSON or CSV file
/// whose first byte is a newline would need a control byte (`0x08` or `0x12`) after its length byte.
fn is_xspace(content: &[u8]) -> bool {
    let Some(rest) = content.strip_prefix(b"\x0A") else {
        return false;
    };
    let Some((plane_len, mut rest)) = varint(rest) else {
        return false;
    };
    let plane_start = content.len() - rest.len();
    if let Some(after_tag) = rest.strip_prefix(b"\x08") {
        let Some((_, after_id)) = varint(after_tag) else {
            return false;
        };
        rest = after_id;
    }
    let Some(after_tag) = rest.strip_prefix(b"\x12") else {
        return false;
    };
    let Some((name_len, rest)) = varint(after_tag) else {
        return false;
    };
    let Ok(name_len) = usize::try_from(name_len) else {
        return false;
    };
    let Some(name) = rest.get(..name_len) else {
        return false;
    };
    // The name ends inside the plane.
    let name_end = content.len() - rest.len() + name_len;
    name_len > 0
        && (name_end - plane_start) as u64 <= plane_len
        && std::str::from_utf8(name).is_ok_and(|n| !n.chars().any(char::is_control))
}

/// True when the bytes open as a Perfetto `Trace`: packets (field 1, length-delimited: byte `0x0A`,
/// then the packet's length) of `TracePacket` fields, each of a number `trace_packet.proto` declares
/// with its wire type (varint for the scalar fields, a length for the rest), and a scalar among the
/// packets walked through the head (the tracing service stamps every packet with its `trusted_uid`
/// and `trusted_packet_sequence_id`; the SDK's writers give a sequence id or a timestamp, though not
/// always in the first packet: the `tracing-perfetto` crate opens with packets of a `track_descriptor`
/// alone). The first packet must hold only declared fields; a later packet with a field this list
/// does not know (a newer writer's) ends the walk, as a decoder would skip it, rather than refusing
/// the file. Packets without a scalar (length-delimited fields only: a TensorFlow `GraphDef`'s nodes
/// look like that, as do empty ones) never make a file Perfetto by themselves. Asked after
/// [`is_xspace`] (an `XSpace` plane opens with its `name`, which is field 2 of a packet too; a
/// packet's field 2, `process_tree`, opens with a control byte, which no plane's name holds). A text
/// file whose first byte is a newline is not taken for one: the 16 bytes after it would have to hold
/// a byte that is neither printable ASCII nor whitespace.
fn is_perfetto_trace(content: &[u8]) -> bool {
    let Some(after) = content.strip_prefix(b"\x0A") else {
        return false;
    };
    if after
        .iter()
        .take(16)
        .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        return false;
    }
    let mut scalars = 0;
    let mut rest = content;
    let mut first = true;
    while let Some(after) = rest.strip_prefix(b"\x0A") {
        let Some((packet_len, body)) = varint(after) else {
            break;
        };
        let len = usize::try_from(packet_len).unwrap_or(usize::MAX);
        match packet_scalars(&body[..len.min(body.len())]) {
            Some(found) => scalars += found,
            None if first => return false,
            None => break,
        }
        first = false;
        match body.get(len..) {
            Some(next) => rest = next,
            // The packet runs past the head: what is read of it ends the walk.
            None => break,
        }
    }
    scalars > 0
}

/// The scalar fields of a `TracePacket`'s bytes (cut where the head ends), or `None` when a field is
/// of a number `trace_packet.proto` does not declare or of the wrong wire type (see
/// [`is_perfetto_trace`]).
fn packet_scalars(mut body: &[u8]) -> Option<usize> {
    let mut scalars = 0;
    while let Some((tag, after)) = varint(body) {
        let (number, wire) = (tag >> 3, tag & 7);
        // trace_packet.proto's scalar fields: trusted_uid, timestamp, trusted_packet_sequence_id,
        // sequence_flags, incremental_state_cleared, previous_packet_dropped, timestamp_clock_id,
        // trusted_pid, first_packet_on_sequence, machine_id.
        let scalar = matches!(number, 3 | 8 | 10 | 13 | 41 | 42 | 58 | 79 | 87 | 98);
        let declared = matches!(number, 1..=141 | 900 | 1000..=1999);
        body = match (scalar, declared, wire) {
            (true, _, 0) => match varint(after) {
                Some((_, next)) => {
                    scalars += 1;
                    next
                }
                None => break,
            },
            (false, true, 2) => match varint(after) {
                // A field that runs past the head ends what is read of the packet here.
                Some((len, next)) => match usize::try_from(len).ok().and_then(|l| next.get(l..)) {
                    Some(next) => next,
                    None => break,
                },
                None => break,
            },
            _ => return None,
        };
    }
    Some(scalars)
}

/// A protobuf varint (at most 10 bytes) and the bytes after it; `None` when cut or longer. The one
/// varint of the protobuf readers' byte walks (through [`varint_at`] in theirs).
pub fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// The varint at offset `at` of `bytes` and the offset after it; `None` when cut or longer: [`varint`]
/// for the walks that keep an offset (`kineto-perfetto`'s packet stream, `kineto-xplane`'s fault
/// finder).
pub fn varint_at(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let (value, rest) = varint(bytes.get(at..)?)?;
    Some((value, bytes.len() - rest.len()))
}

/// Appends `v` as a protobuf varint, the encoding [`varint`] reads: for the readers that keep rows
/// encoded (the queue rows of `native::builder`, `kineto-perfetto`'s event log, `kineto-xplane`'s held
/// plane).
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A signed number as an unsigned one whose varint is short when the number is near zero (protobuf's
/// `sint64` encoding); [`unzigzag`] undoes it.
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The number [`zigzag`] encoded.
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// The first key of an object whose `{` has been read, when it is a plain string (no escapes).
fn first_key(rest: &[u8]) -> Option<&[u8]> {
    let i = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = rest[i..].strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then_some(&rest[..end])
}

/// After an object's `{`: `"traceEvents"`, `:`, `[` and then an empty object `{}`, whitespace
/// allowed between them.
fn opens_with_empty_event(rest: &[u8]) -> bool {
    let mut i = 0;
    let mut expect = |want: &[u8]| -> bool {
        while rest.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if rest[i.min(rest.len())..].starts_with(want) {
            i += want.len();
            true
        } else {
            false
        }
    };
    expect(b"\"traceEvents\"") && expect(b":") && expect(b"[") && expect(b"{") && expect(b"}")
}

/// A header column name folded for comparison across releases and `rocpd2csv`'s re-casing:
/// lower case, letters and digits only (`"Kernel_Name"` → `kernelname`).
pub(crate) fn fold(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// What a first line that is a CSV header of rocprofv3's says the file is: a trace table, one that
/// is no trace by itself, or nothing of rocprofv3's (`counter_collection.csv` among them: one row
/// per counter, no times).
fn rocprof_csv_header(text: &[u8]) -> Sniffed {
    let line = text.split(|&b| b == b'\n').next().unwrap_or(b"");
    let Ok(line) = std::str::from_utf8(line) else {
        return Sniffed::Unknown;
    };
    let cols: Vec<String> = line.split(',').map(fold).collect();
    match table_of(|c| cols.iter().any(|x| x == c)) {
        Some(t) if t.is_trace() => Sniffed::Rocprofv3Csv,
        Some(CsvTable::Agents) => {
            Sniffed::Rocprofv3CsvNotTrace("rocprofv3's agent list (agent_info.csv)")
        }
        Some(_) => Sniffed::Rocprofv3CsvNotTrace("a rocprofv3 statistics table (*_stats.csv)"),
        None => Sniffed::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_by_its_first_bytes() {
        assert_eq!(sniff(b"SQLite format 3\0\x10\x00"), Sniffed::Sqlite);
        assert_eq!(sniff(b"  [ {}\n,{\"ph\":\"X\"}"), Sniffed::ChromeArray);
        assert_eq!(
            sniff(b"{ \"traceEvents\":[{}\n,{\"ph\":\"M\"}"),
            Sniffed::RocprofLegacyJson
        );
        assert_eq!(
            sniff(b"{\"traceEvents\": [{\"ph\": \"X\"}"),
            Sniffed::KinetoObject
        );
        assert_eq!(
            sniff(b"{\n    \"rocprofiler-sdk-tool\": [\n"),
            Sniffed::Rocprofv3Json
        );
        assert_eq!(sniff(b"{\"schemaVersion\": 1"), Sniffed::KinetoObject);
        assert_eq!(
            sniff(b"\xEF\xBB\xBF{\"traceEvents\": []}"),
            Sniffed::KinetoObject
        );
        assert_eq!(
            sniff(b"\"Kind\",\"Agent_Id\",\"Kernel_Name\",\"Start_Timestamp\",\"End_Timestamp\"\n"),
            Sniffed::Rocprofv3Csv
        );
        assert_eq!(
            sniff(b"GUID,KIND,KERNEL_NAME,START_TIMESTAMP,END_TIMESTAMP\r\n"),
            Sniffed::Rocprofv3Csv
        );
        assert_eq!(
            sniff(b"Correlation_Id,Kernel_Name,Counter_Name,Start_Timestamp,End_Timestamp\n"),
            Sniffed::Unknown
        );
        // The API and copy traces of a run without a kernel trace; the agent list and a stats table
        // are no trace by themselves.
        assert_eq!(
            sniff(b"\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"),
            Sniffed::Rocprofv3Csv
        );
        assert_eq!(
            sniff(b"Kind,Direction,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,End_Timestamp\r\n"),
            Sniffed::Rocprofv3Csv
        );
        assert!(matches!(
            sniff(b"\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Domain\"\n"),
            Sniffed::Rocprofv3CsvNotTrace(w) if w.contains("agent_info")
        ));
        assert!(matches!(
            sniff(b"\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\"\n"),
            Sniffed::Rocprofv3CsvNotTrace(w) if w.contains("_stats")
        ));
        // An API trace's header without its times is not one.
        assert_eq!(sniff(b"Domain,Function,Process_Id\n"), Sniffed::Unknown);
        // XSpace { planes { id: 1, name: "/host:CPU" } }, and one whose plane has no id.
        assert_eq!(sniff(b"\x0A\x0D\x08\x01\x12\x09/host:CPU"), Sniffed::XPlane);
        assert_eq!(sniff(b"\x0A\x0B\x12\x09/host:CPU\x1A"), Sniffed::XPlane);
        // A name cut by the head's end, an empty one, one with a control byte: not told as XPlane.
        assert_eq!(sniff(b"\x0A\x0B\x12\x09/host"), Sniffed::Unknown);
        assert_eq!(sniff(b"\x0A\x02\x12\x00"), Sniffed::Unknown);
        assert_eq!(sniff(b"\x0A\x05\x12\x03a\nb"), Sniffed::Unknown);
        // Trace { packet { timestamp: 5, trusted_packet_sequence_id: 1, track_event { name: "a" } } }.
        assert_eq!(
            sniff(b"\x0A\x0A\x40\x05\x50\x01\x5A\x04\xBA\x01\x01a"),
            Sniffed::Perfetto
        );
        // Packets of a track descriptor alone (field 60) before the first with a sequence id, as
        // the `tracing-perfetto` crate writes them: Perfetto by the scalar of the packet after them.
        assert_eq!(
            sniff(b"\x0A\x04\xE2\x03\x01\x00\x0A\x04\xE2\x03\x01\x00\x0A\x02\x50\x01"),
            Sniffed::Perfetto
        );
        // Without it (packets of length-delimited fields only, as a GraphDef's nodes are, or empty
        // ones, as UTF-16 blank lines are), or after a packet with an undeclared field: not Perfetto.
        assert_eq!(
            sniff(b"\x0A\x04\xE2\x03\x01\x00\x0A\x04\xE2\x03\x01\x00"),
            Sniffed::Unknown
        );
        assert_eq!(sniff(b"\x0A\x00\x0A\x00H\x00i\x00"), Sniffed::Unknown);
        assert_eq!(
            sniff(b"\x0A\x04\xE2\x03\x01\x00\x0A\x03\xC0\x0C\x01\x0A\x02\x50\x01"),
            Sniffed::Unknown
        );
        // A later packet with a field newer than the list (200) ends the walk; the scalar before it
        // stands.
        assert_eq!(
            sniff(b"\x0A\x02\x50\x01\x0A\x03\xC0\x0C\x01"),
            Sniffed::Perfetto
        );
        // A packet whose first field has the wrong wire type (timestamp as a length), or an
        // undeclared number (field 200): not Perfetto.
        assert_eq!(sniff(b"\x0A\x03\x42\x01\x00"), Sniffed::Unknown);
        assert_eq!(sniff(b"\x0A\x04\xC0\x0C\x01\x00"), Sniffed::Unknown);
        // JSON after a newline stays JSON.
        assert_eq!(sniff(b"\n{\"traceEvents\": []}"), Sniffed::KinetoObject);
        assert_eq!(sniff(b"hello"), Sniffed::Unknown);
        assert_eq!(sniff(b""), Sniffed::Unknown);
    }

    #[test]
    fn gzip_heads_are_inflated() {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(b"SQLite format 3\0rest").unwrap_or_default();
        let z = e.finish().unwrap_or_default();
        let (gz, content) = head(&z);
        assert!(gz);
        assert_eq!(sniff(&content), Sniffed::Sqlite);
        // A gzip cut after a few bytes still gives what inflated.
        let (gz, content) = head(&z[..12]);
        assert!(gz && content.len() < 20);
    }
}
