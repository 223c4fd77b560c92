//! The packet stream of a Perfetto `Trace` (`repeated TracePacket packet = 1`), read from the content
//! one packet at a time: each packet's byte offset and its decoded message, deflated
//! `compressed_packets` opened in place (their packets given before the packet that holds them). The
//! stream is walked field by field ([`FieldStream`]), not decoded as one message, so that a cut or
//! corrupt packet is named by its byte and no more than one packet is held.
//!
//! What it is not: what the packets mean (`crate::sequence`, `crate::pairing`, `crate::events`).

use crate::proto::{PacketFirstLook, TracePacket};
use kineto_trace::native::protowire::{Fault as WireFault, FieldStream, MAX_HELD, NO_LIMIT, Short};
use prost::Message;
use std::io::Read;

/// A fault of the stream: its byte offset and what is wrong there.
#[derive(Debug)]
pub struct Fault {
    pub at: u64,
    pub message: String,
    /// The data ended inside a top-level packet or its length: the packets before `at` are whole.
    pub cut: bool,
}

/// A packet as a walk decodes it: the whole message, or a first look's part of it.
pub trait Packet: Message + Default {
    /// Its `compressed_packets`: packets deflated into it, given before it.
    fn compressed_packets(&self) -> Option<&[u8]>;
}

impl Packet for TracePacket {
    fn compressed_packets(&self) -> Option<&[u8]> {
        self.compressed_packets.as_deref()
    }
}

impl Packet for PacketFirstLook {
    fn compressed_packets(&self) -> Option<&[u8]> {
        self.compressed_packets.as_deref()
    }
}

/// Every packet of `content`, in file order, to `each` with its offset (for a packet inside
/// `compressed_packets`, the offset of the packet that holds them).
pub fn packets<P: Packet>(
    content: &mut dyn Read,
    each: &mut dyn FnMut(u64, &P),
) -> Result<(), Fault> {
    walk(content, None, each)
}

/// Walks a `Trace` message read from `content`. `inside` is the offset of the packet whose
/// `compressed_packets` these bytes were inflated from (then faults name that packet).
fn walk<P: Packet>(
    content: &mut dyn Read,
    inside: Option<u64>,
    each: &mut dyn FnMut(u64, &P),
) -> Result<(), Fault> {
    let mut fields = FieldStream::new(content);
    // One packet decoded into again and again (what `decode` does with a new one each time): a
    // `TracePacket` is ~1 KB, and each new one was made and then moved out.
    let mut packet = P::default();
    loop {
        let header = fields.header(NO_LIMIT).map_err(|(at, f)| {
            let cut = matches!(f, WireFault::Cut { .. });
            fault(inside, at, f.describe("Trace"), cut)
        })?;
        let Some(h) = header else { return Ok(()) };
        if h.wire != 2 {
            continue;
        }
        let short = |s: Short| {
            let cut = matches!(s, Short::Data { .. });
            let what = match s {
                Short::Io(e) => e.to_string(),
                Short::Data { there } => format!(
                    "packet of {} bytes runs past the end of the data ({there} bytes there)",
                    h.value
                ),
                Short::Limit | Short::TooLarge => format!(
                    "packet of {} bytes, more than the {MAX_HELD} bytes this reader holds",
                    h.value
                ),
            };
            fault(inside, h.at, what, cut)
        };
        // `Trace` has one field, `packet = 1`; any other well-formed field is skipped, as a decoder
        // skips it.
        if h.number != 1 {
            fields.skip(h.value, NO_LIMIT).map_err(short)?;
            continue;
        }
        let body = fields.body(h.value, NO_LIMIT).map_err(short)?;
        packet.clear();
        packet.merge(body).map_err(|e| {
            fault(
                inside,
                h.at,
                format!("the packet does not decode: {e}"),
                false,
            )
        })?;
        let offset = inside.unwrap_or(h.at);
        if let Some(deflated) = packet.compressed_packets() {
            let inflated = inflate(deflated).map_err(|e| {
                fault(
                    inside,
                    h.at,
                    format!("its compressed_packets do not inflate (zlib): {e}"),
                    false,
                )
            })?;
            walk(&mut &inflated[..], Some(offset), each)?;
        }
        // By reference: a `TracePacket` is ~1 KB, and moving it to each reader of it copied it.
        each(offset, &packet);
    }
}

/// A fault at `at` of the stream walked; inside deflated packets, named by the packet that holds them
/// (and never a cut of the file: those bytes were whole, their inflated content is not). `cut`: the
/// data ended inside the packet.
fn fault(inside: Option<u64>, at: u64, what: String, cut: bool) -> Fault {
    match inside {
        None => Fault {
            at,
            message: what,
            cut,
        },
        Some(outer) => Fault {
            at: outer,
            message: format!(
                "in the packets deflated in the packet at byte {outer}, at their byte {at}: {what}"
            ),
            cut: false,
        },
    }
}

/// The bytes of a `compressed_packets` field (zlib, as Perfetto's deflate compression writes it).
fn inflate(deflated: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(deflated).read_to_end(&mut out)?;
    Ok(out)
}
