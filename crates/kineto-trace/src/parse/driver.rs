//! The parse driver: the top-level object, `traceEvents` one event at a time, header values, and
//! what happens when the window ends inside a value (refill and retry, or a cut: salvage or fail).
//!
//! What it is not: the reading of one event's fields (`super::event`) or of the stored bytes.

use super::builder::Builder;
use super::event::{RawEvent, event};
use super::header::header_value;
use super::ranges::{Range, Ranges};
use super::window::{Plain, Refill, Window};
use crate::error::{Error, Result};
use crate::model::{Salvage, Trace};
use crate::scan::{Cursor, Scan, Stop, bad, show_byte};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Parses a whole input: see [`super::parse_reader`].
pub(super) fn parse(
    name: &Path,
    reader: &mut dyn Read,
    salvage: bool,
    gzip: bool,
    python_frames: bool,
) -> Result<(Trace, u64)> {
    let mut src = Plain(reader);
    parse_in(
        name,
        Window::new(&mut src),
        (salvage, python_frames),
        gzip,
        None,
    )
}

/// Parses a whole input through `win`; with `ranges`, an event start where a range's parse began is
/// not read again: that range's result is folded in and the window jumps to where it ended.
/// `(salvage, python_frames)`: [`crate::Options`]'s.
pub(super) fn parse_in(
    name: &Path,
    win: Window<'_>,
    (salvage, python_frames): (bool, bool),
    gzip: bool,
    ranges: Option<&mut Ranges>,
) -> Result<(Trace, u64)> {
    let mut p = Parser {
        file: name.to_path_buf(),
        win,
        b: Builder::new(python_frames),
        salvage,
        gzip,
        ranges,
    };
    p.run()?;
    let total = p.win.base + p.win.end as u64;
    crate::trace_events::refuse_xla(name, &p.b.devices)?;
    let mut trace = p.b.finish();
    crate::trace_events::check_unplaced(name, &mut trace)?;
    trace.names.freeze();
    trace.details.freeze();
    trace.header.format_version = trace.header.schema_version.map(|v| v.to_string());
    Ok((trace, total))
}

struct Parser<'r, 'g> {
    file: PathBuf,
    win: Window<'r>,
    b: Builder,
    salvage: bool,
    gzip: bool,
    ranges: Option<&'g mut Ranges>,
}

/// What the element step of `traceEvents` found.
enum Element {
    /// One event, folded in.
    Event,
    /// A range parsed on another thread starts here.
    Range(Box<Range>),
    /// The closing `]`.
    End,
}

impl Parser<'_, '_> {
    /// The error for data after the top-level object, at `at`: a second object where no
    /// `traceEvents` was read is a JSON Lines file ([`crate::trace_events::JSON_LINES`]).
    fn trailing_data(&self, at: usize, no_events: bool) -> Error {
        if no_events && self.win.buf.get(at) == Some(&b'{') {
            return self.syntax(at, crate::trace_events::JSON_LINES);
        }
        self.syntax(at, "data after the end of the top-level object")
    }

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
                Err(Stop::NeedMore) => {
                    // Whitespace before the value is dropped, not kept for the retry: every step
                    // starts by skipping it, so a run of it — any length — never fills the window.
                    self.win.skip_whitespace();
                    if !self.refill_or_cut()? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Refills after a step ran off the window; `false` when the input ended there (salvaged).
    fn refill_or_cut(&mut self) -> Result<bool> {
        match self.win.refill().map_err(|e| self.io(e))? {
            Refill::More => Ok(true),
            Refill::Eof => {
                let at = self.win.pos;
                self.cut(at, "the file ends inside this value".into())?;
                Ok(false)
            }
            Refill::CutGzip(msg) => {
                let at = self.win.pos;
                self.cut(at, format!("the gzip stream ends early: {msg}"))?;
                Ok(false)
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
            // Whitespace is dropped as it is seen, never held: any amount of it may precede the value.
            self.win.pos = self.win.end;
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
                    format!(
                        "not JSON: expected '{{' to open the trace object, found {}; nor any other format read here (looked for {})",
                        show_byte(other),
                        crate::read::detect::LOOKED_FOR
                    ),
                ),
            }
        })?
        else {
            return Ok(());
        };
        let mut first = true;
        // Where the first `traceEvents` key starts, once seen.
        let mut events_key: Option<u64> = None;
        loop {
            // The end of the object, or the comma before the next key: a step of its own, so that
            // whitespace after the comma is dropped before the key is read, not held with it.
            let Some(more) = self.step(|c, _| {
                if c.ws_peek()? == b'}' {
                    c.pos += 1;
                    return Ok(false);
                }
                if !first {
                    c.expect(b',', "',' or '}' after a top-level value")?;
                }
                Ok(true)
            })?
            else {
                return Ok(());
            };
            if !more {
                break;
            }
            first = false;
            // The key, then its colon. Only keys the model reads are kept (they are short); any other
            // key is validated and its value skipped.
            let Some((key, at)) = self.step(|c, _| {
                c.ws_peek()?;
                let at = c.pos;
                let k = c.string()?;
                let known = k.len() <= 32;
                Ok((if known { k.into_owned() } else { Vec::new() }, at))
            })?
            else {
                return Ok(());
            };
            let Some(()) = self.step(|c, _| c.expect(b':', "':'"))? else {
                return Ok(());
            };
            let at = self.win.offset(at);
            if key == b"traceEvents" {
                if let Some(first_at) = events_key {
                    return Err(Error::Syntax {
                        file: self.file.clone(),
                        offset: at,
                        message: format!(
                            "a second \"traceEvents\" key (the first is at byte {first_at}); JSON \
                             readers keep only one of the two arrays, so which events the trace holds \
                             is ambiguous"
                        ),
                    });
                }
                events_key = Some(at);
                if self.events()?.is_none() {
                    return Ok(());
                }
            } else {
                let Some(()) = self.step(|c, b| header_value(c, &key, &mut b.trace.header))? else {
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
                return Err(self.trailing_data(self.win.pos + i, events_key.is_none()));
            }
            self.win.pos = self.win.end;
            match self.win.refill().map_err(|e| self.io(e))? {
                Refill::More => {}
                Refill::Eof => break,
                // The JSON is whole but the gzip member is not (typically its 8-byte trailer, the
                // CRC-32 and length, is missing): the bytes were never checked, so the file is cut
                // short like any other, and salvage keeps every event.
                Refill::CutGzip(msg) => {
                    let at = self.win.pos;
                    self.cut(
                        at,
                        format!(
                            "the gzip stream ends before its end (its CRC-32 and length were not \
                             checked): {msg}"
                        ),
                    )?;
                    break;
                }
            }
        }
        if events_key.is_none() {
            return Err(Error::Syntax {
                file: self.file.clone(),
                offset: 0,
                message: "no \"traceEvents\" key: this is JSON but not a Kineto trace".into(),
            });
        }
        Ok(())
    }

    /// `traceEvents`: `[` event (`,` event)* `]`. A missing comma between two events and a comma
    /// before `]` are tolerated with a warning (old Kineto appended its last instant event that way).
    ///
    /// Each step ends right after a `[` or `,`, so whitespace between events is dropped as it is read
    /// (see [`Parser::step`]) and never counts towards the size of a value.
    fn events(&mut self) -> Result<Option<()>> {
        let Some(()) = self.step(|c, _| c.expect(b'[', "'[' to open \"traceEvents\""))? else {
            return Ok(None);
        };
        // What came before this element: the `[`, a comma (index in the window when it was read, as a
        // stream offset), or nothing (a missing comma).
        let mut after_comma: Option<u64> = None;
        loop {
            let mut ranges = self.ranges.take();
            let element = self.step(|c, b| {
                let v = c.ws_peek()?;
                if v == b']' {
                    if let Some(comma) = after_comma {
                        b.warn_at(
                            comma,
                            "a comma before the ']' closing traceEvents; ignored".into(),
                        );
                    }
                    c.pos += 1;
                    return Ok(Element::End);
                }
                if v != b'{' {
                    return bad(
                        c.pos,
                        format!(
                            "expected an event object in \"traceEvents\", found {}",
                            show_byte(v)
                        ),
                    );
                }
                let start = c.pos;
                if let Some(r) = ranges.as_deref_mut()
                    && let Some(range) = r.starting_at(b.base + start as u64)
                {
                    return Ok(Element::Range(range));
                }
                let mut ev = RawEvent::default();
                event(c, &mut ev)?;
                b.apply(&ev, start)?;
                Ok(Element::Event)
            });
            self.ranges = ranges;
            let Some(element) = element? else {
                return Ok(None);
            };
            match element {
                Element::End => {
                    if let Some(r) = self.ranges.as_deref() {
                        r.events_ended();
                    }
                    return Ok(Some(()));
                }
                Element::Range(range) => {
                    // The range was parsed from this very byte, in the state the serial parse is
                    // in here (an element expected after '[' or ','), so it read what this loop
                    // would have read, up to just after its last comma.
                    let spare = self.b.absorb(range.builder);
                    if let Some(r) = self.ranges.as_deref() {
                        r.recycle(spare);
                    }
                    self.win.jump(range.resume);
                    after_comma = Some(range.comma);
                    continue;
                }
                Element::Event => {}
            }
            let Some(next) = self.step(|c, b| match c.ws_peek()? {
                b',' => {
                    let comma = b.base + c.pos as u64;
                    c.pos += 1;
                    Ok(Some(Some(comma)))
                }
                b']' => {
                    c.pos += 1;
                    Ok(None)
                }
                b'{' => {
                    b.warn(
                        c.pos,
                        "no comma before this event; read it as if there were one".into(),
                    );
                    Ok(Some(None))
                }
                other => bad(
                    c.pos,
                    format!(
                        "expected ',' or ']' after an event, found {}",
                        show_byte(other)
                    ),
                ),
            })?
            else {
                return Ok(None);
            };
            match next {
                Some(comma) => after_comma = comma,
                None => return Ok(Some(())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `text` through a window that starts at 64 bytes and may grow to 1 KiB.
    fn small_window(text: &[u8]) -> Result<(Trace, u64)> {
        let mut r = text;
        let mut src = Plain(&mut r);
        parse_in(
            Path::new("w.json"),
            Window::with_sizes(&mut src, 64, 1024),
            (false, false),
            false,
            None,
        )
    }

    /// Whitespace is never part of a value: runs of it far longer than the largest value the window
    /// may hold are read wherever JSON allows whitespace between values, and only a value itself (here
    /// an event with a long name) larger than the bound is refused.
    #[test]
    fn whitespace_longer_than_the_window_bound_is_dropped_as_read() {
        let ev = r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}"#;
        let ws = " \n\t\r".repeat(4096); // 16 KiB: 16 times the bound.
        let places = [
            format!(r#"{ws}{{"traceEvents": [{ev}, {ev}]}}"#),
            format!(r#"{{{ws}"traceEvents": [{ev}, {ev}]}}"#),
            format!(r#"{{"traceEvents"{ws}: [{ev}, {ev}]}}"#),
            format!(r#"{{"traceEvents": {ws}[{ev}, {ev}]}}"#),
            format!(r#"{{"traceEvents": [{ws}{ev}, {ev}]}}"#),
            format!(r#"{{"traceEvents": [{ev}{ws}, {ev}]}}"#),
            format!(r#"{{"traceEvents": [{ev},{ws}{ev}]}}"#),
            format!(r#"{{"traceEvents": [{ev}{ws}{ev}]}}"#),
            format!(r#"{{"traceEvents": [{ev}, {ev}{ws}]}}"#),
            format!(r#"{{"traceEvents": [{ev}, {ev},{ws}]}}"#),
            format!(r#"{{"traceEvents": [{ev}, {ev}]{ws}, "traceName": "t"}}"#),
            format!(r#"{{"traceEvents": [{ev}, {ev}],{ws}"traceName": "t"}}"#),
            format!(r#"{{"traceName":{ws}"t", "traceEvents": [{ev}, {ev}]}}"#),
            format!(r#"{{"traceEvents": [{ev}, {ev}]{ws}}}{ws}"#),
        ];
        for (i, text) in places.iter().enumerate() {
            let (t, n) = small_window(text.as_bytes()).unwrap_or_else(|e| panic!("place {i}: {e}"));
            assert_eq!((t.kernels.len(), n), (2, text.len() as u64), "place {i}");
        }
        let long_name = format!(
            r#"{{"traceEvents": [{{"ph": "i", "ts": 1, "name": "{}"}}]}}"#,
            "n".repeat(2048)
        );
        let e = small_window(long_name.as_bytes()).expect_err("a value over the bound");
        assert!(e.to_string().contains("refusing to hold it"), "{e}");
    }
}
