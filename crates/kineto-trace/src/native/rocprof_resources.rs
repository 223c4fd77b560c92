//! A rocprofv3 kernel dispatch's registers and LDS: one rule for every form rocprofv3 writes (JSON,
//! CSV, Perfetto), so that one run reads alike whichever form it was written in.
//!
//! The model's [`GpuOpDetail::registers`] is the kernel's **architected VGPR count** (its code object's
//! kernel descriptor, per work-item: rocprofiler-sdk's kernel symbol `arch_vgpr_count`), and
//! [`GpuOpDetail::shared_memory`] the **dispatch's group segment size** (LDS bytes per workgroup, the
//! static and dynamic together, as the dispatch packet asked: `dispatch_info.group_segment_size`).
//! These are the values rocprofiler-sdk's Perfetto writer annotates (`source/lib/output/
//! generatePerfetto.cpp`, rocm-systems `projects/rocprofiler-sdk`: `"VGPR_Count", sym->arch_vgpr_count`,
//! `"LDS_Block_Size", info.group_segment_size`). Where each form has them:
//!
//! | form | registers | shared memory |
//! |---|---|---|
//! | JSON | `kernel_symbols[].arch_vgpr_count` (newer releases) | `dispatch_info.group_segment_size` |
//! | CSV, early (`Private_Segment_Size`, `Group_Segment_Size`) | — | `Group_Segment_Size` |
//! | CSV, later (`LDS_Block_Size`, `VGPR_Count`, …) | `VGPR_Count` | — (see below) |
//! | CSV from `rocpd` (a `Guid` column) | `Vgpr_Count` | `Lds_Block_Size` |
//! | Perfetto | annotation `VGPR_Count` | annotation `LDS_Block_Size` |
//!
//! rocprofv3's own later CSV (`generateCSV.cpp`) writes as `LDS_Block_Size` the kernel *symbol's*
//! static group segment rounded up to 512 bytes (`(group_segment_size + 511) & ~511`): not the
//! dispatch's (a kernel's dynamic LDS is not in it, and the rounding is the allocation's), so it is not
//! read. `rocpd`'s CSV export (`source/lib/python/rocpd/csv.py`: `lds_size AS Lds_Block_Size`, the
//! `kernels` view's `K.group_segment_size`) writes the dispatch's under the same folded name; it is
//! told by its `Guid` column. `Accum_VGPR_Count` and the per-wave `SGPR_Count` are not registers per
//! thread in the model's sense, and `Scratch_Size`/`Private_Segment_Size` not shared memory: none is
//! read.
//!
//! What it is not: the reading of each form (`super::rocprof_json`, `super::rocprof_csv`, the
//! `kineto-perfetto` crate), which hand their values here.

use crate::model::GpuOpDetail;

/// The Perfetto debug annotation of a kernel dispatch slice holding its architected VGPR count.
pub const PERFETTO_VGPR_COUNT: &[u8] = b"VGPR_Count";
/// The Perfetto debug annotation of a kernel dispatch slice holding its dispatch's group segment size.
pub const PERFETTO_LDS_BYTES: &[u8] = b"LDS_Block_Size";

/// A kernel dispatch's registers and LDS as a rocprofv3 file gives them, each `None` where the file
/// does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel's architected VGPRs per work-item (`arch_vgpr_count`).
    pub arch_vgprs: Option<u32>,
    /// The dispatch's group segment (LDS) bytes per workgroup (`dispatch_info.group_segment_size`).
    pub group_segment_bytes: Option<u32>,
}

impl KernelResources {
    /// Sets the op's registers and shared memory to these (`None` where the file gives none).
    pub fn set_on(self, detail: &mut GpuOpDetail) {
        detail.registers = self.arch_vgprs;
        detail.shared_memory = self.group_segment_bytes;
    }
}

/// The kernel-trace CSV columns (folded: lower case, letters and digits) that hold
/// [`KernelResources`]' values, by the header `has`: `(registers, shared memory)`.
pub(crate) fn csv_columns(
    has: impl Fn(&str) -> bool,
) -> (Option<&'static str>, Option<&'static str>) {
    let registers = has("vgprcount").then_some("vgprcount");
    let shared = if has("groupsegmentsize") {
        Some("groupsegmentsize")
    } else if has("ldsblocksize") && has("guid") {
        Some("ldsblocksize")
    } else {
        None
    };
    (registers, shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(header: &[&str]) -> (Option<&'static str>, Option<&'static str>) {
        csv_columns(|c| header.contains(&c))
    }

    #[test]
    fn each_csv_generation_names_its_columns_of_the_dispatch_values() {
        // Early rocprofv3: the dispatch's group segment, no VGPR count.
        let early = ["privatesegmentsize", "groupsegmentsize", "gridsizex"];
        assert_eq!(columns(&early), (None, Some("groupsegmentsize")));
        // Later rocprofv3: the symbol's static LDS rounded to 512 bytes, not read; VGPR_Count read.
        let later = [
            "ldsblocksize",
            "scratchsize",
            "vgprcount",
            "accumvgprcount",
            "sgprcount",
        ];
        assert_eq!(columns(&later), (Some("vgprcount"), None));
        // rocpd's export: the dispatch's group segment as Lds_Block_Size.
        let rocpd = [
            "guid",
            "ldsblocksize",
            "scratchsize",
            "vgprcount",
            "accumvgprcount",
        ];
        assert_eq!(columns(&rocpd), (Some("vgprcount"), Some("ldsblocksize")));
        assert_eq!(columns(&["kernelname"]), (None, None));
    }

    #[test]
    fn only_the_values_given_are_set() {
        let mut d = GpuOpDetail::default();
        KernelResources {
            arch_vgprs: Some(128),
            group_segment_bytes: None,
        }
        .set_on(&mut d);
        assert_eq!((d.registers, d.shared_memory), (Some(128), None));
        KernelResources::default().set_on(&mut d);
        assert_eq!((d.registers, d.shared_memory), (None, None));
    }
}
