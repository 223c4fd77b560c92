//! The Perfetto messages this reader reads, derived by hand for `prost` (no `protoc` at build time),
//! after google/perfetto's `protos/perfetto/trace/` (Apache-2.0, © The Android Open Source Project):
//! `trace_packet.proto`, `trace_packet_defaults.proto`, `clock_snapshot.proto`,
//! `interned_data/interned_data.proto`, `track_event/{track_event,track_descriptor,
//! process_descriptor,thread_descriptor,debug_annotation}.proto`, `gpu/gpu_render_stage_event.proto` (with the compute
//! kernel messages of April 2026: `kernel_iid`, `launch`, `InternedComputeKernel`),
//! `gpu/gpu_interned_data.proto` and `gpu/gpu_track_event.proto` (extensions, declared here as plain
//! fields of their numbers). Same field numbers and wire types; written from those schemas, not copied.
//!
//! Only the fields read are declared: `prost` skips the others, as any protobuf reader does. The
//! `oneof data` of `TracePacket` is declared as one optional field per member read (the wire format is
//! the same). Text fields are `bytes`: a producer names events with whatever bytes it was given, and a
//! name that is not UTF-8 is read lossily rather than failing the file.
//!
//! What it is not: the walk of the packet stream (`crate::stream`) nor the mapping onto the model.

/// `TracePacket`: one record of a trace (a `Trace` is `repeated TracePacket packet = 1`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// `timestamp = 8`, in the packet's clock.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `timestamp_clock_id = 58`.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// `trusted_packet_sequence_id = 10`: the writer the packet came from.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `interned_data = 12`.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `sequence_flags = 13` (1: incremental state cleared; 2: needs incremental state).
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `incremental_state_cleared = 41` (deprecated form of flag 1).
    #[prost(bool, optional, tag = "41")]
    pub incremental_state_cleared: Option<bool>,
    /// `previous_packet_dropped = 42`: packets of this sequence were lost before this one.
    #[prost(uint32, optional, tag = "42")]
    pub previous_packet_dropped: Option<u32>,
    /// `trace_packet_defaults = 59`.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    /// `track_event = 11`.
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// `track_descriptor = 60`.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    /// `clock_snapshot = 6`.
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// `gpu_render_stage_event = 53`.
    #[prost(message, optional, tag = "53")]
    pub gpu_render_stage_event: Option<GpuRenderStageEvent>,
    /// `thread_descriptor = 44` (deprecated: the sequence's default thread).
    #[prost(message, optional, tag = "44")]
    pub thread_descriptor: Option<ThreadDescriptor>,
    /// `compressed_packets = 50`: packets deflated (zlib) into one field.
    #[prost(bytes = "vec", optional, tag = "50")]
    pub compressed_packets: Option<Vec<u8>>,
    /// `zstd_compressed_packets = 133`.
    #[prost(bytes = "vec", optional, tag = "133")]
    pub zstd_compressed_packets: Option<Vec<u8>>,
}

/// A `TracePacket` as a plain file's first look reads it (`crate::read_plain_salvaging`): its track
/// descriptor and its deflated packets (which may hold descriptors), every other field skipped
/// undecoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PacketFirstLook {
    /// `track_descriptor = 60`.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    /// `compressed_packets = 50`.
    #[prost(bytes = "vec", optional, tag = "50")]
    pub compressed_packets: Option<Vec<u8>>,
}

/// `TracePacketDefaults`: what later packets of the sequence leave out.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    /// `timestamp_clock_id = 58`.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// `track_event_defaults = 11`.
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

/// `TrackEventDefaults`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    /// `track_uuid = 11`.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
}

/// `InternedData`: entries of the sequence's interning tables, each by `iid`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// `event_categories = 1`.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<Interned>,
    /// `event_names = 2`.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<Interned>,
    /// `graphics_contexts = 23`.
    #[prost(message, repeated, tag = "23")]
    pub graphics_contexts: Vec<InternedGraphicsContext>,
    /// `gpu_specifications = 24`.
    #[prost(message, repeated, tag = "24")]
    pub gpu_specifications: Vec<InternedGpuRenderStageSpecification>,
    /// `debug_annotation_names = 3` (`DebugAnnotationName`: `iid = 1`, `name = 2`, the same shape as
    /// [`Interned`]).
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<Interned>,
    /// `compute_kernels = 1000` (extension, `GpuInternedData`).
    #[prost(message, repeated, tag = "1000")]
    pub compute_kernels: Vec<InternedComputeKernel>,
    /// `compute_arg_names = 1001` (extension, `GpuInternedData`).
    #[prost(message, repeated, tag = "1001")]
    pub compute_arg_names: Vec<Interned>,
}

/// `EventName`, `EventCategory`, `DebugAnnotationName`, `InternedComputeArgName`: `iid = 1`,
/// `name = 2`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Interned {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
}

/// `InternedGraphicsContext`: a GL context or Vulkan device (or CUDA/HIP context) and its process.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedGraphicsContext {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `pid = 2`.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
}

/// `InternedGpuRenderStageSpecification`: a hardware queue's or a stage's name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedGpuRenderStageSpecification {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
    /// `category = 4` (0 other, 1 graphics, 2 compute).
    #[prost(int32, optional, tag = "4")]
    pub category: Option<i32>,
}

/// `InternedComputeKernel`: a compute kernel's identity.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedComputeKernel {
    /// `iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `name = 2` (as the binary names it: mangled).
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
    /// `demangled_name = 3`.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub demangled_name: Option<Vec<u8>>,
}

/// `TrackEvent`: a slice begin or end, an instant, a counter value, on a track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `category_iids = 3`.
    #[prost(uint64, repeated, tag = "3")]
    pub category_iids: Vec<u64>,
    /// `categories = 22`.
    #[prost(bytes = "vec", repeated, tag = "22")]
    pub categories: Vec<Vec<u8>>,
    /// `name_iid = 10`.
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    /// `name = 23`.
    #[prost(bytes = "vec", optional, tag = "23")]
    pub name: Option<Vec<u8>>,
    /// `type = 9` (1 slice begin, 2 slice end, 3 instant, 4 counter).
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// `track_uuid = 11`.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// `flow_ids = 47`.
    #[prost(fixed64, repeated, tag = "47")]
    pub flow_ids: Vec<u64>,
    /// `flow_ids_old = 36` (deprecated).
    #[prost(uint64, repeated, tag = "36")]
    pub flow_ids_old: Vec<u64>,
    /// `correlation_id = 52`.
    #[prost(uint64, optional, tag = "52")]
    pub correlation_id: Option<u64>,
    /// `legacy_event = 6`: Chrome's older form (a complete event's duration).
    #[prost(message, optional, tag = "6")]
    pub legacy_event: Option<LegacyEvent>,
    /// `gpu_correlation = 3000` (extension, `GpuTrackEvent`): the render-stage events this call
    /// submitted.
    #[prost(message, optional, tag = "3000")]
    pub gpu_correlation: Option<GpuCorrelation>,
    /// `debug_annotations = 4`: the event's named arguments (rocprofv3's `copy_bytes`, `grid_size`…).
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
}

/// `DebugAnnotation` (`track_event/debug_annotation.proto`): one named value. Only the name and the
/// integer values are declared: the values read are integers, and an annotation holding another kind
/// (`bool_value = 2`, `double_value = 5`, `string_value = 6`, `pointer_value = 7`, `nested_value = 8`,
/// `legacy_json_value = 9`, `string_value_iid = 17`, dicts and arrays) is told by its integers'
/// absence, its value skipped undecoded as the other undeclared fields are. Field numbers checked
/// against google/perfetto's text at commit ec5d16b (2026-08): `debug_annotation.proto` (these),
/// `track_event.proto` (`repeated DebugAnnotation debug_annotations = 4`), `interned_data.proto`
/// (`repeated DebugAnnotationName debug_annotation_names = 3`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// `name_iid = 1` (of `oneof name_field`): an interned `DebugAnnotationName`.
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// `name = 10` (of `oneof name_field`).
    #[prost(bytes = "vec", optional, tag = "10")]
    pub name: Option<Vec<u8>>,
    /// `uint_value = 3` (of `oneof value`).
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    /// `int_value = 4` (of `oneof value`).
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
}

/// `TrackEvent.LegacyEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LegacyEvent {
    /// `name_iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// `phase = 2` (a Chrome JSON phase character: `X` complete, `B`, `E`, `I`…).
    #[prost(int32, optional, tag = "2")]
    pub phase: Option<i32>,
    /// `duration_us = 3`.
    #[prost(int64, optional, tag = "3")]
    pub duration_us: Option<i64>,
}

/// `GpuCorrelation`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCorrelation {
    /// `render_stage_submission_event_ids = 1`.
    #[prost(uint64, repeated, tag = "1")]
    pub render_stage_submission_event_ids: Vec<u64>,
}

/// `TrackDescriptor`: a track (a process, a thread, a named custom track) and its parent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// `uuid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `parent_uuid = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `name = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
    /// `static_name = 10`.
    #[prost(bytes = "vec", optional, tag = "10")]
    pub static_name: Option<Vec<u8>>,
    /// `process = 3`.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `thread = 4`.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// `gpu_track = 3000` (extension, `GpuTrackDescriptorExtension`).
    #[prost(message, optional, tag = "3000")]
    pub gpu_track: Option<GpuTrackDescriptor>,
}

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// `pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
}

/// `ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// `pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `tid = 2`.
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
}

/// `GpuTrackDescriptor`: marks a track as a GPU's (a queue of it).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuTrackDescriptor {
    /// `gpu_id = 1`.
    #[prost(int32, optional, tag = "1")]
    pub gpu_id: Option<i32>,
    /// `hw_queue_iid = 2`.
    #[prost(uint64, optional, tag = "2")]
    pub hw_queue_iid: Option<u64>,
}

/// `ClockSnapshot`: the same instant read on several clocks.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// `clocks = 1`.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// `primary_trace_clock = 2`.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// `clock_id = 1` (6 BOOTTIME, 3 MONOTONIC, 1 REALTIME…; 64–127 a sequence's own).
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// `timestamp = 2`.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// `is_incremental = 3`.
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
    /// `unit_multiplier_ns = 4`.
    #[prost(uint64, optional, tag = "4")]
    pub unit_multiplier_ns: Option<u64>,
}

/// `GpuRenderStageEvent`: one piece of work a GPU queue ran (a render stage, a compute dispatch, a
/// copy), timed by its packet's timestamp and `duration`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuRenderStageEvent {
    /// `event_id = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub event_id: Option<u64>,
    /// `duration = 2`, ns.
    #[prost(uint64, optional, tag = "2")]
    pub duration: Option<u64>,
    /// `hw_queue_iid = 13`.
    #[prost(uint64, optional, tag = "13")]
    pub hw_queue_iid: Option<u64>,
    /// `stage_iid = 14`.
    #[prost(uint64, optional, tag = "14")]
    pub stage_iid: Option<u64>,
    /// `gpu_id = 11`.
    #[prost(int32, optional, tag = "11")]
    pub gpu_id: Option<i32>,
    /// `context = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub context: Option<u64>,
    /// `name = 17`.
    #[prost(bytes = "vec", optional, tag = "17")]
    pub name: Option<Vec<u8>>,
    /// `name_iid = 20` (an `EventName`).
    #[prost(uint64, optional, tag = "20")]
    pub name_iid: Option<u64>,
    /// `kernel_iid = 19` (an `InternedComputeKernel`).
    #[prost(uint64, optional, tag = "19")]
    pub kernel_iid: Option<u64>,
    /// `launch = 21`.
    #[prost(message, optional, tag = "21")]
    pub launch: Option<ComputeKernelLaunch>,
    /// `hw_queue_id = 3` (deprecated: an index into `specifications.hw_queue`).
    #[prost(int32, optional, tag = "3")]
    pub hw_queue_id: Option<i32>,
    /// `stage_id = 4` (deprecated: an index into `specifications.stage`).
    #[prost(int32, optional, tag = "4")]
    pub stage_id: Option<i32>,
}

/// `GpuRenderStageEvent.ComputeKernelLaunch`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ComputeKernelLaunch {
    /// `grid_size = 1` (workgroups per dimension).
    #[prost(message, optional, tag = "1")]
    pub grid_size: Option<Dim3>,
    /// `workgroup_size = 2` (threads per workgroup).
    #[prost(message, optional, tag = "2")]
    pub workgroup_size: Option<Dim3>,
    /// `args = 3`.
    #[prost(message, repeated, tag = "3")]
    pub args: Vec<ExtraComputeArg>,
}

/// `GpuRenderStageEvent.Dim3`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim3 {
    /// `x = 1`.
    #[prost(uint32, optional, tag = "1")]
    pub x: Option<u32>,
    /// `y = 2`.
    #[prost(uint32, optional, tag = "2")]
    pub y: Option<u32>,
    /// `z = 3`.
    #[prost(uint32, optional, tag = "3")]
    pub z: Option<u32>,
}

/// `GpuRenderStageEvent.ExtraComputeArg`: a named launch parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtraComputeArg {
    /// `name_iid = 1` (an `InternedComputeArgName`).
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// `name = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub name: Option<Vec<u8>>,
    /// `int_value = 3`.
    #[prost(int64, optional, tag = "3")]
    pub int_value: Option<i64>,
    /// `uint_value = 4`.
    #[prost(uint64, optional, tag = "4")]
    pub uint_value: Option<u64>,
}
