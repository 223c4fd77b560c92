//! How much of the watched region the readings cover: what a verdict needs before it trusts a clock or power
//! figure ("no throttling seen" means nothing if the monitor died a third of the way in).
//!
//! The region is the monitor's life, start to stop, on the host's monotonic clock (`t_s` 0 to
//! `duration_s`). A GPU's region is cut by its readings into stretches: start → first reading, between
//! consecutive readings, last reading → stop. A stretch longer than the gap threshold
//! ([`GAP_FACTOR`] × the requested interval) leaves its excess uncovered:
//!
//! `covered_fraction = (region_s − Σ max(0, stretch − threshold)) / region_s`
//!
//! so a monitor that read on time from start to stop covers 1.0, and one that died at 40 % covers about 0.4;
//! a GPU without any reading covers 0.
//! For replayed readings the region is the recording's own span (first to last reading of any GPU), since the
//! watched region is not known.

use serde::Serialize;

use crate::backend::{SourceEnd, Timestamps};

/// A gap is an interval between consecutive readings of a GPU longer than this many times the requested one.
pub const GAP_FACTOR: f64 = 2.0;

/// How much of the watched region one GPU's readings (or, at the top of a summary, the worst GPU's) cover.
/// All times are seconds from the start of the region (MEASURED on the host clock, except for replay).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Length of the watched region, s.
    pub region_s: f64,
    /// The largest stretch without a reading that still counts as covered, s.
    pub gap_threshold_s: f64,
    /// Time of the first reading (of the GPU; at the top: the latest first reading over GPUs), s.
    pub first_sample_s: Option<f64>,
    /// Time of the last reading (at the top: the earliest last reading over GPUs), s.
    pub last_sample_s: Option<f64>,
    /// The longest stretch of the region without a reading, the region's start and end included, s.
    pub longest_gap_s: Option<f64>,
    /// See the module formula; `None` when the region has no length.
    pub covered_fraction: Option<f64>,
    /// When the source ended by itself before the stop (died, replay ran out), s; `None` if it ran to the stop.
    pub source_ended_s: Option<f64>,
    /// Whether readings stopped arriving before the end of the region (a hung or dead source).
    pub stalled: bool,
    /// Why the coverage is not whole: the source's death, a stall, no readings; `None` when covered.
    pub problem: Option<String>,
}

impl Coverage {
    /// A placeholder filled in once the region is known.
    pub(crate) fn empty() -> Coverage {
        Coverage {
            region_s: 0.0,
            gap_threshold_s: 0.0,
            first_sample_s: None,
            last_sample_s: None,
            longest_gap_s: None,
            covered_fraction: None,
            source_ended_s: None,
            stalled: false,
            problem: None,
        }
    }
}

/// What coverage needs to know about the run, besides the readings' times.
pub(crate) struct Region<'a> {
    pub duration_s: f64,
    pub interval_ms: u64,
    pub timestamps: Option<Timestamps>,
    pub end: &'a SourceEnd,
    pub source_ended_s: Option<f64>,
}

impl Region<'_> {
    fn replayed(&self) -> bool {
        matches!(
            self.timestamps,
            Some(Timestamps::Recorded | Timestamps::Synthesised)
        )
    }

    fn threshold_s(&self) -> f64 {
        GAP_FACTOR * self.interval_ms as f64 / 1000.0
    }

    /// `(start, end)` of the region in `t_s` terms; `all_times` are every reading's time, all GPUs.
    fn bounds(&self, all_times: impl Iterator<Item = f64>) -> (f64, f64) {
        if self.replayed() {
            let (lo, hi) = all_times.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
                (lo.min(t), hi.max(t))
            });
            if lo <= hi { (lo, hi) } else { (0.0, 0.0) }
        } else {
            (0.0, self.duration_s.max(0.0))
        }
    }

    fn death(&self) -> Option<String> {
        match self.end {
            SourceEnd::Died { detail } => Some(format!("the source died: {detail}")),
            SourceEnd::Lost { detail } => Some(format!("the monitor lost its source: {detail}")),
            SourceEnd::NoBackend => Some("no backend: nothing was read".to_owned()),
            SourceEnd::Stopped | SourceEnd::Exhausted => None,
        }
    }
}

/// The coverage of one GPU whose readings are at `times` (sorted ascending); `all` are every GPU's times.
pub(crate) fn of_gpu(times: &[f64], all: &[f64], r: &Region<'_>) -> Coverage {
    let (start, end) = r.bounds(all.iter().copied());
    let region_s = end - start;
    let threshold = r.threshold_s();
    let mut edges = Vec::with_capacity(times.len() + 2);
    edges.push(start);
    edges.extend(times.iter().map(|t| t.clamp(start, end)));
    edges.push(end);
    let stretches: Vec<f64> = edges.windows(2).map(|w| (w[1] - w[0]).max(0.0)).collect();
    let mut uncovered: f64 = stretches.iter().map(|s| (s - threshold).max(0.0)).sum();
    let tail = times.last().map_or(region_s, |&t| end - t);
    let source_ended_s = r.source_ended_s.filter(|_| !r.replayed());
    // A source that ended before the stop covers nothing after its end, however long the grace: the tail
    // after the last reading is covered only up to the end of the source.
    if let (Some(ended), Some(&last), Some(&tail_stretch)) =
        (source_ended_s, times.last(), stretches.last())
        && r.death().is_some()
    {
        let grace = threshold.min((ended - last.clamp(start, end)).max(0.0));
        uncovered += (tail_stretch - grace).max(0.0) - (tail_stretch - threshold).max(0.0);
    }
    let stalled = !r.replayed() && !times.is_empty() && tail > threshold;
    let problem = r.death().or_else(|| {
        if times.is_empty() {
            Some("no reading of this GPU".to_owned())
        } else if stalled {
            Some(format!(
                "no reading in the last {tail:.3} s of the region (gap threshold {threshold:.3} s): the source stalled"
            ))
        } else {
            None
        }
    });
    Coverage {
        region_s,
        gap_threshold_s: threshold,
        first_sample_s: times.first().copied(),
        last_sample_s: times.last().copied(),
        longest_gap_s: stretches.iter().copied().reduce(f64::max),
        // Without a reading nothing is covered, however short the region.
        covered_fraction: (region_s > 0.0).then(|| {
            if times.is_empty() {
                0.0
            } else {
                ((region_s - uncovered) / region_s).clamp(0.0, 1.0)
            }
        }),
        source_ended_s,
        stalled,
        problem,
    }
}

/// The worst of the per-GPU coverages: the latest first reading, the earliest last one, the longest gap, the
/// smallest fraction. With no GPU at all, an empty coverage of the region.
pub(crate) fn worst(per_gpu: &[Coverage], r: &Region<'_>) -> Coverage {
    let Some(first) = per_gpu.first() else {
        return of_gpu(&[], &[], r);
    };
    let mut w = first.clone();
    for c in &per_gpu[1..] {
        w.first_sample_s = max_opt(w.first_sample_s, c.first_sample_s, true);
        w.last_sample_s = max_opt(w.last_sample_s, c.last_sample_s, false);
        w.longest_gap_s = max_opt(w.longest_gap_s, c.longest_gap_s, true);
        w.covered_fraction = max_opt(w.covered_fraction, c.covered_fraction, false);
        w.stalled |= c.stalled;
        if w.problem.is_none() {
            w.problem.clone_from(&c.problem);
        }
    }
    // A GPU without readings makes the first/last "worst" unknown rather than the other GPUs' values.
    if per_gpu.iter().any(|c| c.first_sample_s.is_none()) {
        w.first_sample_s = None;
        w.last_sample_s = None;
    }
    w
}

/// `max` (or `min` when `!largest`) of two options; a `None` loses.
fn max_opt(a: Option<f64>, b: Option<f64>, largest: bool) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if largest { x.max(y) } else { x.min(y) }),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(end: &SourceEnd, duration_s: f64, ended: Option<f64>) -> Region<'_> {
        Region {
            duration_s,
            interval_ms: 100,
            timestamps: Some(Timestamps::HostSampled),
            end,
            source_ended_s: ended,
        }
    }

    #[test]
    fn on_time_readings_cover_the_whole_region() {
        let end = SourceEnd::Stopped;
        // 0.05, 0.15, …, 2.95 s over a 3 s region at 100 ms: every stretch ≤ 0.1 s < threshold 0.2 s.
        let times: Vec<f64> = (0..30).map(|k| 0.05 + 0.1 * k as f64).collect();
        let c = of_gpu(&times, &times, &region(&end, 3.0, None));
        assert_eq!(c.covered_fraction, Some(1.0));
        assert!(!c.stalled);
        assert_eq!(c.problem, None);
        assert!((c.longest_gap_s.unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_source_dying_at_1_2_s_of_3_s_covers_0_4_plus_the_grace() {
        let detail = "nvidia-smi ended by itself".to_owned();
        let end = SourceEnd::Died { detail };
        // Readings at 0.1 … 1.2 s, then nothing until the stop at 3.0 s.
        let times: Vec<f64> = (1..=12).map(|k| 0.1 * k as f64).collect();
        let c = of_gpu(&times, &times, &region(&end, 3.0, Some(1.25)));
        // Tail stretch 3.0 − 1.2 = 1.8 s. The grace is the threshold (0.2 s) but no more than the source lived
        // after its last reading (1.25 − 1.2 = 0.05 s): uncovered 1.8 − 0.05 = 1.75 s; fraction (3 − 1.75) / 3.
        let expected = (3.0 - (1.8 - 0.05)) / 3.0;
        assert!(
            (c.covered_fraction.unwrap() - expected).abs() < 1e-9,
            "{c:?}"
        );
        assert!(c.stalled);
        assert_eq!(c.source_ended_s, Some(1.25));
        assert!(c.problem.unwrap().contains("died"));
        assert!((c.longest_gap_s.unwrap() - 1.8).abs() < 1e-9);
    }

    #[test]
    fn a_huge_grace_never_covers_time_after_the_source_died() {
        // One reading at 0.1 s, the source dead at 0.13 s of a 10 s region, a threshold of two minutes: before,
        // the grace covered the whole region (1.0).
        let detail = "nvidia-smi ended by itself".to_owned();
        let end = SourceEnd::Died { detail };
        let mut r = region(&end, 10.0, Some(0.13));
        r.interval_ms = 60_000;
        let c = of_gpu(&[0.1], &[0.1], &r);
        // Covered: 0 … 0.1 (the start stretch, within the grace) and 0.1 … 0.13: 0.13 s of 10.
        assert!((c.covered_fraction.unwrap() - 0.013).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn no_readings_cover_nothing_and_the_worst_gpu_decides() {
        let end = SourceEnd::Stopped;
        let r = region(&end, 2.0, None);
        let none = of_gpu(&[], &[], &r);
        assert_eq!(none.covered_fraction, Some(0.0));
        assert_eq!(none.longest_gap_s, Some(2.0));
        let times: Vec<f64> = (0..20).map(|k| 0.1 * k as f64).collect();
        let full = of_gpu(&times, &times, &r);
        let w = worst(&[full, none], &r);
        assert_eq!(w.covered_fraction, Some(0.0));
        assert_eq!(w.first_sample_s, None);
        assert!(w.problem.unwrap().contains("no reading"));
    }

    #[test]
    fn replay_uses_the_recordings_own_span() {
        let end = SourceEnd::Exhausted;
        let r = Region {
            duration_s: 0.001,
            interval_ms: 100,
            timestamps: Some(Timestamps::Recorded),
            end: &end,
            source_ended_s: Some(0.001),
        };
        let times = [10.0, 10.1, 10.2, 10.8];
        let c = of_gpu(&times, &times, &r);
        assert!((c.region_s - 0.8).abs() < 1e-9);
        // One stretch of 0.6 s: 0.4 s uncovered of 0.8 s.
        assert!((c.covered_fraction.unwrap() - 0.5).abs() < 1e-9);
        assert!(!c.stalled);
        assert_eq!(c.source_ended_s, None);
    }
}
