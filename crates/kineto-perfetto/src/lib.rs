//! Reader of Perfetto protobuf traces (`.pftrace`, `.perfetto-trace`: a `Trace`, a stream of
//! `TracePacket`s) into `kineto-trace`'s [`Trace`] model: track events (slices on thread, process and
//! GPU tracks, names and categories interned per sequence) as GPU ops, runtime calls, annotations and
//! CPU ops; `GpuRenderStageEvent`s (with the 2026 compute-kernel fields) as GPU ops; every timestamp on
//! one clock through the clock snapshots (`crate::events` and `crate::clock` say what maps to what;
//! docs/native-formats.md too).
//!
//! What it is not: the format sniffing (`kineto_trace::native::detect`) or the stored bytes (gzip,
//! the sha256: `kineto-trace`'s front door). It is its own crate so that the protobuf library
//! (`prost`) stays out of `kineto-trace`: a binary calls [`install`] once, after which
//! `kineto_trace::parse_file` reads Perfetto files too.
//!
//! - `proto`: the messages read, derived by hand for `prost`;
//! - `stream`: the packets and their byte offsets (a cut or corrupt packet named by its byte);
//! - `sequence`: each packet sequence's interned data, defaults and incremental state;
//! - `clock`: timestamps onto the trace clock;
//! - `tracks`: the track descriptors;
//! - `events`: the mapping onto the model.

mod clock;
mod events;
mod proto;
mod sequence;
mod stream;
mod tracks;

use kineto_trace::native::TraceBuilder;
use kineto_trace::{Error, Result, Trace, TraceFormat};
use rustc_hash::FxHashMap;
use sequence::{Admit, Sequence};
use std::path::Path;
use stream::Located;

/// Makes `kineto_trace::parse_file` (and everything built on it) read Perfetto protobuf traces.
pub fn install() {
    kineto_trace::native::install_perfetto_reader(read);
}

/// Reads a Perfetto `Trace` held whole in `bytes`; `shown_as` names it in errors. A packet cut or
/// not decoding is an error naming its byte offset.
pub fn read(bytes: &[u8], shown_as: &Path) -> Result<Trace> {
    let packets = stream::packets(bytes).map_err(|(offset, message)| Error::Syntax {
        file: shown_as.to_path_buf(),
        offset,
        message: format!("not a readable Perfetto trace: {message}"),
    })?;
    Ok(read_packets(&packets))
}

/// The packets onto the model, in file order, each sequence's incremental state kept apart.
fn read_packets(packets: &[Located]) -> Trace {
    let mut tracks = tracks::Tracks::default();
    let mut first_snapshot = None;
    for l in packets {
        if let Some(d) = &l.packet.track_descriptor {
            tracks.add(d);
        }
        if let (None, Some(s)) = (&first_snapshot, &l.packet.clock_snapshot) {
            first_snapshot = Some((sequence_of(l), s));
        }
    }
    let clocks = clock::Clocks::new(first_snapshot);
    let mut r = events::Reader::new(TraceBuilder::new(TraceFormat::Perfetto), tracks, clocks);
    let mut sequences: FxHashMap<u32, Sequence> = FxHashMap::default();
    let (mut skipped, mut zstd) = (0u64, 0u64);
    for l in packets {
        let at = events::At {
            offset: l.offset,
            sequence: sequence_of(l),
        };
        let seq = sequences.entry(at.sequence).or_default();
        if seq.admit(&l.packet) == Admit::Skip {
            skipped += 1;
            continue;
        }
        if l.packet.zstd_compressed_packets.is_some() {
            zstd += 1;
        }
        if let Err(e) = read_packet(&mut r, &l.packet, seq, &at) {
            r.b.warn(
                at.offset,
                format!(
                    "packet at byte {} (sequence {}): {e}; skipped",
                    at.offset, at.sequence
                ),
            );
        }
    }
    r.finish_notes();
    if skipped > 0 {
        r.b.note(format!(
            "{skipped} packets skipped: they need their sequence's incremental state (interned names), \
             lost before them"
        ));
    }
    if zstd > 0 {
        r.b.warn(
            0,
            format!("{zstd} packets of zstd-compressed packets not read (only deflate is read)"),
        );
    }
    r.b.finish()
}

/// One admitted packet's clock snapshot and events.
fn read_packet(
    r: &mut events::Reader,
    p: &proto::TracePacket,
    seq: &Sequence,
    at: &events::At,
) -> std::result::Result<(), String> {
    if let Some(s) = &p.clock_snapshot {
        r.clocks.observe(at.sequence, s);
    }
    if let Some(e) = &p.track_event {
        let ts = r.time(p, seq, at)?;
        r.track_event(e, ts, seq)?;
    }
    if let Some(e) = &p.gpu_render_stage_event {
        let ts = r.time(p, seq, at)?;
        r.render_stage(e, ts, seq)?;
    }
    Ok(())
}

fn sequence_of(l: &Located) -> u32 {
    l.packet.trusted_packet_sequence_id.unwrap_or(0)
}

/// A protobuf text field: UTF-8, or read lossily; absent is empty.
fn text(bytes: Option<&[u8]>) -> String {
    String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned()
}
