//! Which GPUs to sample.

use std::fmt;
use std::str::FromStr;

use crate::Unavailable;
use crate::error::ParseError;
use crate::sample::GpuRef;

/// One GPU named by the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuId {
    /// NVML / `nvidia-smi` index (PCI bus order).
    Index(u32),
    /// A UUID (`GPU-…`), or a unique prefix of one, as `CUDA_VISIBLE_DEVICES` accepts.
    Uuid(String),
}

/// Which GPUs to sample.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GpuSelection {
    /// Every GPU the backend sees.
    #[default]
    All,
    /// These GPUs, in this order.
    Only(Vec<GpuId>),
    /// The GPUs a CUDA program started now would see: `CUDA_VISIBLE_DEVICES` read when the monitor starts
    /// (unset: all). Indices in it are taken as NVML indices, which are CUDA's only under
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID`; UUIDs are unambiguous. Like CUDA, the list ends at the first entry that
    /// is not valid.
    CudaVisibleDevices,
}

impl fmt::Display for GpuSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuSelection::All => f.write_str("all"),
            GpuSelection::CudaVisibleDevices => f.write_str("cuda"),
            GpuSelection::Only(ids) => {
                let parts: Vec<String> = ids
                    .iter()
                    .map(|id| match id {
                        GpuId::Index(i) => i.to_string(),
                        GpuId::Uuid(u) => u.clone(),
                    })
                    .collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

impl FromStr for GpuSelection {
    type Err = ParseError;

    /// `all`, `cuda` (honour `CUDA_VISIBLE_DEVICES`), or a comma list of indices and UUIDs.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.trim() {
            "all" => Ok(GpuSelection::All),
            "cuda" | "CUDA_VISIBLE_DEVICES" => Ok(GpuSelection::CudaVisibleDevices),
            list => {
                let mut ids = Vec::new();
                for item in list.split(',').map(str::trim) {
                    match parse_id(item) {
                        Some(id) => ids.push(id),
                        None => {
                            return Err(ParseError(format!(
                                "GPU {item:?} is neither an index nor a GPU-/MIG- UUID"
                            )));
                        }
                    }
                }
                Ok(GpuSelection::Only(ids))
            }
        }
    }
}

fn parse_id(item: &str) -> Option<GpuId> {
    if let Ok(i) = item.parse::<u32>() {
        Some(GpuId::Index(i))
    } else if item.starts_with("GPU-") || item.starts_with("MIG-") {
        Some(GpuId::Uuid(item.to_owned()))
    } else {
        None
    }
}

/// Resolves `selection` against the GPUs a backend sees. Returns the GPUs to sample and notes for the record.
pub(crate) fn resolve(
    selection: &GpuSelection,
    visible: &[GpuRef],
    cuda_visible_devices: Option<&str>,
    cuda_device_order: Option<&str>,
) -> Result<(Vec<GpuRef>, Vec<String>), Unavailable> {
    let mut notes = Vec::new();
    let describe = || {
        visible
            .iter()
            .map(|g| format!("{}:{}", g.index, g.uuid.as_deref().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ids: Vec<GpuId> = match selection {
        GpuSelection::All => return Ok((visible.to_vec(), notes)),
        GpuSelection::Only(ids) => ids.clone(),
        GpuSelection::CudaVisibleDevices => {
            let Some(env) = cuda_visible_devices else {
                notes.push("CUDA_VISIBLE_DEVICES is not set: monitoring every GPU".into());
                return Ok((visible.to_vec(), notes));
            };
            let mut ids = Vec::new();
            for item in env.split(',').map(str::trim) {
                match parse_id(item) {
                    Some(id) => ids.push(id),
                    None => {
                        if !item.is_empty() {
                            notes.push(format!(
                                "CUDA_VISIBLE_DEVICES={env:?}: entry {item:?} is not valid; like CUDA, the list ends there"
                            ));
                        }
                        break;
                    }
                }
            }
            if ids.iter().any(|id| matches!(id, GpuId::Index(_)))
                && cuda_device_order != Some("PCI_BUS_ID")
            {
                notes.push(
                    "CUDA_VISIBLE_DEVICES uses indices, read here in NVML (PCI bus) order; CUDA numbers GPUs fastest \
                     first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so on mixed machines these may be other GPUs"
                        .into(),
                );
            }
            if ids.is_empty() {
                return Err(Unavailable::NoSuchGpu {
                    wanted: format!("CUDA_VISIBLE_DEVICES={env:?} (no GPU visible to CUDA)"),
                    visible: describe(),
                });
            }
            ids
        }
    };
    let mut chosen: Vec<GpuRef> = Vec::new();
    for id in &ids {
        let found: Vec<&GpuRef> = match id {
            GpuId::Index(i) => visible.iter().filter(|g| g.index == *i).collect(),
            GpuId::Uuid(u) => {
                let exact: Vec<&GpuRef> = visible
                    .iter()
                    .filter(|g| g.uuid.as_deref() == Some(u.as_str()))
                    .collect();
                if exact.is_empty() {
                    visible
                        .iter()
                        .filter(|g| g.uuid.as_deref().is_some_and(|v| v.starts_with(u.as_str())))
                        .collect()
                } else {
                    exact
                }
            }
        };
        let wanted = match id {
            GpuId::Index(i) => i.to_string(),
            GpuId::Uuid(u) => u.clone(),
        };
        match found.as_slice() {
            [one] => {
                if !chosen.iter().any(|c| c.index == one.index) {
                    chosen.push((*one).clone());
                }
            }
            [] => {
                return Err(Unavailable::NoSuchGpu {
                    wanted,
                    visible: describe(),
                });
            }
            _ => {
                return Err(Unavailable::NoSuchGpu {
                    wanted: format!("{wanted} (ambiguous prefix)"),
                    visible: describe(),
                });
            }
        }
    }
    Ok((chosen, notes))
}

/// The GPUs a selection names, for sources whose GPUs are only known by reading (replay); `None`: all.
pub(crate) fn wanted_ids(
    selection: &GpuSelection,
    cuda_visible_devices: Option<&str>,
) -> Option<Vec<GpuId>> {
    match selection {
        GpuSelection::All => None,
        GpuSelection::Only(ids) => Some(ids.clone()),
        GpuSelection::CudaVisibleDevices => {
            let env = cuda_visible_devices?;
            Some(env.split(',').map(str::trim).map_while(parse_id).collect())
        }
    }
}

/// Whether `id` names the GPU `index` / `uuid` (a UUID may be a prefix).
pub(crate) fn id_matches(id: &GpuId, index: u32, uuid: Option<&str>) -> bool {
    match id {
        GpuId::Index(i) => *i == index,
        GpuId::Uuid(u) => uuid.is_some_and(|v| v.starts_with(u.as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<GpuRef> {
        vec![
            GpuRef {
                index: 0,
                uuid: Some("GPU-aaaa-1111".into()),
            },
            GpuRef {
                index: 1,
                uuid: Some("GPU-bbbb-2222".into()),
            },
            GpuRef {
                index: 2,
                uuid: Some("GPU-bbbb-3333".into()),
            },
        ]
    }

    #[test]
    fn all_and_lists() {
        let (all, _) = resolve(&GpuSelection::All, &gpus(), None, None).expect("all");
        assert_eq!(all.len(), 3);
        let sel: GpuSelection = "2,GPU-aaaa".parse().expect("parse");
        let (two, _) = resolve(&sel, &gpus(), None, None).expect("two");
        assert_eq!(two.iter().map(|g| g.index).collect::<Vec<_>>(), vec![2, 0]);
    }

    #[test]
    fn missing_and_ambiguous_are_unavailable() {
        let sel: GpuSelection = "7".parse().expect("parse");
        assert!(matches!(
            resolve(&sel, &gpus(), None, None),
            Err(Unavailable::NoSuchGpu { .. })
        ));
        let sel: GpuSelection = "GPU-bbbb".parse().expect("parse");
        let err = resolve(&sel, &gpus(), None, None).expect_err("ambiguous");
        assert!(err.to_string().contains("ambiguous"), "{err}");
        assert!("zero".parse::<GpuSelection>().is_err());
    }

    #[test]
    fn cuda_visible_devices() {
        let sel = GpuSelection::CudaVisibleDevices;
        let (g, notes) = resolve(&sel, &gpus(), None, None).expect("unset");
        assert_eq!(g.len(), 3);
        assert!(notes[0].contains("not set"));
        let (g, notes) =
            resolve(&sel, &gpus(), Some("1,0"), Some("PCI_BUS_ID")).expect("pci order");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![1, 0]);
        assert!(notes.is_empty());
        let (_, notes) = resolve(&sel, &gpus(), Some("1"), None).expect("fastest first");
        assert!(notes[0].contains("CUDA_DEVICE_ORDER"));
        // CUDA stops at the first invalid entry.
        let (g, notes) = resolve(&sel, &gpus(), Some("GPU-bbbb-3333,-1,0"), None).expect("stops");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![2]);
        assert!(notes[0].contains("ends there"));
        assert!(resolve(&sel, &gpus(), Some(""), None).is_err());
        assert!(resolve(&sel, &gpus(), Some("-1"), None).is_err());
    }
}
