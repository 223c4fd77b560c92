//! The top-level values beside `traceEvents`: read straight from the window, keeping only what the
//! model's users read (`schemaVersion`, `distributedInfo.rank` / `.world_size`, `baseTimeNanoseconds`,
//! `displayTimeUnit`, `traceName`, and per `deviceProperties` entry its `id`, `name`, `numSms` and
//! `totalGlobalMem`, at most [`MAX_DEVICES`] entries), each a number or a string capped at [`MAX_TEXT`]
//! bytes.
//!
//! Everything else — the rest of `deviceProperties`, the rest of `distributedInfo`, unknown keys — is validated and
//! skipped: no DOM is built, so a header value costs the window that holds it and nothing after. (A
//! `serde_json::Value` of `[[0],[0],…]` costs ~16 times its text; fuzzing found a 97 KB `.gz` that grew
//! to 4.4 GB that way.)
//!
//! What it is not: the events (`super::event`).

use crate::model::{DeviceProps, Header, MAX_DEVICES};
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
        b"deviceProperties" => h.devices = devices(c)?,
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

/// The `deviceProperties` array: one [`DeviceProps`] per object entry, at most [`MAX_DEVICES`]; entries
/// that are not objects, and entries past the cap, are validated and skipped.
fn devices(c: &mut Cursor<'_>) -> Scan<Vec<DeviceProps>> {
    let mut out = Vec::new();
    if c.ws_peek()? != b'[' {
        c.skip_value()?;
        return Ok(out);
    }
    c.pos += 1;
    if c.ws_peek()? == b']' {
        c.pos += 1;
        return Ok(out);
    }
    loop {
        if c.ws_peek()? == b'{' && out.len() < MAX_DEVICES {
            out.push(device(c)?);
        } else {
            c.skip_value()?;
        }
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b']' => {
                c.pos += 1;
                return Ok(out);
            }
            other => {
                return crate::scan::bad(
                    c.pos,
                    format!(
                        "expected ',' or ']' in \"deviceProperties\", found {}",
                        crate::scan::show_byte(other)
                    ),
                );
            }
        }
    }
}

/// One `deviceProperties` object (the cursor is on its `{`).
fn device(c: &mut Cursor<'_>) -> Scan<DeviceProps> {
    let mut d = DeviceProps::default();
    c.pos += 1;
    if c.ws_peek()? == b'}' {
        c.pos += 1;
        return Ok(d);
    }
    loop {
        c.ws_peek()?;
        let key = c.string()?;
        c.expect(b':', "':' after a key")?;
        match &*key {
            b"id" => d.id = int(c)?,
            b"name" => d.name = text(c)?,
            b"numSms" => d.num_sms = uint_or_text(c)?,
            b"totalGlobalMem" => d.total_global_mem = uint_or_text(c)?,
            _ => {
                c.skip_value()?;
            }
        }
        match c.ws_peek()? {
            b',' => c.pos += 1,
            b'}' => {
                c.pos += 1;
                return Ok(d);
            }
            other => {
                return crate::scan::bad(
                    c.pos,
                    format!(
                        "expected ',' or '}}' in a \"deviceProperties\" entry, found {}",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(key: &str, value: &str) -> Header {
        let mut h = Header::default();
        // A trailing byte, so that the scanner can see where a number ends.
        let text = format!("{value} ");
        let mut c = Cursor::new(text.as_bytes(), 0);
        header_value(&mut c, key.as_bytes(), &mut h).unwrap_or_else(|_| panic!("{key}: {value}"));
        assert_eq!(c.pos, value.len(), "{key}: the whole value is consumed");
        h
    }

    #[test]
    fn strings_are_cut_to_the_cap_at_a_character_boundary() {
        // 'é' is 2 bytes: 3000 of them are 6000 bytes; the cap of 4096 falls between two of them.
        let long = "é".repeat(3000);
        let h = read("traceName", &format!("\"{long}\""));
        let kept = h.trace_name.unwrap_or_default();
        assert_eq!(kept.len(), MAX_TEXT);
        assert!(long.starts_with(&kept));
        // 'a' then 'é's: the cap falls inside an 'é', which is dropped whole.
        let odd = format!("a{long}");
        let h = read("displayTimeUnit", &format!("\"{odd}\""));
        assert_eq!(h.display_time_unit.unwrap_or_default().len(), MAX_TEXT - 1);
    }

    #[test]
    fn only_the_fields_read_are_kept_in_whatever_form_they_come() {
        let h = read(
            "distributedInfo",
            r#"{"backend": "nccl", "rank": "3", "pg_config": [{"ranks": [0, 1]}], "world_size": 8}"#,
        );
        assert_eq!((h.rank, h.world_size), (Some(3), Some(8)));
        // Forms that are not an integer read as absent, not as an error.
        assert_eq!(read("distributedInfo", r#"{"rank": 1.5}"#).rank, None);
        assert_eq!(read("distributedInfo", "[1, 2]").rank, None);
        assert_eq!(read("schemaVersion", "\"1\"").schema_version, None);
        assert_eq!(read("schemaVersion", "1").schema_version, Some(1));
        assert_eq!(
            read("baseTimeNanoseconds", "1700000000000000000").base_time_ns,
            Some(1_700_000_000_000_000_000)
        );
        // Entries that are not objects are skipped; of an object only id, name, numSms and
        // totalGlobalMem are kept (the MI300X serving trace has an empty name).
        let h = read(
            "deviceProperties",
            r#"[[0], 7, {"id": 0, "name": "", "numSms": 304, "totalGlobalMem": 206141652992, "x": [1]}, {"name": "H100"}]"#,
        );
        assert_eq!(
            h.devices,
            vec![
                DeviceProps {
                    id: Some(0),
                    name: Some(String::new()),
                    num_sms: Some(304),
                    total_global_mem: Some(206_141_652_992),
                },
                DeviceProps {
                    name: Some("H100".into()),
                    ..DeviceProps::default()
                },
            ]
        );
        assert_eq!(read("deviceProperties", "{}").devices, vec![]);
    }

    #[test]
    fn device_entries_past_the_cap_are_skipped() {
        let many = vec!["{\"id\": 1}"; MAX_DEVICES + 5].join(",");
        assert_eq!(
            read("deviceProperties", &format!("[{many}]")).devices.len(),
            MAX_DEVICES
        );
    }
}
