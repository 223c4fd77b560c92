//! Helpers the integration tests share: where the test data is, and the corpus rule.
#![allow(dead_code)] // Each test binary uses its own subset.
#![allow(clippy::expect_used)] // Test helpers: a missing fixture should fail the test loudly.

use std::io::Read;
use std::path::{Path, PathBuf};

#[path = "../../../../tests/corpus/mod.rs"]
pub mod corpus;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared corpus beside the clone, or `None` when it is absent (KL1_REQUIRE_CORPUS set: absence fails).
pub fn shared_corpus() -> Option<PathBuf> {
    corpus::corpus()
}

/// The trace the mutation tests start from, decompressed: HTA's CUDA event-sync example (92 events) from
/// the shared corpus when it is there; else the generated vLLM V1 trace of
/// `testdata/synthetic/make_server_traces.py` (CUDA-graph replays, flows, annotations), so that a plain
/// clone mutates a trace too.
pub fn mutation_seed() -> Vec<u8> {
    let Some(root) = shared_corpus() else {
        let p =
            workspace().join("testdata/synthetic/server_traces/vllm_v1_stack/vllm_v1_stack.json");
        return std::fs::read(&p).expect("the generated vLLM trace");
    };
    let p = root.join("hta/critical_path/cuda_event_sync/event_sync_trace.json.gz");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&p).expect("open"))
        .read_to_end(&mut out)
        .expect("read");
    out
}

/// The small real traces of the corpus the memory and split tests read (once copied into testdata; the
/// whole corpus is the corpus tests' job): 2021 format, ROCm, `cuda_driver` launches, an integer above
/// i64, `gpu_user_annotation`, CPU-only, NCCL ranks, CUDA event syncs, `cuda_sync`.
pub const SMALL_CORPUS_TRACES: &[&str] = &[
    "hta/_historical/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
    "hta/_historical/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/trace_compare/base/base.json.gz",
    "hta/trace_file_list/inference_rank_1.json.gz",
    "hta/triton_example/triton_example.json.gz",
    "kineto-tb-plugin/before_fix_trace.json",
    "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz",
    "param/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json.gz",
];

/// Small traces to parse whole: [`SMALL_CORPUS_TRACES`] when the corpus is there; else the project's
/// generated ones (the server-shaped traces of `testdata/synthetic`, plain JSON, and one rank of the demo
/// window, gzip), so that a plain clone checks the same properties on its own data.
pub fn small_traces() -> Vec<PathBuf> {
    if let Some(root) = shared_corpus() {
        return SMALL_CORPUS_TRACES.iter().map(|r| root.join(r)).collect();
    }
    let synthetic = workspace().join("testdata/synthetic");
    let mut out = vec![
        synthetic.join("sglang_steps.json"),
        workspace().join("testdata/windows/demo/prof-short-b1.decode.rank0.pt.trace.json.gz"),
    ];
    let servers = synthetic.join("server_traces");
    for e in std::fs::read_dir(&servers).expect("testdata/synthetic/server_traces") {
        let dir = e.expect("entry").path();
        if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
            let trace = dir.join(format!("{name}.json"));
            if trace.is_file() {
                out.push(trace);
            }
        }
    }
    out.sort();
    out
}
