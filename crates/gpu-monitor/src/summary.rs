//! From a [`Recording`] to the numbers people read: the [`MonitorSummary`].
//!
//! Key names follow the seed tool (`n_samples`, `clocks.sm` `{min, median, max}`, `clocks.sm_busy`,
//! `throttle_reasons_seen`, `pstates_seen`) inside each per-GPU object, so a script that read the seed's dict
//! reads `gpus[i]` of ours. Every number is derived from finite MEASURED values; an empty input gives `null`,
//! never NaN or infinity.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use statrs::statistics::{Data, Max, Min, OrderStatistics};

use crate::backend::{BackendKind, FieldNote, Rejection, SourceEnd, Timestamps};
use crate::counter;
use crate::coverage::{self, Coverage, GAP_FACTOR, Region};
use crate::monitor::Recording;
use crate::sample::{GpuProcess, Sample, ViolationTimes};
use crate::throttle::decode_throttle;

/// Utilisation (%) at or above which a sample counts as busy for `clocks.sm_busy`, the seed's threshold: idle
/// stretches (start-up, host-side work) drag the SM clock's minimum down; this is the clock while working.
pub const BUSY_UTIL_PERCENT: f64 = 10.0;

/// Largest relative difference between the energy counter's average power and the integrated `power.draw`
/// samples' that still counts as agreement. `power.draw` is the driver's own short average and is read only
/// at the sample instants, so bursts between readings are missed or smeared; 10 % is the disagreement beyond
/// which the power samples should not be trusted to describe the region.
pub const ENERGY_TOLERANCE: f64 = 0.10;

/// The cross-check needs at least this long a span …
const ENERGY_MIN_SPAN_S: f64 = 1.0;
/// … and at least this many power readings in it.
const ENERGY_MIN_POWER_SAMPLES: usize = 3;

/// Min, median and max of one field (median of an even count: mean of the middle two, as the seed's
/// `statistics.median`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

/// The SM clock over busy samples only, with how many there were.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BusyStat {
    /// Smallest.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest.
    pub max: f64,
    /// Number of busy samples with an SM clock.
    pub n: usize,
}

/// Time the clocks were held down by each NVML policy over the region (last minus first counter reading), s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThrottleTime {
    /// Seconds between the first and last reading carrying counters.
    pub span_s: f64,
    /// Power capping.
    pub power: Option<f64>,
    /// Thermal capping.
    pub thermal: Option<f64>,
    /// Sync boost.
    pub sync_boost: Option<f64>,
    /// Board limit.
    pub board_limit: Option<f64>,
    /// Low utilisation.
    pub low_utilization: Option<f64>,
    /// Board reliability limit.
    pub reliability: Option<f64>,
    /// Policy → why its time is `null` though counters were read (the counter went backwards); see
    /// `counter.rs`. Absent when empty.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, String>,
}

/// Energy over the region, from the counter and from the power samples, and whether they agree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergyCheck {
    /// Seconds between the first and last reading of the energy counter.
    pub counter_span_s: Option<f64>,
    /// Energy by the counter over that span, J.
    pub counter_j: Option<f64>,
    /// `counter_j / counter_span_s`, W.
    pub counter_avg_power_w: Option<f64>,
    /// Seconds covered by the power readings integrated (inside the counter's span when there is one).
    pub power_span_s: Option<f64>,
    /// Trapezoidal integral of `power.draw` over that span, J.
    pub integrated_power_j: Option<f64>,
    /// `integrated_power_j / power_span_s`, W.
    pub integrated_avg_power_w: Option<f64>,
    /// `(integrated_avg_power_w − counter_avg_power_w) / counter_avg_power_w`.
    pub relative_difference: Option<f64>,
    /// [`ENERGY_TOLERANCE`].
    pub tolerance: f64,
    /// `|relative_difference| ≤ tolerance`; `null` where the check could not be made (see `note`).
    pub agrees: Option<bool>,
    /// Why the check was not made, or what it found.
    pub note: Option<String>,
}

/// Requested against achieved interval for one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalStats {
    /// As configured.
    pub requested_ms: u64,
    /// Min / median / max of the time between consecutive readings.
    pub achieved_ms: Option<Stat>,
    /// Span over (readings − 1).
    pub mean_ms: Option<f64>,
    /// Gaps: intervals longer than `threshold_ms`.
    pub gaps: GapStats,
    /// Why the intervals are absent or meaningless.
    pub note: Option<String>,
}

/// Intervals longer than [`GAP_FACTOR`] × requested.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapStats {
    /// [`GAP_FACTOR`] × requested, ms.
    pub threshold_ms: f64,
    /// How many.
    pub n: usize,
    /// The longest, ms.
    pub longest_ms: Option<f64>,
    /// Sum of their lengths, ms.
    pub total_ms: f64,
}

/// The monitor's own cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonitorCost {
    /// How it is measured.
    pub method: &'static str,
    /// CPU seconds of the sampling thread.
    pub sampling_thread_s: Option<f64>,
    /// Of the sampling thread, µs per sample (one GPU reading).
    pub per_sample_us: Option<f64>,
    /// Of the sampling thread, as a fraction of one core over the run.
    pub fraction_of_one_core: Option<f64>,
    /// CPU seconds of the `nvidia-smi` child.
    pub child_process_s: Option<f64>,
    /// Of the child, as a fraction of one core over the run.
    pub child_fraction_of_one_core: Option<f64>,
}

/// Everything a person or a script reads about a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonitorSummary {
    /// Samples over all GPUs.
    pub n_samples: usize,
    /// As asked.
    pub requested_backend: String,
    /// As used.
    pub backend: Option<BackendKind>,
    /// Backends not used, with reasons.
    pub rejected: Vec<Rejection>,
    /// What the sample times mean.
    pub timestamps: Option<Timestamps>,
    /// Start to stop, s (MEASURED).
    pub duration_s: f64,
    /// Only every `kept_every`-th reading of each GPU was kept in memory and summarised (1: all); see
    /// `counters.samples_thinned`.
    pub kept_every: u64,
    /// How the source ended.
    pub end: SourceEnd,
    /// How much of the watched region the readings cover, for the worst GPU.
    pub coverage: Coverage,
    /// The monitor's own CPU cost.
    pub monitor_cpu: MonitorCost,
    /// The capture's counters.
    pub counters: BTreeMap<String, u64>,
    /// The capture's warnings.
    pub warnings: Vec<String>,
    /// Fields that could not be read, with reasons.
    pub unavailable_fields: Vec<FieldNote>,
    /// The seed's keys, pooled over all GPUs (flattened into the top level when serialised).
    #[serde(flatten)]
    pub all_gpus: FieldStats,
    /// One per GPU, in index order.
    pub gpus: Vec<GpuSummary>,
}

/// The seed's summary fields, pooled over every sample of every GPU — what the seed computed from its one
/// `nvidia-smi` stream (a line per GPU per tick) — so scripts that read `d["clocks.sm"]["median"]` from the
/// seed's JSON read the same keys at the top level of ours. Per-GPU figures are in [`MonitorSummary::gpus`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldStats {
    /// SM clock, MHz.
    #[serde(rename = "clocks.sm")]
    pub clocks_sm: Option<Stat>,
    /// Memory clock, MHz.
    #[serde(rename = "clocks.mem")]
    pub clocks_mem: Option<Stat>,
    /// Temperature, °C.
    #[serde(rename = "temperature.gpu")]
    pub temperature_gpu: Option<Stat>,
    /// Power draw, W.
    #[serde(rename = "power.draw")]
    pub power_draw: Option<Stat>,
    /// Utilisation, %.
    #[serde(rename = "utilization.gpu")]
    pub utilization_gpu: Option<Stat>,
    /// Memory used, MiB.
    #[serde(rename = "memory.used")]
    pub memory_used: Option<Stat>,
    /// SM clock over samples with utilisation ≥ [`BUSY_UTIL_PERCENT`].
    #[serde(rename = "clocks.sm_busy")]
    pub clocks_sm_busy: Option<BusyStat>,
    /// Every reason set in any sample, in bit order, unknown bits last.
    pub throttle_reasons_seen: Vec<String>,
    /// Performance states seen, numerically ordered.
    pub pstates_seen: Vec<String>,
}

impl FieldStats {
    /// The seed's fields over `samples`.
    pub(crate) fn of(samples: &[&Sample]) -> FieldStats {
        let field = |f: fn(&Sample) -> Option<f64>| stat(samples.iter().filter_map(|s| f(s)));
        let busy: Vec<f64> = samples
            .iter()
            .filter(|s| s.utilization_gpu.is_some_and(|u| u >= BUSY_UTIL_PERCENT))
            .filter_map(|s| s.clocks_sm)
            .collect();
        let clocks_sm_busy = stat(busy.iter().copied()).map(|st| BusyStat {
            min: st.min,
            median: st.median,
            max: st.max,
            n: busy.len(),
        });
        let mask = samples
            .iter()
            .filter_map(|s| s.throttle_mask)
            .fold(0u64, |m, x| m | x);
        let mut pstates: Vec<String> = samples
            .iter()
            .filter_map(|s| s.pstate.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        pstates.sort_by_key(|p| {
            (
                p.get(1..)
                    .and_then(|n| n.parse::<u32>().ok())
                    .unwrap_or(u32::MAX),
                p.clone(),
            )
        });
        FieldStats {
            clocks_sm: field(|s| s.clocks_sm),
            clocks_mem: field(|s| s.clocks_mem),
            temperature_gpu: field(|s| s.temperature_gpu),
            power_draw: field(|s| s.power_draw),
            utilization_gpu: field(|s| s.utilization_gpu),
            memory_used: field(|s| s.memory_used),
            clocks_sm_busy,
            throttle_reasons_seen: decode_throttle(mask),
            pstates_seen: pstates,
        }
    }
}

/// The summary of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSummary {
    /// NVML / `nvidia-smi` index.
    pub index: u32,
    /// UUID, where known.
    pub uuid: Option<String>,
    /// Readings of this GPU.
    pub n_samples: usize,
    /// The seed's fields for this GPU (flattened into this object when serialised).
    #[serde(flatten)]
    pub stats: FieldStats,
    /// Enforced power limit, W.
    #[serde(rename = "power.limit")]
    pub power_limit: Option<Stat>,
    /// Reason → number of samples in which it was set (a sampled estimate of how often).
    pub throttle_reason_samples: BTreeMap<String, usize>,
    /// Time in each policy from NVML's violation counters; `null` without them.
    pub throttle_time_s: Option<ThrottleTime>,
    /// Energy and its cross-check against the power samples.
    pub energy: EnergyCheck,
    /// Requested against achieved interval, and gaps.
    pub interval: IntervalStats,
    /// How much of the watched region this GPU's readings cover.
    pub coverage: Coverage,
    /// Field → number of samples in which it was `null` (an invalid reading is counted in `invalid_values`
    /// instead).
    pub null_values: BTreeMap<String, usize>,
    /// Field → number of impossible readings, marked invalid and left out of every statistic; for the
    /// counters (`energy_mj`, `violation_ns.<policy>`), readings whose step from the one before could not
    /// be (`counter.rs`).
    pub invalid_values: BTreeMap<String, usize>,
    /// Every process seen on the GPU, with the most memory it held (NVML only).
    pub processes_seen: Vec<GpuProcess>,
}

/// Min / median / max of the finite values; `None` if there are none.
pub(crate) fn stat(values: impl IntoIterator<Item = f64>) -> Option<Stat> {
    let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    let mut d = Data::new(v);
    Some(Stat {
        min: d.min(),
        median: d.median(),
        max: d.max(),
    })
}

impl MonitorSummary {
    pub(crate) fn of(c: &Recording) -> MonitorSummary {
        let mut by_gpu: BTreeMap<u32, Vec<&Sample>> = BTreeMap::new();
        for g in &c.gpus {
            by_gpu.entry(g.index).or_default();
        }
        for s in &c.samples {
            by_gpu.entry(s.index).or_default().push(s);
        }
        // Gaps are judged against the spacing of the kept readings.
        let kept_every = c.kept_every.max(1);
        let region = Region {
            duration_s: c.duration_s,
            interval_ms: c.interval_ms.saturating_mul(kept_every),
            timestamps: c.timestamps,
            end: &c.end,
            source_ended_s: c.source_ended_s,
        };
        let all_times: Vec<f64> = c.samples.iter().map(|s| s.t_s).collect();
        let gpus: Vec<GpuSummary> = by_gpu
            .into_iter()
            .map(|(index, mut samples)| {
                // Replay files need not be in time order; intervals and integrals need it.
                samples.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
                let uuid = c
                    .gpus
                    .iter()
                    .find(|g| g.index == index)
                    .and_then(|g| g.uuid.clone())
                    .or_else(|| samples.iter().find_map(|s| s.uuid.clone()));
                let mut g = gpu_summary(index, uuid, &samples, c.interval_ms, c.timestamps);
                if kept_every > 1 {
                    g.interval = interval_stats(&samples, c.interval_ms, kept_every, c.timestamps);
                }
                let times: Vec<f64> = samples.iter().map(|s| s.t_s).collect();
                g.coverage = coverage::of_gpu(&times, &all_times, &region);
                g
            })
            .collect();
        let per_gpu: Vec<Coverage> = gpus.iter().map(|g| g.coverage.clone()).collect();
        let n = c.samples.len();
        let per = |cpu: Option<f64>| cpu.filter(|_| n > 0).map(|s| s * 1e6 / n as f64);
        let frac = |cpu: Option<f64>| cpu.filter(|_| c.duration_s > 0.0).map(|s| s / c.duration_s);
        MonitorSummary {
            n_samples: n,
            requested_backend: c.requested_backend.clone(),
            backend: c.backend,
            rejected: c.rejected.clone(),
            timestamps: c.timestamps,
            duration_s: c.duration_s,
            kept_every,
            end: c.end.clone(),
            coverage: coverage::worst(&per_gpu, &region),
            monitor_cpu: MonitorCost {
                method: c.monitor_cpu.method,
                sampling_thread_s: c.monitor_cpu.sampling_thread_s,
                per_sample_us: per(c.monitor_cpu.sampling_thread_s),
                fraction_of_one_core: frac(c.monitor_cpu.sampling_thread_s),
                child_process_s: c.monitor_cpu.child_process_s,
                child_fraction_of_one_core: frac(c.monitor_cpu.child_process_s),
            },
            counters: c.counters.clone(),
            warnings: c.warnings.clone(),
            unavailable_fields: c.unavailable_fields.clone(),
            all_gpus: FieldStats::of(&c.samples.iter().collect::<Vec<_>>()),
            gpus,
        }
    }
}

fn gpu_summary(
    index: u32,
    uuid: Option<String>,
    samples: &[&Sample],
    interval_ms: u64,
    timestamps: Option<Timestamps>,
) -> GpuSummary {
    let stats = FieldStats::of(samples);
    let mut throttle_reason_samples = BTreeMap::new();
    for s in samples {
        if let Some(m) = s.throttle_mask {
            for name in decode_throttle(m) {
                *throttle_reason_samples.entry(name).or_insert(0) += 1;
            }
        }
    }

    let mut null_values = BTreeMap::new();
    type IsNull = fn(&Sample) -> bool;
    let fields: [(&str, IsNull); 11] = [
        ("uuid", |s| s.uuid.is_none()),
        ("pstate", |s| s.pstate.is_none()),
        ("clocks.sm", |s| s.clocks_sm.is_none()),
        ("clocks.mem", |s| s.clocks_mem.is_none()),
        ("temperature.gpu", |s| s.temperature_gpu.is_none()),
        ("power.draw", |s| s.power_draw.is_none()),
        ("utilization.gpu", |s| s.utilization_gpu.is_none()),
        ("memory.used", |s| s.memory_used.is_none()),
        ("clocks_throttle_reasons.active", |s| {
            s.throttle_mask.is_none()
        }),
        ("power.limit", |s| s.power_limit.is_none()),
        ("energy_mj", |s| s.energy_mj.is_none()),
    ];
    let mut invalid_values = BTreeMap::new();
    for inv in samples.iter().flat_map(|s| &s.invalid) {
        *invalid_values.entry(inv.field.clone()).or_insert(0) += 1;
    }
    for (name, is_null) in fields {
        let n = samples
            .iter()
            .filter(|s| is_null(s) && !s.invalid.iter().any(|i| i.field == name))
            .count();
        if n > 0 {
            null_values.insert(name.to_owned(), n);
        }
    }

    let throttle_time_s = throttle_time(samples, &mut invalid_values);
    let energy = energy_check(samples, &mut invalid_values);
    GpuSummary {
        index,
        uuid,
        n_samples: samples.len(),
        stats,
        power_limit: stat(samples.iter().filter_map(|s| s.power_limit)),
        throttle_reason_samples,
        throttle_time_s,
        energy,
        interval: interval_stats(samples, interval_ms, 1, timestamps),
        coverage: Coverage::empty(),
        null_values,
        invalid_values,
        processes_seen: processes_seen(samples),
    }
}

/// The policies of [`ViolationTimes`], by their serialised names.
type Policy = (&'static str, fn(&ViolationTimes) -> Option<u64>);
const POLICIES: [Policy; 6] = [
    ("power", |v| v.power),
    ("thermal", |v| v.thermal),
    ("sync_boost", |v| v.sync_boost),
    ("board_limit", |v| v.board_limit),
    ("low_utilization", |v| v.low_utilization),
    ("reliability", |v| v.reliability),
];

/// Time in each policy, each counter read by `counter::read`; impossible readings are counted into
/// `invalid` under `violation_ns.<policy>`.
fn throttle_time(
    samples: &[&Sample],
    invalid: &mut BTreeMap<String, usize>,
) -> Option<ThrottleTime> {
    let with: Vec<&Sample> = samples
        .iter()
        .copied()
        .filter(|s| s.violation_ns.is_some())
        .collect();
    let (first, last) = (with.first()?, with.last()?);
    let mut out = ThrottleTime {
        span_s: (last.t_s - first.t_s).max(0.0),
        power: None,
        thermal: None,
        sync_boost: None,
        board_limit: None,
        low_utilization: None,
        reliability: None,
        reasons: BTreeMap::new(),
    };
    for (name, get) in POLICIES {
        let r = counter::read(
            with.iter()
                .filter_map(|s| Some((s.t_s, get(s.violation_ns.as_ref()?)?))),
            counter::VIOLATION_NS_PER_S,
        );
        if r.impossible > 0 {
            *invalid.entry(format!("violation_ns.{name}")).or_insert(0) += r.impossible;
        }
        if let Some(why) = r.reason {
            out.reasons.insert(name.to_owned(), why);
        }
        let secs = r.span.map(|s| s.delta as f64 / 1e9);
        match name {
            "power" => out.power = secs,
            "thermal" => out.thermal = secs,
            "sync_boost" => out.sync_boost = secs,
            "board_limit" => out.board_limit = secs,
            "low_utilization" => out.low_utilization = secs,
            _ => out.reliability = secs,
        }
    }
    Some(out)
}

/// Trapezoidal integral of power over `points` (time-ordered `(t_s, W)`), J.
pub(crate) fn trapezoid(points: &[(f64, f64)]) -> f64 {
    points
        .windows(2)
        .map(|w| 0.5 * (w[0].1 + w[1].1) * (w[1].0 - w[0].0))
        .sum()
}

/// The energy counter read by `counter::read` (impossible readings counted into `invalid` under `energy_mj`),
/// and its cross-check against the integrated power samples.
fn energy_check(samples: &[&Sample], invalid: &mut BTreeMap<String, usize>) -> EnergyCheck {
    let mut out = EnergyCheck {
        counter_span_s: None,
        counter_j: None,
        counter_avg_power_w: None,
        power_span_s: None,
        integrated_power_j: None,
        integrated_avg_power_w: None,
        relative_difference: None,
        tolerance: ENERGY_TOLERANCE,
        agrees: None,
        note: None,
    };
    let counter = counter::read(
        samples
            .iter()
            .filter_map(|s| s.energy_mj.map(|e| (s.t_s, e))),
        counter::ENERGY_MJ_PER_S,
    );
    if counter.impossible > 0 {
        *invalid.entry("energy_mj".to_owned()).or_insert(0) += counter.impossible;
    }
    let mut window = (f64::NEG_INFINITY, f64::INFINITY);
    if let Some(why) = counter.reason {
        out.note = Some(format!("energy counter: {why}; no energy figure"));
    } else if let Some(sp) = counter.span {
        let j = sp.delta as f64 / 1000.0;
        out.counter_span_s = Some(sp.t1 - sp.t0);
        out.counter_j = Some(j);
        out.counter_avg_power_w = Some(j / (sp.t1 - sp.t0));
        window = (sp.t0, sp.t1);
    }
    let power: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.t_s >= window.0 && s.t_s <= window.1)
        .filter_map(|s| s.power_draw.map(|p| (s.t_s, p)))
        .collect();
    if let (Some(&(p0, _)), Some(&(p1, _))) = (power.first(), power.last())
        && p1 > p0
    {
        let j = trapezoid(&power);
        out.power_span_s = Some(p1 - p0);
        out.integrated_power_j = Some(j);
        out.integrated_avg_power_w = Some(j / (p1 - p0));
    }
    if out.note.is_some() {
        return out;
    }
    out.note = match (out.counter_avg_power_w, out.integrated_avg_power_w) {
        (None, _) => {
            Some("no energy counter readings spanning time (NVML only, Volta and newer)".into())
        }
        (Some(_), None) => Some("no power readings spanning time to compare with".into()),
        (Some(c), Some(i)) => {
            let span = out.counter_span_s.unwrap_or(0.0);
            if span < ENERGY_MIN_SPAN_S || power.len() < ENERGY_MIN_POWER_SAMPLES {
                Some(format!(
                    "not compared: needs a span of at least {ENERGY_MIN_SPAN_S} s and {ENERGY_MIN_POWER_SAMPLES} power \
                     readings (have {span:.3} s, {})",
                    power.len()
                ))
            } else if c <= 0.0 {
                Some("not compared: the counter shows no energy used".into())
            } else {
                let rel = (i - c) / c;
                out.relative_difference = Some(rel);
                let ok = rel.abs() <= ENERGY_TOLERANCE;
                out.agrees = Some(ok);
                (!ok).then(|| {
                    format!(
                        "power samples disagree with the energy counter by {:.1} % (tolerance {:.0} %): the power \
                         readings miss what happened between them",
                        rel * 100.0,
                        ENERGY_TOLERANCE * 100.0
                    )
                })
            }
        }
    };
    out
}

fn interval_stats(
    samples: &[&Sample],
    requested_ms: u64,
    kept_every: u64,
    timestamps: Option<Timestamps>,
) -> IntervalStats {
    let threshold_ms = GAP_FACTOR * requested_ms as f64 * kept_every as f64;
    let diffs: Vec<f64> = samples
        .windows(2)
        .map(|w| (w[1].t_s - w[0].t_s) * 1000.0)
        .collect();
    let gaps: Vec<f64> = diffs
        .iter()
        .copied()
        .filter(|d| *d > threshold_ms)
        .collect();
    let mut out = IntervalStats {
        requested_ms,
        achieved_ms: stat(diffs.iter().copied()),
        mean_ms: match (samples.first(), samples.last()) {
            (Some(a), Some(b)) if samples.len() > 1 => {
                Some((b.t_s - a.t_s) * 1000.0 / (samples.len() - 1) as f64)
            }
            _ => None,
        },
        gaps: GapStats {
            threshold_ms,
            n: gaps.len(),
            longest_ms: gaps.iter().copied().reduce(f64::max),
            total_ms: gaps.iter().sum(),
        },
        note: None,
    };
    if timestamps == Some(Timestamps::Synthesised) {
        out.achieved_ms = None;
        out.mean_ms = None;
        out.gaps = GapStats {
            threshold_ms,
            n: 0,
            longest_ms: None,
            total_ms: 0.0,
        };
        out.note =
            Some("replayed without times: intervals were synthesised, so none is reported".into());
    } else if diffs.is_empty() {
        out.note = Some("fewer than two readings".into());
    } else if kept_every > 1 {
        out.note = Some(format!(
            "the run met the bound on readings kept in memory: only every {kept_every}th reading was kept, so \
             intervals are between kept readings and gaps are judged against {kept_every} × the requested interval"
        ));
    }
    out
}

fn processes_seen(samples: &[&Sample]) -> Vec<GpuProcess> {
    let mut seen: BTreeMap<(u32, String), GpuProcess> = BTreeMap::new();
    for p in samples
        .iter()
        .filter_map(|s| s.processes.as_ref())
        .flatten()
    {
        let e = seen
            .entry((p.pid, p.kind.clone()))
            .or_insert_with(|| p.clone());
        e.used_memory_mib = match (e.used_memory_mib, p.used_memory_mib) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if e.name.is_none() {
            e.name.clone_from(&p.name);
        }
    }
    seen.into_values().collect()
}

impl Recording {
    /// The per-GPU summary of this recording.
    pub fn summary(&self) -> MonitorSummary {
        MonitorSummary::of(self)
    }
}
