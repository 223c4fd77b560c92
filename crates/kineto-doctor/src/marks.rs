//! Where the reported findings lie in one step: the time ranges each occupies there, for the report's
//! timeline. Each interval rule's ranges come from the very classification its time at stake is summed
//! from (`gaps::classify`, `gaps::boundaries`, `work::short_eager`, `work::lone_copies`, `work::simt_gemms`, `work::peer_waits`,
//! `kineto_trace::budget::exposed_comm`), so that over all steps Σ of a finding's marks = its time at
//! stake, exactly; the step-level rules mark the step's window.

use crate::{Finding, FindingId, Mark, Thresholds, TraceInput, gaps, work};
use std::collections::BTreeSet;

pub(crate) fn of_step(
    t: &TraceInput<'_>,
    step: usize,
    findings: &[Finding],
    th: &Thresholds,
) -> Vec<Mark> {
    let (Some(s), Some(b)) = (t.analysis.steps.steps.get(step), t.budgets.get(step)) else {
        return Vec::new();
    };
    let ids: BTreeSet<FindingId> = findings
        .iter()
        .filter(|f| f.file == t.file && f.steps.contains(&step))
        .map(|f| f.id)
        .collect();
    let mut out = Vec::new();
    let mut push = |id: FindingId, iv: &mut dyn Iterator<Item = (i64, i64)>| {
        out.extend(
            iv.filter(|(lo, hi)| hi > lo)
                .map(|(lo_ns, hi_ns)| Mark { id, lo_ns, hi_ns }),
        );
    };
    let tr = t.trace;
    if ids.contains(&FindingId::LaunchBoundIdle) || ids.contains(&FindingId::SyncBlockedIdle) {
        let calls = gaps::Calls::blocking(t);
        let classified = gaps::classify(t, &calls, b);
        for (id, part) in [
            (FindingId::LaunchBoundIdle, 0usize),
            (FindingId::SyncBlockedIdle, 1),
        ] {
            if ids.contains(&id) {
                push(
                    id,
                    &mut classified.iter().flat_map(|g| {
                        if part == 0 {
                            g.launch_bound.iter().copied()
                        } else {
                            g.synced.iter().copied()
                        }
                    }),
                );
            }
        }
    }
    for &id in &ids {
        match id {
            FindingId::LaunchBoundIdle | FindingId::SyncBlockedIdle => {}
            FindingId::BetweenSteps => push(
                id,
                &mut gaps::boundaries(t)
                    .into_iter()
                    .filter(|x| x.after == step)
                    .flat_map(|x| x.idle),
            ),
            FindingId::ExposedComm => push(
                id,
                &mut kineto_trace::budget::exposed_comm(tr, s, &t.analysis.classes, t.rules)
                    .into_iter(),
            ),
            FindingId::ShortKernels => push(
                id,
                &mut work::short_eager(t, th, s).1.into_iter().map({
                    let mut kernels = tr.kernels.reader();
                    move |k| {
                        let op = kernels.row(k as usize);
                        (op.ts_ns, op.end_ns())
                    }
                }),
            ),
            FindingId::CopiesInStep => push(id, &mut work::lone_copies(t, s).1.into_iter()),
            FindingId::CollectiveWait => {
                let medians = work::comm_medians(t);
                push(
                    id,
                    &mut work::peer_waits(t, th, s, &medians)
                        .into_iter()
                        .map(|(_, a, z)| (a, z)),
                )
            }
            FindingId::SimtGemm => push(
                id,
                &mut work::simt_gemms(t, s).into_iter().map({
                    let mut kernels = tr.kernels.reader();
                    move |k| {
                        let op = kernels.row(k as usize);
                        (op.ts_ns, op.end_ns())
                    }
                }),
            ),
            FindingId::Straggler
            | FindingId::EagerSteps
            | FindingId::BelowRoofline
            | FindingId::UnsteadySteps => push(id, &mut b.window.into_iter()),
        }
    }
    out.sort_by_key(|m| (m.id, m.lo_ns, m.hi_ns));
    out
}
