//! Spec files that must be rejected, each with an error that names the field at fault. (Bad GPU tables:
//! model-shapes' `tests/gpu_table.rs`.)
#![allow(clippy::expect_used)] // test helpers outside #[test] functions

use kl1_shapes::{BUILTIN_SPECS, Error, Spec};
use model_shapes::GpuTable;
use toml::{Table, Value};

fn default_table() -> Table {
    BUILTIN_SPECS[0]
        .1
        .parse::<Table>()
        .expect("the shipped spec is TOML")
}

/// The default spec with the table at `path` given `value`.
fn set(path: &[&str], value: Value) -> String {
    let mut root = default_table();
    let (last, parents) = path.split_last().expect("a non-empty path");
    let mut table = &mut root;
    for p in parents {
        table = table
            .get_mut(*p)
            .and_then(Value::as_table_mut)
            .expect("path exists");
    }
    table.insert((*last).to_string(), value);
    toml::to_string(&root).expect("serialisable")
}

/// The default spec with `path`'s `value` replaced and its provenance kept.
fn set_value(path: &[&str], value: Value) -> String {
    let mut root = default_table();
    let mut table = &mut root;
    for p in path {
        table = table
            .get_mut(*p)
            .and_then(Value::as_table_mut)
            .expect("path exists");
    }
    table.insert("value".to_string(), value);
    toml::to_string(&root).expect("serialisable")
}

fn cited(value: Value) -> Value {
    let mut t = Table::new();
    t.insert("value".into(), value);
    t.insert("assumed".into(), Value::String("test".into()));
    Value::Table(t)
}

fn k_mix(entries: &[(i64, i64)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|&(k, n)| {
                let mut t = Table::new();
                t.insert("k".into(), Value::Integer(k));
                t.insert("experts".into(), Value::Integer(n));
                Value::Table(t)
            })
            .collect(),
    )
}

/// Loads `text` and returns the field its error names; panics if it loads.
fn rejected_field(text: &str) -> String {
    match Spec::from_toml_str(text, "test") {
        Ok(_) => panic!("accepted a bad spec"),
        Err(e) => {
            let field = e
                .field()
                .unwrap_or_else(|| panic!("no field named in: {e}"))
                .to_string();
            // The field is also in the message a user sees.
            assert!(e.to_string().contains(&field), "{e}");
            field
        }
    }
}

fn int(v: i64) -> Value {
    Value::Integer(v)
}

#[test]
fn the_mutation_helpers_leave_a_valid_spec_valid() {
    // Without this, a helper that broke every spec would make every rejection test pass.
    let same = set_value(&["model", "hidden"], int(5120));
    assert!(Spec::from_toml_str(&same, "test").is_ok());
    let same = set(
        &["quant", "routed_experts"],
        cited(k_mix(&[(2, 200), (3, 184)])),
    );
    assert!(Spec::from_toml_str(&same, "test").is_ok());
}

#[test]
fn dimensions_must_be_whole_tiles() {
    assert_eq!(
        rejected_field(&set_value(&["model", "hidden"], int(5000))),
        "model.hidden"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "hidden"], int(0))),
        "model.hidden"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "q_lora_rank"], int(1288))),
        "model.q_lora_rank"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "head_dim"], int(500))),
        "model.head_dim"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "o_lora_rank"], int(1000))),
        "model.o_lora_rank"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "hidden"], int(1 << 25))),
        "model.hidden",
        "above MAX_DIM"
    );
}

#[test]
fn dimensions_must_divide_among_ranks() {
    // Tensor split: 2304 = 18 × 128 divides among 2 ranks; 2240 = 17.5 × 128 does not.
    assert_eq!(
        rejected_field(&set_value(&["model", "expert_intermediate"], int(2240))),
        "model.expert_intermediate"
    );
    // 3 ranks: 2304 = 18 × 128 would divide, but o_groups 8 and vocab 129280 = 1010 × 128 do not.
    assert_eq!(
        rejected_field(&set_value(&["parallelism", "ranks"], int(3))),
        "model.o_groups"
    );
    // 4 ranks: groups divide (8 / 4), vocab 1010 × 128 does not.
    assert_eq!(
        rejected_field(&set_value(&["parallelism", "ranks"], int(4))),
        "model.vocab"
    );
    assert_eq!(
        rejected_field(&set_value(&["parallelism", "ranks"], int(0))),
        "parallelism.ranks"
    );
    // Heads must divide among output groups.
    assert_eq!(
        rejected_field(&set_value(&["model", "heads"], int(60))),
        "model.heads"
    );
    // Whole-expert split: 385 experts do not divide between 2 ranks.
    let whole = set_value(
        &["parallelism", "expert_split"],
        Value::String("whole".into()),
    );
    let mut t: Table = whole.parse().expect("TOML");
    let model = t
        .get_mut("model")
        .and_then(Value::as_table_mut)
        .expect("model");
    model.insert("routed_experts".into(), cited(int(385)));
    let quant = t
        .get_mut("quant")
        .and_then(Value::as_table_mut)
        .expect("quant");
    quant.insert("routed_experts".into(), cited(k_mix(&[(2, 385)])));
    let text = toml::to_string(&t).expect("serialisable");
    assert_eq!(rejected_field(&text), "model.routed_experts");
    // The whole split does not need the intermediate width in 128-column units (2320 = 145 × 16)…
    let mut t: Table = whole.parse().expect("TOML");
    let model = t
        .get_mut("model")
        .and_then(Value::as_table_mut)
        .expect("model");
    model.insert("expert_intermediate".into(), cited(int(2320)));
    model.insert("shared_experts".into(), cited(int(0)));
    let whole_ok = toml::to_string(&t).expect("serialisable");
    assert!(Spec::from_toml_str(&whole_ok, "test").is_ok());
    // …but the shared expert is still tensor-split, so with one it must be.
    let model = t
        .get_mut("model")
        .and_then(Value::as_table_mut)
        .expect("model");
    model.insert("shared_experts".into(), cited(int(1)));
    assert_eq!(
        rejected_field(&toml::to_string(&t).expect("serialisable")),
        "model.shared_experts"
    );
}

#[test]
fn routing_must_be_possible() {
    assert_eq!(
        rejected_field(&set_value(&["model", "top_k"], int(0))),
        "model.top_k"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "top_k"], int(385))),
        "model.top_k"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "moe_layers"], int(0))),
        "model.moe_layers"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "mhc_expansion"], int(0))),
        "model.mhc_expansion"
    );
    assert_eq!(
        rejected_field(&set_value(&["model", "mhc_expansion"], int(65))),
        "model.mhc_expansion"
    );
}

#[test]
fn bit_widths_must_be_1_to_8() {
    for field in ["wq_a", "wq_b", "wo_a", "wo_b", "lm_head", "shared_expert"] {
        for bad in [0, 9] {
            let text = set_value(&["quant", field], int(bad));
            let expect = if field == "wq_a" {
                // wq_a is read first, so its own range check fires before the wq_a = wkv rule.
                "quant.wq_a".to_string()
            } else {
                format!("quant.{field}")
            };
            assert_eq!(rejected_field(&text), expect, "K = {bad}");
        }
    }
    // One launch reads wq_a and wkv, so they must share K.
    assert_eq!(
        rejected_field(&set_value(&["quant", "wkv"], int(5))),
        "quant.wkv"
    );
}

#[test]
fn the_k_mix_must_add_up() {
    let mix = |entries: &[(i64, i64)]| set(&["quant", "routed_experts"], cited(k_mix(entries)));
    assert_eq!(rejected_field(&mix(&[(2, 383)])), "quant.routed_experts");
    assert_eq!(
        rejected_field(&mix(&[(2, 200), (3, 200)])),
        "quant.routed_experts"
    );
    assert_eq!(rejected_field(&mix(&[])), "quant.routed_experts");
    assert_eq!(
        rejected_field(&mix(&[(2, 100), (9, 284)])),
        "quant.routed_experts[1].k"
    );
    assert_eq!(
        rejected_field(&mix(&[(2, 100), (2, 284)])),
        "quant.routed_experts[1].k"
    );
    assert_eq!(
        rejected_field(&mix(&[(0, 384)])),
        "quant.routed_experts[0].k"
    );
}

#[test]
fn every_value_needs_provenance() {
    let mut bare = Table::new();
    bare.insert("value".into(), int(5120));
    assert_eq!(
        rejected_field(&set(&["model", "hidden"], Value::Table(bare.clone()))),
        "model.hidden"
    );

    let mut both = bare.clone();
    both.insert("source".into(), Value::String("v41-config".into()));
    both.insert("at".into(), Value::String("hidden_size".into()));
    both.insert("assumed".into(), Value::String("also".into()));
    assert_eq!(
        rejected_field(&set(&["model", "hidden"], Value::Table(both))),
        "model.hidden"
    );

    let mut unknown_source = bare.clone();
    unknown_source.insert("source".into(), Value::String("no-such-reference".into()));
    unknown_source.insert("at".into(), Value::String("hidden_size".into()));
    assert_eq!(
        rejected_field(&set(&["model", "hidden"], Value::Table(unknown_source))),
        "model.hidden"
    );

    let mut no_at = bare.clone();
    no_at.insert("source".into(), Value::String("v41-config".into()));
    assert_eq!(
        rejected_field(&set(&["dtypes", "mhc"], Value::Table(no_at.clone()))),
        "dtypes.mhc"
    );

    let mut empty_at = no_at;
    empty_at.insert("at".into(), Value::String("  ".into()));
    assert_eq!(
        rejected_field(&set(&["model", "vocab"], Value::Table(empty_at))),
        "model.vocab"
    );

    let mut empty_reason = bare;
    empty_reason.insert("assumed".into(), Value::String(String::new()));
    assert_eq!(
        rejected_field(&set(&["parallelism", "ranks"], Value::Table(empty_reason))),
        "parallelism.ranks"
    );

    let empty_reference = set(&["references", "seed-004"], Value::String(String::new()));
    assert_eq!(rejected_field(&empty_reference), "references.seed-004");
    assert_eq!(
        rejected_field(&set(&["name"], Value::String(" ".into()))),
        "name"
    );
}

#[test]
fn the_gpu_must_be_in_the_table() {
    let text = set_value(&["hardware", "gpu"], Value::String("GB11".into()));
    assert_eq!(rejected_field(&text), "hardware.gpu");
    // A table that lacks GB10 rejects the default spec, which names it.
    let h200_only = r#"
        [references]
        r = "a source"
        [[gpu]]
        name = "H200"
        description = "x"
        spec_bandwidth_gbps = { value = 4800.0, source = "r", at = "table" }
    "#;
    let table = GpuTable::from_toml_str(h200_only, "test table").expect("valid table");
    let e = Spec::from_toml_str_with_gpus(BUILTIN_SPECS[0].1, "test", &table).expect_err("no GB10");
    assert_eq!(e.field(), Some("hardware.gpu"));
}

/// Rejected with `field` named, and `word` somewhere in the message.
fn rejected_saying(text: &str, field: &str, word: &str) {
    match Spec::from_toml_str(text, "test") {
        Ok(_) => panic!("accepted a bad spec"),
        Err(e) => {
            assert_eq!(e.field(), Some(field), "{e}");
            let message = e.to_string();
            assert!(message.contains(word), "`{word}` not in: {message}");
            assert!(message.starts_with("test: "), "origin not named: {message}");
        }
    }
}

#[test]
fn shape_and_type_errors_name_the_key() {
    // A typo is reported as the unknown key it is, not as the intended key going missing.
    rejected_saying(
        &BUILTIN_SPECS[0].1.replace("\nhidden =", "\nhiden ="),
        "model.hiden",
        "unknown key",
    );
    rejected_saying(
        &set(&["modle"], Value::Table(Table::new())),
        "modle",
        "unknown key",
    );
    // A value of the wrong type, a negative count, an unknown dtype or split.
    rejected_saying(
        &set_value(&["model", "vocab"], Value::String("lots".into())),
        "model.vocab",
        "lots",
    );
    rejected_saying(
        &set_value(&["model", "heads"], int(-64)),
        "model.heads",
        "-64",
    );
    rejected_saying(
        &set_value(&["dtypes", "router"], Value::String("fp64".into())),
        "dtypes.router",
        "fp64",
    );
    rejected_saying(
        &set_value(
            &["parallelism", "expert_split"],
            Value::String("diagonal".into()),
        ),
        "parallelism.expert_split",
        "diagonal",
    );
    // A bare value where a { value, source, at } table belongs.
    rejected_saying(&set(&["model", "top_k"], int(6)), "model.top_k", "integer");
    // A missing section or key.
    let mut t = default_table();
    t.remove("dtypes");
    rejected_saying(
        &toml::to_string(&t).expect("serialisable"),
        "dtypes",
        "missing",
    );
    let mut t = default_table();
    if let Some(q) = t.get_mut("quant").and_then(Value::as_table_mut) {
        q.remove("wo_b");
    }
    rejected_saying(
        &toml::to_string(&t).expect("serialisable"),
        "quant.wo_b",
        "missing",
    );
    // An unknown key inside a provenance table, or inside a K-mix entry.
    let mut extra = Table::new();
    extra.insert("value".into(), int(1));
    extra.insert("assumed".into(), Value::String("x".into()));
    extra.insert("sauce".into(), Value::String("x".into()));
    rejected_saying(
        &set(&["model", "shared_experts"], Value::Table(extra)),
        "model.shared_experts.sauce",
        "unknown key",
    );
    let mut entry = Table::new();
    entry.insert("k".into(), int(2));
    entry.insert("count".into(), int(384));
    rejected_saying(
        &set(
            &["quant", "routed_experts"],
            cited(Value::Array(vec![Value::Table(entry)])),
        ),
        "quant.routed_experts[0].count",
        "unknown key",
    );
    // Not TOML at all: the parser's own error, with the line.
    match Spec::from_toml_str("model = [", "test") {
        Err(e @ Error::Table(model_shapes::Error::Parse { .. })) => {
            assert!(e.to_string().contains("line 1"), "{e}")
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn reading_a_missing_file_names_it() {
    let path = std::path::Path::new("/nonexistent/kl1-shapes-spec.toml");
    let e = Spec::from_file(path).expect_err("no such file");
    assert!(matches!(e, Error::Table(model_shapes::Error::Input(_))));
    assert!(e.to_string().contains("kl1-shapes-spec.toml"), "{e}");
}

#[test]
fn a_device_is_refused_not_read() {
    // /dev/zero would grow without bound if read; it is refused as not a regular file.
    let e = Spec::from_file(std::path::Path::new("/dev/zero")).expect_err("a device");
    assert!(
        matches!(e, Error::Table(model_shapes::Error::Input(_))),
        "{e:?}"
    );
    assert!(e.to_string().contains("/dev/zero"), "{e}");
}
