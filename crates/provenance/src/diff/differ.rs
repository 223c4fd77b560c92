//! The comparisons [`diff`](super::diff) is made of: a value, a number past its threshold, a verdict flag, a
//! per-GPU field; and the few readings of a record they need (flag state, GPU set, coverage in words).

use serde_json::Value;
use std::collections::BTreeSet;

use super::{Change, Section};
use crate::record_json::{at, during_gpus, flags, identity_gpus, num, text};

pub(super) struct Differ<'a> {
    pub(super) a: &'a Value,
    pub(super) b: &'a Value,
    pub(super) out: Vec<Change>,
    /// The part of the comparison being made: stamped on each change.
    pub(super) section: Section,
}

impl Differ<'_> {
    pub(super) fn push(&mut self, what: impl Into<String>, a: String, b: String, why: &str) {
        self.out.push(Change {
            what: what.into(),
            a,
            b,
            why: why.to_owned(),
            informational: false,
            section: self.section,
        });
    }

    /// Like [`Differ::value`], for a difference that does not count ([`Change::informational`]).
    pub(super) fn info(&mut self, what: &str, path: &[&str], why: &str) {
        if self.value(what, path, why)
            && let Some(c) = self.out.last_mut()
        {
            c.informational = true;
        }
    }

    /// Reports the value at `path` when both records have it and it differs, or when only one has it.
    pub(super) fn value(&mut self, what: &str, path: &[&str], why: &str) -> bool {
        let (x, y) = (at(self.a, path), at(self.b, path));
        if x.is_none() && y.is_none() || x == y {
            return false;
        }
        self.push(what, text(x), text(y), why);
        true
    }

    /// Reports a numeric value at `path` when both sides have it and `changed(a, b)` says the change matters.
    pub(super) fn number(
        &mut self,
        what: &str,
        path: &[&str],
        unit: &str,
        changed: impl Fn(f64, f64) -> bool,
        why: &str,
    ) {
        if let (Some(x), Some(y)) = (num(self.a, path), num(self.b, path))
            && changed(x, y)
        {
            self.push(what, format!("{x}{unit}"), format!("{y}{unit}"), why);
        }
    }

    /// Reports a verdict flag that one record raised and the other did not. A side that did not make the check
    /// (listed under `unchecked`) reads `unchecked: <reason>`, a record without a verdict (older, or the Python
    /// tool's) reads `unknown`: neither is "not flagged". A flag made on one side and not on the other, with
    /// nothing raised, is listed for information; a check made on neither side is not listed, whatever each
    /// gives as its reason (an older record's words for "no GPU backend" are not a difference).
    pub(super) fn flag(&mut self, name: &str, why: &str) {
        let (fa, fb) = (flag_state(self.a, name), flag_state(self.b, name));
        if fa == fb {
            return;
        }
        let raised = matches!(fa, FlagState::Flagged(_)) || matches!(fb, FlagState::Flagged(_));
        match (&fa, &fb) {
            _ if raised => self.push(
                format!("verdict: {name}"),
                fa.to_string(),
                fb.to_string(),
                why,
            ),
            (FlagState::Unknown, _) | (_, FlagState::Unknown) => {}
            (FlagState::Unchecked(_), FlagState::Unchecked(_)) => {}
            _ => {
                self.push(
                    format!("verdict: {name}"),
                    fa.to_string(),
                    fb.to_string(),
                    "checked on one side only: nothing was found where it was checked",
                );
                if let Some(c) = self.out.last_mut() {
                    c.informational = true;
                }
            }
        }
    }

    pub(super) fn per_gpu_identity(&mut self, field: &str, label: &str, why: &str) {
        let ga = identity_gpus(self.a);
        let gb = identity_gpus(self.b);
        for (i, x) in &ga {
            if let Some((_, y)) = gb.iter().find(|(j, _)| j == i) {
                let (vx, vy) = (at(x, &[field]), at(y, &[field]));
                if (vx.is_some() || vy.is_some()) && vx != vy {
                    self.push(format!("GPU {i} {label}"), text(vx), text(vy), why);
                }
            }
        }
    }

    pub(super) fn per_gpu_during(
        &mut self,
        path: &[&str],
        label: &str,
        unit: &str,
        changed: impl Fn(f64, f64) -> bool,
        why: &str,
    ) {
        let ga = during_gpus(self.a);
        let gb = during_gpus(self.b);
        for (i, x) in &ga {
            if let Some((_, y)) = gb.iter().find(|(j, _)| j == i)
                && let (Some(vx), Some(vy)) = (num(x, path), num(y, path))
                && changed(vx, vy)
            {
                self.push(
                    format!("GPU {i} {label}"),
                    format!("{vx}{unit}"),
                    format!("{vy}{unit}"),
                    why,
                );
            }
        }
    }
}

/// What a record says about one verdict flag.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FlagState {
    Flagged(String),
    NotFlagged,
    Unchecked(String),
    /// The record has no verdict.
    Unknown,
}

impl std::fmt::Display for FlagState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlagState::Flagged(e) => write!(f, "flagged: {e}"),
            FlagState::NotFlagged => f.write_str("not flagged"),
            FlagState::Unchecked(why) => write!(f, "unchecked: {why}"),
            FlagState::Unknown => f.write_str("unknown (no verdict recorded)"),
        }
    }
}

pub(super) fn flag_state(r: &Value, name: &str) -> FlagState {
    if at(r, &["verdict"]).is_none() {
        return FlagState::Unknown;
    }
    if let Some((_, e)) = flags(r).into_iter().find(|(f, _)| f == name) {
        return FlagState::Flagged(e);
    }
    match at(r, &["verdict", "unchecked"]) {
        Some(Value::Array(u)) => u
            .iter()
            .find(|x| x.get("check").and_then(Value::as_str) == Some(name))
            .map_or(FlagState::NotFlagged, |x| {
                FlagState::Unchecked(text(x.get("reason")))
            }),
        _ => FlagState::NotFlagged,
    }
}

/// The GPUs in use as `index name` pairs, and the set of distinct models.
pub(super) fn gpu_set(r: &Value) -> Option<(String, BTreeSet<String>)> {
    let ids = identity_gpus(r);
    if ids.is_empty() {
        let n = at(r, &["gpu_name"]).map(|n| text(Some(n)))?;
        return Some((n.clone(), BTreeSet::from([n])));
    }
    let names: Vec<(String, String)> = ids
        .iter()
        .map(|(i, g)| (i.clone(), text(at(g, &["name"]))))
        .collect();
    let models = names.iter().map(|(_, n)| n.clone()).collect();
    let listed: Vec<String> = names.iter().map(|(i, n)| format!("{i}: {n}")).collect();
    Some((listed.join(", "), models))
}

/// The monitor's coverage of the region in words, for a record whose coverage was not sufficient.
pub(super) fn coverage_words(r: &Value) -> Option<String> {
    let c = at(r, &["during", "region_coverage"])?;
    if c.get("sufficient") != Some(&Value::Bool(false)) {
        return Some("sufficient".to_owned());
    }
    let least = match c.get("gpus") {
        Some(Value::Array(g)) => g
            .iter()
            .filter_map(|x| num(x, &["fraction"]))
            .fold(None, |m: Option<f64>, f| Some(m.map_or(f, |m| m.min(f)))),
        _ => None,
    };
    let end = text(c.get("monitor_end"));
    Some(match least {
        Some(f) => format!("{:.0} % of the region, monitor {end}", f * 100.0),
        None => format!("monitor {end}"),
    })
}

pub(super) fn rel(x: f64, y: f64, r: f64) -> bool {
    let base = x.abs().max(y.abs());
    base > 0.0 && (x - y).abs() / base >= r
}

pub(super) fn gpu_uuids(r: &Value) -> Option<String> {
    let uuids: Vec<String> = identity_gpus(r)
        .iter()
        .filter_map(|(_, g)| at(g, &["uuid"]).map(|n| text(Some(n))))
        .collect();
    (!uuids.is_empty()).then(|| uuids.join(", "))
}

pub(super) fn command_end(r: &Value) -> String {
    let code = at(r, &["command", "exit_code"]).and_then(Value::as_i64);
    let signal = at(r, &["command", "signal"]);
    match (code, signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by {}", text(Some(s))),
        (None, None) if at(r, &["command", "pid"]).is_none() => "not started".to_owned(),
        (None, None) => "unknown".to_owned(),
    }
}
