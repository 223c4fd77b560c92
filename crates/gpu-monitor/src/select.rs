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
            let (chosen, by_index) = cuda_list(env, visible, &mut notes);
            if by_index && cuda_device_order != Some("PCI_BUS_ID") {
                notes.push(
                    "CUDA_VISIBLE_DEVICES uses indices, read here in NVML (PCI bus) order; CUDA numbers GPUs fastest \
                     first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so on mixed machines these may be other GPUs"
                        .into(),
                );
            }
            if chosen.is_empty() {
                return Err(Unavailable::NoSuchGpu {
                    wanted: format!("CUDA_VISIBLE_DEVICES={env:?} (no GPU visible to CUDA)"),
                    visible: describe(),
                });
            }
            return Ok((chosen, notes));
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

/// `CUDA_VISIBLE_DEVICES` as this process sees it; `None` when unset. A value that is not UTF-8 is read
/// lossily: the entry holding the bad bytes becomes invalid and, as in CUDA, ends the list there (it is never
/// taken for "not set", which would mean every GPU).
pub(crate) fn cuda_visible_devices_env() -> Option<String> {
    std::env::var_os("CUDA_VISIBLE_DEVICES").map(|v| v.to_string_lossy().into_owned())
}

/// The GPU a `MIG-GPU-<uuid>/<gi>/<ci>` entry (the pre-R470 MIG spelling) lives on: its GPU UUID.
fn legacy_mig_parent(item: &str) -> Option<&str> {
    let rest = item.strip_prefix("MIG-")?;
    rest.starts_with("GPU-")
        .then(|| rest.split('/').next())
        .flatten()
}

/// Reads `CUDA_VISIBLE_DEVICES` the way the CUDA runtime does: entries in order, each an index (a device that
/// exists), a `GPU-` UUID or unique prefix of one, or a MIG device; the list ends at the first entry that is
/// not valid (`0,7` on a machine without GPU 7 is GPU 0 alone; `-1` hides every GPU), and a GPU named twice
/// also ends it. Notes say where and why it ended. Also says whether any GPU was chosen by index.
fn cuda_list(env: &str, visible: &[GpuRef], notes: &mut Vec<String>) -> (Vec<GpuRef>, bool) {
    let mut chosen: Vec<GpuRef> = Vec::new();
    let mut by_index = false;
    if env.contains('\u{FFFD}') {
        notes.push(format!(
            "CUDA_VISIBLE_DEVICES is not valid UTF-8 ({env:?}): the entry with the bad bytes is invalid"
        ));
    }
    for item in env.split(',').map(str::trim) {
        let found: Result<&GpuRef, String> = if let Some(parent) = legacy_mig_parent(item) {
            unique_prefix(visible, parent)
        } else if item.starts_with("MIG-") {
            Err("a MIG instance UUID, whose GPU cannot be told from the GPU list".into())
        } else {
            match parse_id(item) {
                Some(GpuId::Index(i)) => {
                    by_index = true;
                    visible
                        .iter()
                        .find(|g| g.index == i)
                        .ok_or_else(|| format!("there is no GPU {i}"))
                }
                Some(GpuId::Uuid(u)) => unique_prefix(visible, &u),
                None => Err("neither an index nor a GPU-/MIG- UUID".into()),
            }
        };
        match found {
            Ok(g) if chosen.iter().any(|c| c.index == g.index) => {
                notes.push(format!(
                    "CUDA_VISIBLE_DEVICES={env:?}: entry {item:?} names GPU {} again; like CUDA, the list ends there",
                    g.index
                ));
                break;
            }
            Ok(g) => chosen.push(g.clone()),
            Err(why) => {
                if !item.is_empty() || chosen.is_empty() {
                    notes.push(format!(
                        "CUDA_VISIBLE_DEVICES={env:?}: entry {item:?} is not valid ({why}); like CUDA, the list ends there"
                    ));
                }
                break;
            }
        }
    }
    (chosen, by_index)
}

/// The one visible GPU whose UUID is `u` or starts with it.
fn unique_prefix<'a>(visible: &'a [GpuRef], u: &str) -> Result<&'a GpuRef, String> {
    if let Some(g) = visible.iter().find(|g| g.uuid.as_deref() == Some(u)) {
        return Ok(g);
    }
    let found: Vec<&GpuRef> = visible
        .iter()
        .filter(|g| g.uuid.as_deref().is_some_and(|v| v.starts_with(u)))
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no GPU has a UUID starting {u:?}")),
        _ => Err(format!("{u:?} is the start of several GPUs' UUIDs")),
    }
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

    #[test]
    fn cuda_cuts_the_list_at_a_gpu_that_does_not_exist_as_the_runtime_does() {
        let sel = GpuSelection::CudaVisibleDevices;
        // No GPU 7: CUDA runs on GPU 0 alone.
        let (g, notes) = resolve(&sel, &gpus(), Some("0,7"), Some("PCI_BUS_ID")).expect("0");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![0]);
        assert!(notes[0].contains("there is no GPU 7"), "{notes:?}");
        // A unique UUID prefix, then a prefix of two UUIDs: the list ends at the ambiguous one.
        let (g, notes) = resolve(&sel, &gpus(), Some("GPU-aaaa,GPU-bbbb,2"), None).expect("prefix");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![0]);
        assert!(notes[0].contains("several"), "{notes:?}");
        // A GPU named twice ends it too.
        let (g, _) = resolve(&sel, &gpus(), Some("1,1,0"), Some("PCI_BUS_ID")).expect("twice");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![1]);
        // The pre-R470 MIG spelling names its GPU's UUID; a MIG instance UUID cannot be placed.
        let (g, _) = resolve(&sel, &gpus(), Some("MIG-GPU-bbbb-3333/1/0"), None).expect("mig");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![2]);
        let err = resolve(&sel, &gpus(), Some("MIG-1234abcd"), None).expect_err("mig uuid");
        assert!(err.to_string().contains("no GPU visible to CUDA"), "{err}");
    }

    #[test]
    fn a_non_utf8_cuda_visible_devices_is_invalid_not_unset() {
        use std::os::unix::ffi::OsStrExt;
        // Read as cuda_visible_devices_env reads it.
        let lossy = std::ffi::OsStr::from_bytes(b"\xff1,0")
            .to_string_lossy()
            .into_owned();
        let sel = GpuSelection::CudaVisibleDevices;
        let err = resolve(&sel, &gpus(), Some(&lossy), None).expect_err("invalid first entry");
        assert!(err.to_string().contains("no GPU visible to CUDA"), "{err}");
        let (g, notes) = resolve(&sel, &gpus(), Some(&format!("1,{lossy}")), None).expect("cut");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![1]);
        assert!(notes[0].contains("not valid UTF-8"), "{notes:?}");
    }
}
