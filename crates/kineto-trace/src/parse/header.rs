//! The top-level values beside `traceEvents`: read straight from the window, keeping only what the
//! model's users read (`schemaVersion`, `distributedInfo.rank` / `.world_size`, `baseTimeNanoseconds`,
//! `displayTimeUnit`, `traceName`), each a number or a string capped at [`MAX_TEXT`] bytes.
//!
//! Everything else — `deviceProperties`, the rest of `distributedInfo`, unknown keys — is validated and
//! skipped: no DOM is built, so a header value costs the window that holds it and nothing after. (A
//! `serde_json::Value` of `[[0],[0],…]` costs ~16 times its text; fuzzing found a 97 KB `.gz` that grew
//! to 4.4 GB that way.)

use crate::model::Header;
use crate::scan::{Cursor, Scan, parse_i64, parse_u64};

/// Longest text kept from a header string; longer ones are cut at a character boundary.
pub(super) const MAX_TEXT: usize = 4096;

/// Reads the value of top-level `key` (the cursor is before it) into `h`.
pub(super) fn header_value(c: &mut Cursor<'_>, key: &[u8], h: &mut Header) -> Scan<()> {
    match key {
        b"schemaVersion" => h.schema_version = int(c)?,
        b"baseTimeNanoseconds" => h.base_time_ns = int(c)?,
        b"displayTimeUnit" => h.display_time_unit = text(c)?,
        b"traceName" => h.trace_name = text(c)?,
        b"distributedInfo" => (h.rank, h.world_size) = distributed_info(c)?,
        _ => {
            c.skip_value()?;
        }
    }
    Ok(())
}

/// An integer; anything else (a fraction, a string, …) is skipped and read as absent.
fn int(c: &mut Cursor<'_>) -> Scan<Option<i64>> {
    let v = c.ws_peek()?;
    if v == b'-' || v.is_ascii_digit() {
        Ok(parse_i64(c.number()?))
    } else {
        c.skip_value()?;
        Ok(None)
    }
}

/// A string, cut to [`MAX_TEXT`] bytes; anything else is skipped and read as absent.
fn text(c: &mut Cursor<'_>) -> Scan<Option<String>> {
    if c.ws_peek()? != b'"' {
        c.skip_value()?;
        return Ok(None);
    }
    let s = c.string()?;
    let s = String::from_utf8_lossy(&s);
    let mut end = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Ok(Some(s[..end].to_owned()))
}

/// `rank` and `world_size` from `distributedInfo`, as integers or integer strings (some launchers
/// write `"rank": "3"`); the object's other members are skipped.
fn distributed_info(c: &mut Cursor<'_>) -> Scan<(Option<u64>, Option<u64>)> {
    let (mut rank, mut world) = (None, None);
    if c.ws_peek()? != b'{' {
        c.skip_value()?;
        return Ok((None, None));
    }
    c.pos += 1;
    if c.ws_peek()? == b'}' {
        c.pos += 1;
        return Ok((None, None));
    }
    loop {
        c.ws_peek()?;
        let key = c.string()?;
        c.expect(b':', "':' after a key")?;
        match &*key {
            b"rank" => rank = uint_or_text(c)?,
            b"world_size" => world = uint_or_text(c)?,
            _ => {
                c.skip_value()?;
            }
        }
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b'}' => {
                c.pos += 1;
                return Ok((rank, world));
            }
            other => {
                return crate::scan::bad(
                    c.pos,
                    format!(
                        "expected ',' or '}}' in \"distributedInfo\", found {}",
                        crate::scan::show_byte(other)
                    ),
                );
            }
        }
    }
}

fn uint_or_text(c: &mut Cursor<'_>) -> Scan<Option<u64>> {
    match c.ws_peek()? {
        b'"' => {
            let s = c.string()?;
            Ok(std::str::from_utf8(&s)
                .ok()
                .and_then(|s| s.trim().parse().ok()))
        }
        b'0'..=b'9' => Ok(parse_u64(c.number()?)),
        _ => {
            c.skip_value()?;
            Ok(None)
        }
    }
}
