//! GPUs as data: each one's specified memory bandwidth, and read bandwidths others have measured or claimed,
//! each labelled as which.
//!
//! The built-in table is `specs/gpus.toml`. A `kl1-shapes` spec names its GPU from a table (`[hardware] gpu`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::Error;
use crate::citation::{Citation, Cited, Sources};

/// The built-in GPU table, as text.
pub const BUILTIN_GPUS_TOML: &str = include_str!("../specs/gpus.toml");

/// What kind of figure a read bandwidth is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum BandwidthLabel {
    /// Someone measured it and says how (the source describes the kernel or tool).
    #[serde(rename = "MEASURED")]
    Measured,
    /// A figure a source states without a method anyone could repeat.
    #[serde(rename = "CLAIM")]
    Claim,
}

impl std::fmt::Display for BandwidthLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BandwidthLabel::Measured => "MEASURED",
            BandwidthLabel::Claim => "CLAIM",
        })
    }
}

/// A read bandwidth reported for a GPU, as a range (`low_gbps == high_gbps` for a single figure).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadBandwidth {
    /// A short name, unique within its GPU, for looking it up.
    pub id: String,
    /// Measured or claimed.
    pub label: BandwidthLabel,
    /// Lowest reported figure, GB/s (10^9 bytes per second).
    pub low_gbps: f64,
    /// Highest reported figure, GB/s.
    pub high_gbps: f64,
    /// Where it is reported.
    pub provenance: Citation,
    /// What was measured, and how it differs from a pure weight read, if it does.
    pub note: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Gpu {
    /// Name as the table spells it, e.g. `GB10`, `H100 SXM`.
    pub name: String,
    /// What it is: product, memory.
    pub description: String,
    /// The vendor's specified memory bandwidth, GB/s.
    pub spec_bandwidth_gbps: f64,
    /// Where the specified bandwidth is stated.
    pub spec_bandwidth_provenance: Citation,
    /// Measured and claimed read bandwidths, in table order.
    pub read_bandwidths: Vec<ReadBandwidth>,
    /// Dense (no structured sparsity) peak tensor throughput per compute dtype, TFLOP/s (CLAIM: the vendor's
    /// figure), in table order.
    pub peak_tflops: Vec<PeakFlops>,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD), as a trace's `deviceProperties.numSms`
    /// reports them.
    pub sm_count: Option<u64>,
    /// Device memory in GiB (2^30 bytes) as `deviceProperties.totalGlobalMem` reports it, roughly: traces
    /// report a little less than the product's capacity.
    pub memory_gib: Option<f64>,
    /// Device names a trace may carry for this GPU (`deviceProperties.name`), matched exactly.
    pub device_names: Vec<String>,
}

/// A GPU's dense peak throughput for one compute dtype.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PeakFlops {
    /// `bf16`, `fp16`, `fp8`, `fp4`, `tf32`, `fp32`.
    pub dtype: String,
    /// Dense peak, TFLOP/s (10^12 floating-point operations per second; a multiply-add is 2).
    pub tflops: f64,
    /// Where it is stated.
    pub provenance: Citation,
}

impl Gpu {
    /// The read bandwidth with this `id`.
    pub fn read_bandwidth(&self, id: &str) -> Option<&ReadBandwidth> {
        self.read_bandwidths.iter().find(|r| r.id == id)
    }

    /// The dense peak for `dtype`, TFLOP/s.
    pub fn peak_tflops(&self, dtype: &str) -> Option<&PeakFlops> {
        self.peak_tflops.iter().find(|p| p.dtype == dtype)
    }
}

/// A validated table of GPUs with unique names.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuTable {
    gpus: Vec<Gpu>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    references: BTreeMap<String, String>,
    gpu: Vec<RawGpu>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGpu {
    /// `gpu[<name>]`, set after reading.
    #[serde(skip)]
    path: String,
    name: String,
    description: String,
    spec_bandwidth_gbps: Cited<f64>,
    #[serde(default)]
    read_bandwidth: Vec<RawRead>,
    #[serde(default)]
    peak_tflops: BTreeMap<String, Cited<f64>>,
    sm_count: Option<u64>,
    memory_gib: Option<f64>,
    #[serde(default)]
    device_names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRead {
    /// `gpu[<name>].read_bandwidth[<i>]`, set after reading.
    #[serde(skip)]
    path: String,
    id: String,
    label: BandwidthLabel,
    low_gbps: f64,
    high_gbps: Option<f64>,
    source: String,
    at: String,
    note: Option<String>,
}

/// Reads the table (serde derive, unknown keys refused). Errors and paths name a GPU by its name,
/// `gpu[GB10].read_bandwidth[3].label`, rather than its position.
fn read(text: &str, origin: &str) -> Result<(BTreeMap<String, String>, Vec<RawGpu>), Error> {
    // The names, read leniently, for the error paths.
    let names: Vec<Option<String>> = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("gpu").and_then(|g| g.as_array()).cloned())
        .unwrap_or_default()
        .iter()
        .map(|g| g.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .collect();
    let by_name = |path: &str| -> String {
        if let Some(rest) = path.strip_prefix("gpu[")
            && let Some((index, tail)) = rest.split_once(']')
            && let Ok(i) = index.parse::<usize>()
            && let Some(Some(name)) = names.get(i)
        {
            return format!("gpu[{name}]{tail}");
        }
        path.to_string()
    };
    let mut raw: RawTable = crate::toml_doc::from_toml_renamed(text, origin, &by_name)?;
    for g in &mut raw.gpu {
        g.path = format!("gpu[{}]", g.name);
        for (i, r) in g.read_bandwidth.iter_mut().enumerate() {
            r.path = format!("{}.read_bandwidth[{i}]", g.path);
        }
    }
    Ok((raw.references, raw.gpu))
}

impl GpuTable {
    /// The built-in table (`specs/gpus.toml`).
    pub fn builtin() -> GpuTable {
        // The embedded file is part of this crate and a test loads it; failing here is a build defect.
        #[allow(clippy::expect_used)] // an embedded, tested file: failing is a build defect
        GpuTable::from_toml_str(BUILTIN_GPUS_TOML, "built-in specs/gpus.toml")
            .expect("the built-in GPU table is valid (tested)")
    }

    /// Loads and validates a table from TOML text; `origin` names the text in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<GpuTable, Error> {
        let (references, raw_gpus) = read(text, origin)?;
        let sources = Sources {
            origin,
            references: &references,
        };
        sources.check_table()?;
        let mut names = BTreeSet::new();
        let mut gpus = Vec::with_capacity(raw_gpus.len());
        for g in raw_gpus {
            if g.name.trim().is_empty() {
                return Err(sources.invalid(&format!("{}.name", g.path), "empty name"));
            }
            if !names.insert(g.name.clone()) {
                return Err(
                    sources.invalid(&format!("{}.name", g.path), "a second GPU with this name")
                );
            }
            gpus.push(validate_gpu(&sources, g)?);
        }
        if gpus.is_empty() {
            return Err(sources.invalid("gpu", "the table lists no GPU"));
        }
        Ok(GpuTable { gpus })
    }

    /// Loads and validates a table from a file.
    pub fn from_file(path: &Path) -> Result<GpuTable, Error> {
        let text = tool_io::read_input_string(path, "GPU table", tool_io::caps::CONFIG)?;
        GpuTable::from_toml_str(&text, &path.display().to_string())
    }

    /// The GPU with this exact name.
    pub fn get(&self, name: &str) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.name == name)
    }

    /// The GPU a trace's `deviceProperties` describe: by exact `name` among the table names and each GPU's
    /// `device_names`; else (an empty or unknown name, as ROCm traces write) by `sm_count` equal to `sms`
    /// and `memory_gib` within 5 % of `memory_bytes` / 2^30. Fails, saying why, when nothing or more than
    /// one GPU fits.
    pub fn identify(
        &self,
        name: &str,
        sms: Option<u64>,
        memory_bytes: Option<u64>,
    ) -> Result<&Gpu, String> {
        let name = name.trim();
        if !name.is_empty()
            && let Some(g) = self
                .gpus
                .iter()
                .find(|g| g.name == name || g.device_names.iter().any(|d| d == name))
        {
            return Ok(g);
        }
        let (Some(sms), Some(bytes)) = (sms, memory_bytes) else {
            return Err(format!(
                "device name `{name}` is not in the GPU table and the trace gives no SM count and memory to match"
            ));
        };
        let gib = bytes as f64 / f64::from(1u32 << 30);
        let fits: Vec<&Gpu> = self
            .gpus
            .iter()
            .filter(|g| {
                g.sm_count == Some(sms)
                    && g.memory_gib.is_some_and(|m| (gib / m - 1.0).abs() <= 0.05)
            })
            .collect();
        match fits.as_slice() {
            [one] => Ok(one),
            [] => Err(format!(
                "device name `{name}` is not in the GPU table, and no GPU in it has {sms} SMs/CUs and {gib:.1} GiB"
            )),
            many => Err(format!(
                "device name `{name}` is not in the GPU table, and {sms} SMs/CUs with {gib:.1} GiB fit {}",
                many.iter()
                    .map(|g| g.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Every GPU, in table order.
    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }
}

fn validate_gpu(sources: &Sources<'_>, g: RawGpu) -> Result<Gpu, Error> {
    let field = format!("{}.spec_bandwidth_gbps", g.path);
    let spec_bandwidth_provenance = sources.resolve(&field, &g.spec_bandwidth_gbps)?;
    let spec = g.spec_bandwidth_gbps.value;
    if !(spec.is_finite() && spec > 0.0) {
        return Err(sources.invalid(&field, format!("{spec} GB/s is not a positive bandwidth")));
    }
    let mut ids = BTreeSet::new();
    let mut reads = Vec::with_capacity(g.read_bandwidth.len());
    for r in g.read_bandwidth {
        let at = r.path.as_str();
        if r.id.trim().is_empty() || !ids.insert(r.id.clone()) {
            return Err(sources.invalid(&format!("{at}.id"), "empty, or used twice in this GPU"));
        }
        let high = r.high_gbps.unwrap_or(r.low_gbps);
        if !(r.low_gbps.is_finite() && r.low_gbps > 0.0) {
            return Err(sources.invalid(
                &format!("{at}.low_gbps"),
                format!("{} GB/s is not a positive bandwidth", r.low_gbps),
            ));
        }
        if !(high.is_finite() && high >= r.low_gbps) {
            return Err(sources.invalid(
                &format!("{at}.high_gbps"),
                format!("{high} GB/s is below low_gbps {}", r.low_gbps),
            ));
        }
        let provenance = sources.cite(at, &r.source, &r.at)?;
        reads.push(ReadBandwidth {
            id: r.id,
            label: r.label,
            low_gbps: r.low_gbps,
            high_gbps: high,
            provenance,
            note: r.note,
        });
    }
    let mut peaks = Vec::with_capacity(g.peak_tflops.len());
    for (dtype, cited) in &g.peak_tflops {
        let field = format!("{}.peak_tflops.{dtype}", g.path);
        let provenance = sources.resolve(&field, cited)?;
        if !(cited.value.is_finite() && cited.value > 0.0) {
            return Err(sources.invalid(
                &field,
                format!("{} TFLOP/s is not a positive peak", cited.value),
            ));
        }
        peaks.push(PeakFlops {
            dtype: dtype.clone(),
            tflops: cited.value,
            provenance,
        });
    }
    if let Some(m) = g.memory_gib
        && !(m.is_finite() && m > 0.0)
    {
        return Err(sources.invalid(&format!("{}.memory_gib", g.path), "not a positive size"));
    }
    Ok(Gpu {
        name: g.name,
        description: g.description,
        spec_bandwidth_gbps: spec,
        spec_bandwidth_provenance,
        read_bandwidths: reads,
        peak_tflops: peaks,
        sm_count: g.sm_count,
        memory_gib: g.memory_gib,
        device_names: g.device_names,
    })
}
