//! The tracks of a trace, from every `TrackDescriptor` in it (gathered before the events are read:
//! a descriptor may come on another sequence than, and after, its events): a thread track (pid, tid), a
//! process track, or a named track whose process is its nearest ancestor's; which tracks are a GPU's,
//! and the GPU and queue they name.
//!
//! What it is not: the events on the tracks (`crate::events`).

use crate::proto::TrackDescriptor;
use rustc_hash::FxHashMap;

/// The process of a track with no process among its ancestors.
pub const NO_PROCESS: i64 = -1;

pub struct TrackInfo {
    pub name: String,
    /// The process: its own or its nearest ancestor's.
    pub pid: Option<i64>,
    /// A thread track's thread.
    pub tid: Option<i64>,
    /// A GPU track (`gpu_track` extension), or a track named as a GPU's queue or stream: its GPU and
    /// queue when the descriptor or the name says.
    pub gpu: Option<(Option<i64>, Option<i64>)>,
}

#[derive(Default)]
pub struct Tracks {
    by_uuid: FxHashMap<u64, TrackDescriptor>,
}

impl Tracks {
    pub fn add(&mut self, d: &TrackDescriptor) {
        if let Some(uuid) = d.uuid {
            self.by_uuid.insert(uuid, d.clone());
        }
    }

    /// What track `uuid` is; `None` when no descriptor has that uuid.
    pub fn info(&self, uuid: u64) -> Option<TrackInfo> {
        let d = self.by_uuid.get(&uuid)?;
        let name = crate::text(d.name.as_deref().or(d.static_name.as_deref()));
        let tid = d.thread.as_ref().and_then(|t| t.tid);
        let gpu = d
            .gpu_track
            .as_ref()
            .map(|g| {
                let named = gpu_of_name(&name);
                (
                    g.gpu_id.map(i64::from).or(named.0),
                    g.hw_queue_iid
                        .and_then(|q| i64::try_from(q).ok())
                        .or(named.1),
                )
            })
            .or_else(|| gpu_named(&name).then(|| gpu_of_name(&name)));
        Some(TrackInfo {
            pid: self.pid_of(d),
            tid,
            gpu,
            name,
        })
    }

    /// The process of a descriptor: its own process or thread's pid, else its nearest ancestor's
    /// (at most 64 levels: a cycle of parents is not followed for ever).
    fn pid_of<'a>(&'a self, mut d: &'a TrackDescriptor) -> Option<i64> {
        for _ in 0..64 {
            let own = d
                .process
                .as_ref()
                .and_then(|p| p.pid)
                .or_else(|| d.thread.as_ref().and_then(|t| t.pid));
            if let Some(pid) = own {
                return Some(i64::from(pid));
            }
            d = self.by_uuid.get(&d.parent_uuid?)?;
        }
        None
    }
}

/// Whether a track's name says it is a GPU's queue or stream (rocprofv3's `COMPUTE AGENT [n] STREAM
/// [s] (GPU)`, `COMPUTE GPU [n] QUEUE [q] …`, `COPY to AGENT [n] … (GPU)`).
fn gpu_named(name: &str) -> bool {
    (name.starts_with("COMPUTE ") || name.starts_with("COPY to ")) && name.contains("(GPU)")
        || name.starts_with("COMPUTE GPU ")
}

/// The GPU and queue or stream a track's name gives: the number in brackets after `AGENT`/`GPU`, and
/// after `STREAM`/`QUEUE`.
fn gpu_of_name(name: &str) -> (Option<i64>, Option<i64>) {
    let after = |word: &str| {
        let rest = &name[name.find(word)? + word.len()..];
        let rest = rest.trim_start().strip_prefix('[')?;
        rest[..rest.find(']')?].trim().parse().ok()
    };
    (
        after("AGENT").or_else(|| after("GPU")),
        after("STREAM").or_else(|| after("QUEUE")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocprofv3_track_names_give_gpu_and_stream() {
        let n = "COMPUTE AGENT [2] STREAM [5] (GPU)";
        assert!(gpu_named(n));
        assert_eq!(gpu_of_name(n), (Some(2), Some(5)));
        assert_eq!(
            gpu_of_name("COMPUTE GPU [1] QUEUE [0] GPU"),
            (Some(1), Some(0))
        );
        assert!(!gpu_named("THREAD 1 (1234)"));
        assert!(!gpu_named("COPY to AGENT [0] THREAD [1] (CPU)"));
    }
}
