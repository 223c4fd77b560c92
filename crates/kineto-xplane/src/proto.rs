//! The XPlane messages, derived by hand for `prost` (no `protoc` at build time), after
//! `xla/tsl/profiler/protobuf/xplane.proto` of openxla/xla (earlier `tensorflow/core/profiler/protobuf/
//! xplane.proto` of tensorflow/tensorflow; Apache-2.0, © The TensorFlow Authors): same field numbers
//! and wire types. Written from that schema, not copied from it.
//!
//! Text fields are `bytes` here: a profiler names events by whatever bytes the program gave, and a name
//! that is not UTF-8 is read lossily rather than failing the whole file. The serialized HLO that
//! `XEventMetadata.metadata` holds is skipped (not declared).
//!
//! What it is not: the mapping onto the trace model (`crate::space`), nor the place of a decode fault
//! (`crate::fault`).

use std::collections::HashMap;

/// `XSpace`: every plane of one host's profile.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    /// `planes = 1`.
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    /// `errors = 2`: what the profiler itself reported as failed.
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub errors: Vec<Vec<u8>>,
    /// `warnings = 3`.
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub warnings: Vec<Vec<u8>>,
    /// `hostnames = 4`.
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub hostnames: Vec<Vec<u8>>,
}

/// `XPlane`: one source's timelines (a GPU, the host's threads) and the metadata its events share.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    /// `id = 1`.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// `name = 2` (`/device:GPU:0`, `/host:CPU`, …).
    #[prost(bytes = "vec", tag = "2")]
    pub name: Vec<u8>,
    /// `lines = 3`.
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    /// `event_metadata = 4`, by id.
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    /// `stat_metadata = 5`, by id.
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    /// `stats = 6`: the plane's own (a GPU's properties).
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

/// `XLine`: one timeline (a stream, a thread, a derived row).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    /// `id = 1`.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// `display_id = 10`.
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    /// `name = 2`.
    #[prost(bytes = "vec", tag = "2")]
    pub name: Vec<u8>,
    /// `display_name = 11`.
    #[prost(bytes = "vec", tag = "11")]
    pub display_name: Vec<u8>,
    /// `timestamp_ns = 3`: the line's start, ns; event offsets count from it.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    /// `duration_ps = 9`.
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    /// `events = 4`.
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

/// `XEvent`: one timed occurrence of an event metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEvent {
    /// `metadata_id = 1`.
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// `oneof data { offset_ps = 2; num_occurrences = 5; }`.
    #[prost(oneof = "EventData", tags = "2, 5")]
    pub data: Option<EventData>,
    /// `duration_ps = 3`.
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    /// `stats = 4`.
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

/// `XEvent.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum EventData {
    /// `offset_ps = 2`: start, ps after the line's `timestamp_ns`.
    #[prost(int64, tag = "2")]
    OffsetPs(i64),
    /// `num_occurrences = 5`: an aggregate, with no time of its own.
    #[prost(int64, tag = "5")]
    NumOccurrences(i64),
}

/// `XStat`: a named value of a plane, event or event metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    /// `metadata_id = 1`: the stat's name, in the plane's `stat_metadata`.
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// `oneof value`.
    #[prost(oneof = "StatValue", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<StatValue>,
}

/// `XStat.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum StatValue {
    /// `double_value = 2`.
    #[prost(double, tag = "2")]
    Double(f64),
    /// `uint64_value = 3`.
    #[prost(uint64, tag = "3")]
    Uint64(u64),
    /// `int64_value = 4`.
    #[prost(int64, tag = "4")]
    Int64(i64),
    /// `str_value = 5`.
    #[prost(bytes = "vec", tag = "5")]
    Str(Vec<u8>),
    /// `bytes_value = 6`.
    #[prost(bytes = "vec", tag = "6")]
    Bytes(Vec<u8>),
    /// `ref_value = 7`: a text kept once as the name of the stat metadata with this id.
    #[prost(uint64, tag = "7")]
    Ref(u64),
}

/// `XEventMetadata`: what the events with this id share (name, constant stats).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    /// `id = 1`.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// `name = 2`.
    #[prost(bytes = "vec", tag = "2")]
    pub name: Vec<u8>,
    /// `display_name = 4`.
    #[prost(bytes = "vec", tag = "4")]
    pub display_name: Vec<u8>,
    /// `stats = 5`.
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    /// `child_id = 6`.
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

/// `XStatMetadata`: a stat's name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    /// `id = 1`.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// `name = 2`.
    #[prost(bytes = "vec", tag = "2")]
    pub name: Vec<u8>,
    /// `description = 3`.
    #[prost(bytes = "vec", tag = "3")]
    pub description: Vec<u8>,
}
