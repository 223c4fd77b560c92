//! Every timestamp onto one clock, the trace clock: the first clock snapshot's `primary_trace_clock`,
//! else BOOTTIME (id 6, Perfetto's default). A packet's timestamp is in its `timestamp_clock_id`, else
//! its sequence's `TracePacketDefaults` clock, else the trace clock. Another clock is moved onto the
//! trace clock through the latest `ClockSnapshot` before the packet that read both (the first one for
//! packets before any): `trace = snap_trace + (t - snap_clock) × unit_multiplier_ns`. An incremental
//! clock (`is_incremental`, ids 64–127 are one sequence's own) counts from its previous value, the
//! snapshot's after a snapshot.
//!
//! What it is not: a clock-drift model (one offset per snapshot, as trace_processor's nearest
//! snapshot does).

use rustc_hash::FxHashMap;

/// `BuiltinClocks.BOOTTIME`.
pub const BOOTTIME: u32 = 6;

/// A clock's reading in a snapshot.
#[derive(Clone, Copy)]
struct Reading {
    at: u64,
    multiplier: u64,
    incremental: bool,
}

/// A clock: its id, scoped to its sequence when it is a sequence's own (ids 64–127).
type ClockKey = (u32, u32);

fn key(sequence: u32, clock: u32) -> ClockKey {
    if (64..=127).contains(&clock) {
        (sequence, clock)
    } else {
        (0, clock)
    }
}

pub struct Clocks {
    pub trace_clock: u32,
    /// Each clock's latest reading, with the trace clock's reading of the same snapshot.
    readings: FxHashMap<ClockKey, (Reading, u64)>,
    /// An incremental clock's last value.
    last: FxHashMap<ClockKey, u64>,
}

impl Clocks {
    /// The trace clock of `first` (the file's first snapshot), seeded with its readings.
    pub fn new(first: Option<(u32, &crate::proto::ClockSnapshot)>) -> Clocks {
        let trace_clock = first
            .and_then(|(_, s)| s.primary_trace_clock)
            .and_then(|c| u32::try_from(c).ok())
            .filter(|&c| c != 0)
            .unwrap_or(BOOTTIME);
        let mut clocks = Clocks {
            trace_clock,
            readings: FxHashMap::default(),
            last: FxHashMap::default(),
        };
        if let Some((sequence, snapshot)) = first {
            clocks.observe(sequence, snapshot);
        }
        clocks
    }

    /// A snapshot read on `sequence`: its clocks' readings replace earlier ones.
    pub fn observe(&mut self, sequence: u32, snapshot: &crate::proto::ClockSnapshot) {
        let trace_at = snapshot
            .clocks
            .iter()
            .find(|c| c.clock_id == Some(self.trace_clock))
            .and_then(|c| c.timestamp);
        let Some(trace_at) = trace_at else { return };
        for c in &snapshot.clocks {
            let (Some(id), Some(at)) = (c.clock_id, c.timestamp) else {
                continue;
            };
            let reading = Reading {
                at,
                multiplier: c.unit_multiplier_ns.unwrap_or(1).max(1),
                incremental: c.is_incremental.unwrap_or(false),
            };
            self.readings.insert(key(sequence, id), (reading, trace_at));
            self.last.remove(&key(sequence, id));
        }
    }

    /// `raw` on `clock` (of `sequence`), as ns of the trace clock.
    pub fn on_trace_clock(&mut self, sequence: u32, clock: u32, raw: u64) -> Result<i64, String> {
        if clock == self.trace_clock {
            return i64::try_from(raw).map_err(|_| format!("timestamp {raw} out of range"));
        }
        let k = key(sequence, clock);
        let Some(&(reading, trace_at)) = self.readings.get(&k) else {
            return Err(format!(
                "clock {clock} has no clock snapshot with the trace clock ({})",
                self.trace_clock
            ));
        };
        let value = if reading.incremental {
            let v = self
                .last
                .get(&k)
                .copied()
                .unwrap_or(reading.at)
                .wrapping_add(raw);
            self.last.insert(k, v);
            v
        } else {
            raw
        };
        let ns = i128::from(trace_at)
            + (i128::from(value) - i128::from(reading.at)) * i128::from(reading.multiplier);
        i64::try_from(ns).map_err(|_| format!("timestamp {raw} of clock {clock} out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Clock, ClockSnapshot};

    fn clock(id: u32, at: u64, multiplier: Option<u64>, incremental: bool) -> Clock {
        Clock {
            clock_id: Some(id),
            timestamp: Some(at),
            is_incremental: Some(incremental),
            unit_multiplier_ns: multiplier,
        }
    }

    #[test]
    fn clocks_move_onto_boottime_through_the_snapshot() {
        // BOOTTIME 1,000 = MONOTONIC 400 = clock 64 (µs, incremental) 7.
        let snap = ClockSnapshot {
            clocks: vec![
                clock(6, 1_000, None, false),
                clock(3, 400, None, false),
                clock(64, 7, Some(1_000), true),
            ],
            primary_trace_clock: None,
        };
        let mut c = Clocks::new(Some((1, &snap)));
        assert_eq!(c.trace_clock, BOOTTIME);
        assert_eq!(c.on_trace_clock(1, 6, 5), Ok(5));
        // MONOTONIC 450 is 50 ns after the snapshot: 1,050.
        assert_eq!(c.on_trace_clock(9, 3, 450), Ok(1_050));
        // Clock 64 of sequence 1: +2 µs then +3 µs from 7 → 9, 12 µs: 1,000 + 2,000 and + 5,000.
        assert_eq!(c.on_trace_clock(1, 64, 2), Ok(3_000));
        assert_eq!(c.on_trace_clock(1, 64, 3), Ok(6_000));
        // Another sequence's clock 64 has no snapshot.
        assert!(c.on_trace_clock(2, 64, 1).is_err());
        assert!(c.on_trace_clock(1, 1, 1).unwrap_err().contains("clock 1"));
    }
}
