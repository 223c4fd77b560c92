//! NVML's cumulative counters (energy, and time held down by each clock policy): the one rule every counter
//! read over a region follows.
//!
//! A counter only grows while the driver stays loaded, and it cannot grow faster than physics allows, so a
//! region's figure is the last reading minus the first only when every step between them is possible:
//!
//! - **backwards** (a reading below the one before: the counter was reset, the driver reloaded): the region
//!   has no figure, and the reason names the readings — a difference across a reset means nothing, and the
//!   power samples are not to blame for it;
//! - **impossible** (a step larger than the counter's fastest rate over the time between the readings, plus
//!   [`COUNTER_SLACK_S`]): that reading is left out and counted, as an impossible sample reading is; the figure is
//!   taken over the others.

use crate::sample::MAX_POWER_W;

/// Time added to the span of a step before judging it against the fastest rate: counter and host clock are
/// read at slightly different instants, and a reading is not instantaneous.
pub const COUNTER_SLACK_S: f64 = 1.0;

/// The energy counter's fastest rate: [`MAX_POWER_W`] in mJ per second.
pub(crate) const ENERGY_MJ_PER_S: f64 = MAX_POWER_W * 1000.0;

/// A violation-time counter's fastest rate: one second of throttling per second, in ns.
pub(crate) const VIOLATION_NS_PER_S: f64 = 1e9;

/// What a counter says over the region.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CounterRead {
    /// Last kept reading minus the first, with their times; `None` when there is none (fewer than two
    /// readings, or a reset).
    pub span: Option<Span>,
    /// Why there is no figure, when the readings were there but say nothing (a reset).
    pub reason: Option<String>,
    /// Readings left out because the step into them was impossible.
    pub impossible: usize,
}

/// The counter's increase between two readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    pub t0: f64,
    pub t1: f64,
    pub delta: u64,
}

/// Reads a counter from `(t_s, value)` readings in time order; `max_per_s` is its fastest possible rate.
pub(crate) fn read(readings: impl IntoIterator<Item = (f64, u64)>, max_per_s: f64) -> CounterRead {
    let mut first: Option<(f64, u64)> = None;
    let mut last: Option<(f64, u64)> = None;
    let mut impossible = 0;
    for (t, v) in readings {
        let Some((lt, lv)) = last else {
            first = Some((t, v));
            last = Some((t, v));
            continue;
        };
        if v < lv {
            return CounterRead {
                span: None,
                reason: Some(format!(
                    "the counter went backwards from {lv} at {lt:.3} s to {v} at {t:.3} s (reset: driver reloaded?)"
                )),
                impossible,
            };
        }
        let dt = (t - lt).max(0.0);
        if (v - lv) as f64 > max_per_s * (dt + COUNTER_SLACK_S) {
            impossible += 1;
            continue;
        }
        last = Some((t, v));
    }
    let span = match (first, last) {
        (Some((t0, v0)), Some((t1, v1))) if t1 > t0 => Some(Span {
            t0,
            t1,
            delta: v1 - v0,
        }),
        _ => None,
    };
    CounterRead {
        span,
        reason: None,
        impossible,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_counter_gives_last_minus_first() {
        let r = read(
            [(0.0, 1000), (1.0, 101_000), (2.0, 201_000)],
            ENERGY_MJ_PER_S,
        );
        assert_eq!(
            r.span,
            Some(Span {
                t0: 0.0,
                t1: 2.0,
                delta: 200_000
            })
        );
        assert_eq!((r.reason, r.impossible), (None, 0));
    }

    #[test]
    fn a_reset_gives_no_figure_and_says_so_even_when_the_last_reading_is_higher() {
        // 100 W for 2 s with a reset after 1 s: last − first would be 0.005 J.
        let r = read(
            [(0.0, 1000), (1.0, 101_000), (1.5, 5), (2.0, 1005)],
            ENERGY_MJ_PER_S,
        );
        assert_eq!(r.span, None);
        let why = r.reason.unwrap();
        assert!(
            why.contains("went backwards from 101000 at 1.000 s to 5 at 1.500 s"),
            "{why}"
        );
    }

    #[test]
    fn an_impossible_step_leaves_that_reading_out_and_is_counted() {
        // 2^63 mJ in a second is 9.2e15 W; 1.8e19 ns is 1.8e10 s of throttling in one second.
        let r = read([(0.0, 0), (0.5, 1 << 63), (1.0, 50_000)], ENERGY_MJ_PER_S);
        assert_eq!(r.impossible, 1);
        assert_eq!(r.span.map(|s| s.delta), Some(50_000));
        let r = read(
            [(0.0, 0), (1.0, 18_000_000_000_000_000_000)],
            VIOLATION_NS_PER_S,
        );
        assert_eq!((r.impossible, r.span), (1, None));
        // At the bound: 1 s of throttling per second, plus the slack, is possible.
        let r = read([(0.0, 0), (1.0, 2_000_000_000)], VIOLATION_NS_PER_S);
        assert_eq!(
            (r.impossible, r.span.map(|s| s.delta)),
            (0, Some(2_000_000_000))
        );
        let r = read([(0.0, 0), (1.0, 2_000_000_001)], VIOLATION_NS_PER_S);
        assert_eq!(r.impossible, 1);
    }
}
