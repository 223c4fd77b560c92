//! The `kineto-export` binary as a user runs it: layout, refusals, errors that name the file.
#![allow(clippy::unwrap_used)] // Test helpers, outside `#[test]` functions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn export(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kineto-export"))
        .args(args)
        .output()
        .unwrap()
}

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;

/// A trace of the shared corpus (for tests ignored without it).
fn testdata(rel: &str) -> PathBuf {
    corpus::corpus_file(rel)
}

const TABLES: [&str; 5] = ["gpu_ops", "steps", "budget", "families", "annotations"];

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn a_rank_directory_becomes_one_partition_per_rank_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ds");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        testdata("param/dlrm_kineto").as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for t in TABLES {
        for (rank, stem) in [
            (0, "worker0_step_12.1694128201545.pt.trace"),
            (1, "worker1_step_12.1694128201556.pt.trace"),
        ] {
            let f = out
                .join(t)
                .join(format!("rank={rank}"))
                .join(format!("{stem}.parquet"));
            let bytes = std::fs::read(&f).unwrap();
            // Parquet files start and end with the magic `PAR1`.
            assert_eq!(&bytes[..4], b"PAR1", "{}", f.display());
            assert_eq!(&bytes[bytes.len() - 4..], b"PAR1", "{}", f.display());
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    // worker0: 245 kernels + 16 copies (kineto summary), one ProfilerStep.
    assert!(err.contains("rank=0: gpu_ops 261, steps 1,"), "{err}");

    // A second run refuses to replace the files, names one, and keeps it; --overwrite replaces.
    let before =
        std::fs::read(out.join("steps/rank=0/worker0_step_12.1694128201545.pt.trace.parquet"))
            .unwrap();
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        testdata("param/dlrm_kineto").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("exists (--overwrite replaces it)"), "{err}");
    assert!(err.contains("rank=0"), "{err}");
    let after =
        std::fs::read(out.join("steps/rank=0/worker0_step_12.1694128201545.pt.trace.parquet"))
            .unwrap();
    assert_eq!(before, after);
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        "--overwrite".as_ref(),
        testdata("param/dlrm_kineto").as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn two_traces_of_one_rank_are_refused_not_merged() {
    let dir = tempfile::tempdir().unwrap();
    let t = testdata("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz");
    let copy = dir.path().join("again.json.gz");
    std::fs::copy(&t, &copy).unwrap();
    let out = dir.path().join("ds");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        t.as_os_str(),
        copy.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    // The rank rule's words (as `kineto ranks`, `kineto diff` and `read_ranks` say it), both files named.
    assert!(
        err.contains("claims rank 0, as") && err.contains("already exported"),
        "{err}"
    );
    assert!(
        err.contains("again.json.gz") && err.contains("worker0_step_12"),
        "{err}"
    );
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn a_trace_without_a_rank_takes_its_position_or_the_given_rank() {
    let dir = tempfile::tempdir().unwrap();
    let t = testdata("kineto-tb-plugin/before_fix_trace.json");
    let out = dir.path().join("ds");
    let o = export(&["--parquet".as_ref(), out.as_os_str(), t.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no distributedInfo.rank; exported as rank=0"),
        "{err}"
    );
    assert!(
        out.join("gpu_ops/rank=0/before_fix_trace.parquet")
            .is_file()
    );
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        "--rank".as_ref(),
        "17".as_ref(),
        t.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.join("annotations/rank=17/before_fix_trace.parquet")
            .is_file()
    );
    // A rank the trace contradicts is an error.
    let t0 = testdata("param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        "--rank".as_ref(),
        "3".as_ref(),
        t0.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the trace says rank 0, --rank says 3"));
}

#[test]
fn a_bad_trace_is_named_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("cut.json");
    std::fs::write(&bad, br#"{"traceEvents": [{"ph": "X", "name": "k""#).unwrap();
    let out = dir.path().join("ds");
    let o = export(&["--parquet".as_ref(), out.as_os_str(), bad.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cut.json"), "{err}");
    assert!(!out.join("gpu_ops").exists());
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        dir.path().join("missing.json").as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.json"));
}

#[test]
fn every_native_format_exports_with_its_format_in_the_metadata() {
    let native = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native");
    let counts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(native.join("counts.json")).unwrap())
            .unwrap();
    // The XPlane files' counts are xplane_counts.py's (testdata/native/xplane).
    let xplane_counts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(native.join("xplane/counts.json")).unwrap())
            .unwrap();
    // The number of ranks each file holds: the nsys file is two processes on two GPUs, the rocpd file
    // one process on two GPUs (make_native.py), each exported as a rank of its own.
    for (i, (rel, key, ranks)) in [
        ("nsys_node_3.17.sqlite", "nsys_sqlite", 2),
        ("rocpd_3.db", "rocpd_sqlite", 2),
        ("rpd_3.rpd", "rpd_sqlite", 1),
        ("rocprofv3_markers.json", "rocprofv3_json", 1),
        (
            "rocprofv3_csv_old/7101_kernel_trace.csv",
            "rocprofv3_csv",
            1,
        ),
        ("chrome_array_open.json", "chrome_array", 1),
        // One host's XPlane with two GPU planes (xplane_counts.py): each GPU a rank.
        ("xplane/multi_gpu.xplane.pb", "xplane", 2),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ds");
        // A file of several ranks is exported without --rank (which names one), its ranks from 0.
        let rank = if ranks == 1 { i } else { 0 }.to_string();
        let mut args: Vec<&std::ffi::OsStr> = vec!["--parquet".as_ref(), out.as_os_str()];
        if ranks == 1 {
            args.extend::<[&std::ffi::OsStr; 2]>(["--rank".as_ref(), rank.as_ref()]);
        }
        let file = native.join(rel);
        args.push(file.as_os_str());
        let o = export(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{rel}: {err}");
        // gpu_ops holds every kernel, copy and fill (counted by Python in counts.json), over the ranks.
        let c = match rel.strip_prefix("xplane/") {
            Some(name) => &xplane_counts[name],
            None => &counts[rel],
        };
        let ops = ["kernels", "memcpys", "memsets"]
            .iter()
            .map(|k| c[k].as_u64().unwrap())
            .sum::<u64>();
        let exported: Vec<u64> = err
            .split("gpu_ops ")
            .skip(1)
            .map(|s| s.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(exported.len(), ranks, "{rel}: {err}");
        assert_eq!(exported.iter().sum::<u64>(), ops, "{rel}: {err}");
        if ranks > 1 {
            for r in 0..ranks {
                assert!(
                    out.join("gpu_ops").join(format!("rank={r}")).is_dir(),
                    "{rel}"
                );
            }
        }
        // The file's key-value metadata (in the footer, uncompressed) names the format.
        let part = out.join("gpu_ops").join(format!("rank={rank}"));
        let file = std::fs::read_dir(&part)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let bytes = std::fs::read(&file).unwrap();
        let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
        assert!(
            has("kineto.format") && has(key),
            "{rel}: {}",
            file.display()
        );
    }
}
