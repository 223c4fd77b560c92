//! The `kineto diff` comparison: two runs' per-step budgets (`kineto budget` rows) as tables of
//! [`crate::compare_paired`], per rank and bucket.
//!
//! A rank's numbers are its step span, its idle time and each bucket's exclusive time, each with one sample
//! per step; a step without a bucket counts 0 for it (as in the budget), so a bucket's mean is over every
//! step, and a bucket one run never had is 0 in each of its steps. Ranks are matched by their rank number,
//! not their file name, since two runs' files are named differently; traces without a rank are kept apart
//! by file and matched by file name; two files of one side claiming the same rank are refused
//! (`kineto_trace::ranks`, the rule every tool follows). Nothing is dropped silently: ranks on one side only
//! are listed, and fail a gate ([`crate::MISSING_RULE`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::{Comparison, Number, Partner, Place, Samples};

/// One step of one trace's budget: the fields of a `kineto budget --json` row the comparison reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetStep {
    /// The trace file (empty when the row does not say).
    pub file: String,
    /// The trace's rank, when it has one.
    pub rank: Option<u64>,
    /// The step's name (`ProfilerStep#3`); `None`: the step is labelled by its position (`#0`).
    pub name: Option<String>,
    /// The step's phase as the step model gives it (`prefill`, `DECODE`); `None`: unphased.
    pub phase: Option<String>,
    /// The step's span, µs.
    pub span_us: Option<f64>,
    /// The step's idle time, µs.
    pub idle_us: Option<f64>,
    /// Each bucket's exclusive time, µs, in the row's order.
    pub buckets: Vec<(String, f64)>,
}

impl BudgetStep {
    /// The step of one `kineto budget --json` row. The numbers compared must be there and be numbers:
    /// `span_us`, `idle_us`, and `buckets` an object whose every bucket has a numeric `exclusive_us`; a field
    /// absent, renamed or of another type is an error naming it (issue 42: a gate that skipped string
    /// bucket values compared only span and idle and passed a 100× move). `rank` and `name` are optional
    /// (a rankless trace, a step labelled by position); `phase` is the step model's, `None` when unphased.
    pub fn from_json(row: &Value) -> Result<BudgetStep, String> {
        let number = |field: &str| -> Result<f64, String> {
            let v = row.get(field).ok_or_else(|| format!("no `{field}`"))?;
            v.as_f64()
                .ok_or_else(|| format!("`{field}` is {}, not a number", json_kind(v)))
        };
        let buckets = row
            .get("buckets")
            .ok_or("no `buckets` (the step's bucket times)")?
            .as_object()
            .ok_or("`buckets` is not an object")?
            .iter()
            .map(|(b, v)| {
                let field = format!("buckets.{b}.exclusive_us");
                match v.get("exclusive_us") {
                    None => Err(format!("no `{field}`")),
                    Some(x) => x
                        .as_f64()
                        .map(|x| (b.clone(), x))
                        .ok_or_else(|| format!("`{field}` is {}, not a number", json_kind(x))),
                }
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(BudgetStep {
            file: row
                .get("file")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            rank: row.get("rank").and_then(Value::as_u64),
            name: row.get("name").and_then(Value::as_str).map(str::to_owned),
            phase: row.get("phase").and_then(Value::as_str).map(str::to_owned),
            span_us: Some(number("span_us")?),
            idle_us: Some(number("idle_us")?),
            buckets,
        })
    }

    /// Every row of a listing, in order; an error names the first row (1-based) that cannot be read.
    pub fn listing(rows: &[Value]) -> Result<Vec<BudgetStep>, String> {
        rows.iter()
            .enumerate()
            .map(|(i, r)| BudgetStep::from_json(r).map_err(|e| format!("row {}: {e}", i + 1)))
            .collect()
    }
}

/// What a JSON value is, for an error naming a field of the wrong type.
fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(_) => "a number".to_owned(),
        Value::String(s) => format!("a string ({:?})", s.chars().take(40).collect::<String>()),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Who a budget row is: its rank, or its file when it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unit {
    Rank(u64),
    File(String),
}

impl Unit {
    fn of(step: &BudgetStep) -> Unit {
        match step.rank {
            Some(r) => Unit::Rank(r),
            None => Unit::File(step.file.clone()),
        }
    }

    fn label(&self) -> String {
        match self {
            Unit::Rank(r) => format!("rank {r}"),
            Unit::File(f) => format!("file {f}"),
        }
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Span first, idle second, then the buckets by name: the order of a rank's rows.
fn order(k: &str) -> (u8, &str) {
    match k {
        "span_us" => (0, k),
        "idle_us" => (1, k),
        _ => (2, k),
    }
}

/// Refuses two files of one side claiming the same rank.
fn check_ranks(budget: &[BudgetStep]) -> Result<(), String> {
    // Every (file, rank) pair the rows show, in order: the claims the rank rule judges.
    let mut claims: Vec<(&str, u64)> = Vec::new();
    for step in budget {
        if let Some(r) = step.rank {
            let c = (step.file.as_str(), r);
            if !claims.contains(&c) {
                claims.push(c);
            }
        }
    }
    kineto_trace::ranks::check_ranks(claims.iter().map(|&(f, r)| kineto_trace::ranks::RankClaim {
        file: std::path::Path::new(f),
        rank: Some(r),
        world_size: None,
    }))
    // The claims carry no world size, the only source of the rule's warnings.
    .map(drop)
    .map_err(|e| e.to_string())
}

/// One unit's numbers: span and idle over the steps that have them, each bucket over every step (0 where a
/// step lacks it).
fn place_of(unit: &Unit, steps: &[(String, &BudgetStep)]) -> Place {
    let mut series: BTreeMap<String, Samples> = BTreeMap::new();
    for (label, step) in steps {
        for (k, v) in [("span_us", step.span_us), ("idle_us", step.idle_us)] {
            if let Some(v) = v {
                series
                    .entry(k.to_owned())
                    .or_default()
                    .push((label.clone(), v));
            }
        }
    }
    let mut names: Vec<&String> = steps
        .iter()
        .flat_map(|(_, s)| s.buckets.iter().map(|(b, _)| b))
        .collect();
    names.sort();
    names.dedup();
    for b in names {
        let values = steps
            .iter()
            .map(|(label, step)| {
                let v = step
                    .buckets
                    .iter()
                    .find(|(n, _)| n == b)
                    .map_or(0.0, |(_, v)| *v);
                (label.clone(), v)
            })
            .collect();
        series.insert(b.clone(), values);
    }
    Place {
        label: unit.label(),
        // A bucket a rank never ran is 0 in each step it has a span for.
        steps: series
            .get("span_us")
            .map(|v| v.iter().map(|(s, _)| s.clone()).collect())
            .unwrap_or_default(),
        numbers: series
            .into_iter()
            .map(|(key, samples)| Number {
                absent_is_zero: order(&key).0 == 2,
                key,
                reported: None,
                samples,
            })
            .collect(),
    }
}

/// Per rank (or rankless file), in order of first appearance: its place. Refused when two files claim one
/// rank.
fn places(budget: &[BudgetStep]) -> Result<Vec<(Unit, Place)>, String> {
    check_ranks(budget)?;
    let mut units: Vec<(Unit, Vec<(String, &BudgetStep)>)> = Vec::new();
    for step in budget {
        let unit = Unit::of(step);
        let idx = match units.iter().position(|(u, _)| *u == unit) {
            Some(i) => i,
            None => {
                units.push((unit, Vec::new()));
                units.len() - 1
            }
        };
        let steps = &mut units[idx].1;
        let label = step
            .name
            .clone()
            .unwrap_or_else(|| format!("#{}", steps.len()));
        steps.push((label, step));
    }
    Ok(units
        .into_iter()
        .map(|(unit, steps)| {
            let place = place_of(&unit, &steps);
            (unit, place)
        })
        .collect())
}

/// Each new unit's partner among the old ones, and their pair's label. One unit on each side is one run
/// against the other, whatever their numbers; otherwise ranks pair by number, and rankless traces by file
/// name when exactly one on each side has it.
fn partners(old: &[(Unit, Place)], new: &[(Unit, Place)]) -> Vec<Option<Partner>> {
    let single = old.len() == 1 && new.len() == 1;
    let unique_base = |side: &[(Unit, Place)], name: &str| {
        let mut m = side
            .iter()
            .enumerate()
            .filter(|(_, (u, _))| matches!(u, Unit::File(f) if base_name(f) == name));
        match (m.next(), m.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let partner = |nunit: &Unit| -> Option<usize> {
        if single {
            return Some(0);
        }
        match nunit {
            Unit::Rank(r) => old.iter().position(|(u, _)| *u == Unit::Rank(*r)),
            Unit::File(f) => {
                let name = base_name(f);
                let i = unique_base(old, name)?;
                unique_base(new, name).map(|_| i)
            }
        }
    };
    new.iter()
        .map(|(nunit, _)| {
            let i = partner(nunit)?;
            let label = match (&old[i].0, nunit) {
                (a, b) if a == b => a.label(),
                (Unit::File(a), Unit::File(b)) if base_name(a) == base_name(b) && !single => {
                    format!("file {}", base_name(b))
                }
                (a, b) => format!("{} → {}", a.label(), b.label()),
            };
            Some(Partner { old: i, label })
        })
        .collect()
}

/// Compares two runs' budgets per rank: rows per rank (in the new run's order), span and idle first, then
/// buckets by name. An error when one side has two files claiming the same rank.
pub fn compare(old: &[BudgetStep], new: &[BudgetStep]) -> Result<Comparison, String> {
    let (o, n) = (
        places(old).map_err(|e| format!("OLD: {e}"))?,
        places(new).map_err(|e| format!("NEW: {e}"))?,
    );
    let pairs = partners(&o, &n);
    let (o, n): (Vec<Place>, Vec<Place>) = (
        o.into_iter().map(|(_, p)| p).collect(),
        n.into_iter().map(|(_, p)| p).collect(),
    );
    Ok(crate::compare_paired(&o, &n, &pairs, |a, b| {
        order(a).cmp(&order(b))
    }))
}

/// [`compare`] of two `kineto budget --json` listings, row by row through [`BudgetStep::from_json`].
/// An error names the side (`OLD`, `NEW`) and the row that cannot be read.
pub fn compare_json(old: &[Value], new: &[Value]) -> Result<Comparison, String> {
    let old = BudgetStep::listing(old).map_err(|e| format!("OLD: {e}"))?;
    let new = BudgetStep::listing(new).map_err(|e| format!("NEW: {e}"))?;
    compare(&old, &new)
}
