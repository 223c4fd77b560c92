//! The host during the timed region: load average and CPU busy %, sampled on a thread of their own, so that a
//! load spike in the middle of a run shows even when the load before and after looks quiet.
//!
//! Written under `during` beside the GPU monitor's summary: `during.host` and, under the key the Python tool
//! used, `during.wsl_loadavg_1m {min, max}` (the one-minute load average, on any Linux, not only WSL).

use serde::Serialize;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::Probe;
use crate::host::loadavg;

/// How often the host is sampled during the region: the GPU monitor's interval, within these bounds (CPU busy %
/// needs at least sysinfo's minimum update interval between readings; more than a second would miss spikes).
const MIN_INTERVAL: Duration = Duration::from_millis(250);
const MAX_INTERVAL: Duration = Duration::from_secs(1);

/// Smallest, median and largest of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Largest.
    pub max: f64,
    /// Readings.
    pub n: usize,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median: round2(median),
            max: v[n - 1],
            n,
        })
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The one-minute load average's range over the region (the Python tool's `during.wsl_loadavg_1m`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MinMax {
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

/// The host over the timed region, MEASURED.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostDuring {
    /// Time between readings, ms.
    pub interval_ms: u64,
    /// The one-minute load average at each reading (it moves slowly: a spike shows as a rise of its max).
    pub loadavg_1m: Probe<Spread>,
    /// Share of all CPUs' time spent busy (not idle or waiting for I/O) between consecutive readings, %.
    pub cpu_busy_percent: Probe<Spread>,
}

impl HostDuring {
    /// `during.wsl_loadavg_1m`: the load's `{min, max}`.
    ///
    /// ```
    /// let record = provenance::Provenance::new().start().finish();
    /// if let Some(m) = record.host_during.wsl_loadavg_1m().value() {
    ///     assert!(m.min <= m.max);
    /// }
    /// ```
    pub fn wsl_loadavg_1m(&self) -> Probe<MinMax> {
        self.loadavg_1m.clone().map(|s| MinMax {
            min: s.min,
            max: s.max,
        })
    }
}

/// A sampling thread; [`HostSampler::stop`] takes a last reading and summarises.
pub(crate) struct HostSampler {
    stop: mpsc::Sender<()>,
    thread: Option<thread::JoinHandle<HostDuring>>,
    interval: Duration,
}

impl HostSampler {
    pub fn start(gpu_interval_ms: u64) -> HostSampler {
        let interval = Duration::from_millis(gpu_interval_ms).clamp(MIN_INTERVAL, MAX_INTERVAL);
        let (stop, rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("provenance-host".to_owned())
            .spawn(move || sample(interval, &rx))
            .ok();
        HostSampler {
            stop,
            thread,
            interval,
        }
    }

    pub fn stop(mut self) -> HostDuring {
        let _ = self.stop.send(());
        let why = "the host sampling thread could not be started or failed";
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_else(|| HostDuring {
                interval_ms: self.interval.as_millis() as u64,
                loadavg_1m: Probe::unavailable(why),
                cpu_busy_percent: Probe::unavailable(why),
            })
    }
}

fn sample(interval: Duration, stop: &mpsc::Receiver<()>) -> HostDuring {
    let mut loads = Vec::new();
    let mut load_err = None;
    match loadavg() {
        Probe::Value(l) => loads.push(l.one),
        Probe::Unavailable(why) => load_err = Some(why),
    }
    let mut busy = Vec::new();
    let kind =
        sysinfo::RefreshKind::nothing().with_cpu(sysinfo::CpuRefreshKind::nothing().with_usage());
    let mut sys = sysinfo::System::new_with_specifics(kind).map_err(|e| e.to_string());
    // Creating the System read the CPU counters once: the first busy % is measured from here.
    let mut last_cpu = Instant::now();
    let mut read = |final_reading: bool| {
        match loadavg() {
            Probe::Value(l) => loads.push(l.one),
            Probe::Unavailable(why) => load_err = Some(why),
        }
        if let Ok(s) = &mut sys
            && (!final_reading || last_cpu.elapsed() >= sysinfo::MINIMUM_CPU_UPDATE_INTERVAL)
        {
            s.refresh_cpu_usage();
            last_cpu = Instant::now();
            busy.push(f64::from(s.global_cpu_usage()));
        }
    };
    loop {
        match stop.recv_timeout(interval) {
            Err(mpsc::RecvTimeoutError::Timeout) => read(false),
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                read(true);
                break;
            }
        }
    }
    let loadavg_1m = match Spread::of(&loads) {
        Some(s) => Probe::Value(s),
        None => Probe::unavailable(load_err.unwrap_or_else(|| "no reading".to_owned())),
    };
    let cpu_busy_percent = match (&sys, Spread::of(&busy)) {
        (_, Some(s)) => Probe::Value(Spread {
            min: round2(s.min),
            max: round2(s.max),
            ..s
        }),
        (Err(e), None) => Probe::unavailable(format!("sysinfo: {e}")),
        (Ok(_), None) => Probe::unavailable(format!(
            "the region was shorter than the {} ms two CPU readings need",
            sysinfo::MINIMUM_CPU_UPDATE_INTERVAL.as_millis()
        )),
    };
    HostDuring {
        interval_ms: interval.as_millis() as u64,
        loadavg_1m,
        cpu_busy_percent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_an_even_count_takes_the_mean_of_the_middle_two() {
        // Sorted: 1, 2, 4, 9 → median (2 + 4) / 2 = 3.
        let s = Spread::of(&[4.0, 1.0, 9.0, 2.0]).expect("values");
        assert_eq!((s.min, s.median, s.max, s.n), (1.0, 3.0, 9.0, 4));
        assert_eq!(Spread::of(&[f64::NAN]), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_region_of_a_second_has_load_and_cpu_readings() {
        let s = HostSampler::start(250);
        std::thread::sleep(Duration::from_millis(1100));
        let d = s.stop();
        let load = d.loadavg_1m.value().expect("load");
        // Readings at 0 and every 250 ms until the stop at 1.1 s, plus the last: at least 4 on a loaded box.
        assert!(load.n >= 4, "{d:?}");
        let busy = d.cpu_busy_percent.value().expect("busy");
        assert!(busy.n >= 3 && busy.min >= 0.0 && busy.max <= 100.0, "{d:?}");
        assert_eq!(d.wsl_loadavg_1m().value().map(|m| m.max), Some(load.max));
    }
}
