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

/// The number an entry starts with, as C's `strtoul` reads it (`1gpu2` is 1): optional sign, then digits;
/// `None` without digits or for a negative number.
fn strtoul(entry: &str) -> Option<u32> {
    let digits_from = usize::from(entry.starts_with(['+', '-']));
    let end = entry[digits_from..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(entry.len(), |k| k + digits_from);
    if end == digits_from || entry.starts_with('-') {
        return None;
    }
    entry[digits_from..end].parse().ok()
}

/// Reads `CUDA_VISIBLE_DEVICES` as the CUDA runtime does (the rules PyTorch's `_parse_visible_devices` and
/// `_device_count_nvml` reproduce from the driver): the first entry decides the kind of list — `GPU-` UUIDs,
/// `MIG-` devices, or indices read like `strtoul` (`1gpu2` is 1). The list ends at the first entry that is
/// not of that kind, is negative, or names no GPU (`0,7` without GPU 7 is GPU 0 alone); a GPU named twice,
/// or a UUID prefix of several GPUs, makes the whole list empty. Notes say where and why the list ended.
/// Also says whether the GPUs were chosen by index.
fn cuda_list(env: &str, visible: &[GpuRef], notes: &mut Vec<String>) -> (Vec<GpuRef>, bool) {
    let mut chosen: Vec<GpuRef> = Vec::new();
    if env.contains('\u{FFFD}') {
        notes.push(format!(
            "CUDA_VISIBLE_DEVICES is not valid UTF-8 ({env:?}): the entry with the bad bytes is invalid"
        ));
    }
    let first = env.trim_start();
    let kind = if first.starts_with("GPU-") {
        "GPU-"
    } else if first.starts_with("MIG-") {
        "MIG-"
    } else {
        ""
    };
    let end = |item: &str, why: String, notes: &mut Vec<String>| {
        notes.push(format!(
            "CUDA_VISIBLE_DEVICES={env:?}: entry {item:?} {why}; like CUDA, the list ends there"
        ));
    };
    for item in env.split(',').map(str::trim) {
        let found: Result<&GpuRef, String> = if kind.is_empty() {
            match strtoul(item) {
                None => Err("is not a device index".into()),
                Some(i) => visible
                    .iter()
                    .find(|g| g.index == i)
                    .ok_or_else(|| format!("names no GPU (there is no GPU {i})")),
            }
        } else if !item.starts_with(kind) {
            Err(format!("is not a {kind} entry like the first"))
        } else if let Some(parent) = legacy_mig_parent(item) {
            unique_prefix(visible, parent)
        } else if kind == "MIG-" {
            Err("is a MIG instance UUID, whose GPU cannot be told from the GPU list".into())
        } else {
            match unique_prefix(visible, item) {
                Err(e) if e.contains("several") => {
                    notes.push(format!(
                        "CUDA_VISIBLE_DEVICES={env:?}: {e}; CUDA then sees no GPU at all"
                    ));
                    return (Vec::new(), false);
                }
                other => other,
            }
        };
        match found {
            // MIG instances of one GPU are that GPU, once.
            Ok(g) if kind == "MIG-" && chosen.iter().any(|c| c.index == g.index) => {}
            Ok(g) if chosen.iter().any(|c| c.index == g.index) => {
                notes.push(format!(
                    "CUDA_VISIBLE_DEVICES={env:?}: entry {item:?} names GPU {} again; CUDA then sees no GPU at all",
                    g.index
                ));
                return (Vec::new(), kind.is_empty());
            }
            Ok(g) => chosen.push(g.clone()),
            Err(why) => {
                if !item.is_empty() || chosen.is_empty() {
                    end(item, why, notes);
                }
                break;
            }
        }
    }
    let by_index = kind.is_empty() && !chosen.is_empty();
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
        // Indices are read like strtoul: `1gpu2` is 1; a UUID in an index list ends it.
        let (g, _) = resolve(
            &sel,
            &gpus(),
            Some("1gpu2, 2,GPU-aaaa,0"),
            Some("PCI_BUS_ID"),
        )
        .expect("strtoul");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![1, 2]);
        // A UUID list: a unique prefix counts, an index ends it.
        let (g, notes) =
            resolve(&sel, &gpus(), Some("GPU-bbbb-3,GPU-aaaa,1"), None).expect("uuids");
        assert_eq!(g.iter().map(|g| g.index).collect::<Vec<_>>(), vec![2, 0]);
        assert!(notes[0].contains("not a GPU- entry"), "{notes:?}");
        // A prefix of two UUIDs, or a GPU named twice: CUDA sees no GPU at all.
        for env in ["GPU-aaaa,GPU-bbbb", "1,0,1"] {
            let err = resolve(&sel, &gpus(), Some(env), Some("PCI_BUS_ID")).expect_err(env);
            assert!(
                err.to_string().contains("no GPU visible to CUDA"),
                "{env}: {err}"
            );
        }
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
