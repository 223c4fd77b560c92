//! Writes traces' tables and reads them back with the parquet crate's own reader: row counts, row
//! groups, sums and encodings against the parsed model. The real traces are the shared corpus's (tests
//! ignored without it); generated ones (testdata/windows/demo, testdata/synthetic) always run.
#![allow(clippy::unwrap_used)] // Test helpers, outside `#[test]` functions.

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use kineto_parquet::{Analysed, Limits, SCHEMA_VERSION, Table, write_table};
use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding};
use std::path::Path;

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;

/// A trace of the shared corpus, parsed.
fn trace(rel: &str) -> kineto_trace::Parsed {
    parse(&corpus::corpus_file(rel))
}

fn parse(p: &Path) -> kineto_trace::Parsed {
    kineto_trace::parse_file(p, &kineto_trace::Options::default()).unwrap()
}

fn export(parsed: &kineto_trace::Parsed, table: Table, limits: Limits) -> bytes::Bytes {
    let rules = Rules::builtin();
    let a = Analysis::new(&parsed.trace, &StepPattern::builtin(), &rules);
    let budgets = a.budgets(&parsed.trace, &rules);
    let view = Analysed {
        file: "f",
        trace: &parsed.trace,
        analysis: &a,
        budgets: &budgets,
        rules: &rules,
    };
    let (buf, _) = write_table(table, &view, Vec::new(), &[], limits).unwrap();
    bytes::Bytes::from(buf)
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn gpu_ops_stream_in_row_groups_and_keep_every_op() {
    let p = trace("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz");
    let t = &p.trace;
    let n = t.kernels.len() + t.memcpys.len() + t.memsets.len();
    // Small limits so the trace spans several batches and row groups.
    let limits = Limits {
        batch_rows: 7,
        row_group_rows: 50,
    };
    let buf = export(&p, Table::GpuOps, limits);
    let builder = ParquetRecordBatchReaderBuilder::try_new(buf).unwrap();
    let md = builder.metadata().clone();
    assert_eq!(md.file_metadata().num_rows() as usize, n);
    // 245 kernels + 16 copies = 261 rows: row groups of 50 → 6.
    assert_eq!(n, 261);
    assert_eq!(md.num_row_groups(), n.div_ceil(50));
    let kv = md.file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().any(|k| k.key == "kineto.schema_version"
        && k.value.as_deref() == Some(SCHEMA_VERSION.to_string().as_str())));
    let schema = md.file_metadata().schema_descr();
    for rg in md.row_groups() {
        for (i, c) in rg.columns().iter().enumerate() {
            assert!(matches!(c.compression(), Compression::ZSTD(_)));
            let name = schema.column(i).name().to_string();
            let dict = c.encodings().any(|e| e == Encoding::RLE_DICTIONARY);
            let text = matches!(
                name.as_str(),
                "name" | "family" | "bucket" | "file" | "kind" | "annotation"
            );
            if text {
                assert!(dict, "{name} not dictionary-encoded");
            }
            if name == "ts_ns" {
                assert!(!dict, "ts_ns should be plain");
            }
        }
    }
    let reader = builder.build().unwrap();
    let (mut rows, mut dur, mut kernel_dur, mut stepped) = (0usize, 0i64, 0i64, 0usize);
    for b in reader {
        let b = b.unwrap();
        rows += b.num_rows();
        let d = b
            .column_by_name("dur_ns")
            .unwrap()
            .as_primitive::<Int64Type>();
        let k = b.column_by_name("kind").unwrap().as_string::<i32>();
        let s = b
            .column_by_name("step")
            .unwrap()
            .as_primitive::<UInt32Type>();
        for i in 0..b.num_rows() {
            dur += d.value(i);
            if k.value(i) == "kernel" {
                kernel_dur += d.value(i);
                if s.is_valid(i) {
                    stepped += 1;
                }
            }
        }
    }
    assert_eq!(rows, n);
    let want: i64 = t
        .kernels
        .iter()
        .chain(&t.memcpys)
        .chain(&t.memsets)
        .map(|o| o.dur_ns)
        .sum();
    assert_eq!(dur, want);
    // `kineto summary` on this file: kernels sum 6832 µs.
    assert_eq!(kernel_dur, 6_832_000);
    // Every kernel of this trace is in its one ProfilerStep.
    assert_eq!(stepped, 245);
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn every_table_writes_and_reads_on_several_formats() {
    every_table_writes_and_reads(
        &[
            "param/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json.gz",
            "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            "kineto-tb-plugin/before_fix_trace.json",
            "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        ]
        .map(corpus::corpus_file),
    );
}

/// The same on generated traces: a rank of the demo window and two server-shaped synthetic traces.
#[test]
fn every_table_writes_and_reads_on_generated_traces() {
    let root = corpus::repository_root();
    every_table_writes_and_reads(
        &[
            "testdata/windows/demo/prof-short-b1.decode.rank0.pt.trace.json.gz",
            "testdata/synthetic/server_traces/vllm_v1_stack/vllm_v1_stack.json",
            "testdata/synthetic/server_traces/sglang_spans/sglang_spans.json",
        ]
        .map(|r| root.join(r)),
    );
}

fn every_table_writes_and_reads(paths: &[std::path::PathBuf]) {
    for path in paths {
        let rel = path.display();
        let p = parse(path);
        let t = &p.trace;
        for table in Table::EXPORTED {
            let buf = export(&p, table, Limits::default());
            let r = ParquetRecordBatchReaderBuilder::try_new(buf).unwrap();
            let rows = r.metadata().file_metadata().num_rows() as usize;
            let fields: Vec<String> = r
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            // The table's columns, in order, but the partition (`rank=N`, the directory).
            let want: Vec<&str> = table
                .columns()
                .iter()
                .map(|c| c.name)
                .filter(|n| *n != kineto_tables::PARTITION)
                .collect();
            assert_eq!(fields, want, "{rel} {}", table.name());
            let types: Vec<(String, bool)> = r
                .schema()
                .fields()
                .iter()
                .map(|f| (f.data_type().to_string(), f.is_nullable()))
                .collect();
            let want: Vec<(String, bool)> = table
                .columns()
                .iter()
                .filter(|c| c.name != kineto_tables::PARTITION)
                .map(|c| (kineto_parquet::arrow_type(c.ty).to_string(), c.nullable))
                .collect();
            assert_eq!(types, want, "{rel} {}", table.name());
            if table == Table::GpuOps {
                assert_eq!(
                    rows,
                    t.kernels.len() + t.memcpys.len() + t.memsets.len(),
                    "{rel}"
                );
            }
            if table == Table::Annotations {
                assert_eq!(
                    rows,
                    t.user_annotations.len() + t.gpu_user_annotations.len(),
                    "{rel}"
                );
            }
        }
    }
}
