//! Steps of traces shaped as stock vLLM (V1, V0, annotated), SGLang (spans, stack), TensorRT-LLM
//! (modules and graph replays, NVTX ranges) and a graph-replay-only trace write them, against
//! `testdata/synthetic/server_traces/expected.json`: `make_server_traces.py` builds the traces from the
//! servers' step loops and works out every step, its kernels, its tokens and the kernels outside every
//! step by brute force over the events, independently of this crate; and each step's phase, the
//! marker's or inferred (a graph replay with no eager attention is decode; else unknown).
#![allow(clippy::expect_used, clippy::unwrap_used)] // Test helpers: a bad fixture should fail loudly.

use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::step::{PhaseSource, StepPattern};
use kineto_trace::tokens::TokenSource;
use kineto_trace::{Options, parse_file};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

mod common;
use common::workspace;

fn dir() -> PathBuf {
    workspace().join("testdata/synthetic/server_traces")
}

fn expected() -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(dir().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

fn kind(s: &TokenSource) -> &'static str {
    match s {
        TokenSource::Marker { .. } => "marker",
        TokenSource::GemmRows { .. } => "gemm_rows",
        TokenSource::GraphCapture { .. } => "graph_capture",
    }
}

fn phase_kind(s: &PhaseSource) -> &'static str {
    match s {
        PhaseSource::Marker { .. } => "marker",
        PhaseSource::GraphReplay { .. } => "graph_replay",
        PhaseSource::AttentionKernels { .. } => "attention_kernels",
        PhaseSource::OneTokenPerRequest { .. } => "one_token_per_request",
    }
}

#[test]
fn every_case_gives_the_steps_kernels_and_tokens_worked_out_by_its_generator() {
    let cases = expected();
    assert_eq!(cases.len(), 10, "{:?}", cases.keys());
    for (case, want) in &cases {
        let path = dir().join(want["file"].as_str().unwrap());
        let p = parse_file(&path, &Options::default()).expect("parse");
        let a = Analysis::at(&p, &StepPattern::builtin(), &Rules::builtin()).expect("analyse");
        let s = &a.steps;
        let at = |what: &str| format!("{case}: {what} ({:?})", s.notes);
        assert_eq!(
            s.profile.as_deref(),
            want["profile"].as_str(),
            "{}",
            at("profile")
        );
        let steps = want["steps"].as_array().unwrap();
        assert_eq!(s.steps.len(), steps.len(), "{}", at("steps"));
        for (got, w) in s.steps.iter().zip(steps) {
            let here = format!("{case} step {} `{}`", got.index, got.name);
            assert_eq!(got.name, w["name"].as_str().unwrap(), "{here}");
            assert_eq!(
                got.kernels.len() as u64,
                w["kernels"].as_u64().unwrap(),
                "{here}"
            );
            let mut names: Vec<&str> = got
                .kernels
                .iter()
                .map(|&k| p.trace.name(p.trace.kernels.row(k as usize).name))
                .collect();
            names.sort_unstable();
            names.dedup();
            let want_names: Vec<&str> = w["kernel_names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            assert_eq!(names, want_names, "{here}");
            let t = got.tokens.unwrap_or_default();
            assert_eq!(
                t.query_tokens(),
                w["query_tokens"].as_u64(),
                "{here}: query tokens"
            );
            for (key, phase) in [
                ("prefill_requests", t.prefill),
                ("decode_requests", t.decode),
            ] {
                assert_eq!(
                    phase.and_then(|p| p.requests),
                    w.get(key).and_then(Value::as_u64),
                    "{here}: {key}"
                );
            }
            assert_eq!(
                got.requests,
                w.get("requests").and_then(Value::as_u64),
                "{here}"
            );
            let from: Vec<&str> = got.tokens_from.iter().map(kind).collect();
            let want_from: Vec<&str> = w["tokens_from"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            assert_eq!(from, want_from, "{here}: tokens_from");
            assert_eq!(
                got.phase.as_deref(),
                w["phase"].as_str(),
                "{here}: phase ({:?})",
                got.phase_from
            );
            assert_eq!(
                got.phase_from.as_ref().map(phase_kind),
                w["phase_from"].as_str(),
                "{here}: phase_from"
            );
        }
        assert_eq!(
            s.kernels_outside,
            want["kernels_outside"].as_u64().unwrap(),
            "{}",
            at("outside")
        );
        let outside: BTreeMap<String, u64> = s.outside.examples.iter().cloned().collect();
        let want_outside: BTreeMap<String, u64> = want["outside"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(outside, want_outside, "{}", at("outside names"));
        // Only the python_function events a profile needs are kept; all are counted.
        assert_eq!(
            p.trace.python_functions.len() as u64,
            want["python_kept"].as_u64().unwrap(),
            "{case}"
        );
        assert_eq!(
            p.trace
                .counts
                .other_complete
                .get("python_function")
                .copied()
                .unwrap_or(0),
            want["python_events"].as_u64().unwrap(),
            "{case}"
        );
    }
}

/// The sources say what they are: the GEMM rows of vLLM's first step agree with its first GEMM, the
/// graph replays' sizes name their capture, and a replay no capture has is said so.
#[test]
fn token_sources_are_named() {
    let p = parse_file(
        &dir().join("vllm_v1_stack/vllm_v1_stack.json"),
        &Options::default(),
    )
    .unwrap();
    let a = Analysis::at(&p, &StepPattern::builtin(), &Rules::builtin()).unwrap();
    // 2 layers × (qkv, o) projections of 300 rows, each an aten::linear over an aten::addmm, and the
    // LM head over 8 logit rows: 8 of the 10 GEMM ops have 300 rows, the first among them.
    assert_eq!(
        a.steps.steps[0].tokens_from,
        [TokenSource::GemmRows {
            op: "aten::linear".into(),
            rows: 300,
            agreeing: 8,
            gemms: 10,
            first: true
        }]
    );
    assert_eq!(a.steps.launches_outside, 2);
    let p = parse_file(
        &dir().join("graph_only/graph_only.json"),
        &Options::default(),
    )
    .unwrap();
    let a = Analysis::at(&p, &StepPattern::builtin(), &Rules::builtin()).unwrap();
    assert_eq!(
        a.steps.steps[2].tokens_from,
        [TokenSource::GraphCapture {
            label: "capture_16_FULL".into(),
            size: 16,
            ops: 5
        }]
    );
    let notes = a.steps.notes.join("\n");
    assert!(
        notes.contains("each of the 5 CUDA/HIP-graph replays is one step"),
        "{notes}"
    );
    assert!(
        notes.contains("4 steps' replay matched a capture")
            && notes.contains("step 4: no capture of 3 ops"),
        "{notes}"
    );
}

/// What a kept python_function event and a GEMM's rows cost in the model (the memory bound of
/// ARCHITECTURE.md counts them): 32 and 8 bytes.
#[test]
fn kept_events_are_small() {
    assert_eq!(std::mem::size_of::<kineto_trace::Span>(), 32);
    assert_eq!(std::mem::size_of::<kineto_trace::GemmRows>(), 8);
}

/// The shared vLLM trace without its TraceLens marker is what stock vLLM V1 writes: its step is the
/// model runner's `execute_model` (python_function), the whole HIP-graph replay inside it, and the
/// replay's size comes from its capture trace (`capture_32_FULL`, 421 launches captured = the 421
/// kernels replayed; serving/INVENTORY.csv and a plain json.load count them).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_shared_vllm_trace_without_its_marker() {
    let root = common::corpus::required();
    let src = root.join("serving/vllm_decode_full/graph_execution.json.gz");
    let raw = std::fs::read(&src).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&raw[..]), &mut text).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let before = events.len();
    events.retain(|e| e["cat"] != "user_annotation");
    assert_eq!(before - events.len(), 1);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("graph_execution.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let p = parse_file(&path, &Options::default()).unwrap();
    // 984 python_function events, of which the one `execute_model` of the model runner is kept (and no
    // whole-model forward: the graph replays the model).
    assert_eq!(p.trace.counts.other_complete["python_function"], 984);
    assert_eq!(p.trace.python_functions.len(), 1);
    let mut a = Analysis::new(&p.trace, &StepPattern::builtin(), &Rules::builtin());
    assert_eq!(a.steps.profile.as_deref(), Some("vllm-python"));
    assert_eq!(a.steps.steps.len(), 1);
    let st = &a.steps.steps[0];
    assert_eq!(
        st.name,
        "vllm/v1/worker/gpu_model_runner.py(3380): execute_model"
    );
    assert_eq!((st.kernels.len(), st.memcpys.len()), (425, 9));
    // The step replays a graph: the eager LM-head GEMM's rows are not taken as its tokens.
    assert_eq!(st.tokens, None);
    let caps = kineto_trace::capture::GraphCaptures::read_dir(
        &root.join("serving/vllm_decode_full/capture_traces"),
    )
    .unwrap();
    assert_eq!(caps.captures.len(), 1);
    let c = &caps.captures[0];
    assert_eq!(
        (c.label.as_str(), c.size, c.ops, c.mode.as_deref()),
        ("capture_32_FULL", 32, Some(421), Some("FULL"))
    );
    caps.apply(&p.trace, &a.links, &mut a.steps);
    let st = &a.steps.steps[0];
    assert_eq!(st.tokens.and_then(|t| t.query_tokens()), Some(32));
    assert_eq!(
        st.tokens_from,
        [TokenSource::GraphCapture {
            label: "capture_32_FULL".into(),
            size: 32,
            ops: 421
        }]
    );
}
