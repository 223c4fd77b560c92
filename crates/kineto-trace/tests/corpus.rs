//! Every real trace parses and agrees with counts made independently (INVENTORY.csv: plain `json.load`)
//! and with kernel times computed by `testdata/reference/kernel_times.py`. The traces are the shared corpus's
//! (`../shared/traces`): without it these tests are listed as ignored.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use kineto_trace::summary::Summary;
use kineto_trace::{Feed, Options, parse_file};
use std::collections::HashMap;
use std::path::Path;

mod common;
use common::workspace;

fn read_csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let head: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_owned)
        .collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            head.iter()
                .cloned()
                .zip(l.split(',').map(str::to_owned))
                .collect()
        })
        .collect()
}

fn opt(v: Option<u64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// Checks every file of an inventory; returns how many were checked.
fn check(root: &Path, feed: Feed) -> usize {
    let inventory = read_csv(&root.join("INVENTORY.csv"));
    let reference: HashMap<String, HashMap<String, String>> =
        read_csv(&workspace().join("testdata/reference/kernel_times.csv"))
            .into_iter()
            .map(|r| (r["path"].clone(), r))
            .collect();
    let opts = Options {
        feed,
        ..Options::default()
    };
    let mut failures = Vec::new();
    for row in &inventory {
        let rel = &row["path"];
        let parsed = match parse_file(&root.join(rel), &opts) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{rel}: {e}"));
                continue;
            }
        };
        let s = Summary::of(&parsed);
        let got: Vec<(&str, String)> = vec![
            ("events", s.events.to_string()),
            ("kernel", s.kernels.count.to_string()),
            ("gpu_memcpy", s.memcpy.count.to_string()),
            ("gpu_memset", s.memset.count.to_string()),
            ("cuda_runtime", s.runtime.count.to_string()),
            ("cuda_driver", s.driver.count.to_string()),
            ("cpu_op", s.cpu_ops.to_string()),
            ("user_annotation", s.user_annotations.to_string()),
            ("gpu_user_annotation", s.gpu_user_annotations.to_string()),
            ("cpu_gpu_flows", s.flows.to_string()),
            ("profiler_steps", s.profiler_steps.to_string()),
            ("graph_launches", s.graph_launches.to_string()),
            ("rank", opt(s.rank)),
            ("world_size", opt(s.world_size)),
        ];
        for (col, value) in got {
            if row[col] != value {
                failures.push(format!(
                    "{rel}: {col} = {value}, inventory says {}",
                    row[col]
                ));
            }
        }
        match reference.get(rel) {
            Some(r) => {
                let sum_ns: i64 = parsed.trace.kernels.iter().map(|k| k.dur_ns).sum();
                let union_ns = kineto_trace::interval::union(
                    parsed.trace.kernels.iter().map(|k| (k.ts_ns, k.end_ns())),
                );
                if r["sum_ns"] != sum_ns.to_string() || r["union_ns"] != union_ns.to_string() {
                    failures.push(format!(
                        "{rel}: kernel sum/union {sum_ns}/{union_ns} ns, reference {}/{}",
                        r["sum_ns"], r["union_ns"]
                    ));
                }
                // The µs figures printed are the same ns, divided.
                assert_eq!(s.kernels.sum_us, sum_ns as f64 / 1000.0);
            }
            None => failures.push(format!("{rel}: no row in kernel_times.csv")),
        }
        assert!(
            parsed.trace.salvaged.is_none(),
            "{rel}: salvaged without asking"
        );
        assert_eq!(parsed.sha256.as_deref().map(str::len), Some(64));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    inventory.len()
}

/// The whole shared corpus, each file read on the helper thread.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn shared_corpus_matches_independent_counts() {
    let root = common::corpus::required();
    let n = check(&root, Feed::Threaded);
    assert!(n >= 40, "only {n} traces in the shared corpus");
}

/// The same files read inline: the same counts.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn shared_corpus_parses_the_same_inline() {
    let root = common::corpus::required();
    check(&root, Feed::Inline);
}

/// The rule: every reader reports the input records it skipped (summary `warnings`), and skips none on
/// the files it fully understands — every Kineto JSON of the inventory, the rocprofv3 JSON and the
/// rpd2tracing Chrome array. (Their `{}` placeholder objects are no records: rpd2tracing opens its
/// array with one.) A capture directory's `execution_details.json`, a JSON array but no trace, is refused.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_json_readers_skip_no_record_of_the_corpus() {
    let root = common::corpus::required();
    let mut files: Vec<String> = read_csv(&root.join("INVENTORY.csv"))
        .into_iter()
        .map(|r| r["path"].clone())
        .collect();
    files.push("native/rocprofv3/mi350x_train_908_results.json.gz".into());
    files.push("native/rpd/matmul_result.rpd2tracing.json".into());
    let mut skipped = Vec::new();
    for rel in &files {
        let parsed = parse_file(&root.join(rel), &Options::default())
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        let s = Summary::of(&parsed);
        if s.warnings_total != 0 {
            skipped.push(format!(
                "{rel}: {} skipped: {:?}",
                s.warnings_total, s.warnings
            ));
        }
    }
    assert!(skipped.is_empty(), "{}", skipped.join("\n"));
    let details = root.join("serving/vllm_decode_full/capture_traces/execution_details.json");
    match parse_file(&details, &Options::default()) {
        Err(e @ kineto_trace::Error::Format { .. }) => {
            assert!(e.to_string().contains("not a trace"), "{e}")
        }
        other => panic!("execution_details.json: expected a refusal, got {other:?}"),
    }
}

/// The real rocprofv3 files' registers and LDS (`native::rocprof_resources`). The counts over every
/// dispatch are count_native.py's (corpus_counts.json, checked in kineto-sqlite's counts test); here
/// one dispatch whose LDS is partly dynamic, so that the dispatch's group segment (2,049 bytes) and not
/// its symbol's (1 byte) is what is read:
///   python3 -c "import gzip,json; p=json.load(gzip.open('mi350x_train_908_results.json.gz'))['rocprofiler-sdk-tool'][0];
///     s={k['kernel_id']:k for k in p['kernel_symbols']}; d=[d for d in p['buffer_records']['kernel_dispatch']
///     if d['start_timestamp']==63865635954803][0]; print(s[d['dispatch_info']['kernel_id']]['arch_vgpr_count'],
///     d['dispatch_info']['group_segment_size'], s[d['dispatch_info']['kernel_id']]['group_segment_size'])"
///   → 28 2049 1 (the only dispatch starting then)
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn rocprofv3_corpus_registers_and_lds_are_read_by_the_one_rule() {
    use kineto_trace::GpuKind;
    let root = common::corpus::required();
    let read = |rel: &str| {
        parse_file(&root.join(rel), &Options::default())
            .unwrap_or_else(|e| panic!("{rel}: {e}"))
            .trace
    };
    let json = read("native/rocprofv3/mi350x_train_908_results.json.gz");
    let at: Vec<_> = json
        .gpu_ops(GpuKind::Kernel)
        .iter()
        .filter(|o| o.ts_ns == 63_865_635_954_803)
        .collect();
    assert_eq!(at.len(), 1);
    let d = json.detail(&at[0]);
    assert!(
        json.name(at[0].name)
            .starts_with("void at::native::reduce_kernel<128, 4")
    );
    assert_eq!((d.registers, d.shared_memory), (Some(28), Some(2_049)));
    // Every one of the 43,915 dispatches (kernels and the runtime's blit kernels) has both.
    let all: Vec<_> = [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset]
        .into_iter()
        .flat_map(|k| json.gpu_ops(k))
        .map(|o| json.detail(&o))
        .collect();
    assert_eq!(all.len(), 43_915);
    assert!(
        all.iter()
            .all(|d| d.registers.is_some() && d.shared_memory.is_some())
    );
    // The early CSV: Group_Segment_Size 0 on each of its 7 rows, no VGPR column.
    let csv = read("native/rocprof-csv/kernel_trace.csv");
    let kernels = csv.gpu_ops(GpuKind::Kernel);
    assert_eq!(kernels.len(), 7);
    for k in kernels {
        let d = csv.detail(&k);
        assert_eq!((d.registers, d.shared_memory), (None, Some(0)));
    }
}
