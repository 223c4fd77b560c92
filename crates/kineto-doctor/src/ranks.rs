//! Stragglers: per rank, Σ over the steps paired across ranks (as `kineto ranks` pairs them,
//! `kineto_trace::analysis::step_key`) of its span above the median rank's span.

use crate::gaps::finding;
use crate::{Finding, FindingId, TraceInput, twice_median, us};
use kineto_trace::analysis::step_key;
use std::collections::BTreeMap;

pub(crate) fn find(inputs: &[TraceInput<'_>]) -> Vec<Finding> {
    if inputs.len() < 2 {
        return Vec::new();
    }
    // Step key → (input, step index, span), in the order keys first appear.
    let mut order: Vec<String> = Vec::new();
    let mut by_key: BTreeMap<String, Vec<(usize, usize, i64)>> = BTreeMap::new();
    for (r, t) in inputs.iter().enumerate() {
        for (pos, s) in t.analysis.steps.steps.iter().enumerate() {
            let key = step_key(s.number, pos);
            let e = by_key.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                Vec::new()
            });
            e.push((r, s.index, t.budgets[s.index].span_ns));
        }
    }
    // Per input: Σ excess, steps, and (excess, step index, span, median×2) of its worst step.
    type Worst = (i64, usize, i64, i128);
    let mut excess: Vec<(i64, Vec<usize>, Option<Worst>, u64)> =
        vec![(0, Vec::new(), None, 0); inputs.len()];
    for key in &order {
        let v = &by_key[key];
        if v.len() < 2 {
            continue;
        }
        let mut spans: Vec<i64> = v.iter().map(|x| x.2).collect();
        let m2 = twice_median(&mut spans);
        for &(r, step, span) in v {
            let over = (2 * i128::from(span) - m2) / 2;
            let e = &mut excess[r];
            e.3 += 1;
            if over > 0 {
                let over = i64::try_from(over).unwrap_or(i64::MAX);
                e.0 = e.0.saturating_add(over);
                e.1.push(step);
                if e.2.as_ref().is_none_or(|w| over > w.0) {
                    e.2 = Some((over, step, span, m2));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (r, (total, steps, worst, paired)) in excess.into_iter().enumerate() {
        let Some((w, step, span, m2)) = worst else {
            continue;
        };
        let t = &inputs[r];
        // The step as every listing numbers it (the `step` column: its index in this trace), with the
        // marker's name that pairs it across ranks.
        let evidence = format!(
            "rank {} is slower than the median rank in {} of {paired} paired steps, Σ {} µs over; \
             worst step {step} `{}`: {} µs vs median {:.3} µs (+{} µs)",
            t.rank_label(),
            steps.len(),
            us(total),
            t.analysis.steps.steps[step].name,
            us(span),
            m2 as f64 / 2000.0,
            us(w),
        );
        let mut f = finding(t, FindingId::Straggler, total, steps, evidence);
        f.share_pct = crate::share(total, t.analysed_span_ns());
        out.push(f);
    }
    out
}
