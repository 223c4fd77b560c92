//! A packet sequence's incremental state (one per `trusted_packet_sequence_id`): its interning
//! tables, its packet defaults, its default thread, and whether that state is whole. A packet with
//! `SEQ_INCREMENTAL_STATE_CLEARED` (or the older `incremental_state_cleared`) starts it afresh; a
//! packet with `previous_packet_dropped` makes it unknown until the next such packet; a packet with
//! `SEQ_NEEDS_INCREMENTAL_STATE` on a sequence whose state is unknown is skipped (counted, noted), as
//! Perfetto's trace_processor skips it.
//!
//! What it is not: what the events mean (`crate::events`).

use crate::proto::{InternedData, TracePacket};
use rustc_hash::FxHashMap;

/// `SequenceFlags`.
const INCREMENTAL_STATE_CLEARED: u32 = 1;
const NEEDS_INCREMENTAL_STATE: u32 = 2;

/// A render stage's or queue's interned description.
pub struct Stage {
    pub name: String,
    /// `RenderStageCategory`: 2 compute.
    pub category: i32,
}

#[derive(Default)]
pub struct Sequence {
    /// Whether the incremental state is whole (a clear seen, no loss since).
    pub valid: bool,
    pub names: FxHashMap<u64, String>,
    pub categories: FxHashMap<u64, String>,
    pub arg_names: FxHashMap<u64, String>,
    /// `DebugAnnotationName`s: the Perfetto SDK interns an annotation's name when it is a static
    /// string (`TrackEventInternal::AddDebugAnnotation(…, const char*)` sets `name_iid`), as
    /// rocprofv3's are.
    pub annotation_names: FxHashMap<u64, String>,
    /// Compute kernels: the demangled name, else the name.
    pub kernels: FxHashMap<u64, String>,
    pub stages: FxHashMap<u64, Stage>,
    /// Graphics (or CUDA/HIP) context → its process.
    pub contexts: FxHashMap<u64, i32>,
    pub default_track: Option<u64>,
    pub default_clock: Option<u32>,
    /// The deprecated `ThreadDescriptor` packet's (pid, tid).
    pub thread: Option<(i64, i64)>,
}

/// What the state update says of a packet.
#[derive(Debug, PartialEq)]
pub enum Admit {
    Read,
    /// It needs incremental state the sequence lacks.
    Skip,
}

impl Sequence {
    /// Applies the packet's flags, interned data and defaults; whether its events can be read.
    pub fn admit(&mut self, p: &TracePacket) -> Admit {
        if p.previous_packet_dropped.unwrap_or(0) != 0 {
            self.valid = false;
        }
        let flags = p.sequence_flags.unwrap_or(0);
        if flags & INCREMENTAL_STATE_CLEARED != 0 || p.incremental_state_cleared == Some(true) {
            let thread = self.thread.take();
            *self = Sequence {
                valid: true,
                ..Sequence::default()
            };
            // The thread descriptor is the sequence's writer, not interned state.
            self.thread = thread;
        }
        if flags & NEEDS_INCREMENTAL_STATE != 0 && !self.valid {
            return Admit::Skip;
        }
        if let Some(d) = &p.trace_packet_defaults {
            self.default_clock = d.timestamp_clock_id;
            self.default_track = d.track_event_defaults.as_ref().and_then(|t| t.track_uuid);
        }
        if let Some(t) = &p.thread_descriptor {
            self.thread = Some((i64::from(t.pid.unwrap_or(0)), t.tid.unwrap_or(0)));
        }
        if let Some(d) = &p.interned_data {
            self.intern(d);
        }
        Admit::Read
    }

    fn intern(&mut self, d: &InternedData) {
        for (table, entries) in [
            (&mut self.names, &d.event_names),
            (&mut self.categories, &d.event_categories),
            (&mut self.arg_names, &d.compute_arg_names),
            (&mut self.annotation_names, &d.debug_annotation_names),
        ] {
            for e in entries {
                if let Some(iid) = e.iid {
                    table.insert(iid, crate::text(e.name.as_deref()));
                }
            }
        }
        for k in &d.compute_kernels {
            if let Some(iid) = k.iid {
                let name = k.demangled_name.as_deref().or(k.name.as_deref());
                self.kernels.insert(iid, crate::text(name));
            }
        }
        for s in &d.gpu_specifications {
            if let Some(iid) = s.iid {
                let stage = Stage {
                    name: crate::text(s.name.as_deref()),
                    category: s.category.unwrap_or(0),
                };
                self.stages.insert(iid, stage);
            }
        }
        for c in &d.graphics_contexts {
            if let (Some(iid), Some(pid)) = (c.iid, c.pid) {
                self.contexts.insert(iid, pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Interned;

    fn names(iid: u64, name: &str) -> InternedData {
        InternedData {
            event_names: vec![Interned {
                iid: Some(iid),
                name: Some(name.as_bytes().to_vec()),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_clear_drops_interned_names_and_a_loss_skips_until_the_next_clear() {
        let mut s = Sequence::default();
        let needs = TracePacket {
            sequence_flags: Some(NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        };
        // No clear seen yet: a packet that needs the state is skipped.
        assert_eq!(s.admit(&needs), Admit::Skip);
        let clear = TracePacket {
            sequence_flags: Some(INCREMENTAL_STATE_CLEARED),
            interned_data: Some(names(1, "a")),
            ..Default::default()
        };
        assert_eq!(s.admit(&clear), Admit::Read);
        assert_eq!(s.names.get(&1).map(String::as_str), Some("a"));
        assert_eq!(s.admit(&needs), Admit::Read);
        // A clear without the name: iid 1 is gone.
        let clear_again = TracePacket {
            incremental_state_cleared: Some(true),
            ..Default::default()
        };
        s.admit(&clear_again);
        assert!(s.names.is_empty());
        // Debug annotation names are interned state too: a clear drops them.
        let annotation_names = TracePacket {
            interned_data: Some(InternedData {
                debug_annotation_names: vec![Interned {
                    iid: Some(4),
                    name: Some(b"copy_bytes".to_vec()),
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        s.admit(&annotation_names);
        assert_eq!(
            s.annotation_names.get(&4).map(String::as_str),
            Some("copy_bytes")
        );
        s.admit(&clear_again);
        assert!(s.annotation_names.is_empty());
        let lost = TracePacket {
            previous_packet_dropped: Some(1),
            sequence_flags: Some(NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        };
        assert_eq!(s.admit(&lost), Admit::Skip);
    }
}
