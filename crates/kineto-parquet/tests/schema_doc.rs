//! docs/parquet.md's schema section is the column lists, rendered: this test renders them and compares.
//! `KINETO_PARQUET_BLESS=1 cargo test -p kineto-parquet --test schema_doc` rewrites the section.

use kineto_parquet::{SCHEMA_VERSION, Table};
use std::path::Path;

fn render() -> String {
    let mut s = String::new();
    for t in Table::ALL {
        s.push_str(&format!(
            "### `{}`\n\n| column | type | null | meaning |\n|---|---|---|---|\n",
            t.name()
        ));
        for (name, ty, nullable, doc) in t.columns() {
            s.push_str(&format!(
                "| `{name}` | {} | {} | {doc} |\n",
                ty.doc_name(),
                if nullable { "yes" } else { "no" }
            ));
        }
        s.push_str(
            "| `rank` | int64 | no | the Hive partition `rank=N` (not stored in the file) |\n\n",
        );
    }
    s.trim_end().to_string()
}

#[test]
fn docs_list_every_column_of_every_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/parquet.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = doc.split_once("<!-- schema:begin -->\n").unwrap();
    let (section, tail) = rest.split_once("\n<!-- schema:end -->").unwrap();
    let want = render();
    if std::env::var_os("KINETO_PARQUET_BLESS").is_some() {
        std::fs::write(
            &path,
            format!("{head}<!-- schema:begin -->\n{want}\n<!-- schema:end -->{tail}"),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        section, want,
        "docs/parquet.md's schema section is stale: rerun with KINETO_PARQUET_BLESS=1"
    );
    assert!(doc.contains(&format!("`kineto.schema_version` = **{SCHEMA_VERSION}**")));
}

#[test]
fn python_docs_list_every_column_of_the_top_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/python.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut want = String::from("| column | type | null | meaning |\n|---|---|---|---|\n");
    for c in kineto_parquet::top_columns() {
        want.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            c.name,
            c.ty.doc_name(),
            if c.nullable { "yes" } else { "no" },
            c.doc
        ));
    }
    let want = want.trim_end();
    let (head, rest) = doc.split_once("<!-- top:begin -->\n").unwrap();
    let (section, tail) = rest.split_once("<!-- top:end -->").unwrap();
    let section = section.trim_end();
    if std::env::var_os("KINETO_PARQUET_BLESS").is_some() {
        std::fs::write(
            &path,
            format!("{head}<!-- top:begin -->\n{want}\n<!-- top:end -->{tail}"),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        section, want,
        "docs/python.md's top table is stale: rerun with KINETO_PARQUET_BLESS=1"
    );
}
