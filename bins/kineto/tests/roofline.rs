//! `kineto roofline` end to end on the shared corpus's vLLM decode step (gpt-oss-20b-like on MI300X);
//! without the corpus (`../shared/traces`) the tests that run it are listed as ignored.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

mod common;
use common::tool_json::embedded_json;
use common::{code_and_text, corpus, kineto};

/// `kineto roofline ARGS TRACE` on the corpus's vLLM decode step.
fn roofline(args: &[&str]) -> (i32, String, String) {
    let trace = corpus::corpus_file("serving/vllm_decode_full/graph_execution.json.gz");
    code_and_text(kineto().arg("roofline").args(args).arg(trace))
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn json_has_one_object_per_step_with_the_documented_keys() {
    let (code, out, err) = roofline(&["--model", "testdata/models/gpt-oss-20b.json", "--json"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1);
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    for k in [
        "step",
        "name",
        "phase",
        "requests",
        "query_tokens",
        "context_tokens",
        "bytes_total",
        "flops_total",
        "span_us",
        "busy_us",
        "gbps",
        "tflops",
        "peak_gbps",
        "peak_tflops",
        "pct_of_peak_gbps",
        "bound",
        "gpu",
    ] {
        assert!(!v[k].is_null(), "{k} missing in {v}");
    }
    for k in [
        "weights",
        "routed_experts",
        "kv_read",
        "kv_write",
        "lm_head",
    ] {
        assert!(v["bytes"][k].is_number(), "bytes.{k} missing in {v}");
    }
    assert_eq!(v["gpu"], "MI300X");
    assert_eq!(v["phase"], "decode");
    assert_eq!(
        (v["requests"].as_u64(), v["context_tokens"].as_u64()),
        (Some(32), Some(55_086))
    );
    assert_eq!(v["span_ns"], 10_699_981);
    assert_eq!(v["bound"], "memory");
    // The GEMM and MoE kernels' exclusive time, exact in ns beside its µs (docs/roofline.md: 8,899.8 µs).
    let b = &v["buckets"];
    let ns = b["weights_ns"].as_i64().unwrap();
    assert_eq!(Some(ns as f64 / 1e3), b["weights_us"].as_f64());
    assert!((ns as f64 / 1e3 - 8_899.8).abs() < 0.05, "{b}");
    // Σ of the parts is the total.
    let parts: f64 = v["bytes"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((parts - v["bytes_total"].as_f64().unwrap()).abs() < 1.0);
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn table_and_csv() {
    let (code, out, err) = roofline(&["--model", "testdata/models/gpt-oss-20b.json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("GPU MI300X (from numSms+memory)"), "{out}");
    assert!(
        out.contains("13.92") && out.contains("1300.704") && out.contains("memory"),
        "{out}"
    );
    let (code, out, _) = roofline(&["--model", "testdata/models/gpt-oss-20b.json", "--csv"]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("bytes.weights") && header.contains("span_us"),
        "{header}"
    );
    assert_eq!(lines.count(), 1);
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn an_impossible_estimate_fails_with_both_numbers() {
    let (code, out, err) = roofline(&[
        "--model",
        "testdata/models/gpt-oss-20b.json",
        "--gpu",
        "GB10",
        "--json",
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("1300.7 GB/s") && err.contains("273.0 GB/s") && err.contains("step 0"),
        "{err}"
    );
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn bad_model_options_are_usage_errors() {
    let (code, _, err) = roofline(&[
        "--model",
        "testdata/models/gpt-oss-20b.json",
        "--quant",
        "int3",
    ]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = roofline(&[
        "--model",
        "testdata/models/gpt-oss-20b.json",
        "--gpu",
        "TPU",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("MI300X"), "{err}");
    let (code, _, err) = roofline(&["--model", "testdata/models/missing.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.json"), "{err}");
}

/// `--weights` lists the weights table: gpt-oss-20b's groups, whose parameters add up to 20.91 B and whose
/// routed experts are mxfp4 (2880·5760/2 + 90·5760 + 2·5760 B for one gate|up with its bf16 bias, × 32 × 24).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn weights_table() {
    let out = kineto()
        .args([
            "roofline",
            "--model",
            "testdata/models/gpt-oss-20b.json",
            "--weights",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let params: u64 = rows.iter().map(|r| r["params"].as_u64().unwrap()).sum();
    // The LM head is not tied: embedding and head both count.
    assert!((params as f64 / 20.9e9 - 1.0).abs() < 0.005, "{params}");
    let gu = rows
        .iter()
        .find(|r| r["group"] == "mlp.experts.gate_up_proj")
        .unwrap();
    assert_eq!(gu["format"], "mxfp4");
    assert_eq!(gu["reads"], "routed");
    let one: u64 = 2880 * 5760 / 2 + 90 * 5760 + 2 * 5760;
    assert_eq!(gu["rank_bytes"].as_f64(), Some((one * 32 * 24) as f64));
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn html_embeds_the_rows_json_prints() {
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("roofline.html");
    let page_arg = page_path.to_str().unwrap();
    let (code, out, err) = roofline(&[
        "--model",
        "testdata/models/gpt-oss-20b.json",
        "--json",
        "--html",
        page_arg,
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let page = std::fs::read_to_string(&page_path).unwrap();
    let embedded = embedded_json(&page);
    assert_eq!(embedded["roofline"], serde_json::Value::Array(rows));
    assert!(page.contains("<svg"), "the roofline chart is drawn");
    // The name is not taken over without --overwrite.
    let (code, _, err) = roofline(&[
        "--model",
        "testdata/models/gpt-oss-20b.json",
        "--html",
        page_arg,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--overwrite"), "{err}");
}

/// A stock SGLang decode step (`step[DECODE bs=8]`: 8 requests, one query token each, no KV tokens) on an
/// H100: the terms that need the KV tokens are null and named, the note names the option that gives
/// them, and with `--kv-tokens` the step is complete.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn unknown_counts_are_null_until_given() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sglang.json");
    std::fs::write(
        &trace,
        r#"{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3","totalGlobalMem":85899345920,"numSms":132}],
"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"step[DECODE bs=8]","pid":1,"tid":1,"ts":100.0,"dur":50.0},
{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":110.0,"dur":5.0,"args":{"correlation":7}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":200.0,"dur":4000.0,"args":{"correlation":7,"device":0,"stream":7}},
{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":4300.0,"dur":1000.0,"args":{"correlation":7,"device":0,"stream":7}}
]}"#,
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let out = kineto()
            .args([
                "roofline",
                "--json",
                "--model",
                "testdata/models/llama-3.1-8b.json",
            ])
            .args(extra)
            .arg(&trace)
            .output()
            .unwrap();
        let v: serde_json::Value =
            serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
        (out.status.code(), v, String::from_utf8(out.stderr).unwrap())
    };
    let (code, v, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        (v["requests"].as_u64(), v["query_tokens"].as_u64()),
        (Some(8), Some(8))
    );
    assert!(v["context_tokens"].is_null(), "{v}");
    assert_eq!(v["tokens_from"], "marker `sglang`");
    assert_eq!(v["unknown"], "bytes.kv_read flops.attention");
    for k in ["bytes_total", "flops_total", "gbps", "tflops", "bound"] {
        assert!(v[k].is_null(), "{k}: {v}");
    }
    assert!(
        v["bytes"]["kv_read"].is_null() && v["bytes"]["weights"].is_number(),
        "{v}"
    );
    assert!(
        err.contains("steps 0 lack token counts") && err.contains("--kv-tokens N"),
        "{err}"
    );

    // 8 requests over 8,192 KV tokens: Llama-3.1-8B reads 8,192 × 4,096 B in each of 32 layers.
    let (code, v, err) = run(&["--kv-tokens", "8192"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(v["tokens_from"], "marker `sglang` + given (KV tokens)");
    assert!(v["unknown"].is_null(), "{v}");
    assert_eq!(
        v["bytes"]["kv_read"].as_f64(),
        Some((8192u64 * 4096 * 32) as f64)
    );
    assert!(v["gbps"].is_number() && v["bound"] == "memory", "{v}");
    assert!(!err.contains("lack token counts"), "{err}");
}
