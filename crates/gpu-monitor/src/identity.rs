//! The static facts about a GPU, for the provenance record.

use std::collections::BTreeMap;

use serde::Serialize;

/// The static facts about one GPU; each `None` has its reason in `unavailable`, keyed by field name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuIdentity {
    /// NVML / `nvidia-smi` index.
    pub index: u32,
    /// `GPU-…`.
    pub uuid: Option<String>,
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: Option<String>,
    /// PCI bus id, `00000000:19:00.0`.
    pub pci_bus_id: Option<String>,
    /// Kernel driver version, e.g. `550.54.15`.
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports, e.g. `12.4`.
    pub cuda_driver_version: Option<String>,
    /// VBIOS version.
    pub vbios_version: Option<String>,
    /// Enforced power limit, W.
    pub power_limit_w: Option<f64>,
    /// Whether persistence mode is on.
    pub persistence_mode: Option<bool>,
    /// Field name → why it is `None`.
    pub unavailable: BTreeMap<String, String>,
}

impl GpuIdentity {
    /// Index and UUID known, everything else `None` for `reason`.
    pub fn unknown(index: u32, uuid: Option<String>, reason: &str) -> GpuIdentity {
        let mut g = GpuIdentity {
            index,
            uuid,
            name: None,
            pci_bus_id: None,
            driver_version: None,
            cuda_driver_version: None,
            vbios_version: None,
            power_limit_w: None,
            persistence_mode: None,
            unavailable: BTreeMap::new(),
        };
        for field in Self::FIELDS {
            g.unavailable.insert(field.to_owned(), reason.to_owned());
        }
        if g.uuid.is_none() {
            g.unavailable.insert("uuid".into(), reason.to_owned());
        }
        g
    }

    /// The optional fields other than `uuid`, by serialised name.
    pub(crate) const FIELDS: [&'static str; 7] = [
        "name",
        "pci_bus_id",
        "driver_version",
        "cuda_driver_version",
        "vbios_version",
        "power_limit_w",
        "persistence_mode",
    ];

    /// Sets a field's reason, or clears it when the value is known.
    pub(crate) fn note<T>(&mut self, field: &str, value: &Result<T, String>) {
        match value {
            Ok(_) => {
                self.unavailable.remove(field);
            }
            Err(why) => {
                self.unavailable.insert(field.to_owned(), why.clone());
            }
        }
    }
}
