//! One trace taken through every layer: links, steps, kernel families, budgets.

use crate::budget::{StepBudget, budget};
use crate::correlate::Links;
use crate::family::{Classes, Rules};
use crate::model::Trace;
use crate::step::{StepPattern, Steps, find_steps};
use rustc_hash::FxHashMap;

/// The analysis of one trace. Holds indices into the trace, not copies of it.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// GPU op → launch → annotations.
    pub links: Links,
    /// The steps.
    pub steps: Steps,
    /// The family of each kernel.
    pub classes: Classes,
}

/// Kernels of one name that no rule matched, over the whole trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedName {
    /// The kernel name.
    pub name: String,
    /// How many.
    pub count: u64,
    /// Σ dur, ns.
    pub sum_ns: i64,
}

impl Analysis {
    /// Links, finds steps and classifies kernels.
    pub fn new(trace: &Trace, pattern: &StepPattern, rules: &Rules) -> Analysis {
        let links = Links::build(trace);
        let steps = find_steps(trace, &links, pattern);
        let classes = rules.classify_kernels(trace);
        Analysis {
            links,
            steps,
            classes,
        }
    }

    /// The budget of every step, in step order.
    pub fn budgets(&self, trace: &Trace, rules: &Rules) -> Vec<StepBudget> {
        self.steps
            .steps
            .iter()
            .map(|s| budget(trace, s, &self.classes, rules))
            .collect()
    }

    /// The step of each kernel (index into `steps.steps`), by kernel index.
    pub fn kernel_steps(&self, trace: &Trace) -> Vec<Option<u32>> {
        let mut out = vec![None; trace.kernels.len()];
        for s in &self.steps.steps {
            for &k in &s.kernels {
                out[k as usize] = Some(s.index as u32);
            }
        }
        out
    }

    /// Unmatched kernel names over the whole trace, most time first.
    pub fn unmatched_names(&self, trace: &Trace) -> Vec<UnmatchedName> {
        let mut by: FxHashMap<crate::model::Sym, (u64, i64)> = FxHashMap::default();
        for (i, k) in trace.kernels.iter().enumerate() {
            if self.classes.of(i).is_none() {
                let e = by.entry(k.name).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(k.dur_ns);
            }
        }
        let mut v: Vec<UnmatchedName> = by
            .into_iter()
            .map(|(s, (count, sum_ns))| UnmatchedName {
                name: trace.name(s).to_string(),
                count,
                sum_ns,
            })
            .collect();
        v.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then_with(|| a.name.cmp(&b.name)));
        v
    }
}
