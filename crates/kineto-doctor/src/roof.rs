//! Below the roofline (ESTIMATED): steps whose span is far above the time the GPU's binding roof allows
//! for the model's bytes and FLOPs (`roofline`'s estimate); the time at stake is the span above it.

use crate::gaps::finding;
use crate::{Finding, FindingId, Roofs, Thresholds, TraceInput, us};

/// The time the roofs allow for a step, ns: the longer of bytes at the GPU's bandwidth and FLOPs at its
/// peak (GB/s is bytes per ns; TFLOP/s × 10³ is FLOPs per ns). `None` when a term is unknown.
fn roof_ns(s: &roofline::StepRoofline) -> Option<f64> {
    let r = s.rates.as_ref()?;
    let bytes = s.estimate.bytes.total()?;
    let flops = s.estimate.flops.total()?;
    let mem = bytes / r.peak_gbps;
    let compute = r.peak_tflops.map_or(0.0, |p| flops / (p * 1e3));
    Some(mem.max(compute))
}

pub(crate) fn find(t: &TraceInput<'_>, r: Roofs<'_>, th: &Thresholds, out: &mut Vec<Finding>) {
    let (mut total, mut steps, mut rated) = (0i64, Vec::new(), 0usize);
    let mut worst: Option<(f64, usize, i64, f64)> = None;
    for s in r.steps {
        // A step left out as a profiler-window artefact has no window in the budgets read here.
        if t.budgets.get(s.index).is_none_or(|b| b.window.is_none()) {
            continue;
        }
        let Some(roof) = roof_ns(s) else {
            continue;
        };
        if s.span_ns <= 0 {
            continue;
        }
        rated += 1;
        let efficiency = 100.0 * roof / s.span_ns as f64;
        if efficiency >= th.roof_efficiency_pct {
            continue;
        }
        let excess = (s.span_ns as f64 - roof).floor() as i64;
        total = total.saturating_add(excess);
        steps.push(s.index);
        if worst.is_none_or(|w| efficiency < w.0) {
            worst = Some((efficiency, s.index, s.span_ns, roof));
        }
    }
    let Some((eff, i, span, roof)) = worst else {
        return;
    };
    let bound = r
        .steps
        .iter()
        .find(|s| s.index == i)
        .and_then(|s| s.rates.as_ref());
    let evidence = format!(
        "{} of {rated} steps with known bytes and FLOPs reach under {:.0} % of the binding roof on {}; \
         worst step {i}: {:.1} % ({} roof), span {} µs vs {} µs the roof allows",
        steps.len(),
        th.roof_efficiency_pct,
        r.gpu,
        eff,
        bound.map_or("unknown", |b| b.bound.as_str()),
        us(span),
        us(roof.ceil() as i64),
    );
    out.push(finding(t, FindingId::BelowRoofline, total, steps, evidence));
}
