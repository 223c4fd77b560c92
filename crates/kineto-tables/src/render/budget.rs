//! `kineto budget`: one row per step — the `steps` table's — with its buckets and families. JSON nests the
//! step's rows of the `budget` and `families` tables in its object (`buckets`, `families`, `unmatched`,
//! each keyed by bucket or family, holding the columns the step row does not have); CSV is long-form (one
//! `step` row, then one `bucket`, `family` or `unmatched` row per item, each carrying the step's columns);
//! the table has one column per bucket.

use crate::render::views;
use crate::render::{self, Ctx, Listing, fit};
use crate::{
    Col, StepRow, bucket_rows, budget_columns, family_columns, family_rows, step_columns,
    unmatched_row,
};
use kineto_trace::budget::StepBudget;
use kineto_trace::family::{Rules, UNMATCHED};
use std::collections::BTreeMap;
use std::io::{self, Write};
use tool_io::terminal::escape;

/// The columns of a nested table that its parent's row does not already have, without the nested row's key
/// (the name the parent keys it by).
fn nested<'c, R>(cols: &'c [Col<R>], key: &str) -> Vec<&'c Col<R>> {
    let parent = step_columns();
    cols.iter()
        .filter(|c| c.name != key && !parent.iter().any(|p| p.name == c.name))
        .collect()
}

/// The step listing with its text table's view.
pub fn listing<'a>() -> Listing<'a, StepRow<'a>> {
    Listing::new(step_columns(), views::BUDGET)
}

/// The CSV header line: the step's columns, `kind` and `key`, then the families' and buckets' own.
pub fn csv_header(w: &mut impl Write) -> io::Result<()> {
    let mut keys = render::csv_keys(step_columns());
    keys.extend(["kind".to_string(), "key".to_string()]);
    keys.extend(render::csv_keys(nested(family_columns(), "family")));
    keys.extend(render::csv_keys(nested(budget_columns(), "bucket")));
    writeln!(w, "{}", keys.join(","))
}

/// Writes the long-form CSV rows of one step: `step`, then a `bucket` row per bucket, a `family` row per
/// family and an `unmatched` row when the step has unmatched kernels; each carries the step's cells, and
/// leaves empty the cells that are not its table's.
pub fn csv_rows(w: &mut impl Write, r: &StepRow<'_>, rules: &Rules, ctx: &Ctx) -> io::Result<()> {
    let mut step = Vec::new();
    render::csv_cells(step_columns(), r, ctx, &mut step);
    let families = nested(family_columns(), "family");
    let buckets = nested(budget_columns(), "bucket");
    let no_family = vec![String::new(); render::csv_keys(families.iter().copied()).len()];
    let no_bucket = vec![String::new(); render::csv_keys(buckets.iter().copied()).len()];
    let mut line = |kind: &str, key: &str, f: &[String], b: &[String]| {
        let mut cells = step.clone();
        cells.push(kind.to_string());
        cells.push(tool_io::csv::text_cell(key).into_owned());
        cells.extend_from_slice(f);
        cells.extend_from_slice(b);
        writeln!(w, "{}", cells.join(","))
    };
    line("step", "", &no_family, &no_bucket)?;
    let b = r.budget;
    for row in bucket_rows(r.file, r.rank, r.step, b) {
        let mut cells = Vec::new();
        render::csv_cells(buckets.iter().copied(), &row, ctx, &mut cells);
        line("bucket", row.key(), &no_family, &cells)?;
    }
    let unmatched = (b.unmatched.count > 0).then(|| unmatched_row(r.file, r.rank, r.step, b));
    for (kind, row) in family_rows(r.file, r.rank, r.step, b, rules)
        .map(|f| ("family", f))
        .chain(unmatched.map(|u| ("unmatched", u)))
    {
        let mut cells = Vec::new();
        render::csv_cells(families.iter().copied(), &row, ctx, &mut cells);
        let key = if kind == "unmatched" { "" } else { row.key() };
        line(kind, key, &cells, &no_bucket)?;
    }
    Ok(())
}

/// Writes `"name":{…}` for each keyed row, inside an object of its own.
fn keyed<'c, R: 'c>(
    w: &mut impl Write,
    cols: &[&'c Col<R>],
    rows: impl Iterator<Item = R>,
    key: impl Fn(&R) -> &str,
    ctx: &Ctx,
) -> io::Result<()> {
    w.write_all(b"{")?;
    for (i, row) in rows.enumerate() {
        let key = key(&row);
        if i > 0 {
            w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *w, key).map_err(io::Error::from)?;
        w.write_all(b":{")?;
        render::json_members(w, cols.iter().copied(), &row, ctx, true)?;
        w.write_all(b"}")?;
    }
    w.write_all(b"}")
}

/// Writes one step's JSON line: the step's columns, then `buckets`, `families` and `unmatched`.
pub fn json_row(w: &mut impl Write, r: &StepRow<'_>, rules: &Rules, ctx: &Ctx) -> io::Result<()> {
    let b = r.budget;
    w.write_all(b"{")?;
    render::json_members(w, step_columns(), r, ctx, true)?;
    w.write_all(b",\"buckets\":")?;
    let buckets = nested(budget_columns(), "bucket");
    let rows = bucket_rows(r.file, r.rank, r.step, b);
    keyed(w, &buckets, rows, |r| r.key(), ctx)?;
    w.write_all(b",\"families\":")?;
    let families = nested(family_columns(), "family");
    let rows = family_rows(r.file, r.rank, r.step, b, rules);
    keyed(w, &families, rows, |r| r.key(), ctx)?;
    w.write_all(b",\"unmatched\":{")?;
    let unmatched = unmatched_row(r.file, r.rank, r.step, b);
    render::json_members(w, families.iter().copied(), &unmatched, ctx, true)?;
    w.write_all(b"}}\n")
}

/// A bucket column's width in the text table.
const BUCKET_WIDTH: usize = 11;

/// The same-stream overlap column's width.
const OVL_WIDTH: usize = 4;

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
    let listing = listing();
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
    listing.table_header(&mut head)?;
    let head = String::from_utf8_lossy(&head).trim_end().to_string();
    // As many bucket columns as the terminal width holds, most time first; the rest are named below.
    let room = super::TEXT_WIDTH.saturating_sub(head.chars().count() + OVL_WIDTH + 1);
    let (buckets, more) = buckets.split_at((room / (BUCKET_WIDTH + 1)).min(buckets.len()));
    let mut line = head;
    for b in buckets {
        line.push_str(&format!(" {:>BUCKET_WIDTH$}", fit(b, BUCKET_WIDTH)));
    }
    writeln!(w, "{line} {:>OVL_WIDTH$}", "ovl")?;
    for (s, b) in steps.iter().zip(budgets) {
        let mut cells = Vec::new();
        let row = StepRow {
            file: &file,
            rank,
            step: s,
            budget: b,
        };
        listing.table_row(&mut cells, &row, ctx)?;
        let mut line = String::from_utf8_lossy(&cells).trim_end().to_string();
        for k in buckets {
            let v = b.buckets.get(*k).map_or("-".into(), |v| us(v.exclusive_ns));
            line.push_str(&format!(" {v:>BUCKET_WIDTH$}"));
        }
        writeln!(w, "{line} {:>OVL_WIDTH$}", b.same_stream_overlaps)?;
    }
    if !more.is_empty() {
        let names: Vec<String> = more.iter().map(|b| escape(b).into_owned()).collect();
        writeln!(
            w,
            "  {} more buckets, less time (every bucket is in the JSON and CSV forms): {}",
            more.len(),
            names.join(", ")
        )?;
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
        "  families, all steps (per step in the JSON and CSV forms):"
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
            fit(&escape(name), 26),
            escape(bucket),
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
                fit(&escape(&kineto_trace::template::display_name(&u.name)), 90)
            )?;
        }
    }
    Ok(())
}
