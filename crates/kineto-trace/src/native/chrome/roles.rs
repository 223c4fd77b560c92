//! The roles of `X` events that depend on the whole file, settled once every event is read: other
//! producers' GPU categories by whether their pid is a device (`crate::trace_events::DevicePids`),
//! rpd2tracing's events by its GPU processes and API names, the legacy rocprof's by its own rules
//! (`super::super::rocprof_legacy`), and which of the last two an object opening with `{}` is.
//!
//! What it is not: the role an event's own fields decide (`super::first_role`).

use super::super::names::copy_name;
use super::super::rocprof_legacy::{RocprofOp, RocprofPid, rocprof_role};
use super::items::{Flag, Held};
use super::{ArrayReader, Role};
use crate::model::{Api, GpuKind, SpanKind};

impl ArrayReader<'_> {
    /// Roles that depend on the whole file: other producers' GPU categories are GPU ops on a device's
    /// pid (its text or its `process_name`), counted under their category elsewhere; events on a GPU
    /// pid are GPU-side annotations (rpd2tracing's UserMarker frames and graph rows), API-named events
    /// on CPU threads are launches; the legacy rocprof's by its own rules (its barrier packets
    /// counted, and noted).
    pub(super) fn settle_roles(&mut self) {
        let mut barriers = 0u64;
        let rocprof_rules = self.rocprof_rules();
        let (b, devices, rocprof_pids, gpu_pids) =
            (&self.b, &self.devices, &self.rocprof_pids, &self.gpu_pids);
        // What a pid says, found once a track (a file has few; the items are most of its events, and
        // hashing and comparing each one's pid text took a fifth of the read).
        let mut by_track: Vec<Option<PidFacts>> = Vec::new();
        self.items.edit_each(|mut it| {
            if it.is(Flag::Decided) {
                return;
            }
            let t = it.track.0 as usize;
            if by_track.len() <= t {
                by_track.resize(t + 1, None);
            }
            let facts = *by_track[t].get_or_insert_with(|| {
                let pid = &b.trace().track(it.track).pid;
                PidFacts {
                    device: devices.device(pid),
                    rocprof: rocprof_pids.get(pid).copied(),
                    gpu: gpu_pids.contains(pid),
                }
            });
            let held = it.held();
            let has_device = held.device().is_some();
            if held.foreign_cat() {
                match facts.device {
                    Some(device) if !has_device => it.change_more(|m| m.device = Some(device)),
                    Some(_) => {}
                    None => it.role = Role::Other,
                }
                it.set(Flag::Decided, true);
                return;
            }
            let by_rocprof = if rocprof_rules {
                let name = b.trace().name(it.name);
                rocprof_role(facts.rocprof, name, it.is(Flag::OnDevice))
            } else {
                None
            };
            it.role = if let Some(op) = by_rocprof {
                match op {
                    RocprofOp::Gpu(kind) => Role::Gpu(kind),
                    RocprofOp::Barrier => {
                        barriers += 1;
                        Role::Other
                    }
                }
            } else if facts.gpu {
                Role::Span(SpanKind::GpuUserAnnotation)
            } else if it.is(Flag::ApiLike) {
                let api = if b.trace().name(it.name).starts_with("hsa_") {
                    Api::Driver
                } else {
                    Api::Runtime
                };
                Role::Launch(api)
            } else {
                Role::Span(SpanKind::UserAnnotation)
            };
        });
        if barriers > 0 {
            self.b.note(format!(
                "{barriers} barrier packets (`<barrier packet>`, or on a `GPU Barriers<n>` process) counted as `rocprof barrier packet`, not as GPU work"
            ));
        }
    }

    /// The legacy rocprof's rules place the events of an object that opens with `{}` unless its ops
    /// carry RPD op types and none of its events the legacy rocprof's `BeginNs`: rpd2tracing's
    /// `--format object`, read by the rules of its array.
    pub(super) fn rocprof_rules(&self) -> bool {
        self.rocprof && (!self.rpd_ops || self.begin_ns)
    }

    /// rocprof's GPU events were named as written; a copy gets the direction word the summary reads.
    pub(super) fn rename_rocprof_ops(&mut self) {
        let rocprof = self.rocprof_rules();
        for it in self
            .items
            .iter_mut()
            .filter(|it| rocprof && !it.is(Flag::Decided))
        {
            // Only kernels and copies are renamed: the calls, most of the events, are left uncopied.
            let kind = match it.role {
                Role::Gpu(k @ (GpuKind::Kernel | GpuKind::Memcpy)) => k,
                _ => continue,
            };
            let raw = self.b.trace().name(it.name).to_string();
            it.name = match kind {
                GpuKind::Kernel => self.kernel_names.sym(&mut self.b, &raw),
                _ => self.b.name(&copy_name(&raw)),
            };
        }
    }
}

/// What the whole file says of a pid, for the roles of its events.
#[derive(Clone, Copy)]
struct PidFacts {
    /// The device it is (its text, or its `process_name`).
    device: Option<i64>,
    /// What the legacy rocprof's process name says it holds.
    rocprof: Option<RocprofPid>,
    /// rpd2tracing's `GPU<n>` process.
    gpu: bool,
}

/// The model's tables an item's row may be in, one bit each ([`tables_of`]).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Tables(u8);

impl Tables {
    /// Every table an item may end in.
    const ALL: Tables = Tables(u8::MAX);

    /// The one table of `role`'s rows (none for `Other`: counted, not kept).
    pub(super) fn of_role(role: Role) -> Tables {
        Tables(match role {
            Role::Gpu(GpuKind::Kernel) => 1,
            Role::Gpu(GpuKind::Memcpy) => 1 << 1,
            Role::Gpu(GpuKind::Memset) => 1 << 2,
            Role::Launch(_) => 1 << 3,
            Role::Span(SpanKind::CpuOp) => 1 << 4,
            Role::Span(SpanKind::UserAnnotation) => 1 << 5,
            Role::Span(SpanKind::GpuUserAnnotation) => 1 << 6,
            Role::Other => 0,
        })
    }

    pub(super) fn add(&mut self, t: Tables) {
        self.0 |= t.0;
    }

    pub(super) fn meets(self, t: Tables) -> bool {
        self.0 & t.0 != 0
    }
}

/// The tables an item held to the end may be a row of: its role's when its own fields decided it;
/// another producer's GPU category only its op's (or none, off a device: `settle_roles`); any, for a
/// role the rest of the file settles.
pub(super) fn tables_of(it: Held<'_>) -> Tables {
    if it.is(Flag::Decided) || it.foreign_cat() {
        Tables::of_role(it.role)
    } else {
        Tables::ALL
    }
}
