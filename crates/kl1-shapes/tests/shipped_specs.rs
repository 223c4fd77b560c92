//! The shipped spec files and GPU table: they load, every value has its provenance, every reference is used,
//! and the assumptions are the ones we know of.
#![allow(clippy::expect_used)] // test helpers outside #[test] functions

use std::collections::BTreeSet;

use kl1_shapes::{BUILTIN_SPECS, Spec};
use model_shapes::{BUILTIN_GPUS_TOML, BandwidthLabel, Citation, GpuTable};

/// Fields every spec has, each with a provenance.
const FIELDS: usize = 13 + 2 + 8 + 3 + 1;

fn references_of(text: &str) -> BTreeSet<String> {
    let t: toml::Table = text.parse().expect("TOML");
    t.get("references")
        .and_then(toml::Value::as_table)
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether `key` is named in `prose` as a whole word (`exllamav3` is not named by `exllamav3-01b5`).
fn names(prose: &str, key: &str) -> bool {
    prose.match_indices(key).any(|(i, _)| {
        let before = prose[..i].chars().next_back();
        let after = prose[i + key.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
        !word(before) && !word(after)
    })
}

/// Every reference a file defines is cited as a `source` or named in an `at`, a reason or a note, and every
/// `source` is defined (loading checks the latter; this checks nothing is defined for nothing).
fn all_references_used(
    file: &str,
    defined: &BTreeSet<String>,
    sources: &BTreeSet<String>,
    prose: &str,
) {
    for key in defined {
        assert!(
            sources.contains(key) || names(prose, key),
            "{file}: reference `{key}` is never used"
        );
    }
    assert!(sources.is_subset(defined), "{file}");
}

#[test]
fn every_builtin_spec_loads_with_full_provenance() {
    for (name, text) in BUILTIN_SPECS {
        let spec = Spec::builtin_named(name).expect("listed");
        assert_eq!(
            spec.name(),
            name,
            "the file's name matches its registry name"
        );
        assert_eq!(spec.provenances().count(), FIELDS, "{name}");
        let mut sources = BTreeSet::new();
        let mut prose = String::new();
        for (field, p) in spec.provenances() {
            match p {
                Citation::Cited {
                    source,
                    reference,
                    at,
                } => {
                    assert!(
                        !reference.trim().is_empty() && !at.trim().is_empty(),
                        "{name} {field}"
                    );
                    sources.insert(source.clone());
                    prose += &format!("{at}\n");
                }
                Citation::Assumed { reason } => {
                    assert!(
                        reason.len() > 10,
                        "{name} {field}: a reason, not a placeholder"
                    );
                    prose += &format!("{reason}\n");
                }
            }
        }
        all_references_used(name, &references_of(text), &sources, &prose);
    }
    assert!(Spec::builtin_named("no-such-spec").is_none());
}

#[test]
fn the_default_spec_assumes_only_what_no_source_gives() {
    let spec = Spec::builtin();
    assert_eq!(spec.name(), "deepseek-v4.1-flash-exl3-2xgb10");
    assert_eq!(
        spec.assumed_fields(),
        vec![
            "dtypes.router",
            "quant.routed_experts",
            "quant.shared_expert",
            "quant.wkv",
            "quant.wo_a",
            "quant.wo_b",
            "quant.wq_a",
            "quant.wq_b",
        ]
    );
    // Model dimensions all come from the V4.1 config.
    for (field, p) in spec.provenances().filter(|(f, _)| f.starts_with("model.")) {
        assert!(
            matches!(p, Citation::Cited { source, .. } if source == "v41-config"),
            "{field}: {p:?}"
        );
    }
    assert!(matches!(
        spec.provenance("quant.lm_head"),
        Some(Citation::Cited { source, .. }) if source == "seed-004"
    ));
}

#[test]
fn every_spec_file_on_disk_is_built_in() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
    let mut on_disk = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("specs/ exists") {
        let path = entry.expect("readable").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8")
            .to_string();
        if name != "gpus" && path.extension().is_some_and(|e| e == "toml") {
            let loaded = Spec::from_file(&path).expect("valid");
            assert_eq!(loaded.name(), name, "file name and spec name agree");
            let text = std::fs::read_to_string(&path).expect("readable");
            assert!(
                BUILTIN_SPECS.contains(&(name.as_str(), text.as_str())),
                "{name} is not built in"
            );
            on_disk.insert(name);
        }
    }
    let built_in: BTreeSet<String> = BUILTIN_SPECS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(on_disk, built_in);
}

#[test]
fn the_gpu_table_labels_every_figure() {
    let table = GpuTable::builtin();
    let names: Vec<&str> = table.gpus().iter().map(|g| g.name.as_str()).collect();
    for wanted in ["GB10", "H100 SXM", "H200", "B200", "RTX 5090"] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }
    let mut sources = BTreeSet::new();
    let mut prose = String::new();
    for g in table.gpus() {
        assert!(g.spec_bandwidth_gbps > 0.0);
        match &g.spec_bandwidth_provenance {
            Citation::Cited { source, at, .. } => {
                sources.insert(source.clone());
                prose += &format!("{at}\n");
            }
            Citation::Assumed { reason } => prose += &format!("{reason}\n"),
        }
        for p in &g.peak_tflops {
            assert!(p.tflops > 0.0, "{}/{}", g.name, p.dtype);
            match &p.provenance {
                Citation::Cited { source, at, .. } => {
                    sources.insert(source.clone());
                    prose += &format!("{at}\n");
                }
                Citation::Assumed { .. } => {
                    panic!("{}/{}: a peak must be cited", g.name, p.dtype)
                }
            }
        }
        for r in &g.read_bandwidths {
            // A read never beats the specified bandwidth; a figure above it would be mislabelled.
            assert!(
                r.low_gbps <= r.high_gbps && r.high_gbps <= g.spec_bandwidth_gbps,
                "{}/{}",
                g.name,
                r.id
            );
            match &r.provenance {
                Citation::Cited { source, at, .. } => {
                    sources.insert(source.clone());
                    prose += &format!("{at}\n{}\n", r.note.as_deref().unwrap_or(""));
                }
                Citation::Assumed { .. } => {
                    panic!("{}/{}: a bandwidth figure must be cited", g.name, r.id)
                }
            }
        }
    }
    all_references_used(
        "gpus.toml",
        &references_of(BUILTIN_GPUS_TOML),
        &sources,
        &prose,
    );
    let gb10 = table.get("GB10").expect("listed");
    let labels: BTreeSet<_> = gb10
        .read_bandwidths
        .iter()
        .map(|r| r.label.to_string())
        .collect();
    assert_eq!(
        labels,
        BTreeSet::from(["CLAIM".to_string(), "MEASURED".to_string()])
    );
    assert!(
        gb10.read_bandwidths
            .iter()
            .any(|r| r.label == BandwidthLabel::Claim && r.low_gbps == 240.0)
    );
    assert_eq!(Spec::builtin().gpu(), gb10);
}
