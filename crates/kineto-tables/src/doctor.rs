//! `doctor`: the findings of `kineto doctor`, most time at stake first, then the trust warnings
//! (`kineto-doctor`'s rules; `docs/doctor.md` states each).

use crate::{Col, col};
use kineto_doctor::{Finding, NO_FIX, TrustWarning, rule};

/// Evidence as people read it: each backticked name that is a kernel's signature (it has a template
/// argument list or a parameter list) shortened the way people say it —
/// `kineto_trace::template::display_name`: no return type, no parameters, template arguments folded to
/// `<…>`. Copies and fills (`Memcpy …`, `Memset …`) and other names stay whole. The one home of the
/// shortening for the text form and the page; the full evidence stays in `--json` and `--csv`.
pub fn evidence_display(evidence: &str) -> String {
    evidence
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            let name = i % 2 == 1;
            let signature = (part.contains('<') || part.ends_with(')'))
                && !part.starts_with("Memcpy")
                && !part.starts_with("Memset");
            if name && signature {
                kineto_trace::template::display_name(part).into_owned()
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// A finding or a trust warning.
#[derive(Clone, Copy)]
pub enum DoctorEntry<'a> {
    /// A ranked finding.
    Finding(&'a Finding),
    /// A trust warning (not ranked).
    Trust(&'a TrustWarning),
}

/// One row of `doctor`.
pub struct DoctorRow<'a> {
    /// What it is.
    pub entry: DoctorEntry<'a>,
    /// The command to drill down with (the binary names its own commands).
    pub next: String,
}

impl DoctorRow<'_> {
    fn steps(&self) -> &[usize] {
        match self.entry {
            DoctorEntry::Finding(f) => &f.steps,
            DoctorEntry::Trust(w) => &w.steps,
        }
    }
}

/// Step indices as runs: `0-3,5,9-10`.
pub fn step_runs(steps: &[usize]) -> String {
    let mut v = steps.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// The columns of `doctor`.
#[rustfmt::skip]
pub fn doctor_columns<'a>() -> &'a [Col<DoctorRow<'a>>] {
    &[
        col!("kind", Str, None, "`finding` (ranked by time at stake) or `trust` (a warning about the numbers, not ranked)", |r| match r.entry { DoctorEntry::Finding(_) => "finding", DoctorEntry::Trust(_) => "trust" }),
        col!("finding", Str, None, "the stable id of the finding or warning (`launch_bound_idle`, `exposed_comm`, …; docs/doctor.md)", |r| match r.entry { DoctorEntry::Finding(f) => f.id.as_str(), DoctorEntry::Trust(w) => w.id.as_str() }),
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none)", |r| match r.entry { DoctorEntry::Finding(f) => f.rank, DoctorEntry::Trust(w) => w.rank }),
        col!("origin", Str?, None, "where the time at stake comes from: MEASURED, or ESTIMATED for `below_roofline` (null for trust warnings)", |r| match r.entry { DoctorEntry::Finding(f) => Some(f.origin.as_str()), DoctorEntry::Trust(_) => None }),
        col!("time_at_stake_ns", I64?, Ns, "the time the pattern occupies, an upper bound on what fixing it recovers (null for trust warnings)", |r| match r.entry { DoctorEntry::Finding(f) => Some(f.time_at_stake_ns), DoctorEntry::Trust(_) => None }),
        col!("share_pct", F64?, Pct, "time at stake over the trace's analysed GPU span (first to last GPU work of its steps)", |r| match r.entry { DoctorEntry::Finding(f) => Some(f.share_pct), DoctorEntry::Trust(_) => None }),
        col!("steps", U64, None, "how many steps it occurs in (0 for a warning about the whole trace)", |r| r.steps().len() as u64),
        col!("step_list", Str, None, "those steps' indices, as runs (`0-3,5`)", |r| step_runs(r.steps())),
        col!("evidence", Str, None, "the numbers behind it and the top contributing kernels, gaps or calls", |r| match r.entry { DoctorEntry::Finding(f) => f.evidence.as_str(), DoctorEntry::Trust(w) => w.evidence.as_str() }),
        col!("rule", Str, None, "what the rule measures (docs/doctor.md gives its threshold and reasoning)", |r| match r.entry { DoctorEntry::Finding(f) => rule(f.id).what, DoctorEntry::Trust(w) => w.id.what() }),
        col!("fix", Str?, None, "the change to make, from the fix catalogue by the framework, server and GPU the trace shows (`no catalogued fix` where none applies; null for trust warnings)", |r| match r.entry { DoctorEntry::Finding(f) => Some(f.fix.map_or(NO_FIX, |x| x.change)), DoctorEntry::Trust(_) => None }),
        col!("fix_source", Str?, None, "where the framework documents the fix (null: no catalogued fix, or a trust warning)", |r| match r.entry { DoctorEntry::Finding(f) => f.fix.map(|x| x.source), DoctorEntry::Trust(_) => None }),
        col!("next", Str, None, "the command that shows the rows behind it", |r| r.next.as_str()),
        col!("file", Str, None, "the trace file as given (for `straggler`, the straggling rank's)", |r| match r.entry { DoctorEntry::Finding(f) => f.file.as_str(), DoctorEntry::Trust(w) => w.file.as_str() }),
    ]
}

#[cfg(test)]
mod tests {
    use super::evidence_display;

    #[test]
    fn kernel_signatures_in_evidence_are_shortened_and_other_names_kept() {
        let e = "resumed with: `void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, float)` ×3 9.000 µs, \
                 `Memcpy DtoD (Device -> Device)` ×2 1.000 µs, `ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)` ×1, \
                 `model.py(12): forward` 10 %, `a < b`";
        assert_eq!(
            evidence_display(e),
            "resumed with: `at::native::vectorized_elementwise_kernel<…>` ×3 9.000 µs, \
             `Memcpy DtoD (Device -> Device)` ×2 1.000 µs, `ncclKernel_AllReduce_RING_LL_Sum_float` ×1, \
             `model.py(12): forward` 10 %, `a < b`"
        );
    }
}
