//! How the model's rows are kept encoded in [`Rows`](super::Rows) ([`Row`] for [`GpuOp`], [`Launch`]
//! and [`Span`]): each field a varint, a start and an id as its step from the row before's in its
//! block (rows come in start order, or nearly, and ids grow along a trace), the rest as numbers. One
//! home for the encodings, beside the rows (`model.rs`) and the table that holds them (`rows.rs`).
//!
//! What it is not: the blocks and segments they are kept in (`rows.rs`).

use super::rows::{self, Row, next_step, next_varint, put_step};
use super::{Api, Detail, GpuOp, Launch, Span, Sym, Track};
use crate::read::detect::put_varint;
use std::num::NonZeroU64;

/// Rows a block of GPU ops or calls holds: twice a span's. The analyses read ops and calls in passes,
/// or by places in increasing order ([`super::Reader`]), where a longer block costs no decoding; a
/// span is read by its place (a call's CPU op). A block's first row is encoded against zero and its
/// start takes 8 bytes: on the scaled Perfetto file (`cargo xtask bench-native-model`) the 750,000
/// ops and calls took 282,274 bytes less than in blocks of 16, 0.38 byte a row.
const OPS_BLOCK: usize = 32;

/// The fields a GPU op and a call share, encoded alike: the start less the row before's (a table's
/// ops and calls come in start order, or nearly), the duration, the name and track as numbers, and the
/// correlation and external id less the row before's (both grow along a trace).
#[derive(Clone, Copy)]
struct Shared {
    ts_ns: i64,
    dur_ns: i64,
    name: Sym,
    track: Track,
    correlation: Option<NonZeroU64>,
    external_id: Option<NonZeroU64>,
}

impl Shared {
    fn encode(&self, before: &Shared, out: &mut Vec<u8>) {
        put_timed(
            out,
            (self.ts_ns, self.dur_ns, self.name, self.track),
            before.ts_ns,
        );
        put_step(out, id(self.correlation), id(before.correlation));
        put_step(out, id(self.external_id), id(before.external_id));
    }

    #[inline(always)]
    fn decode(before: &Shared, bytes: &mut &[u8]) -> Shared {
        let (ts_ns, dur_ns, name, track) = next_timed(bytes, before.ts_ns);
        Shared {
            ts_ns,
            dur_ns,
            name,
            track,
            correlation: next_id(bytes, before.correlation),
            external_id: next_id(bytes, before.external_id),
        }
    }
}

/// The fields every row begins with: its start less the row before's (`before_ts`), its duration,
/// and its name's and track's numbers.
fn put_timed(out: &mut Vec<u8>, (ts, dur, name, track): (i64, i64, Sym, Track), before_ts: i64) {
    put_step(out, ts, before_ts);
    put_step(out, dur, 0);
    rows::put_u32(out, name.0);
    rows::put_u32(out, track.0);
}

/// The fields [`put_timed`] wrote against `before_ts`.
#[inline(always)]
fn next_timed(bytes: &mut &[u8], before_ts: i64) -> (i64, i64, Sym, Track) {
    (
        next_step(bytes, before_ts),
        next_step(bytes, 0),
        Sym(next_varint(bytes) as u32),
        Track(next_varint(bytes) as u32),
    )
}

impl GpuOp {
    #[inline(always)]
    fn shared(&self) -> Shared {
        Shared {
            ts_ns: self.ts_ns,
            dur_ns: self.dur_ns,
            name: self.name,
            track: self.track,
            correlation: self.correlation,
            external_id: self.external_id,
        }
    }
}

impl Launch {
    #[inline(always)]
    fn shared(&self) -> Shared {
        Shared {
            ts_ns: self.ts_ns,
            dur_ns: self.dur_ns,
            name: self.name,
            track: self.track,
            correlation: self.correlation,
            external_id: self.external_id,
        }
    }
}

/// A GPU op kept in [`Rows`]: its [`Shared`] fields, then its detail's number.
impl Row for GpuOp {
    const BLOCK: usize = OPS_BLOCK;
    const FIRST: GpuOp = GpuOp {
        name: Sym(0),
        ts_ns: 0,
        dur_ns: 0,
        track: Track(0),
        correlation: None,
        external_id: None,
        detail: Detail(0),
    };

    fn encode(&self, before: &GpuOp, out: &mut Vec<u8>) {
        self.shared().encode(&before.shared(), out);
        rows::put_u32(out, self.detail.0);
    }

    #[inline(always)]
    fn decode(before: &GpuOp, bytes: &mut &[u8]) -> GpuOp {
        let s = Shared::decode(&before.shared(), bytes);
        GpuOp {
            name: s.name,
            ts_ns: s.ts_ns,
            dur_ns: s.dur_ns,
            track: s.track,
            correlation: s.correlation,
            external_id: s.external_id,
            detail: Detail(next_varint(bytes) as u32),
        }
    }
}

/// A call kept in [`Rows`]: its [`Shared`] fields, then its API and callback id in one number
/// (`(cbid + 1) << 1 | driver`, 0 for no cbid).
impl Row for Launch {
    const BLOCK: usize = OPS_BLOCK;
    const FIRST: Launch = Launch {
        name: Sym(0),
        api: Api::Runtime,
        ts_ns: 0,
        dur_ns: 0,
        track: Track(0),
        correlation: None,
        external_id: None,
        cbid: None,
    };

    fn encode(&self, before: &Launch, out: &mut Vec<u8>) {
        self.shared().encode(&before.shared(), out);
        let cbid = self.cbid.map_or(0, |c| u64::from(c) + 1);
        put_varint(out, cbid << 1 | u64::from(self.api == Api::Driver));
    }

    #[inline(always)]
    fn decode(before: &Launch, bytes: &mut &[u8]) -> Launch {
        let s = Shared::decode(&before.shared(), bytes);
        let api_cbid = next_varint(bytes);
        Launch {
            name: s.name,
            api: if api_cbid & 1 == 1 {
                Api::Driver
            } else {
                Api::Runtime
            },
            ts_ns: s.ts_ns,
            dur_ns: s.dur_ns,
            track: s.track,
            correlation: s.correlation,
            external_id: s.external_id,
            cbid: (api_cbid >> 1).checked_sub(1).map(|c| c as u16),
        }
    }
}

/// A span kept in [`Rows`]: its start less the row before's (rows come in start order, or nearly, on
/// a thread), its duration, name and track as numbers, and its external id less the row before's (ids
/// grow along a thread): ~6–10 bytes where the row is 32.
impl Row for Span {
    const FIRST: Span = Span {
        name: Sym(0),
        ts_ns: 0,
        dur_ns: 0,
        track: Track(0),
        external_id: None,
    };

    fn encode(&self, before: &Span, out: &mut Vec<u8>) {
        put_timed(
            out,
            (self.ts_ns, self.dur_ns, self.name, self.track),
            before.ts_ns,
        );
        put_step(out, id(self.external_id), id(before.external_id));
    }

    #[inline(always)]
    fn decode(before: &Span, bytes: &mut &[u8]) -> Span {
        let (ts_ns, dur_ns, name, track) = next_timed(bytes, before.ts_ns);
        Span {
            ts_ns,
            dur_ns,
            name,
            track,
            external_id: next_id(bytes, before.external_id),
        }
    }
}

/// An id as a number to step from (none is 0, which no id is).
fn id(v: Option<NonZeroU64>) -> i64 {
    v.map_or(0, |v| v.get() as i64)
}

/// The id [`put_step`] wrote as [`id`]`(v)` against `before`.
#[inline(always)]
fn next_id(bytes: &mut &[u8], before: Option<NonZeroU64>) -> Option<NonZeroU64> {
    NonZeroU64::new(next_step(bytes, id(before)) as u64)
}
