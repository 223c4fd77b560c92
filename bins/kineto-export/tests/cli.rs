//! The `kineto-export` binary as a user runs it: layout, refusals, errors that name the file.
#![allow(clippy::unwrap_used)] // Test helpers, outside `#[test]` functions.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{corpus, kineto_export};

/// `kineto-export ARGS`, as printed.
fn export(args: &[&std::ffi::OsStr]) -> Output {
    kineto_export().args(args).output().unwrap()
}

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
    // The XPlane files' counts are xplane_counts.py's (testdata/native/xplane), the Perfetto files'
    // perfetto_counts.py's (testdata/native/perfetto).
    let xplane_counts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(native.join("xplane/counts.json")).unwrap())
            .unwrap();
    let perfetto_counts: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(native.join("perfetto/counts.json")).unwrap(),
    )
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
        // One process's Perfetto trace (perfetto_counts.py): one rank.
        ("perfetto/gpu_stages.pftrace", "perfetto", 1),
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
        let c = match (rel.strip_prefix("xplane/"), rel.strip_prefix("perfetto/")) {
            (Some(name), _) => &xplane_counts[name],
            (_, Some(name)) => &perfetto_counts[name],
            _ => &counts[rel],
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

/// The `rank=N` directories of each table under `out`, sorted, each with its files' names.
fn partitions(out: &Path) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for t in TABLES {
        let mut ranks: Vec<(String, Vec<String>)> = std::fs::read_dir(out.join(t))
            .unwrap()
            .map(|e| {
                let dir = e.unwrap().path();
                let mut files: Vec<String> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                files.sort();
                let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                (format!("{t}/{name}"), files)
            })
            .collect();
        ranks.sort();
        found.extend(ranks);
    }
    found
}

/// `(partition, files)` for every table: each of `ranks` (`rank=N`, the file's stem) in each table.
fn expected(ranks: &[(u64, &str)]) -> Vec<(String, Vec<String>)> {
    TABLES
        .iter()
        .flat_map(|t| {
            ranks
                .iter()
                .map(move |(n, stem)| (format!("{t}/rank={n}"), vec![format!("{stem}.parquet")]))
        })
        .collect()
}

/// Ranks without `distributedInfo.rank` in files of several ranks: each is numbered by its position among
/// the ranks of all inputs (files in input order, then the file's own ranks), so two such files never
/// give two ranks one number. Before, a rank took its file's position plus its own: the nsys file's
/// second rank and the RPD file (input 1) both took rank=1, and the export failed.
#[test]
fn rankless_ranks_of_several_multi_rank_files_are_numbered_in_input_order() {
    let native = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native");
    // make_native.py: the nsys file is two processes on two GPUs, the rocpd file one process on two
    // GPUs, the RPD file one rank; none names a distributed rank.
    let nsys = native.join("nsys_node_3.17.sqlite");
    let rpd = native.join("rpd_3.rpd");
    let rocpd = native.join("rocpd_3.db");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ds");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        nsys.as_os_str(),
        rpd.as_os_str(),
        rocpd.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // nsys: ranks 0 and 1; RPD: after nsys's 2, rank 2; rocpd: after 2 + 1, ranks 3 and 4.
    assert_eq!(
        partitions(&out),
        expected(&[
            (0, "nsys_node_3.17.sqlite"),
            (1, "nsys_node_3.17.sqlite"),
            (2, "rpd_3.rpd"),
            (3, "rocpd_3.db"),
            (4, "rocpd_3.db"),
        ]),
        "{err}"
    );
    let notes: Vec<String> = err
        .lines()
        .filter_map(|l| l.strip_prefix("kineto-export: note: "))
        .map(|l| l.replace(&format!("{}/", native.display()), ""))
        .collect();
    let of_two = |n: u64, i: u64, before: u64| {
        format!(
            "no distributedInfo.rank; exported as rank={n} (its position among the ranks of the inputs: \
             rank {i} of this file's 2, after the {before} ranks of the files before it)"
        )
    };
    assert_eq!(
        notes,
        [
            format!("nsys_node_3.17.sqlite#pid 4101 gpu 0: {}", of_two(0, 1, 0)),
            format!("nsys_node_3.17.sqlite#pid 4201 gpu 1: {}", of_two(1, 2, 0)),
            "rpd_3.rpd: no distributedInfo.rank; exported as rank=2 (its position among the ranks of the \
             inputs; --rank sets it)"
                .to_string(),
            format!("rocpd_3.db#pid 5001 gpu 0: {}", of_two(3, 1, 3)),
            format!("rocpd_3.db#pid 5001 gpu 1: {}", of_two(4, 2, 3)),
        ]
    );

    // The other order: rocpd's ranks 0 and 1, then nsys's after rocpd's 2: 2 and 3.
    let out = dir.path().join("swapped");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        rocpd.as_os_str(),
        nsys.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        partitions(&out),
        expected(&[
            (0, "rocpd_3.db"),
            (1, "rocpd_3.db"),
            (2, "nsys_node_3.17.sqlite"),
            (3, "nsys_node_3.17.sqlite"),
        ])
    );
}

/// A rankless file after one that could not be read has no number (the count of the ranks before it is
/// unknown): it is refused naming the unreadable file, not given a guess that a rerun would change. A
/// file before the unreadable one is exported as usual; a file given twice is refused before anything.
#[test]
fn rankless_ranks_after_an_unreadable_input_are_refused_naming_it() {
    let native = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native");
    let rpd = native.join("rpd_3.rpd");
    let rocpd = native.join("rocpd_3.db");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("cut.json");
    std::fs::write(&bad, br#"{"traceEvents": [{"ph": "X", "name": "k""#).unwrap();
    let out = dir.path().join("ds");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        rpd.as_os_str(),
        bad.as_os_str(),
        rocpd.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{}: not exported: it names no distributedInfo.rank, so its ranks are numbered by their \
             position among the ranks of all inputs, unknown since {} before it could not be read",
            rocpd.display(),
            bad.display()
        )),
        "{err}"
    );
    assert_eq!(partitions(&out), expected(&[(0, "rpd_3.rpd")]), "{err}");

    let out = dir.path().join("twice");
    let o = export(&[
        "--parquet".as_ref(),
        out.as_os_str(),
        rpd.as_os_str(),
        rpd.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        format!(
            "kineto-export: {} is given twice; give each trace once",
            rpd.display()
        )
    );
    assert!(!out.exists());
}
