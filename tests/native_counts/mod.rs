//! The counts every protobuf reader's test checks against its generator script's `counts.json`
//! (`testdata/native/{xplane,perfetto}/*_counts.py`, the same keys in both): per GPU-op kind the rows
//! and their summed ns, the launches (runtime calls) and CPU ops with theirs. Included by those tests
//! (`#[path = "…/tests/native_counts/mod.rs"] mod native_counts;`) and, for the GPU ops, by
//! kineto-sqlite's counts test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{GpuKind, Trace};
use serde_json::Value;

/// The integer `k` of `v`; a panic naming both when it is not one.
pub fn int(v: &Value, k: &str) -> i64 {
    v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Kernels, copies and fills of `t` against `want`: per kind its rows (`kernels`, …) and summed ns
/// (`kernel_sum_ns`, …); `file` names the trace in failures. Also the SQLite counts' check.
pub fn assert_gpu_op_counts(t: &Trace, want: &Value, file: &str) {
    for (kind, key) in [
        (GpuKind::Kernel, "kernel"),
        (GpuKind::Memcpy, "memcpy"),
        (GpuKind::Memset, "memset"),
    ] {
        let ops = t.gpu_ops(kind);
        assert_eq!(
            ops.len() as i64,
            int(want, &format!("{key}s")),
            "{file}: {key}s"
        );
        let sum: i64 = ops.iter().map(|o| o.dur_ns).sum();
        assert_eq!(
            sum,
            int(want, &format!("{key}_sum_ns")),
            "{file}: Σ {key} ns"
        );
    }
}

/// [`assert_gpu_op_counts`], launches (`launches`, `launch_sum_ns`) and CPU ops (`cpu_ops`,
/// `cpu_op_sum_ns`) of `t` against `want`; `file` names the trace in failures.
#[allow(dead_code)] // Each including test uses one of the two checks.
pub fn assert_op_counts(t: &Trace, want: &Value, file: &str) {
    assert_gpu_op_counts(t, want, file);
    assert_eq!(
        t.launches.len() as i64,
        int(want, "launches"),
        "{file}: launches"
    );
    let launch_ns: i64 = t.launches.iter().map(|l| l.dur_ns).sum();
    assert_eq!(launch_ns, int(want, "launch_sum_ns"), "{file}: Σ launch ns");
    assert_eq!(
        t.cpu_ops.len() as i64,
        int(want, "cpu_ops"),
        "{file}: CPU ops"
    );
    let cpu_ns: i64 = t.cpu_ops.iter().map(|s| s.dur_ns).sum();
    assert_eq!(cpu_ns, int(want, "cpu_op_sum_ns"), "{file}: Σ CPU op ns");
}
