//! The phases beyond `X` and the flows: `B`/`E` duration events paired per thread
//! (`crate::trace_events::OpenDurations`), async `b` slices of GPU-looking categories counted, objects
//! without a `"ph"` skipped, and an array of no trace event at all refused by what it looks like.
//!
//! What it is not: what an event is once it has its times (`ArrayReader::complete`).

use super::args::Args;
use super::items::Flag;
use super::{ArrayReader, Ev, times};
use crate::error::{Error, Result};
use crate::model::Track;
use crate::trace_events::{self, DANGLING_END};

impl ArrayReader<'_> {
    /// An async slice's `b`: no GPU op (it has no device or stream), but one of a GPU-looking category
    /// is counted under it, for the note of what no rule places (`trace_events::unplaced_note`).
    pub(super) fn async_begin(
        &mut self,
        ev: &Ev<'_>,
        args: &Args<'_>,
        ev_err: &impl Fn(String) -> Error,
    ) -> Result<()> {
        let Some(cat) = ev.cat.as_deref().filter(|c| trace_events::gpu_looking(c)) else {
            return Ok(());
        };
        match times(ev, args, "b", self.rocprof, ev_err)? {
            Some(t) => self.b.other(cat, t.ts, t.ts).map_err(ev_err),
            None => Ok(()),
        }
    }

    /// An `E` event at `ts` on `track`: the latest open `B` there gets its duration; an `E` with none
    /// open, or one before its `B`, is skipped with a warning.
    pub(super) fn end_duration(&mut self, track: Track, ts: i64, start: u64) {
        match self.durations.end(track) {
            None => self.b.warn(start, DANGLING_END.into()),
            // Its item stays open, and is dropped with the dangling ones (no longer among the open
            // `B`s, it is not warned of again).
            Some((begin, _)) if ts < begin => {
                self.b
                    .warn(start, trace_events::ends_before_begin(begin, ts));
            }
            Some((begin, (_, item))) => {
                if let Some(mut it) = item.and_then(|i| self.items.edit(i)) {
                    it.set(Flag::Open, false);
                    it.end_after(ts - begin);
                }
            }
        }
    }

    /// A non-empty object without `"ph"` (`text`, at offset `start`): not a trace event (skipped, with a
    /// warning). `{}`, which rpd2tracing and the legacy rocprof open their arrays with, is no record at
    /// all.
    pub(super) fn without_phase(&mut self, start: u64, text: &[u8]) {
        let inside = text
            .get(1..text.len().saturating_sub(1))
            .unwrap_or_default();
        if inside.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.first_without_phase
            .get_or_insert_with(|| text.to_vec());
        self.b.warn(
            start,
            "an object without \"ph\" (the event phase every trace event has); skipped".into(),
        );
    }

    /// A file whose objects are none of them trace events is no trace: refused, saying what it looks
    /// like (Triton Proton's hatchet tree, or the keys of its first object).
    pub(super) fn check_is_trace(&self) -> Result<()> {
        let Some(first) = &self.first_without_phase else {
            return Ok(());
        };
        if self.with_phase > 0 {
            return Ok(());
        }
        let keys: Vec<String> =
            serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(first)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
        let has = |k: &str| keys.iter().any(|x| x == k);
        let message = if has("frame") && has("metrics") {
            "not a trace: a JSON array of call-tree nodes (`frame`, `metrics`, `children`), as Triton \
             Proton writes its profile (hatchet JSON); it holds totals per call path, no timeline. \
             Read it with `proton-viewer`, or profile with a tracer that writes a timeline (the PyTorch \
             profiler, Nsight Systems, rocprofv3)"
                .to_string()
        } else {
            format!(
                "not a trace: a JSON array of objects none of which is a trace event (an event has \
                 \"ph\", its phase); the first object's keys: {}",
                keys.join(", ")
            )
        };
        Err(Error::Format {
            file: self.file.to_path_buf(),
            message,
        })
    }

    /// `B` events that no `E` ended (or whose `E` came before them): skipped, each warned of once.
    pub(super) fn drop_dangling_begins(&mut self) {
        let durations = std::mem::take(&mut self.durations);
        let mut dangling: Vec<(i64, (u64, Option<usize>))> = durations.dangling().collect();
        dangling.sort_by_key(|&(_, (offset, _))| offset);
        for (ts, (offset, _)) in dangling {
            self.b.warn(offset, trace_events::dangling_begin(ts));
        }
        self.items.retain(|it| !it.is(Flag::Open));
    }
}
