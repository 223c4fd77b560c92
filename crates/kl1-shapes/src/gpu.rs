//! GPUs as data: each one's specified memory bandwidth, and read bandwidths others have measured or claimed,
//! each labelled as which.
//!
//! The built-in table is `specs/gpus.toml`. A spec names its GPU from a table (`[hardware] gpu`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::Error;
use crate::doc::Node;
use crate::provenance::{Cited, Provenance, Sources};

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
    pub provenance: Provenance,
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
    pub spec_bandwidth_provenance: Provenance,
    /// Measured and claimed read bandwidths, in table order.
    pub read_bandwidths: Vec<ReadBandwidth>,
}

impl Gpu {
    /// The read bandwidth with this `id`.
    pub fn read_bandwidth(&self, id: &str) -> Option<&ReadBandwidth> {
        self.read_bandwidths.iter().find(|r| r.id == id)
    }
}

/// A validated table of GPUs with unique names.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuTable {
    gpus: Vec<Gpu>,
}

struct RawGpu {
    /// `gpu[<name>]`, or `gpu[<index>]` if the name is missing.
    path: String,
    name: String,
    description: String,
    spec_bandwidth_gbps: Cited<f64>,
    read_bandwidth: Vec<RawRead>,
}

struct RawRead {
    path: String,
    id: String,
    label: BandwidthLabel,
    low_gbps: f64,
    high_gbps: Option<f64>,
    source: String,
    at: String,
    note: Option<String>,
}

/// Takes the table apart key by key (see [`crate::doc`]), so errors name the GPU and entry.
fn read(text: &str, origin: &str) -> Result<(BTreeMap<String, String>, Vec<RawGpu>), Error> {
    let mut root = Node::parse(text, origin)?;
    root.only(&["references", "gpu"])?;
    let references = root.take("references")?;
    let mut gpus = Vec::new();
    for mut g in root.array("gpu")? {
        g.only(&[
            "name",
            "description",
            "spec_bandwidth_gbps",
            "read_bandwidth",
        ])?;
        let name: String = g.take("name")?;
        let path = format!("gpu[{name}]");
        g.rename(path.clone());
        let description = g.take("description")?;
        let spec_bandwidth_gbps = g.take("spec_bandwidth_gbps")?;
        let mut reads = Vec::new();
        for mut r in g.array("read_bandwidth")? {
            r.only(&[
                "id",
                "label",
                "low_gbps",
                "high_gbps",
                "source",
                "at",
                "note",
            ])?;
            reads.push(RawRead {
                path: r.path().to_string(),
                id: r.take("id")?,
                label: r.take("label")?,
                low_gbps: r.take("low_gbps")?,
                high_gbps: r.take_opt("high_gbps")?,
                source: r.take("source")?,
                at: r.take("at")?,
                note: r.take_opt("note")?,
            });
        }
        gpus.push(RawGpu {
            path,
            name,
            description,
            spec_bandwidth_gbps,
            read_bandwidth: reads,
        });
    }
    Ok((references, gpus))
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
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        GpuTable::from_toml_str(&text, &path.display().to_string())
    }

    /// The GPU with this exact name.
    pub fn get(&self, name: &str) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.name == name)
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
    Ok(Gpu {
        name: g.name,
        description: g.description,
        spec_bandwidth_gbps: spec,
        spec_bandwidth_provenance,
        read_bandwidths: reads,
    })
}
