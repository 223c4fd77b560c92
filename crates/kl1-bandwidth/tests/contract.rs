//! docs/kl1-window.md and the built-in rules describe one contract: every family of the rule file is in the
//! page's family table with its bucket, and the page quotes the step pattern the analysis uses.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use kl1_bandwidth::rules::{REQUIRED_FAMILIES, UNMATCHED};
use kl1_bandwidth::{KL1_STEP_PATTERN, Kl1Rules};

fn page() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/kl1-window.md");
    std::fs::read_to_string(p).expect("docs/kl1-window.md")
}

#[test]
fn every_family_is_documented_with_its_bucket() {
    let page = page();
    let rules = Kl1Rules::builtin();
    for f in rules.families().iter().filter(|f| f.name != UNMATCHED) {
        let bucket = rules.bucket_name(f.bucket);
        let row = page
            .lines()
            .find(|l| {
                l.starts_with(&format!("| `{}` |", f.name))
                    || l.starts_with(&format!("| **`{}`** |", f.name))
            })
            .unwrap_or_else(|| panic!("family `{}` has no row in docs/kl1-window.md §3", f.name));
        assert!(
            row.split('|').nth(2).is_some_and(|c| c.trim() == bucket),
            "docs/kl1-window.md gives `{}` another bucket than the rules' `{bucket}`: {row}",
            f.name
        );
        // The families the analysis reads by name are the bold ones.
        assert_eq!(
            row.starts_with("| **"),
            REQUIRED_FAMILIES.contains(&f.name.as_str()),
            "`{}`: bold in the page iff the analysis reads it",
            f.name
        );
    }
}

#[test]
fn the_page_quotes_the_step_pattern() {
    assert!(
        page().contains(KL1_STEP_PATTERN),
        "docs/kl1-window.md must quote KL1_STEP_PATTERN verbatim"
    );
}
