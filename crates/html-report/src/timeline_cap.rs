//! Which of a step's ops a timeline page holds: at most [`OPS_CAP`], the longest, so that a step of 500 000
//! kernels makes a page of a few MB instead of 172 MB (and the tool that builds it does not hold every op's
//! row in memory).
//!
//! Why the longest: a timeline is read for where the step's time goes — which ops cover it, on which stream,
//! with which gaps between them. The longest ops cover most of the busy time; a step with more than
//! [`OPS_CAP`] ops is one of many tiny ones (launch-bound kernels, each a few µs), and what the page cannot
//! show of them one by one is their count and their time, which it states ([`OpsCut`]). An even sample would
//! drop long ops as readily as short ones. The idle gaps are the budget's, computed from every op, so the
//! shading stays exact; the budget, top and findings sections count every op too.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::timeline::Mark;

/// At most this many ops of a step are drawn on (and embedded in) a page: about 350 bytes each in the page's
/// JSON with a typical C++ kernel name, so the ops take some 7 MB at most; drawn as at most
/// [`crate::timeline::DRAW_CAP`] bars.
pub const OPS_CAP: usize = 20_000;

/// The ops of a step left off its timeline: how many, the longest of them and their time in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OpsCut {
    /// How many.
    pub count: usize,
    /// The longest of them, ns: every op drawn is at least this long.
    pub longest_ns: i64,
    /// Their durations summed, ns.
    pub total_ns: i64,
}

impl OpsCut {
    /// The cut as the page's timeline entry holds it (`ops_cut`).
    pub fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A cut read back from a timeline entry's `ops_cut`.
    pub(crate) fn from_json(v: &Value) -> Option<OpsCut> {
        Some(OpsCut {
            count: usize::try_from(v.get("count")?.as_u64()?).ok()?,
            longest_ns: v.get("longest_ns")?.as_i64()?,
            total_ns: v.get("total_ns")?.as_i64()?,
        })
    }

    /// Two cuts as one: ops left off by the tool, then by the page.
    pub(crate) fn and(self, more: OpsCut) -> OpsCut {
        OpsCut {
            count: self.count + more.count,
            longest_ns: self.longest_ns.max(more.longest_ns),
            total_ns: self.total_ns.saturating_add(more.total_ns),
        }
    }
}

/// Which of a step's ops (their durations, ns, in their order) a page holds: every one when they are at most
/// `cap`, else the `cap` longest (of equal ones, the earlier); `keep[i]` says whether op `i` is held, and
/// the cut says what was left off.
///
/// ```
/// use html_report::timeline_cap::{ops_to_draw, OpsCut};
/// let (keep, cut) = ops_to_draw(&[5, 1, 9, 1, 7], 3);
/// assert_eq!(keep, [true, false, true, false, true]);
/// assert_eq!(cut, Some(OpsCut { count: 2, longest_ns: 1, total_ns: 2 }));
/// ```
pub fn ops_to_draw(durations_ns: &[i64], cap: usize) -> (Vec<bool>, Option<OpsCut>) {
    let n = durations_ns.len();
    if n <= cap {
        return (vec![true; n], None);
    }
    let mut order: Vec<usize> = (0..n).collect();
    // Longest first, the earlier of equal ones first: the cap's first `cap` are kept.
    order.select_nth_unstable_by_key(cap, |&i| (std::cmp::Reverse(durations_ns[i]), i));
    let mut keep = vec![false; n];
    for &i in &order[..cap] {
        keep[i] = true;
    }
    let left = order[cap..].iter().map(|&i| durations_ns[i].max(0));
    let cut = OpsCut {
        count: n - cap,
        longest_ns: left.clone().max().unwrap_or(0),
        total_ns: left.fold(0i64, i64::saturating_add),
    };
    (keep, Some(cut))
}

/// The ops a page draws, at most [`OPS_CAP`] ([`ops_to_draw`]), and what was left off: by the tool that
/// built the timeline entry `t` (its `ops_cut`) and here.
pub(crate) fn held_ops<'v>(t: &Value, ops: &'v [Value]) -> (Vec<&'v Value>, Option<OpsCut>) {
    let by_tool = t.get("ops_cut").and_then(OpsCut::from_json);
    let durations: Vec<i64> = ops
        .iter()
        .map(|o| o.get("dur_ns").and_then(Value::as_i64).unwrap_or(0))
        .collect();
    let (keep, here) = ops_to_draw(&durations, OPS_CAP);
    let cut = match (by_tool, here) {
        (Some(a), Some(b)) => Some(a.and(b)),
        (a, b) => a.or(b),
    };
    (held(ops, keep), cut)
}

/// The items whose `keep` ([`ops_to_draw`]'s) is true, in their order.
pub(crate) fn held<T>(items: &[T], keep: Vec<bool>) -> Vec<&T> {
    items
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(x, _)| x)
        .collect()
}

/// Of each trace's marks (by `file`), the `cap` widest (of equal ones, the earlier), in their order, and
/// how many were left off.
pub(crate) fn widest_marks(marks: &[Mark], cap: usize) -> (Vec<&Mark>, usize) {
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in marks.iter().enumerate() {
        by_file.entry(m.file.as_str()).or_default().push(i);
    }
    let mut keep = vec![false; marks.len()];
    let mut left_off = 0;
    for ix in by_file.values() {
        let widths: Vec<i64> = ix
            .iter()
            .map(|&i| marks[i].hi_ns - marks[i].lo_ns)
            .collect();
        let (k, cut) = ops_to_draw(&widths, cap);
        left_off += cut.map_or(0, |c| c.count);
        for (&i, k) in ix.iter().zip(k) {
            keep[i] = k;
        }
    }
    (held(marks, keep), left_off)
}

/// The statement's sentence on a cut: how many of the step's ops are drawn, and what was left off.
pub(crate) fn cut_note(cut: &OpsCut, drawn: usize) -> String {
    let us = |ns: i64| crate::page::fmt_num(ns as f64 / 1000.0);
    format!(
        " Only the {drawn} longest of the step's {} ops are drawn (a page holds at most {OPS_CAP}): the {} left off last at most {} µs each, {} µs in all; the idle gaps, budget and top count every op.",
        drawn + cut.count,
        cut.count,
        us(cut.longest_ns),
        us(cut.total_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_are_kept_and_the_cut_is_summed() {
        // Durations 0..10 ns, cap 4: 9, 8, 7, 6 kept; 0 + 1 + … + 5 = 15 ns left off, the longest 5.
        let d: Vec<i64> = (0..10).collect();
        let (keep, cut) = ops_to_draw(&d, 4);
        let kept: Vec<i64> = d
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(d, _)| *d)
            .collect();
        assert_eq!(kept, [6, 7, 8, 9]);
        assert_eq!(
            cut,
            Some(OpsCut {
                count: 6,
                longest_ns: 5,
                total_ns: 15
            })
        );
        // Ties: the earlier ones.
        let (keep, _) = ops_to_draw(&[3, 3, 3, 3], 2);
        assert_eq!(keep, [true, true, false, false]);
        // At the cap: all, nothing cut.
        assert_eq!(ops_to_draw(&[1, 2], 2), (vec![true, true], None));
        let back = OpsCut::from_json(&cut.expect("a cut").json());
        assert_eq!(back, cut);
    }

    #[test]
    fn the_widest_marks_of_each_trace_are_held() {
        let m = |file: &str, lo: i64, hi: i64| Mark {
            file: file.to_owned(),
            finding: "f".to_owned(),
            lo_ns: lo,
            hi_ns: hi,
            label: String::new(),
        };
        // Trace a: widths 1, 5, 3 → 5 and 3 held; trace b: width 2, held (a cap of 2 each).
        let marks = [m("a", 0, 1), m("b", 0, 2), m("a", 10, 15), m("a", 20, 23)];
        let (held, left_off) = widest_marks(&marks, 2);
        assert_eq!(held, [&marks[1], &marks[2], &marks[3]]);
        assert_eq!(left_off, 1);
    }
}
