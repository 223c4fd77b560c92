//! The streaming driver: a refillable window over the input, the top-level object, and one event at a
//! time from `traceEvents` into the compact model.

use crate::error::{Error, Result};
use crate::model::{
    Api, Flow, FlowPhase, GpuOp, Header, IdValue, Launch, Salvage, Span, Sym, Trace, Track,
    TrackIds, Warning,
};
use crate::scan::{Cursor, Scan, Stop, Str, bad, event_bad, parse_i64, parse_u64, show_byte};
use crate::source::{Feed, Input};
use rustc_hash::FxHashMap;
use std::io::{self, Read};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

/// How to parse.
#[derive(Debug, Clone)]
pub struct Options {
    /// On a truncated input, keep every complete event before the cut and mark the trace salvaged,
    /// instead of failing.
    pub salvage: bool,
    /// Compute the sha256 of the file as stored (compressed bytes for `.gz`).
    pub sha256: bool,
    /// Where reading, inflating and hashing run.
    pub feed: Feed,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            salvage: false,
            sha256: true,
            feed: Feed::Threaded,
        }
    }
}

/// A parsed file: the trace plus facts about the file itself.
#[derive(Debug)]
pub struct Parsed {
    /// The file as given.
    pub path: PathBuf,
    /// Lowercase hex sha256 of the stored bytes, when asked for.
    pub sha256: Option<String>,
    /// Whether the file was gzip.
    pub gzip: bool,
    /// Bytes of JSON read (decompressed size for gzip).
    pub json_bytes: u64,
    /// The model.
    pub trace: Trace,
}

/// Parses one trace file.
pub fn parse_file(path: &Path, opts: &Options) -> Result<Parsed> {
    let io_err = |source| Error::Io {
        file: path.to_path_buf(),
        source,
    };
    let mut input = Input::open(path, opts.sha256, opts.feed).map_err(io_err)?;
    let gzip = input.gzip;
    let (trace, json_bytes) = parse_reader(path, input.reader(), opts.salvage, gzip)?;
    let sha256 = input.finish().map(|d| crate::source::hex(&d));
    Ok(Parsed {
        path: path.to_path_buf(),
        sha256,
        gzip,
        json_bytes,
        trace,
    })
}

/// Parses JSON text from any reader; `name` is used in errors. Returns the trace and bytes read.
pub fn parse_reader(
    name: &Path,
    reader: &mut dyn Read,
    salvage: bool,
    gzip: bool,
) -> Result<(Trace, u64)> {
    let mut p = Parser {
        file: name.to_path_buf(),
        win: Window::new(reader),
        b: Builder::default(),
        salvage,
        gzip,
    };
    p.run()?;
    let total = p.win.base + p.win.end as u64;
    let mut trace = p.b.finish();
    trace.names.freeze();
    Ok((trace, total))
}

const WINDOW: usize = 4 << 20;
/// A single top-level value (one event, or a metadata value) larger than this is refused: it would
/// mean holding an unbounded value in memory, and no real trace has one.
const MAX_VALUE: usize = 1 << 30;

struct Window<'r> {
    r: &'r mut dyn Read,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Offset of `buf[0]` in the stream.
    base: u64,
    eof: bool,
}

enum Refill {
    More,
    Eof,
    /// The decoder reported the stream ends mid-member: a cut gzip file.
    CutGzip(String),
}

impl<'r> Window<'r> {
    fn new(r: &'r mut dyn Read) -> Self {
        Window {
            r,
            buf: vec![0; WINDOW],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    fn offset(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    /// Keeps `buf[pos..end]`, moves it to the front and reads more behind it.
    fn refill(&mut self) -> io::Result<Refill> {
        if self.eof {
            return Ok(Refill::Eof);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_VALUE {
                return Err(io::Error::other(
                    "a single value is larger than 1 GiB; refusing to hold it in memory",
                ));
            }
            let len = self.buf.len() * 2;
            self.buf.resize(len, 0);
        }
        let mut got = 0;
        while self.end < self.buf.len() {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.end += n;
                    got += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.eof = true;
                    if got == 0 {
                        return Ok(Refill::CutGzip(e.to_string()));
                    }
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(if got > 0 { Refill::More } else { Refill::Eof })
    }
}

struct Parser<'r> {
    file: PathBuf,
    win: Window<'r>,
    b: Builder,
    salvage: bool,
    gzip: bool,
}

impl Parser<'_> {
    fn syntax(&self, at: usize, msg: impl Into<String>) -> Error {
        Error::Syntax {
            file: self.file.clone(),
            offset: self.win.offset(at),
            message: msg.into(),
        }
    }

    fn io(&self, e: io::Error) -> Error {
        if self.gzip
            && matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
            )
        {
            Error::Gzip {
                file: self.file.clone(),
                offset: self.win.offset(self.win.end),
                message: e.to_string(),
            }
        } else {
            Error::Io {
                file: self.file.clone(),
                source: e,
            }
        }
    }

    /// The input ended at `at` inside a value: salvage (`Ok`) or fail.
    fn cut(&mut self, at: usize, reason: String) -> Result<()> {
        if self.salvage {
            self.b.trace.salvaged = Some(Salvage {
                cut_offset: self.win.offset(at),
                reason,
            });
            Ok(())
        } else {
            Err(Error::Truncated {
                file: self.file.clone(),
                offset: self.win.offset(at),
                events: self.b.trace.counts.events,
            })
        }
    }

    /// Runs `f` on a cursor at the window position, refilling and retrying when the window ends inside
    /// what `f` reads. `Ok(None)` means the input was cut there and salvaged.
    fn step<T>(
        &mut self,
        mut f: impl FnMut(&mut Cursor<'_>, &mut Builder) -> Scan<T>,
    ) -> Result<Option<T>> {
        loop {
            self.b.base = self.win.base;
            let mut cur = Cursor::new(&self.win.buf[..self.win.end], self.win.pos);
            match f(&mut cur, &mut self.b) {
                Ok(v) => {
                    self.win.pos = cur.pos;
                    return Ok(Some(v));
                }
                Err(Stop::Bad(f)) if !f.event => return Err(self.syntax(f.at, f.msg)),
                Err(Stop::Bad(f)) => {
                    return Err(Error::Event {
                        file: self.file.clone(),
                        offset: self.win.offset(f.at),
                        index: self.b.trace.counts.events,
                        message: f.msg.into_owned(),
                    });
                }
                Err(Stop::NeedMore) => match self.win.refill().map_err(|e| self.io(e))? {
                    Refill::More => {}
                    Refill::Eof => {
                        let at = self.win.pos;
                        self.cut(at, "the file ends inside this value".into())?;
                        return Ok(None);
                    }
                    Refill::CutGzip(msg) => {
                        let at = self.win.pos;
                        self.cut(at, format!("the gzip stream ends early: {msg}"))?;
                        return Ok(None);
                    }
                },
            }
        }
    }

    fn run(&mut self) -> Result<()> {
        // An empty (or all-whitespace) file is not a cut trace: nothing was ever written.
        loop {
            let rest = &self.win.buf[self.win.pos..self.win.end];
            if rest.iter().any(|b| !b.is_ascii_whitespace()) {
                break;
            }
            match self.win.refill().map_err(|e| self.io(e))? {
                Refill::More => {}
                // A gzip stream cut before its first byte of JSON is a truncation, not an empty file.
                Refill::CutGzip(_) => break,
                Refill::Eof => {
                    return Err(Error::Syntax {
                        file: self.file.clone(),
                        offset: self.win.offset(self.win.end),
                        message: "the file is empty: not JSON".into(),
                    });
                }
            }
        }
        // Top level: an object. A UTF-8 BOM is tolerated.
        let Some(()) = self.step(|c, _| {
            if c.buf[c.pos..].starts_with(b"\xEF\xBB\xBF") {
                c.pos += 3;
            }
            match c.ws_peek()? {
                b'{' => {
                    c.pos += 1;
                    Ok(())
                }
                b'[' => bad(
                    c.pos,
                    "the top level is an array; a Kineto trace is an object with a \"traceEvents\" array",
                ),
                other => bad(
                    c.pos,
                    format!("not JSON: expected '{{' to open the trace object, found {}", show_byte(other)),
                ),
            }
        })?
        else {
            return Ok(());
        };
        let mut first = true;
        let mut saw_events = false;
        loop {
            // A key, or the end of the object.
            let Some(key) = self.step(|c, _| {
                let b = c.ws_peek()?;
                if b == b'}' {
                    c.pos += 1;
                    return Ok(None);
                }
                if !first {
                    c.expect(b',', "',' or '}' after a top-level value")?;
                }
                c.ws_peek()?;
                let k = c.string()?;
                c.expect(b':', "':'")?;
                Ok(Some(k.into_owned()))
            })?
            else {
                return Ok(());
            };
            let Some(key) = key else { break };
            first = false;
            if key == b"traceEvents" {
                saw_events = true;
                if self.events()?.is_none() {
                    return Ok(());
                }
            } else {
                let Some(()) = self.header_value(&key)? else {
                    return Ok(());
                };
            }
        }
        // Only whitespace may follow.
        loop {
            let b = &self.win.buf[self.win.pos..self.win.end];
            if let Some(i) = b
                .iter()
                .position(|c| !matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
            {
                let at = self.win.pos + i;
                return Err(self.syntax(at, "data after the end of the top-level object"));
            }
            self.win.pos = self.win.end;
            match self.win.refill().map_err(|e| self.io(e))? {
                Refill::More => {}
                Refill::Eof => break,
                Refill::CutGzip(msg) => {
                    return Err(
                        self.syntax(self.win.pos, format!("the gzip stream ends early: {msg}"))
                    );
                }
            }
        }
        if !saw_events {
            return Err(Error::Syntax {
                file: self.file.clone(),
                offset: 0,
                message: "no \"traceEvents\" key: this is JSON but not a Kineto trace".into(),
            });
        }
        Ok(())
    }

    fn header_value(&mut self, key: &[u8]) -> Result<Option<()>> {
        self.step(|c, b| {
            let start = c.skip_value()?;
            let raw = &c.buf[start..c.pos];
            b.header_value(key, raw, start)
        })
    }

    /// `traceEvents`: `[` event (`,` event)* `]`. A missing comma between two events and a comma
    /// before `]` are tolerated with a warning (old Kineto appended its last instant event that way).
    fn events(&mut self) -> Result<Option<()>> {
        let Some(empty) = self.step(|c, _| {
            c.expect(b'[', "'[' to open \"traceEvents\"")?;
            if c.ws_peek()? == b']' {
                c.pos += 1;
                return Ok(true);
            }
            Ok(false)
        })?
        else {
            return Ok(None);
        };
        if empty {
            return Ok(Some(()));
        }
        loop {
            let Some(()) = self.step(|c, b| {
                if c.ws_peek()? != b'{' {
                    let found = c.peek()?;
                    return bad(
                        c.pos,
                        format!(
                            "expected an event object in \"traceEvents\", found {}",
                            show_byte(found)
                        ),
                    );
                }
                let start = c.pos;
                let mut ev = RawEvent::default();
                event(c, &mut ev)?;
                b.apply(&ev, start)
            })?
            else {
                return Ok(None);
            };
            let Some(more) = self.step(|c, b| {
                let at = c.pos;
                match c.ws_peek()? {
                    b',' => {
                        c.pos += 1;
                        if c.ws_peek()? == b']' {
                            b.warn(
                                at,
                                "a comma before the ']' closing traceEvents; ignored".into(),
                            );
                            c.pos += 1;
                            return Ok(false);
                        }
                        Ok(true)
                    }
                    b']' => {
                        c.pos += 1;
                        Ok(false)
                    }
                    b'{' => {
                        b.warn(
                            c.pos,
                            "no comma before this event; read it as if there were one".into(),
                        );
                        Ok(true)
                    }
                    other => bad(
                        c.pos,
                        format!(
                            "expected ',' or ']' after an event, found {}",
                            show_byte(other)
                        ),
                    ),
                }
            })?
            else {
                return Ok(None);
            };
            if !more {
                return Ok(Some(()));
            }
        }
    }
}

/// The fields of one event that the model uses, borrowed from the window.
#[derive(Default)]
struct RawEvent<'a> {
    ph: Option<Str<'a>>,
    cat: Option<Str<'a>>,
    name: Option<Str<'a>>,
    pid: Option<&'a [u8]>,
    tid: Option<&'a [u8]>,
    /// `ts` in ns; `Some(None)` when present but out of range.
    ts: Option<Option<i64>>,
    dur: Option<Option<i64>>,
    id: Option<&'a [u8]>,
    args: Args,
    /// Where `args` is when it came before `cat` and could not be read in one pass.
    late_args: Option<usize>,
}

#[derive(Default, Clone)]
struct Args {
    external_id: Option<u64>,
    correlation: Option<u64>,
    device: Option<i64>,
    stream: Option<i64>,
    registers: Option<u32>,
    shared_memory: Option<u32>,
    grid: Option<[u32; 3]>,
    block: Option<[u32; 3]>,
    graph_id: Option<u64>,
    graph_node_id: Option<u64>,
    bytes: Option<u64>,
    cbid: Option<u16>,
    /// A field we read had a form we could not use (e.g. a fractional correlation): named here.
    odd_field: Option<&'static str>,
}

/// Categories the model keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cat {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    Driver,
    CpuOp,
    UserAnnotation,
    GpuUserAnnotation,
    Flow,
    Other,
}

fn classify(cat: &[u8]) -> Cat {
    match cat {
        b"kernel" | b"Kernel" => Cat::Kernel,
        b"gpu_memcpy" | b"Memcpy" => Cat::Memcpy,
        b"gpu_memset" | b"Memset" => Cat::Memset,
        b"cuda_runtime" | b"Runtime" => Cat::Runtime,
        b"cuda_driver" => Cat::Driver,
        b"cpu_op" | b"Operator" => Cat::CpuOp,
        b"user_annotation" => Cat::UserAnnotation,
        b"gpu_user_annotation" | b"gpu_user_Annotation" => Cat::GpuUserAnnotation,
        b"ac2g" | b"async_gpu" | b"async_cpu_to_gpu" => Cat::Flow,
        _ => Cat::Other,
    }
}

/// Reads one event object (the cursor is at its `{`).
#[inline]
fn event<'a>(c: &mut Cursor<'a>, ev: &mut RawEvent<'a>) -> Scan<()> {
    c.pos += 1;
    if c.ws_peek()? == b'}' {
        c.pos += 1;
        return Ok(());
    }
    loop {
        c.ws_peek()?;
        let key = c.string()?;
        c.expect(b':', "':' after a key")?;
        let v = c.ws_peek()?;
        match &*key {
            b"ph" => ev.ph = Some(string_field(c, v, "ph")?),
            b"cat" => ev.cat = Some(string_field(c, v, "cat")?),
            b"name" => ev.name = Some(string_field(c, v, "name")?),
            b"pid" => ev.pid = Some(id_token(c, v)?),
            b"tid" => ev.tid = Some(id_token(c, v)?),
            b"ts" => ev.ts = Some(time_field(c, v, "ts")?),
            b"dur" => ev.dur = Some(time_field(c, v, "dur")?),
            b"id" => ev.id = Some(id_token(c, v)?),
            b"args" => match ev.cat.as_deref().map(classify) {
                Some(Cat::Other | Cat::Flow) => {
                    c.skip_value()?;
                }
                Some(k) => ev.args = args(c, k)?,
                None => {
                    ev.late_args = Some(c.pos);
                    c.skip_value()?;
                }
            },
            _ => {
                c.skip_value()?;
            }
        }
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b'}' => {
                c.pos += 1;
                break;
            }
            other => {
                return bad(
                    c.pos,
                    format!(
                        "expected ',' or '}}' in an event, found {}",
                        show_byte(other)
                    ),
                );
            }
        }
    }
    if let Some(at) = ev.late_args
        && let Some(k) = ev.cat.as_deref().map(classify)
        && !matches!(k, Cat::Other | Cat::Flow)
    {
        let mut again = Cursor::new(c.buf, at);
        ev.args = args(&mut again, k)?;
    }
    Ok(())
}

fn string_field<'a>(c: &mut Cursor<'a>, v: u8, field: &'static str) -> Scan<Str<'a>> {
    if v == b'"' {
        c.string()
    } else {
        let at = c.pos;
        c.skip_value()?;
        event_bad(at, format!("\"{field}\" is not a string"))
    }
}

fn time_field(c: &mut Cursor<'_>, v: u8, field: &'static str) -> Scan<Option<i64>> {
    if v == b'"' || v == b'{' || v == b'[' || v == b't' || v == b'f' || v == b'n' {
        let at = c.pos;
        c.skip_value()?;
        return event_bad(at, format!("\"{field}\" is not a number"));
    }
    c.micros_as_ns()
}

/// A pid/tid/id value as its raw token (a number, or a string with its quotes).
fn id_token<'a>(c: &mut Cursor<'a>, v: u8) -> Scan<&'a [u8]> {
    let start = c.pos;
    if v == b'"' {
        c.string()?;
        Ok(&c.buf[start..c.pos])
    } else {
        c.token()
    }
}

/// Reads `args`, keeping the fields the model uses for this category. Fields of other categories are
/// skipped unread: the same key means different things elsewhere (ROCm runtime calls write
/// `"stream": "0x0"`, Triton cpu_ops a `"grid"` string).
fn args(c: &mut Cursor<'_>, cat: Cat) -> Scan<Args> {
    let gpu = matches!(cat, Cat::Kernel | Cat::Memcpy | Cat::Memset);
    let api = matches!(cat, Cat::Runtime | Cat::Driver);
    let mut a = Args::default();
    if c.ws_peek()? != b'{' {
        c.skip_value()?;
        a.odd_field = Some("args");
        return Ok(a);
    }
    c.pos += 1;
    if c.ws_peek()? == b'}' {
        c.pos += 1;
        return Ok(a);
    }
    loop {
        c.ws_peek()?;
        let key = c.string()?;
        c.expect(b':', "':' after a key")?;
        match &*key {
            b"External id" | b"external id" => {
                a.external_id = uint(c, &mut a.odd_field, "External id")?
            }
            b"correlation" if gpu || api => {
                a.correlation = uint(c, &mut a.odd_field, "correlation")?
            }
            b"device" if gpu => a.device = int(c, &mut a.odd_field, "device")?,
            b"stream" if gpu => a.stream = int(c, &mut a.odd_field, "stream")?,
            b"registers per thread" if gpu => {
                a.registers = small(
                    uint(c, &mut a.odd_field, "registers per thread")?,
                    &mut a.odd_field,
                    "registers per thread",
                );
            }
            b"shared memory" if gpu => {
                a.shared_memory = small(
                    uint(c, &mut a.odd_field, "shared memory")?,
                    &mut a.odd_field,
                    "shared memory",
                );
            }
            b"grid" if gpu => a.grid = dims(c, &mut a.odd_field, "grid")?,
            b"block" if gpu => a.block = dims(c, &mut a.odd_field, "block")?,
            b"graph id" if gpu => a.graph_id = uint(c, &mut a.odd_field, "graph id")?,
            b"graph node id" if gpu => {
                a.graph_node_id = uint(c, &mut a.odd_field, "graph node id")?
            }
            b"bytes" if gpu => a.bytes = uint(c, &mut a.odd_field, "bytes")?,
            b"cbid" if api => {
                a.cbid = small(uint(c, &mut a.odd_field, "cbid")?, &mut a.odd_field, "cbid")
            }
            _ => {
                c.skip_value()?;
            }
        }
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b'}' => {
                c.pos += 1;
                return Ok(a);
            }
            other => {
                return bad(
                    c.pos,
                    format!("expected ',' or '}}' in args, found {}", show_byte(other)),
                );
            }
        }
    }
}

/// An integer arg: `read` takes the number; anything else (or a number `read` cannot use) leaves the
/// field absent and names it in `odd` — except `null`, which is an honest "none".
#[inline(always)]
fn numeric<'a, T>(
    c: &mut Cursor<'a>,
    odd: &mut Option<&'static str>,
    field: &'static str,
    read: impl FnOnce(&mut Cursor<'a>) -> Scan<Option<T>>,
) -> Scan<Option<T>> {
    let v = c.ws_peek()?;
    let r = if v == b'-' || v.is_ascii_digit() {
        read(c)?
    } else {
        c.skip_value()?;
        if v == b'n' {
            return Ok(None);
        }
        None
    };
    if r.is_none() {
        *odd = Some(field);
    }
    Ok(r)
}

fn uint(
    c: &mut Cursor<'_>,
    odd: &mut Option<&'static str>,
    field: &'static str,
) -> Scan<Option<u64>> {
    numeric(c, odd, field, Cursor::uint)
}

fn int(
    c: &mut Cursor<'_>,
    odd: &mut Option<&'static str>,
    field: &'static str,
) -> Scan<Option<i64>> {
    numeric(c, odd, field, |c| c.number().map(parse_i64))
}

fn small<T: TryFrom<u64>>(
    v: Option<u64>,
    odd: &mut Option<&'static str>,
    field: &'static str,
) -> Option<T> {
    let v = v?;
    let r = T::try_from(v).ok();
    if r.is_none() {
        *odd = Some(field);
    }
    r
}

fn dims(
    c: &mut Cursor<'_>,
    odd: &mut Option<&'static str>,
    field: &'static str,
) -> Scan<Option<[u32; 3]>> {
    if c.ws_peek()? != b'[' {
        c.skip_value()?;
        *odd = Some(field);
        return Ok(None);
    }
    c.pos += 1;
    let mut out = [0u32; 3];
    let mut n = 0;
    let mut ok = true;
    if c.ws_peek()? == b']' {
        c.pos += 1;
        *odd = Some(field);
        return Ok(None);
    }
    loop {
        let v = uint(c, odd, field)?;
        match v.and_then(|v| u32::try_from(v).ok()) {
            Some(v) if n < 3 => out[n] = v,
            _ => ok = false,
        }
        n += 1;
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b']' => {
                c.pos += 1;
                break;
            }
            other => {
                return bad(
                    c.pos,
                    format!("expected ',' or ']' in {field}, found {}", show_byte(other)),
                );
            }
        }
    }
    if ok && n == 3 {
        Ok(Some(out))
    } else {
        *odd = Some(field);
        Ok(None)
    }
}

/// Events per one-byte ASCII phase.
struct PhaseCounts([u64; 128]);

impl Default for PhaseCounts {
    fn default() -> Self {
        PhaseCounts([0; 128])
    }
}

impl std::ops::IndexMut<usize> for PhaseCounts {
    fn index_mut(&mut self, i: usize) -> &mut u64 {
        &mut self.0[i & 127]
    }
}

impl std::ops::Index<usize> for PhaseCounts {
    type Output = u64;
    fn index(&self, i: usize) -> &u64 {
        &self.0[i & 127]
    }
}

/// Accumulates the model as events arrive.
#[derive(Default)]
struct Builder {
    trace: Trace,
    track_map: FxHashMap<Box<[u8]>, u32>,
    /// The last few (pid, tid) tokens seen, as pid‖tid with the split point: consecutive events
    /// mostly share them, and a hit skips hashing.
    track_cache: [(Vec<u8>, usize, u32); 4],
    track_cache_next: usize,
    min_ts: i64,
    max_end: i64,
    /// Stream offset of the window's first byte, for warnings.
    base: u64,
    phase_counts: PhaseCounts,
    timed: bool,
}

const KEEP_WARNINGS: usize = 100;

impl Builder {
    fn warn(&mut self, at: usize, message: String) {
        let offset = self.base + at as u64;
        self.trace.warnings_total += 1;
        if self.trace.warnings.len() < KEEP_WARNINGS {
            self.trace.warnings.push(Warning { offset, message });
        }
    }

    #[inline]
    fn track(&mut self, pid: Option<&[u8]>, tid: Option<&[u8]>) -> Track {
        let pid = pid.unwrap_or(b"null");
        let tid = tid.unwrap_or(b"null");
        for (k, split, v) in &self.track_cache {
            if k.len() == pid.len() + tid.len() && k[..*split] == *pid && k[*split..] == *tid {
                return Track(*v);
            }
        }
        let mut key = Vec::with_capacity(pid.len() + tid.len() + 1);
        key.extend_from_slice(pid);
        key.push(0);
        key.extend_from_slice(tid);
        let id = if let Some(&id) = self.track_map.get(key.as_slice()) {
            id
        } else {
            let id = self.trace.tracks.len() as u32;
            self.trace.tracks.push(TrackIds {
                pid: id_value(pid),
                tid: id_value(tid),
            });
            self.track_map.insert(key.into_boxed_slice(), id);
            id
        };
        let slot = &mut self.track_cache[self.track_cache_next];
        slot.0.clear();
        slot.0.extend_from_slice(pid);
        slot.0.extend_from_slice(tid);
        slot.1 = pid.len();
        slot.2 = id;
        self.track_cache_next = (self.track_cache_next + 1) % self.track_cache.len();
        Track(id)
    }

    fn header_value(&mut self, key: &[u8], raw: &[u8], at: usize) -> Scan<()> {
        let h: &mut Header = &mut self.trace.header;
        let value = || -> Scan<serde_json::Value> {
            serde_json::from_slice(raw).or_else(|e| {
                bad(
                    at,
                    format!("top-level \"{}\": {e}", String::from_utf8_lossy(key)),
                )
            })
        };
        match key {
            b"schemaVersion" => h.schema_version = value()?.as_i64(),
            b"deviceProperties" => {
                if let serde_json::Value::Array(a) = value()? {
                    h.device_properties = a;
                }
            }
            b"distributedInfo" => {
                let v = value()?;
                h.rank = v.get("rank").and_then(json_uint);
                h.world_size = v.get("world_size").and_then(json_uint);
                h.distributed_info = Some(v);
            }
            b"baseTimeNanoseconds" => h.base_time_ns = value()?.as_i64(),
            b"displayTimeUnit" => h.display_time_unit = value()?.as_str().map(str::to_owned),
            b"traceName" => h.trace_name = value()?.as_str().map(str::to_owned),
            other => h
                .other_keys
                .push(String::from_utf8_lossy(other).into_owned()),
        }
        Ok(())
    }

    /// Folds one event into the model. `start` is the event's index in `buf`.
    #[inline]
    fn apply(&mut self, ev: &RawEvent<'_>, start: usize) -> Scan<()> {
        // Counted only once accepted, so an error's event index is the 0-based index of the bad one.
        self.apply_inner(ev, start)?;
        self.trace.counts.events += 1;
        Ok(())
    }

    #[inline]
    fn apply_inner(&mut self, ev: &RawEvent<'_>, start: usize) -> Scan<()> {
        let invalid = |msg: String| -> Scan<()> { event_bad(start, msg) };
        let Some(ph) = ev.ph.as_deref() else {
            return invalid("no \"ph\" (event phase)".into());
        };
        let ph_byte = if ph.len() == 1 { ph[0] } else { 0 };
        match ph_byte {
            b'X' | b'i' | b'I' | b's' | b'f' | b't' | b'B' | b'E' => {}
            b'M' => {
                self.count_phase(ph);
                return Ok(());
            }
            _ => {
                self.count_phase(ph);
                return Ok(());
            }
        }
        self.count_phase(ph);
        let Some(ts) = ev.ts else {
            return invalid(format!(
                "a \"{}\" event with no \"ts\"",
                String::from_utf8_lossy(ph)
            ));
        };
        let Some(ts) = ts else {
            return invalid("\"ts\" is out of range (more than ±292 years in ns)".into());
        };
        let dur = match ev.dur {
            Some(Some(d)) if d < 0 => {
                return invalid(format!("negative \"dur\" ({d} ns)"));
            }
            Some(Some(d)) => d,
            Some(None) => return invalid("\"dur\" is out of range".into()),
            None if ph_byte == b'X' => return invalid("an \"X\" event with no \"dur\"".into()),
            None => 0,
        };
        let end = ts.saturating_add(dur);
        if self.timed {
            self.min_ts = self.min_ts.min(ts);
            self.max_end = self.max_end.max(end);
        } else {
            self.timed = true;
            self.min_ts = ts;
            self.max_end = end;
        }
        let cat = ev.cat.as_deref().map_or(Cat::Other, classify);
        if let Some(field) = ev.args.odd_field {
            self.warn(
                start,
                format!("args.\"{field}\" has a form that cannot be used; treated as absent"),
            );
        }
        match (ph_byte, cat) {
            (b'X', Cat::Kernel | Cat::Memcpy | Cat::Memset) => {
                let name = self.name(ev.name.as_deref());
                let track = self.track(ev.pid, ev.tid);
                let ids = self.trace.track(track);
                let a = &ev.args;
                let op = GpuOp {
                    name,
                    ts_ns: ts,
                    dur_ns: dur,
                    track,
                    device: a.device.or_else(|| ids.pid.as_i64()),
                    stream: a.stream.or_else(|| ids.tid.as_i64()),
                    correlation: a.correlation.and_then(NonZeroU64::new),
                    external_id: a.external_id.and_then(NonZeroU64::new),
                    grid: a.grid.unwrap_or_default(),
                    block: a.block.unwrap_or_default(),
                    registers: a.registers,
                    shared_memory: a.shared_memory,
                    graph_id: a.graph_id,
                    graph_node_id: a.graph_node_id,
                    bytes: a.bytes,
                };
                match cat {
                    Cat::Kernel => self.trace.kernels.push(op),
                    Cat::Memcpy => self.trace.memcpys.push(op),
                    _ => self.trace.memsets.push(op),
                }
            }
            (b'X', Cat::Runtime | Cat::Driver) => {
                let launch = Launch {
                    name: self.name(ev.name.as_deref()),
                    api: if cat == Cat::Runtime {
                        Api::Runtime
                    } else {
                        Api::Driver
                    },
                    ts_ns: ts,
                    dur_ns: dur,
                    track: self.track(ev.pid, ev.tid),
                    correlation: ev.args.correlation.and_then(NonZeroU64::new),
                    external_id: ev.args.external_id.and_then(NonZeroU64::new),
                    cbid: ev.args.cbid,
                };
                self.trace.launches.push(launch);
            }
            (b'X', Cat::CpuOp | Cat::UserAnnotation | Cat::GpuUserAnnotation) => {
                let span = Span {
                    name: self.name(ev.name.as_deref()),
                    ts_ns: ts,
                    dur_ns: dur,
                    track: self.track(ev.pid, ev.tid),
                    external_id: ev.args.external_id.and_then(NonZeroU64::new),
                };
                match cat {
                    Cat::CpuOp => self.trace.cpu_ops.push(span),
                    Cat::UserAnnotation => self.trace.user_annotations.push(span),
                    _ => self.trace.gpu_user_annotations.push(span),
                }
            }
            (b'X', _) => {
                let c = String::from_utf8_lossy(ev.cat.as_deref().unwrap_or(b"")).into_owned();
                *self.trace.counts.other_complete.entry(c).or_insert(0) += 1;
            }
            (b's' | b'f', Cat::Flow) => {
                let id = ev.id.and_then(|t| {
                    let t = t
                        .strip_prefix(b"\"")
                        .and_then(|t| t.strip_suffix(b"\""))
                        .unwrap_or(t);
                    parse_u64(t)
                });
                match id {
                    Some(id) => {
                        let flow = Flow {
                            id,
                            phase: if ph_byte == b's' {
                                FlowPhase::Start
                            } else {
                                FlowPhase::Finish
                            },
                            ts_ns: ts,
                            track: self.track(ev.pid, ev.tid),
                        };
                        self.trace.flows.push(flow);
                    }
                    None => self.warn(
                        start,
                        "a CPU→GPU flow event without an integer \"id\"; skipped".into(),
                    ),
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn count_phase(&mut self, ph: &[u8]) {
        // One-letter phases are counted in a fixed table; the map is built from it at the end.
        match ph {
            [b] if b.is_ascii() => self.phase_counts[usize::from(*b)] += 1,
            _ => {
                let p = String::from_utf8_lossy(ph).into_owned();
                *self.trace.counts.by_phase.entry(p).or_insert(0) += 1;
            }
        }
    }

    #[inline]
    fn name(&mut self, name: Option<&[u8]>) -> Sym {
        Sym(self.trace.names.intern(name.unwrap_or(b"")))
    }

    fn finish(mut self) -> Trace {
        for (b, &n) in self.phase_counts.0.iter().enumerate() {
            if n > 0 {
                let key = char::from(b as u8).to_string();
                *self.trace.counts.by_phase.entry(key).or_insert(0) += n;
            }
        }
        if self.timed {
            self.trace.time_bounds = Some((self.min_ts, self.max_end));
        }
        self.trace
    }
}

/// A pid/tid token as a value: an integer, or the text of a string (or of an odd number).
fn id_value(tok: &[u8]) -> IdValue {
    if tok.first() == Some(&b'"') {
        let mut c = Cursor::new(tok, 0);
        let text = c
            .string()
            .map(|s| String::from_utf8_lossy(&s).into_owned())
            .unwrap_or_default();
        IdValue::Str(text)
    } else {
        match parse_i64(tok) {
            Some(n) => IdValue::Num(n),
            None => IdValue::Str(String::from_utf8_lossy(tok).into_owned()),
        }
    }
}

fn json_uint(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}
