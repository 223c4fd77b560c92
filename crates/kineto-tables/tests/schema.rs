//! The schema's own rules, and the docs rendered from it.
//!
//! `docs/tables.md` (every table, every form's keys), `docs/parquet.md`'s schema section and
//! `docs/python.md`'s `top()` section are the column lists, rendered: these tests render them and compare.
//! `KINETO_TABLES_BLESS=1 cargo test -p kineto-tables --test schema` rewrites the sections.
#![allow(clippy::unwrap_used)] // Test helpers, outside `#[test]` functions.

use kineto_tables::{ColInfo, PARTITION, SCHEMA_VERSION, Table, Ty, Unit};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn a_duration_or_time_is_named_ns_and_holds_a_number() {
    for t in Table::ALL {
        for c in t.columns() {
            let ns = c.name.ends_with("_ns");
            assert_eq!(
                ns,
                c.unit.is_ns(),
                "{}.{}: a name ends in _ns exactly when the unit is ns",
                t.name(),
                c.name
            );
            if ns {
                assert!(
                    matches!(c.ty, Ty::I64 | Ty::F64),
                    "{}.{}: ns are integers or floats",
                    t.name(),
                    c.name
                );
            }
        }
    }
}

#[test]
fn keys_follow_the_naming_rule() {
    let keys = |t: Table, name: &str| {
        let c = t.columns().into_iter().find(|c| c.name == name).unwrap();
        c.keys()
    };
    let k = keys(Table::GpuOps, "ts_ns");
    assert_eq!(k.json, ["ts_us", "ts_ns", "ts_rel_us"]);
    assert_eq!(k.csv, ["ts_us", "ts_rel_us"]);
    let k = keys(Table::GpuOps, "dur_ns");
    assert_eq!(k.json, ["dur_us", "dur_ns"]);
    assert_eq!(k.csv, ["dur_us"]);
    let k = keys(Table::Roofline, "buckets.kv_ns");
    assert_eq!(k.csv, ["buckets.kv_us"]);
    let k = keys(Table::GpuOps, "stream");
    assert_eq!(
        (k.json, k.csv),
        (vec!["stream".into()], vec!["stream".into()])
    );
}

#[test]
fn names_are_unique_and_a_dotted_group_is_adjacent() {
    for t in Table::ALL {
        let cols = t.columns();
        let mut seen = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        for c in &cols {
            assert!(!seen.contains(&c.name), "{}: {} twice", t.name(), c.name);
            seen.push(c.name);
            for k in c.keys().json.iter().chain(&c.keys().csv) {
                let clash = cols
                    .iter()
                    .any(|o| o.name != c.name && o.keys().json.contains(k));
                assert!(!clash, "{}: key {k} written by two columns", t.name());
            }
            if let Some((g, _)) = c.name.split_once('.') {
                if groups.last() != Some(&g) {
                    assert!(!groups.contains(&g), "{}: group {g} split", t.name());
                    groups.push(g);
                }
            } else {
                groups.push("");
            }
        }
    }
}

/// A name means one thing: wherever it appears it has one type and one unit.
#[test]
fn a_name_has_one_type_and_unit_in_every_table() {
    // `annotation_stats.mean_ns` is rounded half up to the ns (an integer); `top.mean_ns` is exact (a float).
    const TYPE_MAY_DIFFER: &[&str] = &["mean_ns"];
    let mut by_name: BTreeMap<&str, (Table, Ty, Unit)> = BTreeMap::new();
    for t in Table::ALL {
        for c in t.columns() {
            let (t0, ty, unit) = *by_name.entry(c.name).or_insert((t, c.ty, c.unit));
            assert_eq!(
                unit,
                c.unit,
                "{}: {} in {} vs {}",
                c.name,
                t0.name(),
                t.name(),
                "unit"
            );
            if !TYPE_MAY_DIFFER.contains(&c.name) {
                assert_eq!(
                    ty,
                    c.ty,
                    "{}: type in {} vs {}",
                    c.name,
                    t0.name(),
                    t.name()
                );
            }
        }
    }
}

#[test]
fn every_exported_table_has_the_partition_column_and_a_file() {
    for t in Table::EXPORTED {
        let names: Vec<&str> = t.columns().iter().map(|c| c.name).collect();
        // The partition first; the file last (a wide path opening every row showed little else).
        assert_eq!(names.first(), Some(&PARTITION), "{}", t.name());
        assert_eq!(names.last(), Some(&"file"), "{}", t.name());
        assert!(t.about().exported);
    }
    for t in Table::ALL {
        assert_eq!(Table::from_name(t.name()), Some(t));
        assert_eq!(t.about().exported, Table::EXPORTED.contains(&t));
    }
}

fn keys_cell(c: &ColInfo) -> String {
    let k = c.keys();
    if k.json == [c.name] && k.csv == [c.name] {
        return String::new();
    }
    let q = |v: &[String]| {
        v.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!("JSON {}; CSV {}", q(&k.json), q(&k.csv))
}

fn null(c: &ColInfo) -> &'static str {
    if c.nullable { "yes" } else { "no" }
}

/// The `kineto` command that prints each table (the library names no command line; the docs do).
fn printed_by(t: Table) -> &'static str {
    match t {
        Table::GpuOps => "`kineto kernels` (the kernel rows)",
        Table::Steps => {
            "`kineto steps`, and `kineto budget` with the step's buckets and families nested"
        }
        Table::Budget => "`kineto budget`, nested in each step's row as `buckets`",
        Table::Families => {
            "`kineto budget`, nested in each step's row as `families` (and `unmatched`)"
        }
        Table::Annotations => "no listing (`kineto annotations` prints `annotation_stats`)",
        Table::AnnotationStats => "`kineto annotations`",
        Table::Top => "`kineto top`",
        Table::Ranks => "`kineto ranks`",
        Table::Roofline => "`kineto roofline`",
        Table::Weights => "`kineto roofline --weights`",
        Table::Doctor => "`kineto doctor`",
    }
}

/// docs/tables.md's generated section: every table, every column, its JSON and CSV keys.
fn tables_md() -> String {
    let mut s = String::new();
    for t in Table::ALL {
        let a = t.about();
        s.push_str(&format!("### `{}`\n\n{}.", a.name, capitalised(a.rows)));
        s.push_str(&format!(" Printed by {}", printed_by(t)));
        if a.exported {
            s.push_str(&format!(
                "; exported as `DIR/{}/rank=N/<trace>.parquet`",
                a.name
            ));
        }
        if !a.python.is_empty() {
            s.push_str(&format!("; Python {}", a.python));
        }
        s.push_str(".\n\n| column | type | unit | null | JSON and CSV keys | meaning |\n");
        s.push_str("|---|---|---|---|---|---|\n");
        for c in t.columns() {
            s.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                c.name,
                c.ty.doc_name(),
                c.unit.doc_name(),
                null(&c),
                keys_cell(&c),
                c.doc
            ));
        }
        s.push('\n');
    }
    s.trim_end().to_string()
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A table's columns as one trace's Arrow table holds them (the partition column is not one).
fn stored(t: Table) -> String {
    let mut s = String::from("| column | type | unit | null | meaning |\n|---|---|---|---|---|\n");
    for c in t.columns().iter().filter(|c| c.name != PARTITION) {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            c.name,
            c.ty.doc_name(),
            c.unit.doc_name(),
            null(c),
            c.doc
        ));
    }
    s
}

/// docs/parquet.md's schema section: the exported tables as the files hold them, and the partition.
fn parquet_md() -> String {
    let mut s = String::new();
    for t in Table::EXPORTED {
        s.push_str(&format!("### `{}`\n\n{}", t.name(), stored(t)));
        s.push_str(&format!(
            "| `{PARTITION}` | int64 | | no | the Hive partition `rank=N` (not stored in the file) |\n\n"
        ));
    }
    s.trim_end().to_string()
}

/// Checks (or, with `KINETO_TABLES_BLESS`, rewrites) the part of `doc` between `<!-- {tag}:begin -->` and
/// `<!-- {tag}:end -->`.
fn section(doc: &str, tag: &str, want: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(doc);
    let text = std::fs::read_to_string(&path).unwrap();
    let begin = format!("<!-- {tag}:begin -->\n");
    let end = format!("\n<!-- {tag}:end -->");
    let (head, rest) = text.split_once(&begin).unwrap();
    let (got, tail) = rest.split_once(&end).unwrap();
    if std::env::var_os("KINETO_TABLES_BLESS").is_some() {
        std::fs::write(&path, format!("{head}{begin}{want}{end}{tail}")).unwrap();
        return;
    }
    assert_eq!(
        got, want,
        "{doc}'s {tag} section is stale: rerun with KINETO_TABLES_BLESS=1"
    );
}

#[test]
fn docs_list_every_column_of_every_table() {
    section("docs/tables.md", "tables", &tables_md());
    section("docs/parquet.md", "schema", &parquet_md());
    section("docs/python.md", "top", stored(Table::Top).trim_end());
    for (doc, says) in [
        (
            "docs/tables.md",
            format!("Schema version **{SCHEMA_VERSION}**"),
        ),
        (
            "docs/parquet.md",
            format!("`kineto.schema_version` = **{SCHEMA_VERSION}**"),
        ),
        ("docs/python.md", format!("schema version {SCHEMA_VERSION}")),
    ] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(doc),
        )
        .unwrap();
        assert!(text.contains(&says), "{doc} should say {says}");
    }
}
