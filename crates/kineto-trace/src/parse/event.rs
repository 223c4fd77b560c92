//! One event's fields, read in one pass from the window: what the model keeps is decoded, the rest is
//! skipped (and validated). The categories (`cat`) it tells apart are [`crate::category`]'s.
//!
//! What it is not: what the model does with the fields (`super::builder`).

use crate::category::{EventKind, event_kind};
use crate::scan::{Cursor, Key, Scan, Str, bad, event_bad, parse_i64, show_byte};
use crate::words::{KeyText, KeyWords, pack_key};

/// The fields of one event that the model uses, borrowed from the window.
#[derive(Default, Debug)]
pub(super) struct RawEvent<'a> {
    pub(super) ph: Option<Str<'a>>,
    pub(super) cat: Option<Str<'a>>,
    /// `event_kind` of `cat`, kept beside it.
    pub(super) kind: Option<EventKind>,
    /// `cat` is another producer's GPU category (`crate::trace_events::foreign_gpu_category`): its
    /// `args` are read as a GPU op's, and the builder places it by its pid.
    pub(super) foreign_gpu: bool,
    pub(super) name: Option<Str<'a>>,
    pub(super) pid: Option<&'a [u8]>,
    pub(super) tid: Option<&'a [u8]>,
    /// `ts` in ns; `Some(None)` when present but out of range.
    pub(super) ts: Option<Option<i64>>,
    pub(super) dur: Option<Option<i64>>,
    pub(super) id: Option<&'a [u8]>,
    pub(super) args: Args,
    /// Where `args` is when it came before `cat` and could not be read in one pass.
    pub(super) late_args: Option<usize>,
    /// `args` as its raw text (a metadata event's `args.name` is read from it, `process_name`).
    pub(super) args_raw: Option<&'a [u8]>,
    /// The object was `{}`.
    pub(super) empty: bool,
    /// A `cpu_op`'s `args["Input Dims"]` value as its raw text, read only for GEMM ops (`record_shapes`).
    pub(super) input_dims: Option<&'a [u8]>,
}

#[derive(Default, Clone, Debug)]
pub(super) struct Args {
    pub(super) external_id: Option<u64>,
    pub(super) correlation: Option<u64>,
    pub(super) device: Option<i64>,
    pub(super) stream: Option<i64>,
    pub(super) registers: Option<u32>,
    pub(super) shared_memory: Option<u32>,
    pub(super) grid: Option<[u32; 3]>,
    pub(super) block: Option<[u32; 3]>,
    pub(super) graph_id: Option<u64>,
    pub(super) graph_node_id: Option<u64>,
    pub(super) bytes: Option<u64>,
    pub(super) cbid: Option<u16>,
    /// Exact times beside the µs `ts`/`dur` (`start_ns`/`end_ns`, as nsys converters write them).
    pub(super) start_ns: Option<i64>,
    pub(super) end_ns: Option<i64>,
    /// A field we read had a form we could not use (e.g. a fractional correlation): named here.
    pub(super) odd_field: Option<&'static str>,
}

/// A key's packed form, for matching (every key named here has at most 16 bytes).
const fn key(k: &[u8]) -> KeyWords {
    match pack_key(k) {
        Some(p) => p,
        None => panic!("a key longer than 16 bytes"),
    }
}

const PH: KeyWords = key(Field::Ph.name());
const CAT: KeyWords = key(Field::Cat.name());
const NAME: KeyWords = key(Field::Name.name());
const PID: KeyWords = key(Field::Pid.name());
const TID: KeyWords = key(Field::Tid.name());
const TS: KeyWords = key(Field::Ts.name());
const DUR: KeyWords = key(Field::Dur.name());
const ID: KeyWords = key(Field::Id.name());
const ARGS: KeyWords = key(Field::Args.name());
const EXTERNAL_ID: KeyWords = key(Arg::ExternalId.name());
const EXTERNAL_ID_LOWER: KeyWords = key(b"external id");
const CORRELATION: KeyWords = key(Arg::Correlation.name());
/// nsys2json's spelling (brycelelbach/nsys2json: its `cuda_api` events).
const CORRELATION_ID: KeyWords = key(b"correlationId");
const DEVICE: KeyWords = key(Arg::Device.name());
const STREAM: KeyWords = key(Arg::Stream.name());
const SHARED_MEMORY: KeyWords = key(Arg::SharedMemory.name());
const GRID: KeyWords = key(Arg::Grid.name());
const BLOCK: KeyWords = key(Arg::Block.name());
const GRAPH_ID: KeyWords = key(Arg::GraphId.name());
const GRAPH_NODE_ID: KeyWords = key(Arg::GraphNodeId.name());
const BYTES: KeyWords = key(Arg::Bytes.name());
const INPUT_DIMS: KeyWords = key(Arg::InputDims.name());
const CBID: KeyWords = key(Arg::Cbid.name());
const START_NS: KeyWords = key(Arg::StartNs.name());
const END_NS: KeyWords = key(Arg::EndNs.name());

/// The fields of an event object that the model reads; `Other` for any other key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    Args,
    Other,
}

impl Field {
    const fn name(self) -> &'static [u8] {
        match self {
            Field::Ph => b"ph",
            Field::Cat => b"cat",
            Field::Name => b"name",
            Field::Pid => b"pid",
            Field::Tid => b"tid",
            Field::Ts => b"ts",
            Field::Dur => b"dur",
            Field::Id => b"id",
            Field::Args => b"args",
            // None (the empty key is one of the others).
            Field::Other => b"",
        }
    }

    /// The field a key names.
    fn of(key: &Key<'_>) -> Field {
        match key {
            Key::Short(PH) => Field::Ph,
            Key::Short(CAT) => Field::Cat,
            Key::Short(NAME) => Field::Name,
            Key::Short(PID) => Field::Pid,
            Key::Short(TID) => Field::Tid,
            Key::Short(TS) => Field::Ts,
            Key::Short(DUR) => Field::Dur,
            Key::Short(ID) => Field::Id,
            Key::Short(ARGS) => Field::Args,
            _ => Field::Other,
        }
    }

    /// The key most likely to follow this one. Kineto writes an event's keys in one order, `ph`,
    /// `cat`, `name`, `pid`, `tid`, `ts`, `dur`, `args`, and a flow event's (one with an `id`) in
    /// another, `ph`, `id`, `pid`, `tid`, `ts`, `cat`, `name`, `bp`.
    #[inline(always)]
    fn next(self, flow: bool) -> Option<Field> {
        match self {
            Field::Ph => Some(Field::Cat),
            Field::Cat => Some(Field::Name),
            Field::Name | Field::Id => Some(Field::Pid),
            Field::Pid => Some(Field::Tid),
            Field::Tid => Some(Field::Ts),
            Field::Ts if flow => Some(Field::Cat),
            Field::Ts => Some(Field::Dur),
            Field::Dur => Some(Field::Args),
            Field::Args | Field::Other => None,
        }
    }

    /// The key's text before its value as Kineto writes it ([`KeyText`]).
    #[inline(always)]
    fn text(self) -> KeyText {
        const fn t(f: Field) -> KeyText {
            KeyText::of(f.name())
        }
        const TEXTS: [KeyText; 9] = [
            t(Field::Ph),
            t(Field::Cat),
            t(Field::Name),
            t(Field::Pid),
            t(Field::Tid),
            t(Field::Ts),
            t(Field::Dur),
            t(Field::Id),
            t(Field::Args),
        ];
        TEXTS[self as usize]
    }
}

/// Reads one event object (the cursor is at its `{`).
#[inline]
pub(super) fn event<'a>(c: &mut Cursor<'a>, ev: &mut RawEvent<'a>) -> Scan<()> {
    read_event::<true>(c, ev)
}

/// [`event`]; with `KNOWN_TEXT` false, every key goes the general way (the reference of the tests).
#[inline(always)]
fn read_event<'a, const KNOWN_TEXT: bool>(c: &mut Cursor<'a>, ev: &mut RawEvent<'a>) -> Scan<()> {
    c.pos += 1;
    if c.ws_peek()? == b'}' {
        c.pos += 1;
        ev.empty = true;
        return Ok(());
    }
    // The key expected next: where the text at a key's opening quote is that key's as Kineto writes
    // it, the key is known without reading it (what reading it would give, by construction).
    let mut expected = Some(Field::Ph);
    loop {
        c.ws_peek()?;
        let field = match expected {
            Some(f) if KNOWN_TEXT && f.text().at(c.buf, c.pos) => {
                c.pos += f.text().len();
                f
            }
            _ => {
                let key = c.key()?;
                c.expect(b':', "':' after a key")?;
                Field::of(&key)
            }
        };
        let v = c.ws_peek()?;
        match field {
            Field::Ph => ev.ph = Some(string_field(c, v, "ph")?),
            Field::Cat => {
                let cat = string_field(c, v, "cat")?;
                let kind = event_kind(&cat);
                ev.foreign_gpu = kind == EventKind::Other
                    && std::str::from_utf8(&cat)
                        .is_ok_and(crate::trace_events::foreign_gpu_category);
                ev.kind = Some(if ev.foreign_gpu {
                    EventKind::Kernel
                } else {
                    kind
                });
                ev.cat = Some(cat);
            }
            Field::Name => ev.name = Some(string_field(c, v, "name")?),
            Field::Pid => ev.pid = Some(id_token(c, v)?),
            Field::Tid => ev.tid = Some(id_token(c, v)?),
            Field::Ts => ev.ts = Some(time_field(c, v, "ts")?),
            Field::Dur => ev.dur = Some(time_field(c, v, "dur")?),
            Field::Id => ev.id = Some(id_token(c, v)?),
            Field::Args => {
                let at = c.pos;
                match ev.kind {
                    Some(EventKind::Other | EventKind::Flow | EventKind::PythonFunction) => {
                        c.skip_value()?;
                    }
                    Some(k) => args::<KNOWN_TEXT>(c, k, &mut ev.args, &mut ev.input_dims)?,
                    None => {
                        ev.late_args = Some(c.pos);
                        c.skip_value()?;
                    }
                }
                ev.args_raw = Some(&c.buf[at..c.pos]);
            }
            Field::Other => {
                c.skip_value()?;
            }
        }
        expected = field.next(ev.id.is_some());
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
        && let Some(k) = ev.kind
        && !matches!(
            k,
            EventKind::Other | EventKind::Flow | EventKind::PythonFunction
        )
    {
        let mut again = Cursor::new(c.buf, at);
        args::<KNOWN_TEXT>(&mut again, k, &mut ev.args, &mut ev.input_dims)?;
    }
    Ok(())
}

/// A metadata event's `args.name` (the text of a `process_name`), from `args` as its raw text; `None`
/// when `args` is no object or has no string `name`.
pub(super) fn args_name(args: &[u8]) -> Option<String> {
    let mut c = Cursor::new(args, 0);
    c.expect(b'{', "'{'").ok()?;
    loop {
        if c.ws_peek().ok()? == b'}' {
            return None;
        }
        let key = c.key().ok()?;
        c.ws_peek().ok()?;
        c.expect(b':', "':' after a key").ok()?;
        let v = c.ws_peek().ok()?;
        if matches!(key, Key::Short(NAME)) && v == b'"' {
            return Some(String::from_utf8_lossy(&c.string().ok()?).into_owned());
        }
        c.skip_value().ok()?;
        if c.ws_peek().ok()? == b',' {
            c.pos += 1;
            c.ws_peek().ok()?;
        }
    }
}

#[inline(always)]
fn string_field<'a>(c: &mut Cursor<'a>, v: u8, field: &'static str) -> Scan<Str<'a>> {
    if v == b'"' {
        c.string()
    } else {
        let at = c.pos;
        c.skip_value()?;
        event_bad(at, format!("\"{field}\" is not a string"))
    }
}

#[inline(always)]
fn time_field(c: &mut Cursor<'_>, v: u8, field: &'static str) -> Scan<Option<i64>> {
    if v == b'"' || v == b'{' || v == b'[' || v == b't' || v == b'f' || v == b'n' {
        let at = c.pos;
        c.skip_value()?;
        return event_bad(at, format!("\"{field}\" is not a number"));
    }
    c.micros_as_ns()
}

/// A pid/tid/id value as its raw token (a number, or a string with its quotes).
#[inline(always)]
fn id_token<'a>(c: &mut Cursor<'a>, v: u8) -> Scan<&'a [u8]> {
    let start = c.pos;
    if v == b'"' {
        c.string()?;
        Ok(&c.buf[start..c.pos])
    } else {
        c.token()
    }
}

/// The `args` keys the model reads; `Other` for any other key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    ExternalId,
    Correlation,
    Device,
    Stream,
    Registers,
    SharedMemory,
    Grid,
    Block,
    GraphId,
    GraphNodeId,
    Bytes,
    InputDims,
    StartNs,
    EndNs,
    Cbid,
    Other,
}

impl Arg {
    const ALL: [Arg; 16] = [
        Arg::ExternalId,
        Arg::Correlation,
        Arg::Device,
        Arg::Stream,
        Arg::Registers,
        Arg::SharedMemory,
        Arg::Grid,
        Arg::Block,
        Arg::GraphId,
        Arg::GraphNodeId,
        Arg::Bytes,
        Arg::InputDims,
        Arg::StartNs,
        Arg::EndNs,
        Arg::Cbid,
        Arg::Other,
    ];

    /// The key as Kineto spells it (`Other`: none; the empty key is one of the others).
    const fn name(self) -> &'static [u8] {
        match self {
            Arg::ExternalId => b"External id",
            Arg::Correlation => b"correlation",
            Arg::Device => b"device",
            Arg::Stream => b"stream",
            Arg::Registers => b"registers per thread",
            Arg::SharedMemory => b"shared memory",
            Arg::Grid => b"grid",
            Arg::Block => b"block",
            Arg::GraphId => b"graph id",
            Arg::GraphNodeId => b"graph node id",
            Arg::Bytes => b"bytes",
            Arg::InputDims => b"Input Dims",
            Arg::StartNs => b"start_ns",
            Arg::EndNs => b"end_ns",
            Arg::Cbid => b"cbid",
            Arg::Other => b"",
        }
    }

    /// The arg a key names.
    fn of(key: &Key<'_>) -> Arg {
        match key {
            Key::Short(EXTERNAL_ID | EXTERNAL_ID_LOWER) => Arg::ExternalId,
            Key::Short(CORRELATION | CORRELATION_ID) => Arg::Correlation,
            Key::Short(DEVICE) => Arg::Device,
            Key::Short(STREAM) => Arg::Stream,
            Key::Long(k) if **k == *Arg::Registers.name() => Arg::Registers,
            Key::Short(SHARED_MEMORY) => Arg::SharedMemory,
            Key::Short(GRID) => Arg::Grid,
            Key::Short(BLOCK) => Arg::Block,
            Key::Short(GRAPH_ID) => Arg::GraphId,
            Key::Short(GRAPH_NODE_ID) => Arg::GraphNodeId,
            Key::Short(BYTES) => Arg::Bytes,
            Key::Short(INPUT_DIMS) => Arg::InputDims,
            Key::Short(START_NS) => Arg::StartNs,
            Key::Short(END_NS) => Arg::EndNs,
            Key::Short(CBID) => Arg::Cbid,
            _ => Arg::Other,
        }
    }

    /// The key Kineto most likely writes after this one, among those the model reads: a runtime
    /// call's `External id`, `cbid`, `correlation`; a memcpy's `External id`, `device`, (`context`),
    /// `stream`, `correlation`, `bytes`; a kernel's `grid`, `block`.
    #[inline(always)]
    fn next(self, api: bool) -> Option<Arg> {
        match self {
            Arg::ExternalId if api => Some(Arg::Cbid),
            Arg::ExternalId => Some(Arg::Device),
            Arg::Cbid | Arg::Stream => Some(Arg::Correlation),
            Arg::Correlation => Some(Arg::Bytes),
            Arg::Grid => Some(Arg::Block),
            _ => None,
        }
    }

    /// The key's text before its value as Kineto writes it ([`KeyText`]; keys of up to 12 bytes).
    #[inline(always)]
    fn text(self) -> Option<KeyText> {
        const TEXTS: [Option<KeyText>; 16] = {
            let mut t = [None; 16];
            let mut i = 0;
            while i < 16 {
                let name = Arg::ALL[i].name();
                if !name.is_empty() && name.len() <= 12 {
                    t[i] = Some(KeyText::of(name));
                }
                i += 1;
            }
            t
        };
        TEXTS[self as usize]
    }
}

/// Reads `args` into `a` (reset first: a later `args` key replaces an earlier one whole), keeping the
/// fields the model uses for this category. Fields of other categories are skipped unread: the same
/// key means different things elsewhere (ROCm runtime calls write `"stream": "0x0"`, Triton cpu_ops a
/// `"grid"` string). A `cpu_op`'s `Input Dims` is validated and its text handed back in
/// `input_dims`, to be read only if the op is a GEMM (the name may come later).
fn args<'a, const KNOWN_TEXT: bool>(
    c: &mut Cursor<'a>,
    cat: EventKind,
    a: &mut Args,
    input_dims: &mut Option<&'a [u8]>,
) -> Scan<()> {
    let gpu = matches!(
        cat,
        EventKind::Kernel | EventKind::Memcpy | EventKind::Memset
    );
    let api = matches!(cat, EventKind::Runtime | EventKind::Driver);
    *a = Args::default();
    if c.ws_peek()? != b'{' {
        c.skip_value()?;
        a.odd_field = Some("args");
        return Ok(());
    }
    c.pos += 1;
    if c.ws_peek()? == b'}' {
        c.pos += 1;
        return Ok(());
    }
    // As in `event`: the key Kineto writes next, checked before the general read.
    let mut expected = Some(Arg::ExternalId);
    loop {
        c.ws_peek()?;
        let arg = match expected {
            Some(k) if KNOWN_TEXT && k.text().is_some_and(|t| t.at(c.buf, c.pos)) => {
                c.pos += k.text().map_or(0, |t| t.len());
                k
            }
            _ => {
                let key = c.key()?;
                c.expect(b':', "':' after a key")?;
                Arg::of(&key)
            }
        };
        match arg {
            Arg::ExternalId => a.external_id = uint(c, &mut a.odd_field, "External id")?,
            Arg::Correlation if gpu || api => {
                a.correlation = uint(c, &mut a.odd_field, "correlation")?
            }
            Arg::Device if gpu => a.device = int(c, &mut a.odd_field, "device")?,
            Arg::Stream if gpu => a.stream = int(c, &mut a.odd_field, "stream")?,
            Arg::Registers if gpu => {
                a.registers = small(
                    uint(c, &mut a.odd_field, "registers per thread")?,
                    &mut a.odd_field,
                    "registers per thread",
                );
            }
            Arg::SharedMemory if gpu => {
                a.shared_memory = small(
                    uint(c, &mut a.odd_field, "shared memory")?,
                    &mut a.odd_field,
                    "shared memory",
                );
            }
            Arg::Grid if gpu => a.grid = dims(c, &mut a.odd_field, "grid")?,
            Arg::Block if gpu => a.block = dims(c, &mut a.odd_field, "block")?,
            Arg::GraphId if gpu => a.graph_id = uint(c, &mut a.odd_field, "graph id")?,
            Arg::GraphNodeId if gpu => {
                a.graph_node_id = uint(c, &mut a.odd_field, "graph node id")?
            }
            Arg::Bytes if gpu => a.bytes = uint(c, &mut a.odd_field, "bytes")?,
            Arg::InputDims if cat == EventKind::CpuOp => {
                let at = c.skip_value()?;
                *input_dims = Some(&c.buf[at..c.pos]);
            }
            Arg::StartNs if gpu => a.start_ns = int(c, &mut a.odd_field, "start_ns")?,
            Arg::EndNs if gpu => a.end_ns = int(c, &mut a.odd_field, "end_ns")?,
            Arg::Cbid if api => {
                a.cbid = small(uint(c, &mut a.odd_field, "cbid")?, &mut a.odd_field, "cbid")
            }
            _ => {
                c.skip_value()?;
            }
        }
        expected = arg.next(api);
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b'}' => {
                c.pos += 1;
                return Ok(());
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

// Inlined, a digit read in place: the calls (registers saved, the result through memory) cost as
// much as reading a short id. Anything else as `numeric` reads it.
#[inline(always)]
fn uint(
    c: &mut Cursor<'_>,
    odd: &mut Option<&'static str>,
    field: &'static str,
) -> Scan<Option<u64>> {
    if c.ws_peek()?.is_ascii_digit() {
        let r = c.uint()?;
        if r.is_none() {
            *odd = Some(field);
        }
        return Ok(r);
    }
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

/// The rows of input `input` of an op's `Input Dims` text (`[[M, K], [N, K], []]`): the product of every
/// dimension but the last (a 3-D activation `[B, S, K]` has B·S rows), 1 for a vector. `None` when the
/// input is missing, not a list of integers, empty, or the rows do not fit a `u32`.
pub(super) fn input_rows(dims: &[u8], input: usize) -> Option<u32> {
    let mut c = Cursor::new(dims, 0);
    if c.ws_peek().ok()? != b'[' {
        return None;
    }
    c.pos += 1;
    let mut i = 0;
    loop {
        if c.ws_peek().ok()? == b']' {
            return None;
        }
        if i == input {
            return tensor_rows(&mut c);
        }
        c.skip_value().ok()?;
        match c.ws_peek().ok()? {
            b',' => c.pos += 1,
            _ => return None,
        }
        i += 1;
    }
}

fn tensor_rows(c: &mut Cursor<'_>) -> Option<u32> {
    if c.ws_peek().ok()? != b'[' {
        return None;
    }
    c.pos += 1;
    let mut dims: Vec<u64> = Vec::new();
    if c.ws_peek().ok()? == b']' {
        return None;
    }
    loop {
        if !c.ws_peek().ok()?.is_ascii_digit() {
            return None;
        }
        dims.push(c.uint().ok()??);
        match c.ws_peek().ok()? {
            b',' => c.pos += 1,
            b']' => break,
            _ => return None,
        }
    }
    let rows = dims[..dims.len() - 1]
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))?;
    u32::try_from(rows).ok()
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
