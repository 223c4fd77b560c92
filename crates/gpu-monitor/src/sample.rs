//! One reading of one GPU, and the small records it carries.

use serde::{Deserialize, Serialize};

/// One reading of one GPU. Every value is MEASURED (read from the driver or from `nvidia-smi`) except `t_s`,
/// which is the host's monotonic clock at the moment the reading was taken (NVML) or received (`nvidia-smi`),
/// and which replay either reads from the file or synthesises (see [`Timestamps`](crate::Timestamps)).
///
/// `None` means the value was not available for this reading (`[N/A]`, `[Not Supported]`, a function missing
/// from the driver, a backend that does not read it); the capture says why once per GPU and field. The
/// serialised names are the `nvidia-smi --query-gpu` names the seed tool used, so its per-sample dicts and our
/// JSON lines read alike. Units are those of `nvidia-smi … nounits`: MHz, °C, W, %, MiB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the monitor started.
    pub t_s: f64,
    /// The GPU's index as NVML and `nvidia-smi` number them (PCI bus order; not necessarily CUDA's order).
    pub index: u32,
    /// The GPU's UUID (`GPU-…`).
    #[serde(default)]
    pub uuid: Option<String>,
    /// Performance state, `P0` (fastest) … `P15`.
    #[serde(default)]
    pub pstate: Option<String>,
    /// SM clock, MHz.
    #[serde(rename = "clocks.sm", default)]
    pub clocks_sm: Option<f64>,
    /// Memory clock, MHz.
    #[serde(rename = "clocks.mem", default)]
    pub clocks_mem: Option<f64>,
    /// GPU die temperature, °C.
    #[serde(rename = "temperature.gpu", default)]
    pub temperature_gpu: Option<f64>,
    /// Board power draw, W (the driver's reading; on recent GPUs an average over its own short window).
    #[serde(rename = "power.draw", default)]
    pub power_draw: Option<f64>,
    /// Percent of the last sample period in which a kernel was running (NVML's definition, not SM occupancy).
    #[serde(rename = "utilization.gpu", default)]
    pub utilization_gpu: Option<f64>,
    /// Device memory in use, MiB.
    #[serde(rename = "memory.used", default)]
    pub memory_used: Option<f64>,
    /// The clock-event ("throttle") reason mask; decode with [`decode_throttle`](crate::decode_throttle).
    #[serde(rename = "clocks_throttle_reasons.active", default)]
    pub throttle_mask: Option<u64>,
    /// Enforced power limit, W (NVML only).
    #[serde(rename = "power.limit", default)]
    pub power_limit: Option<f64>,
    /// Total energy since the driver was loaded, mJ (NVML only, Volta and newer).
    #[serde(default)]
    pub energy_mj: Option<u64>,
    /// Cumulative time the clocks were held down by each policy (NVML only).
    #[serde(default)]
    pub violation_ns: Option<ViolationTimes>,
    /// Processes holding a context on the GPU (NVML only); `Some(vec![])` means "asked, and none".
    #[serde(default)]
    pub processes: Option<Vec<GpuProcess>>,
    /// Readings that cannot be true (outside [`VALID_RANGES`], a P-state beyond P15), as read; their fields are
    /// `None`, so no statistic uses them. Absent from JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<InvalidReading>,
}

/// A reading that cannot be true, kept as text beside the sample instead of as a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidReading {
    /// The sample field (its serialised name).
    pub field: String,
    /// The value as read.
    pub value: String,
}

/// `(field, lowest, highest, unit)`: the values a reading can physically take. Wide on purpose: they catch a
/// driver or parser returning nonsense (−5 MHz, 150 % utilisation, 1e23 MHz), not an unusual GPU. Clocks: the
/// fastest GPU clocks are a few GHz, memory clocks as nvidia-smi reports them ~ 10 GHz; temperature: the
/// sensor's range; power: a whole superchip board is under 3 kW; memory: 10 TiB is beyond any GPU.
pub const VALID_RANGES: [(&str, f64, f64, &str); 7] = [
    ("clocks.sm", 0.0, 100_000.0, "MHz"),
    ("clocks.mem", 0.0, 100_000.0, "MHz"),
    ("temperature.gpu", -50.0, 200.0, "°C"),
    ("power.draw", 0.0, MAX_POWER_W, "W"),
    ("utilization.gpu", 0.0, 100.0, "%"),
    ("memory.used", 0.0, 10_485_760.0, "MiB"),
    ("power.limit", 0.0, MAX_POWER_W, "W"),
];

/// The most power a GPU board can draw, W: the bound of a `power.draw` reading, and of the energy counter's
/// rate (`counter.rs`).
pub const MAX_POWER_W: f64 = 10_000.0;

/// The highest performance state: `P0` (fastest) … `P15`.
pub const MAX_PSTATE: u32 = 15;

impl Sample {
    /// A reading of GPU `index` at `t_s` with nothing known yet.
    pub fn empty(t_s: f64, index: u32) -> Self {
        Sample {
            t_s,
            index,
            uuid: None,
            pstate: None,
            clocks_sm: None,
            clocks_mem: None,
            temperature_gpu: None,
            power_draw: None,
            utilization_gpu: None,
            memory_used: None,
            throttle_mask: None,
            power_limit: None,
            energy_mj: None,
            violation_ns: None,
            processes: None,
            invalid: Vec::new(),
        }
    }

    /// Moves every impossible reading (see [`VALID_RANGES`], [`MAX_PSTATE`]) out of its field into
    /// [`invalid`](Self::invalid); returns how many there were.
    pub(crate) fn invalidate_impossible(&mut self) -> usize {
        let before = self.invalid.len();
        let fields: [&mut Option<f64>; 7] = [
            &mut self.clocks_sm,
            &mut self.clocks_mem,
            &mut self.temperature_gpu,
            &mut self.power_draw,
            &mut self.utilization_gpu,
            &mut self.memory_used,
            &mut self.power_limit,
        ];
        for (v, (name, lo, hi, _)) in fields.into_iter().zip(VALID_RANGES) {
            if let Some(x) = *v
                && !(lo..=hi).contains(&x)
            {
                self.invalid.push(InvalidReading {
                    field: name.to_owned(),
                    value: x.to_string(),
                });
                *v = None;
            }
        }
        if let Some(p) = &self.pstate {
            let ok = p
                .strip_prefix('P')
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n <= MAX_PSTATE);
            if !ok {
                self.invalid.push(InvalidReading {
                    field: "pstate".to_owned(),
                    value: p.clone(),
                });
                self.pstate = None;
            }
        }
        self.invalid.len() - before
    }

    /// Replaces every non-finite number with `None` and returns how many there were, so that nothing
    /// downstream (a median, a JSON file) ever meets NaN or infinity, whatever a backend produced.
    pub(crate) fn sanitize(&mut self) -> u64 {
        let mut bad = 0;
        for v in [
            &mut self.clocks_sm,
            &mut self.clocks_mem,
            &mut self.temperature_gpu,
            &mut self.power_draw,
            &mut self.utilization_gpu,
            &mut self.memory_used,
            &mut self.power_limit,
        ] {
            if v.is_some_and(|x| !x.is_finite()) {
                *v = None;
                bad += 1;
            }
        }
        for p in self.processes.iter_mut().flatten() {
            if p.used_memory_mib.is_some_and(|x| !x.is_finite()) {
                p.used_memory_mib = None;
                bad += 1;
            }
        }
        bad
    }
}

/// Cumulative nanoseconds during which each NVML performance policy held the clocks down
/// (`nvmlDeviceGetViolationStatus`). Counters only grow; time in a policy over a region is the difference
/// between the region's last and first sample.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationTimes {
    /// Power capping.
    #[serde(default)]
    pub power: Option<u64>,
    /// Thermal capping.
    #[serde(default)]
    pub thermal: Option<u64>,
    /// Sync boost.
    #[serde(default)]
    pub sync_boost: Option<u64>,
    /// Board limit.
    #[serde(default)]
    pub board_limit: Option<u64>,
    /// Low utilisation.
    #[serde(default)]
    pub low_utilization: Option<u64>,
    /// Board reliability limit.
    #[serde(default)]
    pub reliability: Option<u64>,
}

impl ViolationTimes {
    /// `(name, value)` for each policy, in NVML's order; the names are the serialised keys.
    pub fn entries(&self) -> [(&'static str, Option<u64>); 6] {
        [
            ("power", self.power),
            ("thermal", self.thermal),
            ("sync_boost", self.sync_boost),
            ("board_limit", self.board_limit),
            ("low_utilization", self.low_utilization),
            ("reliability", self.reliability),
        ]
    }
}

/// A process holding a context on a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// Process id as the driver reports it (the host's pid namespace; inside a container it may not be ours).
    pub pid: u32,
    /// `compute` or `graphics`.
    pub kind: String,
    /// Device memory it holds, MiB, where the driver says.
    #[serde(default)]
    pub used_memory_mib: Option<f64>,
    /// `/proc/<pid>/comm` when that pid is visible from here.
    #[serde(default)]
    pub name: Option<String>,
}

/// A GPU the monitor samples.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GpuRef {
    /// NVML / `nvidia-smi` index.
    pub index: u32,
    /// UUID, where known.
    pub uuid: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_reading_is_small_enough_for_the_documented_memory_bound() {
        // docs/gpu-monitor.md "Memory bound": 131 072 readings at ≤ 0.5 KiB each (64 MiB) (without NVML's process
        // lists): the struct itself plus a UUID and a P-state on the heap (allocator rounding included).
        let inline = std::mem::size_of::<Sample>();
        let heap = 48 + 16;
        eprintln!("Sample: {inline} B inline + ~{heap} B heap");
        assert!(inline + heap <= 512, "{inline} + {heap}");
    }
}
