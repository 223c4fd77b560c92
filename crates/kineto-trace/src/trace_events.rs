//! Rules of the Chrome Trace Event Format that both of its readers share (the Kineto parser,
//! `parse/`, and the Chrome-trace array reader, `native/chrome/`): `B`/`E` duration events paired
//! into spans, the GPU work of other producers' dialects, what no rule placed, the warning for an
//! `args` field of an unusable form.
//!
//! What it is not: a reader. Each reader reads the events its own way and asks here what they are.

use crate::error::{Error, Result};
use crate::model::{GpuKind, IdValue, Trace, Track};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::path::Path;

/// The `B` events not yet ended, per track: the Trace Event Format pairs an `E` with the latest open
/// `B` of its thread (pid, tid), so durations nest as a stack.
pub(crate) struct OpenDurations<T> {
    open: FxHashMap<u32, Vec<(i64, T)>>,
}

impl<T> Default for OpenDurations<T> {
    fn default() -> Self {
        OpenDurations {
            open: FxHashMap::default(),
        }
    }
}

impl<T> OpenDurations<T> {
    /// A `B` event at `ts` on `track`, with what its reader keeps of it.
    pub(crate) fn begin(&mut self, track: Track, ts: i64, what: T) {
        self.open.entry(track.0).or_default().push((ts, what));
    }

    /// An `E` event on `track`: the `B` it closes (its `ts` and what was kept), or `None` when no `B`
    /// is open there (a dangling `E`).
    pub(crate) fn end(&mut self, track: Track) -> Option<(i64, T)> {
        self.open.get_mut(&track.0)?.pop()
    }

    /// The `B` events never closed, in no set order.
    pub(crate) fn dangling(self) -> impl Iterator<Item = (i64, T)> {
        self.open.into_values().flatten()
    }
}

/// The warning for a `B` event no `E` closed.
pub(crate) fn dangling_begin(ts: i64) -> String {
    format!("a \"B\" event (at {ts} ns) that no \"E\" on its thread ends; skipped")
}

/// The warning for an `E` event with no open `B` on its thread.
pub(crate) const DANGLING_END: &str = "an \"E\" event with no open \"B\" on its thread; skipped";

/// The warning for an `E` event that ends before its `B` begins.
pub(crate) fn ends_before_begin(begin: i64, end: i64) -> String {
    format!("an \"E\" event at {end} ns ends before its \"B\" at {begin} ns; the pair is skipped")
}

/// Exact ns `t0..t1` in `args` (`start_ns`/`end_ns`) are the same times as the µs `ts`/`dur`, rounded,
/// when each end is within 1 µs of its rounding; a writer that rebased one clock and not the other
/// keeps `ts`/`dur` (the clock every other event of the file is on).
pub(crate) fn same_clock(ts: i64, dur: i64, t0: i64, t1: i64) -> bool {
    t1 >= t0 && (t0 - ts).abs() < 1_000 && (t1 - ts.saturating_add(dur)).abs() < 1_000
}

/// The error for a file of one JSON object per line (JSON Lines) whose first object is no trace: the
/// layout of Nsight Systems' own JSON export (`nsys export --type json`: its events as protobuf
/// messages, then its strings and thread names, one per line), which is not the Chrome trace format.
pub(crate) const JSON_LINES: &str = "another JSON object follows the first (one object per line, JSON \
     Lines): the layout of Nsight Systems' own JSON export (`nsys export` of type `json`), which is not \
     the Chrome trace format and is not read; give kl1 the report's SQLite export (type `sqlite`)";

/// The warning for an `args` field whose value has a form the reader cannot use.
pub(crate) fn odd_arg(field: &str) -> String {
    format!("args.\"{field}\" has a form that cannot be used; treated as absent")
}

/// The categories other producers give GPU work, with no Kineto spelling: `cuda` — nsys2json
/// (chenyu-jiang/nsys2json, `nsys2json.py`: `CUPTI_ACTIVITY_KIND_KERNEL` rows as `"cat": "cuda"` on
/// pid `"Device <deviceId>"`, tid `"Stream <streamId>"`) and the converters derived from it — and
/// `gpu`. An event of such a category is GPU work only on a device's track ([`device_pid`]).
pub(crate) fn foreign_gpu_category(cat: &str) -> bool {
    matches!(cat, "cuda" | "gpu" | "GPU" | "CUDA")
}

/// The device a pid names, when it names one the way those producers write it: `"Device 0"`
/// (nsys2json), `"GPU 0"` / `"GPU0"`.
pub(crate) fn device_pid(pid: &IdValue) -> Option<i64> {
    let IdValue::Str(s) = pid else { return None };
    device_name(s)
}

/// The device a process name (or a pid's text) says: `"Device 0"`, `"GPU 0"`, `"GPU0"`, also after
/// a word of its own (the multi-file nsys2json writes `"<sqlite file> Device <deviceId>"`).
fn device_name(s: &str) -> Option<i64> {
    let s = s.trim();
    ["Device", "GPU"].iter().find_map(|word| {
        let at = s.rfind(word)?;
        let own_word = s[..at].is_empty() || s[..at].ends_with(char::is_whitespace);
        let number = s[at + word.len()..].trim_start().parse().ok()?;
        own_word.then_some(number)
    })
}

/// The pids that are devices: by their own text ([`device_pid`]) or by a `process_name` metadata
/// event (`"ph": "M"`, `args.name` `"Device N"`), which converters that number their pids write, and
/// which may come anywhere in the file (after the events it names too; a parallel parse sees it in
/// another range): so a reader asks only once every event is read.
#[derive(Default)]
pub(crate) struct DevicePids {
    named: FxHashMap<IdValue, i64>,
    /// The first process named as XLA's profiler names its planes (`/device:GPU:0`, `/host:CPU`): the
    /// file is a JAX / TensorFlow trace ([`refuse_xla`]).
    xla_process: Option<String>,
}

impl DevicePids {
    /// A `process_name` metadata event naming `pid` `name`: kept when the name says a device.
    pub(crate) fn process_name(&mut self, pid: IdValue, name: &str) {
        if let Some(device) = device_name(name) {
            self.named.insert(pid, device);
        }
        if self.xla_process.is_none()
            && (name.starts_with("/device:") || name.starts_with("/host:"))
        {
            self.xla_process = Some(name.to_string());
        }
    }

    /// The device `pid` is, by its text or its process name.
    pub(crate) fn device(&self, pid: &IdValue) -> Option<i64> {
        device_pid(pid).or_else(|| self.named.get(pid).copied())
    }

    /// The names `other` read (the ranges after this one's, in a parallel parse): a later
    /// `process_name` of a pid replaces an earlier one, as a viewer shows the last.
    pub(crate) fn absorb(&mut self, other: DevicePids) {
        self.named.extend(other.named);
        if self.xla_process.is_none() {
            self.xla_process = other.xla_process;
        }
    }
}

/// Refuses a trace of XLA's profiler (JAX's `jax.profiler.trace`, whose `create_perfetto_trace=True`
/// writes `perfetto_trace.json.gz`, and TensorBoard's trace viewer: tsl `TraceEventsToJson`): its
/// processes are XLA planes (`/device:GPU:0`, `/host:CPU`) and its events have no category, so no
/// rule here tells a kernel from the XLA op and module spans on the same device; read as a Kineto
/// trace it would be "no GPU work".
pub(crate) fn refuse_xla(file: &Path, devices: &DevicePids) -> Result<()> {
    let Some(process) = &devices.xla_process else {
        return Ok(());
    };
    Err(Error::Format {
        file: file.to_path_buf(),
        message: format!(
            "a trace of XLA's profiler (a process named `{process}`: JAX's `jax.profiler.trace` \
             `perfetto_trace.json.gz` or TensorBoard's `*.trace.json.gz`), which kl1 does not read: \
             its events have no category, so its kernels cannot be told from the XLA op spans; \
             capture the GPU with Nsight Systems (`nsys profile python …`) and give kl1 its SQLite \
             export"
        ),
    })
}

/// A GPU op of a foreign dialect, by its name: copies and fills are named `Memcpy …` / `Memset …` by
/// the nsys converters (the CUPTI names), everything else is a kernel.
pub(crate) fn foreign_gpu_kind(name: &str) -> GpuKind {
    let lower = name.trim_start().get(..6).map(str::to_ascii_lowercase);
    match lower.as_deref() {
        Some("memcpy") => GpuKind::Memcpy,
        Some("memset") => GpuKind::Memset,
        _ => GpuKind::Kernel,
    }
}

/// True for a category that says "GPU work" without being one a rule places: the events the summary
/// must not pass over in silence.
pub(crate) fn gpu_looking(cat: &str) -> bool {
    let c = cat.to_ascii_lowercase();
    // Kineto's own non-work categories on GPU tracks: a sync wait and the profiler's range marker.
    if matches!(c.as_str(), "cuda_sync" | "cuda_profiler_range") {
        return false;
    }
    [
        "gpu", "cuda", "kernel", "memcpy", "memset", "device", "hip", "rocm",
    ]
    .iter()
    .any(|w| c.contains(w))
}

/// The note for events of GPU-looking categories that no rule placed (`other`: complete events per
/// category the model did not keep), or `None` when there are none.
pub(crate) fn unplaced_note(other: &BTreeMap<String, u64>) -> Option<String> {
    let unplaced: Vec<String> = other
        .iter()
        .filter(|(cat, _)| gpu_looking(cat))
        .map(|(cat, n)| format!("{n} `{cat}`"))
        .collect();
    (!unplaced.is_empty()).then(|| {
        format!(
            "events of GPU-looking categories that no rule places, not counted as GPU work: {}",
            unplaced.join(", ")
        )
    })
}

/// The phases whose events both readers of Chrome-trace JSON (the Kineto parser's builder and the
/// Chrome-array reader) read for their times; with `M` (process names), every phase they read.
/// Events of any other phase (counters `C`, object snapshots `O`, async events `b`/`e`/`n`/`S`/`T`/`F`,
/// samples) are counted by phase only (an async begin of a GPU-looking category also under its
/// category, which a note of its own names).
pub(crate) const TIMED_PHASES: [&str; 8] = ["X", "B", "E", "s", "f", "t", "i", "I"];

/// A note counting the events of phases not read, per phase: without it, a file of only such events
/// (a Chrome snapshot, a counter track) reads as an empty trace with nothing said.
fn note_unread_phases(trace: &mut Trace) {
    let unread: Vec<String> = trace
        .counts
        .by_phase
        .iter()
        .filter(|(ph, _)| {
            // An event without `"ph"` (`(none)`) is warned of where it is read.
            !TIMED_PHASES.contains(&ph.as_str()) && !matches!(ph.as_str(), "M" | "(none)")
        })
        .map(|(ph, n)| match ph.as_str() {
            "" => format!("{n} `\"\"`"),
            ph => format!("{n} `{ph}`"),
        })
        .collect();
    if !unread.is_empty() {
        trace.capture.notes.push(format!(
            "events of phases not read (counted, not kept): {}",
            unread.join(", ")
        ));
    }
}

/// Says what no rule placed: a note when the file holds events of phases not read; a note when it
/// holds GPU-looking events the model did not keep; an error naming the file when such events are all
/// the GPU side it has (the user would otherwise be told "no GPU work").
pub(crate) fn check_unplaced(file: &Path, trace: &mut Trace) -> Result<()> {
    note_unread_phases(trace);
    let Some(note) = unplaced_note(&trace.counts.other_complete) else {
        return Ok(());
    };
    if trace.kernels.is_empty() && trace.memcpys.is_empty() && trace.memsets.is_empty() {
        return Err(Error::Format {
            file: file.to_path_buf(),
            message: format!(
                "no GPU work understood, yet the file has {note}; no reader rule knows this \
                 producer's events (see docs/native-formats.md for the dialects read)"
            ),
        });
    }
    trace.capture.notes.push(note);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_nest_per_track() {
        let mut d = OpenDurations::default();
        d.begin(Track(0), 10, "outer");
        d.begin(Track(0), 20, "inner");
        d.begin(Track(1), 15, "other thread");
        assert_eq!(d.end(Track(0)), Some((20, "inner")));
        assert_eq!(d.end(Track(0)), Some((10, "outer")));
        assert_eq!(d.end(Track(0)), None);
        assert_eq!(d.dangling().collect::<Vec<_>>(), vec![(15, "other thread")]);
    }

    #[test]
    fn devices_and_dialect_kinds() {
        assert_eq!(device_pid(&IdValue::Str("Device 3".into())), Some(3));
        assert_eq!(device_pid(&IdValue::Str("GPU1".into())), Some(1));
        assert_eq!(device_pid(&IdValue::Str("[7] Process".into())), None);
        assert_eq!(
            device_pid(&IdValue::Str("run1.sqlite Device 2".into())),
            Some(2)
        );
        // XLA's plane names and the legacy rocprof's barrier section are no such device name.
        assert_eq!(device_pid(&IdValue::Str("/device:GPU:0".into())), None);
        assert_eq!(device_pid(&IdValue::Str("GPU Barriers0".into())), None);
        assert_eq!(device_pid(&IdValue::Num(0)), None);
        let mut named = DevicePids::default();
        named.process_name(IdValue::Num(5), "Device 2");
        named.process_name(IdValue::Num(6), "python3");
        assert_eq!(named.device(&IdValue::Num(5)), Some(2));
        assert_eq!(named.device(&IdValue::Num(6)), None);
        assert_eq!(named.device(&IdValue::Str("GPU 4".into())), Some(4));
        assert_eq!(foreign_gpu_kind("Memcpy HtoD"), GpuKind::Memcpy);
        assert_eq!(foreign_gpu_kind("memset"), GpuKind::Memset);
        assert_eq!(foreign_gpu_kind("gemm"), GpuKind::Kernel);
        assert!(gpu_looking("cuda") && gpu_looking("GPU") && gpu_looking("mtia_gpu"));
        assert!(!gpu_looking("cuda_sync") && !gpu_looking("Trace") && !gpu_looking("nvtx"));
    }
}
