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
//! - `stream`: the packets read one at a time with their byte offsets (a cut or corrupt packet named
//!   by its byte);
//! - `sequence`: each packet sequence's interned data, defaults and incremental state;
//! - `pairing`: the events paired, named and timed in file order, logged;
//! - `log`: the events logged as bytes (a slice ~15 bytes) until every track descriptor is known (a
//!   stream's read; a plain file's descriptors are read first, and its events mapped as paired);
//! - `clock`: timestamps onto the trace clock;
//! - `tracks`: the track descriptors;
//! - `events`: the log mapped onto the model once every track descriptor is known.

mod clock;
mod events;
mod log;
mod pairing;
mod proto;
mod sequence;
mod stream;
mod tracks;

use kineto_trace::native::ProtobufRead;
use kineto_trace::{Error, Result, Salvage, Trace};
use pairing::Pairing;
use prost::Message;
use std::io::Read;
use std::path::Path;

/// Makes `kineto_trace::parse_file` (and everything built on it) read Perfetto protobuf traces.
pub fn install() {
    kineto_trace::native::install_perfetto_reader(ProtobufRead {
        stream: read_stream_salvaging,
        // The stream's faults are named as a whole read names them.
        whole: None,
        plain: Some(read_plain_salvaging),
    });
}

/// Reads a Perfetto `Trace` held whole in `bytes`, as [`read_stream`] reads it.
pub fn read(bytes: &[u8], shown_as: &Path) -> Result<Trace> {
    read_stream(&mut &bytes[..], shown_as)
}

/// Reads a Perfetto `Trace` from `content`, one packet at a time; `shown_as` names it in errors. A
/// packet cut or not decoding is an error naming its byte offset.
pub fn read_stream(content: &mut dyn Read, shown_as: &Path) -> Result<Trace> {
    read_stream_salvaging(content, shown_as, false)
}

/// [`read_stream`]; with `salvage`, data that ends inside a packet (a recording cut short: the
/// packets are written one after another, so every packet before the cut is whole) gives the trace of
/// the packets before it, marked salvaged at the cut packet's byte. A packet that does not decode, or
/// packets deflated in a packet that do not, stay errors: that is no cut.
pub fn read_stream_salvaging(
    content: &mut dyn Read,
    shown_as: &Path,
    salvage: bool,
) -> Result<Trace> {
    gather(Gather::default(), content, shown_as, salvage)
}

/// [`read_stream_salvaging`] of a plain file's content, after a first look at the same file
/// (`first_look`) for its track descriptors alone (every other field skipped undecoded), so that each
/// event is mapped onto the model as it is paired and no log of the events is held (the log of a file
/// is more than the model it becomes). The trace is the one the stream's read gives. A first look
/// that ends on a fault other than a cut (an I/O error, a stop) leaves the content to the stream's
/// read.
pub fn read_plain_salvaging(
    first_look: &mut dyn Read,
    content: &mut dyn Read,
    shown_as: &Path,
    salvage: bool,
) -> Result<Trace> {
    match look_first(first_look) {
        Some((tracks, descriptors)) => gather(
            Gather::mapping(tracks, descriptors),
            content,
            shown_as,
            salvage,
        ),
        None => read_stream_salvaging(content, shown_as, salvage),
    }
}

/// Every track descriptor of `content`, as a read of it adds them ([`Gather::packet`]), and how many
/// there were. A cut ends the look: the read after it stops at the same packet (an error, or a
/// salvaged trace of the packets before it, whose descriptors these are). Another fault gives `None`:
/// a packet that does not decode is the stream read's error to name, and an I/O error or a stop says
/// nothing of the file.
fn look_first(content: &mut dyn Read) -> Option<(tracks::Tracks, usize)> {
    let mut tracks = tracks::Tracks::default();
    let mut descriptors = 0;
    let looked = stream::packets(content, &mut |_, packet: &proto::PacketFirstLook| {
        if let Some(d) = &packet.track_descriptor {
            tracks.add(d);
            descriptors += 1;
        }
    });
    match looked {
        Ok(()) => Some((tracks, descriptors)),
        Err(f) if f.cut => Some((tracks, descriptors)),
        Err(_) => None,
    }
}

/// The packets of `content` through `gather`, into the trace (or the fault that stopped them).
fn gather(
    mut gather: Gather,
    content: &mut dyn Read,
    shown_as: &Path,
    salvage: bool,
) -> Result<Trace> {
    let read = stream::packets(content, &mut |offset, packet| gather.packet(offset, packet));
    // A trace is given (a whole read, or one salvaged at a cut, which the first look met too): it
    // must have been mapped with this file's tracks.
    let given = match &read {
        Ok(()) => true,
        Err(f) => salvage && f.cut,
    };
    if let (true, Some((looked, read))) = (given, gather.descriptors)
        && looked != read
    {
        return Err(Error::Syntax {
            file: shown_as.to_path_buf(),
            offset: 0,
            message: format!(
                "not a readable Perfetto trace: the file changed while it was read (its first look \
                 found {looked} track descriptors, the read {read})"
            ),
        });
    }
    match read {
        Ok(()) => Ok(gather.finish()),
        Err(f) if salvage && f.cut => {
            let mut trace = gather.finish();
            trace.salvaged = Some(Salvage {
                cut_offset: f.at,
                reason: format!("not a readable Perfetto trace: {}", f.message),
            });
            Ok(trace)
        }
        Err(f) => Err(Error::Syntax {
            file: shown_as.to_path_buf(),
            offset: f.at,
            message: format!("not a readable Perfetto trace: {}", f.message),
        }),
    }
}

/// What is kept of the packets while they are read: the packets before the file's first clock
/// snapshot (which sets the trace clock and the first readings of the others), held encoded until it
/// comes, and from it on the events paired ([`Pairing`]). A stream's events are logged, with every
/// track descriptor, and mapped at the end, when the last descriptor of each track is known; a plain
/// file's descriptors are known from its first look ([`Gather::mapping`]), and its events are mapped
/// as they are paired.
#[derive(Default)]
struct Gather {
    tracks: tracks::Tracks,
    early: Vec<(u64, Vec<u8>)>,
    pairing: Option<Pairing>,
    /// Every track descriptor of the file, read first: the events are mapped as paired, and
    /// `tracks` is not gathered.
    known: Option<tracks::Tracks>,
    /// When mapping: the descriptors the first look found, and those read since.
    descriptors: Option<(usize, usize)>,
}

impl Gather {
    /// A gathering whose events are mapped as paired, with `tracks`: every descriptor of the file
    /// (`descriptors` of them).
    fn mapping(tracks: tracks::Tracks, descriptors: usize) -> Gather {
        Gather {
            known: Some(tracks),
            descriptors: Some((descriptors, 0)),
            ..Gather::default()
        }
    }

    fn packet(&mut self, offset: u64, packet: &proto::TracePacket) {
        if let Some(d) = &packet.track_descriptor {
            match &mut self.descriptors {
                Some((_, read)) => *read += 1,
                None => self.tracks.add(d),
            }
        }
        match (&mut self.pairing, &packet.clock_snapshot) {
            (Some(p), _) => p.packet(offset, packet),
            (None, Some(snapshot)) => {
                let sequence = packet.trusted_packet_sequence_id.unwrap_or(0);
                self.start(Some((sequence, snapshot)));
                if let Some(p) = &mut self.pairing {
                    p.packet(offset, packet);
                }
            }
            (None, None) => self.early.push((offset, packet.encode_to_vec())),
        }
    }

    /// The pairing from the first snapshot on (`None`: the file has none), with the packets held
    /// before it read first.
    fn start(&mut self, first_snapshot: Option<(u32, &proto::ClockSnapshot)>) {
        let clocks = clock::Clocks::new(first_snapshot);
        let mut p = match self.known.take() {
            Some(tracks) => Pairing::mapping(clocks, events::Mapper::new(tracks)),
            None => Pairing::new(clocks),
        };
        for (offset, bytes) in self.early.drain(..) {
            if let Ok(packet) = proto::TracePacket::decode(&bytes[..]) {
                p.packet(offset, &packet);
            }
        }
        self.pairing = Some(p);
    }

    fn finish(mut self) -> Trace {
        if self.pairing.is_none() {
            self.start(None);
        }
        let mut pairing = self
            .pairing
            .unwrap_or_else(|| Pairing::new(clock::Clocks::new(None)));
        match pairing.take_mapper() {
            Some(mapper) => mapper.finish(&pairing),
            None => events::map(pairing, self.tracks),
        }
    }
}

/// A protobuf text field: UTF-8, or read lossily; absent is empty.
fn text(bytes: Option<&[u8]>) -> String {
    String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned()
}
