//! Reader of the XPlane protobuf (`*.xplane.pb`) that the JAX, TensorFlow and XLA profilers write
//! (`plugins/profile/<run>/<host>.xplane.pb`), into `kineto-trace`'s [`Trace`] model: GPU planes'
//! streams as kernels, copies and fills, host threads as launches and CPU spans, step annotations as
//! markers (`crate::space` says what maps to what; docs/native-formats.md too).
//!
//! What it is not: the format sniffing (`kineto_trace::native::detect`, which tells an `XSpace` by its
//! first field) or the stored bytes (gzip, the sha256: `kineto-trace`'s front door). It is its own
//! crate so that the protobuf library (`prost`) stays out of `kineto-trace`: a binary calls
//! [`install`] once, after which `kineto_trace::parse_file` reads XPlane files too.
//!
//! - `proto`: the messages of `xplane.proto`, derived by hand for `prost`;
//! - `fault`: the byte offset of a decode fault (a cut or corrupt file);
//! - `stream`: the space read from a stream a plane at a time (planes → lines → events walked on the
//!   wire, each plane's events kept encoded until its metadata, written after them, is read), or a
//!   plain file read twice (planes' own fields and lines first, then the events straight into the
//!   model);
//! - `encoded`: a plane's events as the file encodes them, in chunks freed as they are decoded;
//! - `space`: the mapping onto the model.

mod encoded;
mod fault;
mod proto;
mod space;
mod stream;

use kineto_trace::{Error, Result, Trace};
use prost::Message;
use std::path::Path;

/// Makes `kineto_trace::parse_file` (and everything built on it) read XPlane protobuf files.
pub fn install() {
    kineto_trace::native::install_xplane_reader(kineto_trace::native::ProtobufRead {
        // One `XSpace` message: nothing is kept of a cut one (`--salvage` says so, see
        // `kineto_trace::read`).
        stream: |content, shown_as, _salvage| read_stream(content, shown_as),
        whole: Some(read),
        plain: Some(|look, content, shown_as, _salvage| read_plain(look, content, shown_as)),
    });
}

/// Reads a plain XPlane file's content as [`read_stream`] reads it, after a first look at the same
/// file (`first_look`): every plane's own fields and lines first, then the events decoded straight
/// into the model as `content` is read, none held (a stream holds a plane's events until its
/// metadata, written after them). The trace, or the error, is the one [`read_stream`] gives; a
/// content that is not what the first look read (the file changed) is an error.
pub fn read_plain(
    first_look: &mut dyn std::io::Read,
    content: &mut dyn std::io::Read,
    shown_as: &Path,
) -> Result<Trace> {
    stream::read_plain(first_look, content).map_err(|(offset, message)| Error::Syntax {
        file: shown_as.to_path_buf(),
        offset,
        message: format!("not a readable XPlane protobuf: {message}"),
    })
}

/// Reads an XPlane protobuf from `content`, a plane at a time (`stream.rs`); `shown_as` names it in
/// errors. A file that does not decode is an error naming the byte offset of the fault found (the
/// front door reads a file on disk again whole, [`read`], for the decoder's own words on it).
pub fn read_stream(content: &mut dyn std::io::Read, shown_as: &Path) -> Result<Trace> {
    stream::read(content).map_err(|(offset, message)| Error::Syntax {
        file: shown_as.to_path_buf(),
        offset,
        message: format!("not a readable XPlane protobuf: {message}"),
    })
}

/// Reads an XPlane protobuf (`XSpace`) held whole in `bytes`; `shown_as` names it in errors. A file
/// that does not decode is an error naming the byte offset of the first fault.
pub fn read(bytes: &[u8], shown_as: &Path) -> Result<Trace> {
    let space = proto::XSpace::decode(bytes).map_err(|e| {
        let (offset, message) = fault::locate(bytes).unwrap_or_else(|| {
            (
                0,
                "the protobuf does not decode at a place this reader can name".to_owned(),
            )
        });
        Error::Syntax {
            file: shown_as.to_path_buf(),
            offset,
            message: format!("not a readable XPlane protobuf: {message} ({e})"),
        }
    })?;
    Ok(space::read_space(space))
}
