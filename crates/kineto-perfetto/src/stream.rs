//! The packet stream of a Perfetto `Trace` (`repeated TracePacket packet = 1`): each packet's byte
//! offset and its decoded message, deflated `compressed_packets` opened in place. The stream is
//! walked by hand, not decoded as one message, so that a cut or corrupt packet is named by its byte.
//!
//! What it is not: what the packets mean (`crate::sequence`, `crate::track`, `crate::gpu`).

use crate::proto::TracePacket;
use kineto_trace::native::detect::varint_at;
use prost::Message;
use std::io::Read;

/// A packet and where it starts in the file (for a packet inside `compressed_packets`, the offset of
/// the packet that holds them).
pub struct Located {
    pub offset: u64,
    pub packet: TracePacket,
}

/// A fault of the stream: its byte offset and what is wrong there.
pub type Fault = (u64, String);

/// Every packet of `bytes`, in file order.
pub fn packets(bytes: &[u8]) -> Result<Vec<Located>, Fault> {
    let mut out = Vec::new();
    walk(bytes, None, &mut out)?;
    Ok(out)
}

/// Walks a `Trace` message held by `bytes`. `inside` is the offset of the packet whose
/// `compressed_packets` these bytes were inflated from (then faults name that packet).
fn walk(bytes: &[u8], inside: Option<u64>, out: &mut Vec<Located>) -> Result<(), Fault> {
    let mut at = 0usize;
    while at < bytes.len() {
        let fault = |what: String| match inside {
            None => (at as u64, what),
            Some(outer) => (
                outer,
                format!(
                    "in the packets deflated in the packet at byte {outer}, at their byte {at}: {what}"
                ),
            ),
        };
        let (tag, next) = varint_at(bytes, at)
            .ok_or_else(|| fault("a field's tag is cut or longer than 10 bytes".into()))?;
        let (number, wire) = (tag >> 3, tag & 7);
        if number == 0 {
            return Err(fault("field number 0".into()));
        }
        let cut = || {
            fault(format!(
                "Trace field {number}: its value runs past the end of the data"
            ))
        };
        let (body, end) = match wire {
            0 => (None, varint_at(bytes, next).ok_or_else(cut)?.1),
            1 | 5 => {
                let width = if wire == 1 { 8 } else { 4 };
                let end = next.checked_add(width).filter(|&e| e <= bytes.len());
                (None, end.ok_or_else(cut)?)
            }
            2 => {
                let (len, start) = varint_at(bytes, next).ok_or_else(cut)?;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|l| start.checked_add(l))
                    .filter(|&e| e <= bytes.len())
                    .ok_or_else(|| {
                        fault(format!(
                            "packet of {len} bytes runs past the end of the data ({} bytes there)",
                            bytes.len() - start
                        ))
                    })?;
                (Some(start), end)
            }
            _ => return Err(fault(format!("Trace field {number}: wire type {wire}"))),
        };
        // `Trace` has one field, `packet = 1`; any other well-formed field is skipped, as a decoder
        // skips it.
        if let (1, Some(start)) = (number, body) {
            if wire != 2 {
                return Err(fault(format!(
                    "Trace field 1: wire type {wire} for a packet"
                )));
            }
            let packet = TracePacket::decode(&bytes[start..end])
                .map_err(|e| fault(format!("the packet does not decode: {e}")))?;
            let offset = inside.unwrap_or(at as u64);
            if let Some(deflated) = &packet.compressed_packets {
                let inflated = inflate(deflated).map_err(|e| {
                    fault(format!("its compressed_packets do not inflate (zlib): {e}"))
                })?;
                walk(&inflated, Some(offset), out)?;
            }
            out.push(Located { offset, packet });
        }
        at = end;
    }
    Ok(())
}

/// The bytes of a `compressed_packets` field (zlib, as Perfetto's deflate compression writes it).
fn inflate(deflated: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(deflated).read_to_end(&mut out)?;
    Ok(out)
}
