//! `kineto budget`: one row per step with its buckets and families. JSON nests the buckets and
//! families in the step's object; CSV is long-form (one `step` row, then one `bucket`, `family` or
//! `unmatched` row per item, each carrying the step's columns); the table has one column per bucket.

use crate::render::{self, Col, Ctx, Kind, Show, Val, fit};
use kineto_trace::budget::{FamilyTime, StepBudget};
use kineto_trace::family::{Rules, UNMATCHED};
use kineto_trace::step::Step;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// A step's budget with the columns that name its trace.
pub struct BudgetRow<'a> {
    /// The trace file.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The step.
    pub step: &'a Step,
    /// Its budget.
    pub budget: &'a StepBudget,
}

/// The step columns of `kineto budget`.
pub fn columns<'a>() -> &'a [Col<BudgetRow<'a>>] {
    &[
        Col {
            name: "file",
            kind: Kind::Plain,
            head: "file",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.file)),
        },
        Col {
            name: "rank",
            kind: Kind::Plain,
            head: "rank",
            show: Show::No,
            get: |r| Val::u(r.rank),
        },
        Col {
            name: "index",
            kind: Kind::Plain,
            head: "step",
            show: Show::Right(5),
            get: |r| Val::U(r.step.index as u64),
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::Left(30),
            get: |r| Val::Str(Cow::Borrowed(&r.step.name)),
        },
        Col {
            name: "phase",
            kind: Kind::Plain,
            head: "phase",
            show: Show::No,
            get: |r| Val::text(r.step.phase.as_deref()),
        },
        Col {
            name: "rows",
            kind: Kind::Plain,
            head: "rows",
            show: Show::No,
            get: |r| Val::u(r.step.rows),
        },
        Col {
            name: "requests",
            kind: Kind::Plain,
            head: "reqs",
            show: Show::No,
            get: |r| Val::u(r.step.requests),
        },
        Col {
            name: "lo",
            kind: Kind::Time,
            head: "lo",
            show: Show::No,
            get: |r| Val::ns(r.budget.window.map(|w| w.0)),
        },
        Col {
            name: "hi",
            kind: Kind::Time,
            head: "hi",
            show: Show::No,
            get: |r| Val::ns(r.budget.window.map(|w| w.1)),
        },
        Col {
            name: "span",
            kind: Kind::Dur,
            head: "span",
            show: Show::Right(14),
            get: |r| Val::I(r.budget.span_ns),
        },
        Col {
            name: "idle",
            kind: Kind::Dur,
            head: "idle",
            show: Show::Right(14),
            get: |r| Val::I(r.budget.idle_ns),
        },
        Col {
            name: "comm",
            kind: Kind::Dur,
            head: "comm",
            show: Show::No,
            get: |r| Val::I(r.budget.comm.comm_ns),
        },
        Col {
            name: "comm_overlapped",
            kind: Kind::Dur,
            head: "comm ovl",
            show: Show::No,
            get: |r| Val::I(r.budget.comm.overlapped_ns),
        },
        Col {
            name: "comm_exposed",
            kind: Kind::Dur,
            head: "exposed comm",
            show: Show::Right(14),
            get: |r| Val::I(r.budget.comm.exposed_ns),
        },
        Col {
            name: "comm_overlap_pct",
            kind: Kind::Plain,
            head: "ovl %",
            show: Show::Right(7),
            get: |r| r.budget.comm.pct().map_or(Val::Null, Val::F),
        },
        Col {
            name: "same_stream_overlaps",
            kind: Kind::Plain,
            head: "ovl",
            show: Show::No,
            get: |r| Val::U(r.budget.same_stream_overlaps),
        },
    ]
}

/// One item of a step's budget in the long-form CSV.
pub struct Item<'a> {
    kind: &'static str,
    key: &'a str,
    count: Option<u64>,
    sum: Option<i64>,
    union: Option<i64>,
    exclusive: Option<i64>,
    inclusive: Option<i64>,
}

/// The item columns of the long-form CSV, after the step columns.
pub fn item_columns<'a>() -> &'a [Col<Item<'a>>] {
    &[
        Col {
            name: "kind",
            kind: Kind::Plain,
            head: "kind",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.kind)),
        },
        Col {
            name: "key",
            kind: Kind::Plain,
            head: "key",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.key)),
        },
        Col {
            name: "count",
            kind: Kind::Plain,
            head: "count",
            show: Show::No,
            get: |r| Val::u(r.count),
        },
        Col {
            name: "sum",
            kind: Kind::Dur,
            head: "sum",
            show: Show::No,
            get: |r| Val::ns(r.sum),
        },
        Col {
            name: "union",
            kind: Kind::Dur,
            head: "union",
            show: Show::No,
            get: |r| Val::ns(r.union),
        },
        Col {
            name: "exclusive",
            kind: Kind::Dur,
            head: "exclusive",
            show: Show::No,
            get: |r| Val::ns(r.exclusive),
        },
        Col {
            name: "inclusive",
            kind: Kind::Dur,
            head: "inclusive",
            show: Show::No,
            get: |r| Val::ns(r.inclusive),
        },
    ]
}

/// The CSV header line: step columns, then item columns.
pub fn csv_header(w: &mut impl Write) -> io::Result<()> {
    let mut keys = render::csv_keys(columns());
    keys.extend(render::csv_keys(item_columns()));
    writeln!(w, "{}", keys.join(","))
}

fn family_item<'a>(kind: &'static str, key: &'a str, f: &FamilyTime) -> Item<'a> {
    Item {
        kind,
        key,
        count: Some(f.count),
        sum: Some(f.sum_ns),
        union: Some(f.union_ns),
        exclusive: None,
        inclusive: None,
    }
}

/// Writes the long-form CSV rows of one step.
pub fn csv_rows(w: &mut impl Write, r: &BudgetRow<'_>, ctx: &Ctx) -> io::Result<()> {
    let mut step = Vec::new();
    render::csv_cells(columns(), r, ctx, &mut step);
    let b = r.budget;
    let mut items = vec![Item {
        kind: "step",
        key: "",
        count: None,
        sum: None,
        union: None,
        exclusive: None,
        inclusive: None,
    }];
    items.extend(b.buckets.iter().map(|(k, v)| Item {
        kind: "bucket",
        key: k,
        count: None,
        sum: None,
        union: None,
        exclusive: Some(v.exclusive_ns),
        inclusive: Some(v.inclusive_ns),
    }));
    items.extend(b.families.iter().map(|(k, v)| family_item("family", k, v)));
    if b.unmatched.count > 0 {
        items.push(family_item("unmatched", "", &b.unmatched));
    }
    for item in &items {
        let mut cells = step.clone();
        render::csv_cells(item_columns(), item, ctx, &mut cells);
        writeln!(w, "{}", cells.join(","))?;
    }
    Ok(())
}

/// Writes one step's JSON line: the step columns, then `buckets`, `families` and `unmatched`.
pub fn json_row(w: &mut impl Write, r: &BudgetRow<'_>, ctx: &Ctx) -> io::Result<()> {
    let b = r.budget;
    w.write_all(b"{")?;
    render::json_members(w, columns(), r, ctx, true)?;
    let us = kineto_trace::ns_to_us;
    let buckets: BTreeMap<&str, serde_json::Value> = b
        .buckets
        .iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                serde_json::json!({
                    "exclusive_us": us(v.exclusive_ns), "exclusive_ns": v.exclusive_ns,
                    "inclusive_us": us(v.inclusive_ns), "inclusive_ns": v.inclusive_ns,
                }),
            )
        })
        .collect();
    let fam = |v: &FamilyTime| {
        serde_json::json!({
            "count": v.count, "sum_us": us(v.sum_ns), "sum_ns": v.sum_ns,
            "union_us": us(v.union_ns), "union_ns": v.union_ns,
        })
    };
    let families: BTreeMap<&str, serde_json::Value> = b
        .families
        .iter()
        .map(|(k, v)| (k.as_str(), fam(v)))
        .collect();
    let tail = serde_json::json!({
        "buckets": buckets, "families": families, "unmatched": fam(&b.unmatched),
    });
    // `tail` is an object: its members follow the step's, inside one pair of braces.
    let text = tail.to_string();
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or("");
    if !inner.is_empty() {
        write!(w, ",{inner}")?;
    }
    w.write_all(b"}\n")
}

/// Writes the table of one trace's budgets (after its header block).
pub fn table(
    w: &mut impl Write,
    p: &kineto_trace::Parsed,
    a: &kineto_trace::analysis::Analysis,
    budgets: &[StepBudget],
    rules: &Rules,
    ctx: &Ctx,
) -> io::Result<()> {
    let file = p.path.display().to_string();
    let (rank, steps) = (p.trace.header.rank, &a.steps.steps);
    let unmatched = a.unmatched_names(&p.trace);
    // Bucket columns, most exclusive time first.
    let buckets: Vec<&String> = {
        let mut set: BTreeMap<&String, i64> = BTreeMap::new();
        for b in budgets {
            for (k, v) in &b.buckets {
                let e = set.entry(k).or_default();
                *e = e.saturating_add(v.exclusive_ns);
            }
        }
        let mut v: Vec<(&String, i64)> = set.into_iter().collect();
        v.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
        v.into_iter().map(|(k, _)| k).collect()
    };
    let us = kineto_trace::ns_to_us_string;
    writeln!(
        w,
        "  exclusive time per bucket, µs (each instant split equally among the buckets running):"
    )?;
    let mut head = Vec::new();
    render::table_header(&mut head, columns())?;
    let head = String::from_utf8_lossy(&head).trim_end().to_string();
    let mut line = head;
    for b in &buckets {
        line.push_str(&format!(" {:>13}", fit(b, 13)));
    }
    writeln!(w, "{line} {:>5}", "ovl")?;
    for (s, b) in steps.iter().zip(budgets) {
        let mut cells = Vec::new();
        let row = BudgetRow {
            file: &file,
            rank,
            step: s,
            budget: b,
        };
        render::table_row(&mut cells, columns(), &row, ctx)?;
        let mut line = String::from_utf8_lossy(&cells).trim_end().to_string();
        for k in &buckets {
            let v = b.buckets.get(*k).map_or("-".into(), |v| us(v.exclusive_ns));
            line.push_str(&format!(" {v:>13}"));
        }
        writeln!(w, "{line} {:>5}", b.same_stream_overlaps)?;
    }
    // Families over all steps: per-step unions added (steps' windows may overlap on the GPU).
    let mut fams: BTreeMap<&str, (u64, i64, i64)> = BTreeMap::new();
    for b in budgets {
        let all = b
            .families
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .chain((b.unmatched.count > 0).then_some((UNMATCHED, &b.unmatched)));
        for (k, v) in all {
            let e = fams.entry(k).or_default();
            e.0 += v.count;
            e.1 = e.1.saturating_add(v.sum_ns);
            e.2 = e.2.saturating_add(v.union_ns);
        }
    }
    let mut fv: Vec<(&str, (u64, i64, i64))> = fams.into_iter().collect();
    fv.sort_by(|x, y| y.1.1.cmp(&x.1.1).then_with(|| x.0.cmp(y.0)));
    writeln!(
        w,
        "  families, all steps (per-step JSON/CSV: --json, --csv):"
    )?;
    writeln!(
        w,
        "  {:<26} {:<12} {:>8} {:>14} {:>14}",
        "family", "bucket", "count", "sum µs", "union µs"
    )?;
    for (name, (c, sum, un)) in fv {
        let bucket = rules
            .find_family(name)
            .map_or(UNMATCHED, |f| rules.family(f).bucket.as_str());
        writeln!(
            w,
            "  {:<26} {:<12} {c:>8} {:>14} {:>14}",
            crate::out::escape(name),
            crate::out::escape(bucket),
            us(sum),
            us(un)
        )?;
    }
    if !unmatched.is_empty() {
        writeln!(
            w,
            "  unmatched kernel names in the trace ({}), most time first:",
            unmatched.len()
        )?;
        for u in unmatched.iter().take(10) {
            writeln!(
                w,
                "    {:>8}× {:>14} µs  {}",
                u.count,
                us(u.sum_ns),
                fit(&crate::out::escape(&u.name), 120)
            )?;
        }
    }
    Ok(())
}
