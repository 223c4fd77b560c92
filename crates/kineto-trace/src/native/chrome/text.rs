//! The text of a Chrome-trace array read through the window over the stored content: up to the array's
//! `[` (after the legacy rocprof's `{"traceEvents":`), each event object (the window grown until it holds
//! it, then handed to [`ArrayReader::event`]), and what follows the array. Offsets in errors are of the
//! whole content.
//!
//! What it is not: what an event is (`super`), or the stored bytes (`crate::stored::stream`).

use super::super::is_cut_json;
use super::super::rocprof_legacy::{Tail, object_tail};
use super::{ArrayEnd, ArrayReader, Ev};
use crate::error::{Error, Result};
use crate::parse::window::{Refill, Window};

/// The byte order mark a file may open with.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl ArrayReader<'_> {
    /// The window could not be refilled: the stream's own failure, which [`read`] reports instead.
    fn read_failed(&self, source: std::io::Error) -> Error {
        Error::Io {
            file: self.file.to_path_buf(),
            source,
        }
    }

    /// Refills `w` (keeping `w.buf[w.pos..]`); false at the end of the text.
    fn more(&self, w: &mut Window<'_>) -> Result<bool> {
        match w.refill() {
            Ok(Refill::More) => Ok(true),
            Ok(Refill::Eof | Refill::CutGzip(_)) => Ok(false),
            Err(e) => Err(self.read_failed(e)),
        }
    }

    /// Moves `w.pos` to the first byte that is not whitespace, reading on as needed: that byte, or
    /// `None` at the end of the text.
    fn ws(&self, w: &mut Window<'_>) -> Result<Option<u8>> {
        loop {
            let rest = &w.buf[w.pos..w.end];
            match rest.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(i) => {
                    w.pos += i;
                    return Ok(Some(w.buf[w.pos]));
                }
                None => w.pos = w.end,
            }
            if !self.more(w)? {
                return Ok(None);
            }
        }
    }

    /// Whether the text at `w.pos` starts with `want` (read on until it can tell).
    fn at(&self, w: &mut Window<'_>, want: &[u8]) -> Result<bool> {
        while w.end - w.pos < want.len() {
            if !self.more(w)? {
                break;
            }
        }
        Ok(w.buf[w.pos..w.end].starts_with(want))
    }

    /// The text: up to the event array's `[`, the events, and what follows the array.
    pub(super) fn read_text(&mut self, w: &mut Window<'_>, salvage: bool) -> Result<ArrayEnd> {
        self.open_array(w)?;
        self.read_events(w, salvage)
    }

    /// Reads up to the event array's `[` (after rocprof's `{"traceEvents":`), and past it.
    fn open_array(&self, w: &mut Window<'_>) -> Result<()> {
        if self.at(w, BOM)? {
            w.pos += BOM.len();
        }
        self.ws(w)?;
        if self.rocprof {
            // `{`, `"traceEvents"`, `:`, as the sniffer saw them.
            for want in [&b"{"[..], b"\"traceEvents\"", b":"] {
                if !self.at(w, want)? {
                    return Err(self.bad(
                        w.offset(w.pos),
                        format!(
                            "expected {} before the event array",
                            String::from_utf8_lossy(want)
                        ),
                    ));
                }
                w.pos += want.len();
                self.ws(w)?;
            }
        }
        if self.ws(w)? != Some(b'[') {
            return Err(self.bad(
                w.offset(w.pos),
                "expected '[' to open the event array".into(),
            ));
        }
        w.pos += 1;
        Ok(())
    }

    /// Reads the events to the array's end, or to the end of the text (a cut event salvaged, when
    /// asked, or an error).
    fn read_events(&mut self, w: &mut Window<'_>, salvage: bool) -> Result<ArrayEnd> {
        let mut end = ArrayEnd {
            closed: false,
            tail_cut: false,
        };
        let mut expect_value = true;
        while let Some(c) = self.ws(w)? {
            match c {
                b']' => {
                    end.closed = true;
                    w.pos += 1;
                    end.tail_cut = self.after_array(w)?;
                    break;
                }
                b',' if !expect_value || self.index == 0 => {
                    expect_value = true;
                    w.pos += 1;
                    continue;
                }
                b'{' => {}
                c => {
                    return Err(self.bad(
                        w.offset(w.pos),
                        format!(
                            "expected an event object, ',' or ']', found {}",
                            crate::scan::show_byte(c)
                        ),
                    ));
                }
            }
            if !self.next_event(w, salvage)? {
                break;
            }
            expect_value = false;
        }
        Ok(end)
    }

    /// Reads the event object at `w.pos` (the window grown and refilled until it holds the whole
    /// object): false when the text ends inside it (salvaged, when asked, else an error).
    fn next_event(&mut self, w: &mut Window<'_>, salvage: bool) -> Result<bool> {
        let start = w.offset(w.pos);
        loop {
            let text = &w.buf[w.pos..w.end];
            let mut de = serde_json::Deserializer::from_slice(text).into_iter::<Ev<'_>>();
            match de.next() {
                Some(Ok(ev)) => {
                    let len = de.byte_offset();
                    self.event(ev, start, &text[..len])?;
                    w.pos += len;
                    return Ok(true);
                }
                Some(Err(e)) if is_cut_json(&e, text) => {}
                Some(Err(e)) => {
                    return Err(Error::Event {
                        file: self.file.to_path_buf(),
                        offset: start,
                        index: self.index,
                        message: e.to_string(),
                    });
                }
                None => return Ok(false),
            }
            if self.more(w)? {
                continue;
            }
            if salvage {
                self.b
                    .trace_salvaged(start, "the file ends inside this event".into());
                return Ok(false);
            }
            return Err(Error::Truncated {
                file: self.file.to_path_buf(),
                offset: start,
                events: self.index,
            });
        }
    }

    /// What follows the array's `]` (at `w.pos`): nothing for an array; the rest of the legacy
    /// rocprof's object, which may be cut (true).
    fn after_array(&self, w: &mut Window<'_>) -> Result<bool> {
        let next = self.ws(w)?;
        let at = w.offset(w.pos);
        if !self.rocprof {
            return match next {
                Some(_) => Err(self.bad(at, "text after the end of the event array".into())),
                None => Ok(false),
            };
        }
        // The object's rest (`"otherData"`, a few lines) is read whole.
        let mut tail = Vec::new();
        loop {
            tail.extend_from_slice(&w.buf[w.pos..w.end]);
            w.pos = w.end;
            if !self.more(w)? {
                break;
            }
        }
        match object_tail(&tail) {
            Ok(()) => Ok(false),
            Err(Tail::Cut) => Ok(true),
            Err(Tail::Bad(i, m)) => Err(self.bad(at + i as u64, m)),
        }
    }
}
