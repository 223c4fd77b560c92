//! How much of the timed region the GPU monitor actually watched: the gate in front of every check that reads
//! the monitor's samples (`throttled`, the GPU processes seen during the run, and the clocks and power that
//! `provenance diff` compares).
//!
//! A monitor that died, stalled or started late leaves part of the region unwatched; what happened there is
//! unknown, so a check that found nothing in the watched part is reported as not made, never as passed.
//! Evidence found in the watched part still raises its flag.
//!
//! Computed here from what the monitor's capture already holds (how the source ended, the region's length, each
//! sample's time and GPU); this is the one place to switch when the monitor reports coverage itself.

use serde::Serialize;

use gpu_monitor::{Capture, GAP_FACTOR, SourceEnd, Timestamps};

/// The share of the timed region each GPU's readings must cover for the checks that depend on them.
///
/// A point of the region counts as covered unless it lies in a stretch without readings longer than
/// [`GAP_FACTOR`] × the requested interval (the monitor's own definition of a gap); such a stretch counts as
/// uncovered beyond that allowance. The region's start and end bound the first and last stretch, so a monitor
/// that starts late or dies early loses that time. 0.9: a run whose monitor missed more than a tenth of it
/// cannot be said to have been watched, and one slow start of `nvidia-smi` (about half a second) in a run of
/// several seconds stays inside it.
pub const MIN_COVERAGE_FRACTION: f64 = 0.9;

/// Coverage of the timed region by one GPU's readings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuCoverage {
    /// The GPU's index.
    pub index: u32,
    /// Its readings in the region.
    pub samples: usize,
    /// Time of its first reading, seconds after the monitor started.
    pub first_s: Option<f64>,
    /// Time of its last reading.
    pub last_s: Option<f64>,
    /// The longest stretch without a reading (from the region's start, between readings, or to its end), s.
    pub longest_gap_s: f64,
    /// Share of the region covered (see [`MIN_COVERAGE_FRACTION`]), 0–1.
    pub fraction: f64,
}

/// How much of the timed region the GPU monitor watched, and whether that is enough to judge by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// The region the monitor ran over, s (its start to its stop).
    pub region_s: f64,
    /// [`MIN_COVERAGE_FRACTION`].
    pub min_fraction: f64,
    /// A stretch without readings longer than this is a gap, s ([`GAP_FACTOR`] × the requested interval).
    pub gap_threshold_s: f64,
    /// How the monitor's source ended: `stopped` (as asked), `died`, `lost`, `no_backend`, `exhausted`.
    pub monitor_end: String,
    /// Per GPU monitored.
    pub gpus: Vec<GpuCoverage>,
    /// Whether the monitor's samples may be judged by: it did not die and every GPU is covered enough. `true`
    /// also when there is nothing to judge (no backend, replayed samples): the checks then say why themselves.
    pub sufficient: bool,
    /// Why not, in words with the numbers; `null` when sufficient.
    pub reason: Option<String>,
}

impl Coverage {
    /// The reason the monitor's samples cannot be judged by, if they cannot.
    ///
    /// ```
    /// let record = provenance::Provenance::new().start().finish();
    /// if record.coverage.sufficient {
    ///     assert_eq!(record.coverage.insufficient(), None);
    /// }
    /// ```
    pub fn insufficient(&self) -> Option<&str> {
        if self.sufficient {
            None
        } else {
            self.reason.as_deref()
        }
    }
}

fn end_name(end: &SourceEnd) -> &'static str {
    match end {
        SourceEnd::Stopped => "stopped",
        SourceEnd::Exhausted => "exhausted",
        SourceEnd::Died { .. } => "died",
        SourceEnd::NoBackend => "no_backend",
        SourceEnd::Lost { .. } => "lost",
    }
}

fn round_ms(s: f64) -> f64 {
    let r = (s * 1000.0).round() / 1000.0;
    if r == 0.0 { 0.0 } else { r }
}

/// The coverage of `capture`'s region by its samples.
pub(crate) fn of(capture: &Capture) -> Coverage {
    let region = capture.duration_s.max(0.0);
    let threshold = GAP_FACTOR * capture.interval_ms as f64 / 1000.0;
    let mut gpus = Vec::new();
    for g in &capture.gpus {
        let mut times: Vec<f64> = capture
            .samples
            .iter()
            .filter(|s| s.index == g.index && s.t_s.is_finite())
            .map(|s| s.t_s.clamp(0.0, region))
            .collect();
        times.sort_by(f64::total_cmp);
        let mut points = Vec::with_capacity(times.len() + 2);
        points.push(0.0);
        points.extend(&times);
        points.push(region);
        let mut uncovered = 0.0;
        let mut longest: f64 = 0.0;
        for w in points.windows(2) {
            let d = w[1] - w[0];
            longest = longest.max(d);
            uncovered += (d - threshold).max(0.0);
        }
        let fraction = if region > 0.0 {
            (1.0 - uncovered / region).clamp(0.0, 1.0)
        } else {
            1.0
        };
        gpus.push(GpuCoverage {
            index: g.index,
            samples: times.len(),
            first_s: times.first().copied().map(round_ms),
            last_s: times.last().copied().map(round_ms),
            longest_gap_s: round_ms(longest),
            fraction: (fraction * 1000.0).round() / 1000.0,
        });
    }

    let mut reasons = Vec::new();
    let replayed = matches!(
        capture.timestamps,
        Some(Timestamps::Recorded | Timestamps::Synthesised)
    );
    match &capture.end {
        SourceEnd::Died { detail } | SourceEnd::Lost { detail } => {
            let last = gpus
                .iter()
                .filter_map(|g| g.last_s)
                .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
            let when = match last {
                Some(t) => format!("its last reading at {t:.1} s of a {region:.1} s region"),
                None => format!("no reading in a {region:.1} s region"),
            };
            reasons.push(format!(
                "the GPU monitor {} before the end ({when}): {detail}",
                end_name(&capture.end)
            ));
        }
        SourceEnd::Stopped | SourceEnd::Exhausted | SourceEnd::NoBackend => {}
    }
    if capture.backend.is_some() && !replayed {
        let thin: Vec<String> = gpus
            .iter()
            .filter(|g| g.fraction < MIN_COVERAGE_FRACTION)
            .map(|g| {
                format!(
                    "GPU {} readings cover {:.0} % of the {region:.1} s region (longest stretch without one {:.1} s)",
                    g.index,
                    g.fraction * 100.0,
                    g.longest_gap_s
                )
            })
            .collect();
        if !thin.is_empty() {
            reasons.push(format!(
                "{}; at least {:.0} % is needed",
                thin.join(", "),
                MIN_COVERAGE_FRACTION * 100.0
            ));
        }
    }
    Coverage {
        region_s: round_ms(region),
        min_fraction: MIN_COVERAGE_FRACTION,
        gap_threshold_s: round_ms(threshold),
        monitor_end: end_name(&capture.end).to_owned(),
        gpus,
        sufficient: reasons.is_empty(),
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_monitor::{BackendKind, Sample};

    /// A capture of GPU 0 over `region` s at `interval_ms`, with readings at `times`.
    fn capture(region: f64, interval_ms: u64, times: &[f64], end: SourceEnd) -> Capture {
        let samples = times.iter().map(|&t| Sample::empty(t, 0)).collect();
        let mut c = Capture::from_samples(interval_ms, Timestamps::HostReceived, samples);
        c.timestamps = Some(Timestamps::HostReceived);
        c.backend = Some(BackendKind::NvidiaSmi);
        c.duration_s = region;
        c.end = end;
        if c.gpus.is_empty() {
            c.gpus.push(gpu_monitor::GpuRef {
                index: 0,
                uuid: None,
            });
        }
        c
    }

    #[test]
    fn a_monitor_that_dies_early_covers_only_what_it_watched() {
        // Readings every 0.05 s from 0.05 to 1.2 s, then nothing until 3.0 s: the last stretch is 1.8 s, of
        // which 1.8 − 2 × 0.05 = 1.7 s is uncovered; 1 − 1.7 / 3.0 = 0.433.
        let times: Vec<f64> = (1..=24).map(|k| k as f64 * 0.05).collect();
        let died = SourceEnd::Died {
            detail: "nvidia-smi exited with status 3".to_owned(),
        };
        let c = of(&capture(3.0, 50, &times, died));
        assert_eq!(c.gpus[0].fraction, 0.433);
        assert_eq!(c.gpus[0].longest_gap_s, 1.8);
        assert!(!c.sufficient);
        let why = c.insufficient().expect("reason");
        assert!(why.contains("died before the end"), "{why}");
        assert!(
            why.contains("last reading at 1.2 s of a 3.0 s region"),
            "{why}"
        );
        assert!(why.contains("GPU 0 readings cover 43 %"), "{why}");
    }

    #[test]
    fn a_stalled_monitor_is_insufficient_even_if_it_ends_as_asked() {
        // Readings up to 1 s and one at 9.9 s in a 10 s region: the stall of 8.9 s loses 8.9 − 1.0 = 7.9 s.
        let mut times: Vec<f64> = (1..=2).map(|k| k as f64 * 0.5).collect();
        times.push(9.9);
        let c = of(&capture(10.0, 500, &times, SourceEnd::Stopped));
        assert_eq!(c.gpus[0].fraction, 0.21);
        assert!(!c.sufficient);
    }

    #[test]
    fn steady_readings_and_a_short_start_delay_are_sufficient() {
        // First reading at 0.3 s (under the 1 s allowance at 500 ms), then every 0.5 s to 9.8 s, end at 10 s.
        let times: Vec<f64> = (0..20).map(|k| 0.3 + k as f64 * 0.5).collect();
        let c = of(&capture(10.0, 500, &times, SourceEnd::Stopped));
        assert_eq!(c.gpus[0].fraction, 1.0);
        assert!(c.sufficient && c.reason.is_none());
        // Exactly at the threshold: 90 % passes. 10 s, readings every 0.1 s until 8.2 s: tail 1.8 s − 0.2 s = 1.6 s
        // uncovered would be 84 %; until 9.2 s: 0.8 − 0.2 = 0.6 s, 94 %.
        let times: Vec<f64> = (1..=92).map(|k| k as f64 * 0.1).collect();
        let c = of(&capture(10.0, 100, &times, SourceEnd::Stopped));
        assert_eq!(c.gpus[0].fraction, 0.94);
        assert!(c.sufficient);
    }
}
