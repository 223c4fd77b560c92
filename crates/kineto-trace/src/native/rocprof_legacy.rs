//! The legacy rocprof's (v1/v2, `results.json`) own rules, for the Chrome-array reader
//! ([`super::chrome`]): what its process names say a pid holds, how its writer classes an op, and what
//! may follow its event array.
//!
//! What it is not: the reading of the events (`super::chrome`), which asks these rules.

use crate::model::GpuKind;

/// A GPU op of the legacy rocprof, or one of its barrier packets (counted, not GPU work).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum RocprofOp {
    Gpu(GpuKind),
    Barrier,
}

/// What the legacy rocprof's process names say a pid holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum RocprofPid {
    /// `GPU<n>`: the kernels (and, as its writer places them, the barrier packets) of device n.
    Kernels(i64),
    Copies,
    Barriers,
}

/// A process name as the legacy rocprof writes it: `GPU0`, `COPY`, `GPU Barriers0`, or, from
/// writers before 2022, the same after the section's index (`3 GPU0`, `1 COPY`).
pub(super) fn rocprof_pid(process: &str) -> Option<RocprofPid> {
    let p = process.trim();
    let p = match p.split_once(' ') {
        Some((index, rest)) if index.bytes().all(|b| b.is_ascii_digit()) => rest.trim(),
        _ => p,
    };
    if p == "COPY" {
        Some(RocprofPid::Copies)
    } else if p.starts_with("GPU Barriers") {
        Some(RocprofPid::Barriers)
    } else {
        p.strip_prefix("GPU")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
            .map(RocprofPid::Kernels)
    }
}

/// What the legacy rocprof's writer made of an op, by its own rules (rocprofiler's `tblextr.py`): the
/// process it is on says first (`GPU<n>`: kernels, `COPY`: copies, `GPU Barriers<n>`); elsewhere (its
/// writers of 2023 put copies on the OS process) a name matching `Memcpy|Copy|Fill` in a row that
/// carries a device is a copy (a fill when it says `Fill`), `async-copy` an HSA copy, and any other row
/// with a device a kernel. Barrier packets are named `<barrier packet>` on any process. `None`: not a
/// GPU op (an API call, a roctx range).
pub(super) fn rocprof_role(
    pid: Option<RocprofPid>,
    name: &str,
    on_device: bool,
) -> Option<RocprofOp> {
    let copy = || {
        RocprofOp::Gpu(if name.contains("Fill") {
            GpuKind::Memset
        } else {
            GpuKind::Memcpy
        })
    };
    match pid {
        _ if name == "<barrier packet>" => Some(RocprofOp::Barrier),
        Some(RocprofPid::Barriers) => Some(RocprofOp::Barrier),
        Some(RocprofPid::Copies) => Some(copy()),
        Some(RocprofPid::Kernels(_)) => Some(RocprofOp::Gpu(GpuKind::Kernel)),
        None if name == "async-copy" => Some(copy()),
        None if on_device && ["Memcpy", "Copy", "Fill"].iter().any(|w| name.contains(w)) => {
            Some(copy())
        }
        None if on_device => Some(RocprofOp::Gpu(GpuKind::Kernel)),
        None => None,
    }
}

/// Why the text after the legacy rocprof's event array is not the rest of its object.
pub(super) enum Tail {
    /// It ends before the object does.
    Cut,
    /// Not JSON, or not the object's rest: the offset within the tail, and why.
    Bad(usize, String),
}

/// What may follow the legacy rocprof's event array: the rest of its object (`, "otherData": {…} }`),
/// checked as JSON.
pub(super) fn object_tail(tail: &[u8]) -> std::result::Result<(), Tail> {
    match tail.first() {
        Some(b'}') => {
            let rest = tail[1..].iter().position(|b| !b.is_ascii_whitespace());
            match rest {
                None => Ok(()),
                Some(i) => Err(Tail::Bad(
                    i + 1,
                    "text after the end of the trace object".into(),
                )),
            }
        }
        Some(b',') => {
            let mut obj = Vec::with_capacity(tail.len());
            obj.push(b'{');
            obj.extend_from_slice(&tail[1..]);
            // `obj` has `tail`'s bytes at the same offsets, so serde's line and column give the byte.
            serde_json::from_slice::<serde::de::IgnoredAny>(&obj)
                .map(|_| ())
                .map_err(|e| {
                    if super::is_cut_json(&e, &obj) {
                        return Tail::Cut;
                    }
                    let line_start = tail
                        .iter()
                        .enumerate()
                        .filter(|&(_, &b)| b == b'\n')
                        .nth(e.line().saturating_sub(2))
                        .map_or(0, |(i, _)| i + 1);
                    let at = if e.line() <= 1 { 0 } else { line_start };
                    Tail::Bad(
                        (at + e.column().saturating_sub(1)).min(tail.len()),
                        format!("after the event array: {e}"),
                    )
                })
        }
        None => Err(Tail::Cut),
        Some(&c) => Err(Tail::Bad(
            0,
            format!(
                "expected ',' or '}}' after the event array, found {}",
                crate::scan::show_byte(c)
            ),
        )),
    }
}
