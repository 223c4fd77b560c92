//! Every native-format file of testdata/native (built from the formats' public schemas) and of the shared
//! corpus's real samples (`../shared/traces/native`; without it that test is listed as ignored), read
//! through `kineto_trace::parse_file` with this crate's SQLite reader installed, against the independent
//! counts of `testdata/native/count_native.py` (Python's sqlite3 / json / csv, output in counts.json and
//! corpus_counts.json) and what `make_native.py` put in each file (truth.json).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use kineto_trace::{GpuKind, Options, Parsed, TraceFormat, parse_file};
use serde_json::Value;
use std::path::{Path, PathBuf};

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;
#[path = "../../../tests/native_counts/mod.rs"]
mod native_counts;
use native_counts::int;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native")
}

fn json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join(name)).unwrap()).unwrap()
}

fn parse(path: &Path) -> Parsed {
    kineto_sqlite::install();
    parse_file(path, &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Counts, sums and bytes of every GPU-op kind, API calls and marker ranges, and the steps, of the file
/// `rel` under `root`.
fn check(root: &Path, rel: &str, want: &Value) {
    let p = parse(&root.join(rel));
    let t = &p.trace;
    native_counts::assert_gpu_op_counts(t, want, rel);
    for (kind, key) in [
        (GpuKind::Kernel, "kernel"),
        (GpuKind::Memcpy, "memcpy"),
        (GpuKind::Memset, "memset"),
    ] {
        let ops = t.gpu_ops(kind);
        let bytes: u64 = ops.iter().filter_map(|o| t.detail(&o).bytes).sum();
        assert_eq!(
            bytes as i64,
            int(want, &format!("{key}_bytes")),
            "{rel}: Σ {key} bytes"
        );
    }
    if let Some(r) = want.get("kernel_resources") {
        // rocprofv3 JSON and CSV: the dispatches' registers and LDS, by the rule of every rocprofv3
        // reader (`kineto_trace::native::rocprof_resources`).
        let details: Vec<_> = [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset]
            .into_iter()
            .flat_map(|k| t.gpu_ops(k))
            .map(|o| t.detail(&o))
            .collect();
        let given = |v: fn(&kineto_trace::GpuOpDetail) -> Option<u32>| {
            let values: Vec<i64> = details.iter().filter_map(|d| v(d)).map(i64::from).collect();
            (values.len() as i64, values.iter().sum::<i64>())
        };
        assert_eq!(
            given(|d| d.registers),
            (int(r, "registers"), int(r, "registers_sum")),
            "{rel}: dispatches with registers, Σ"
        );
        assert_eq!(
            given(|d| d.shared_memory),
            (int(r, "shared_memory"), int(r, "shared_memory_sum")),
            "{rel}: dispatches with shared memory, Σ"
        );
    }
    assert_eq!(
        t.launches.len() as i64,
        int(want, "launches"),
        "{rel}: API calls"
    );
    assert_eq!(
        t.user_annotations.len() as i64,
        int(want, "markers"),
        "{rel}: marker ranges"
    );
    let Some(steps) = want["steps"].as_array() else {
        return;
    };
    let rules = Rules::builtin();
    let a = Analysis::new(t, &StepPattern::builtin(), &rules);
    let got: Vec<(String, i64, i64, i64, i64)> = a
        .steps
        .steps
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.kernels.len() as i64,
                s.kernel_sum_ns,
                s.memcpys.len() as i64,
                s.memsets.len() as i64,
            )
        })
        .collect();
    let expected: Vec<(String, i64, i64, i64, i64)> = steps
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                int(s, "kernels"),
                int(s, "kernel_sum_ns"),
                int(s, "memcpys"),
                int(s, "memsets"),
            )
        })
        .collect();
    assert_eq!(got, expected, "{rel}: steps");
    assert_eq!(
        a.steps.kernels_outside as i64,
        int(want, "kernels_outside_steps"),
        "{rel}: kernels outside steps"
    );
}

#[test]
fn every_built_native_file_matches_the_independent_counts() {
    let counts = json("counts.json");
    let files = counts.as_object().unwrap();
    // Six built files and two rocprofv3 CSV directories (three processes, one key each).
    assert_eq!(files.len(), 9, "{:?}", files.keys().collect::<Vec<_>>());
    for (rel, want) in files {
        check(&dir(), rel, want);
    }
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn every_corpus_native_sample_matches_the_independent_counts() {
    let root = corpus::corpus_file("native");
    let counts = json("corpus_counts.json");
    let files = counts.as_object().unwrap();
    // nsys, rocprofv3 JSON and CSV, RPD and its rpd2tracing export.
    assert_eq!(files.len(), 5, "{:?}", files.keys().collect::<Vec<_>>());
    for (rel, want) in files {
        check(&root, rel, want);
    }
}

#[test]
fn what_each_built_file_holds_by_construction() {
    let truth = json("truth.json");
    for (rel, want) in truth.as_object().unwrap() {
        let p = parse(&dir().join(rel));
        let t = &p.trace;
        assert_eq!(
            serde_json::to_value(t.header.format).unwrap(),
            want["format"],
            "{rel}"
        );
        assert_eq!(t.header.format.key(), want["format"].as_str().unwrap());
        if let Some(v) = want["format_version"].as_str() {
            assert_eq!(t.header.format_version.as_deref(), Some(v), "{rel}");
        }
        assert_eq!(t.kernels.len() as i64, int(want, "kernels"), "{rel}");
        let driver = t
            .launches
            .iter()
            .filter(|l| l.api == kineto_trace::Api::Driver)
            .count();
        assert_eq!(
            driver as i64,
            int(want, "driver"),
            "{rel}: driver-level calls"
        );
        if let Some(mode) = want["graph_trace_mode"].as_str() {
            assert_eq!(t.capture.graph_trace_mode.as_deref(), Some(mode), "{rel}");
            assert_eq!(
                t.capture.graph_replays as i64,
                int(want, "graph_replays"),
                "{rel}"
            );
            assert_eq!(
                t.capture.kernels_complete(),
                want["kernels_complete"].as_bool().unwrap(),
                "{rel}"
            );
        }
        if let Some(o) = want.get("overruns") {
            let got = t.capture.queue_overruns.expect("overruns counted");
            assert_eq!(got.count as i64, int(o, "count"), "{rel}: overruns");
            assert_eq!(got.max_ns, int(o, "max_ns"), "{rel}: largest overrun");
        }
        if let Some(name) = want["demangled"].as_str() {
            assert!(
                t.kernels.iter().any(|k| t.name(k.name) == name),
                "{rel}: no kernel named {name}"
            );
        }
    }
}

#[test]
fn graph_mode_replays_are_kernels_of_their_own_and_the_capture_says_it_is_incomplete() {
    let p = parse(&dir().join("nsys_graph_3.16.sqlite"));
    let t = &p.trace;
    let replays: Vec<_> = t
        .kernels
        .iter()
        .filter(|k| {
            t.name(k.name)
                .starts_with(kineto_trace::GRAPH_REPLAY_PREFIX)
        })
        .collect();
    // Two rows of CUPTI_ACTIVITY_KIND_GRAPH_TRACE: 2000..8000 and 12000..18500, graph 3.
    assert_eq!(replays.len(), 2);
    assert_eq!(t.capture.graph_replays_ns, (8000 - 2000) + (18500 - 12000));
    assert!(replays.iter().all(|k| t.detail(k).graph_id == Some(3)));
    assert!(!t.capture.kernels_complete());
    assert!(t.capture.notes.iter().any(|n| n.contains("incomplete")));
    // The budget places them in the `graph` bucket, not `unmatched`.
    let rules = Rules::builtin();
    let a = Analysis::new(t, &StepPattern::builtin(), &rules);
    let budgets = a.budgets(t, &rules);
    let graph = &budgets[0].buckets["graph"];
    // Step 0's window 2000..8500: the replay alone for 6000 ns, then the rmsnorm kernel.
    assert_eq!((graph.exclusive_ns, graph.inclusive_ns), (6000, 6000));
    assert_eq!(budgets[0].span_ns, 8500 - 2000);
    // The session start anchors the clock.
    assert_eq!(t.header.base_time_ns, Some(1_733_877_925_987_393_218));
}

#[test]
fn nsys_reads_the_gpu_table_and_joins_correlations_per_process() {
    let p = parse(&dir().join("nsys_node_3.17.sqlite"));
    let t = &p.trace;
    assert_eq!(t.header.devices.len(), 2);
    let d = &t.header.devices[0];
    assert_eq!(d.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(
        (d.num_sms, d.total_global_mem),
        (Some(132), Some(85_520_809_984))
    );
    assert_eq!(
        t.header.producer.as_deref(),
        Some("NVIDIA Nsight Systems 2025.1.1.131")
    );
    // Process 4201's kernels link to its own calls (ids 1..3 are reused by process 4101).
    let links = kineto_trace::correlate::Links::build(t);
    assert_eq!(links.report.kernels_without_launch.count, 0);
    assert_eq!(links.report.duplicate_correlations, 0);
    for (k, l) in t.kernels.iter().zip(&links.kernel_launch) {
        let launch = t.launches.row(l.unwrap() as usize);
        let (kp, lp) = (
            t.detail(&k).device.unwrap(),
            t.track(launch.track).pid.as_i64().unwrap(),
        );
        assert_eq!(kp == 1, lp == 4201, "{}", t.name(k.name));
    }
    // The copy is named as Kineto names it, from the ENUM tables.
    assert_eq!(
        t.name(t.memcpys.row(0).name),
        "Memcpy HtoD (Pageable -> Device)"
    );
    assert_eq!(t.name(t.memsets.row(0).name), "Memset (Device)");
    // `_vNNNN` suffixes dropped: the graph launch is seen as one.
    let links = kineto_trace::correlate::Links::build(t);
    assert_eq!(
        (links.report.graph_launches, links.report.graph_kernels),
        (1, 3)
    );
}

#[test]
fn csv_agents_are_numbered_as_hip_numbers_gpus() {
    for (rel, first, second) in [
        (
            "rocprofv3_csv_old/7101_kernel_trace.csv",
            "void addition_kernel<float>(float*, float const*, float const*, int, int)",
            "subtract_kernel(float*, float const*, float const*, int, int)",
        ),
        (
            "rocprofv3_csv_new/7202_kernel_trace.csv",
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)",
            "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32",
        ),
    ] {
        let p = parse(&dir().join(rel));
        let t = &p.trace;
        let dev = |n: &str| {
            t.kernels
                .iter()
                .find(|k| t.name(k.name) == n)
                .and_then(|k| t.detail(&k).device)
        };
        // Agent 1 is the first GPU (device 0), agent 2 the second, by agent_info.csv.
        assert_eq!((dev(first), dev(second)), (Some(0), Some(1)), "{rel}");
        assert_eq!(t.header.devices.len(), 2, "{rel}");
        assert_eq!(t.header.devices[0].num_sms, Some(304), "{rel}");
    }
}

#[test]
fn a_directory_of_rocprofv3_csv_is_one_trace_per_process() {
    let paths = kineto_trace::expand_paths(&[dir().join("rocprofv3_csv_new")]).unwrap();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["7201_kernel_trace.csv", "7202_kernel_trace.csv"]);
}

#[test]
fn gzip_of_every_format_reads_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    for rel in [
        "nsys_node_3.17.sqlite",
        "rocpd_3.db",
        "rpd_3.rpd",
        "rocprofv3_markers.json",
        "chrome_array_open.json",
        "rocprofv3_csv_old/7101_kernel_trace.csv",
    ] {
        let plain = parse(&dir().join(rel));
        let gzip = |from: &Path| {
            let bytes = std::fs::read(from).unwrap();
            let to = tmp.path().join(format!(
                "{}.gz",
                from.file_name().unwrap().to_string_lossy()
            ));
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut e, &bytes).unwrap();
            std::fs::write(&to, e.finish().unwrap()).unwrap();
            to
        };
        // A CSV set is read with the files beside it: gzip them all.
        let from = dir().join(rel);
        if rel.ends_with(".csv") {
            for f in std::fs::read_dir(from.parent().unwrap()).unwrap() {
                gzip(&f.unwrap().path());
            }
        }
        let z = parse(&gzip(&from));
        assert!(z.gzip, "{rel}");
        assert_eq!(z.trace.header.format, plain.trace.header.format, "{rel}");
        assert_eq!(z.trace.kernels, plain.trace.kernels, "{rel}");
        assert_eq!(z.trace.memcpys.len(), plain.trace.memcpys.len(), "{rel}");
        assert_eq!(z.trace.launches.len(), plain.trace.launches.len(), "{rel}");
        // The hash is of the stored (compressed) bytes.
        assert_ne!(z.sha256, plain.sha256, "{rel}");
    }
}

#[test]
fn sqlite_databases_that_are_not_traces_or_lack_a_column_say_which() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other.sqlite");
    let c = rusqlite::Connection::open(&other).unwrap();
    c.execute("CREATE TABLE people (name TEXT)", []).unwrap();
    drop(c);
    kineto_sqlite::install();
    let e = parse_file(&other, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("other.sqlite") && e.contains("rocpd_op") && e.contains("StringIds"),
        "{e}"
    );

    let broken = tmp.path().join("broken.sqlite");
    let c = rusqlite::Connection::open(&broken).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER);",
    )
    .unwrap();
    drop(c);
    let e = parse_file(&broken, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("CUPTI_ACTIVITY_KIND_KERNEL") && e.contains("no column `end`"),
        "{e}"
    );

    // A row that ends before it starts names its table and row.
    let bad = tmp.path().join("bad.sqlite");
    let c = rusqlite::Connection::open(&bad).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, \"end\" INTEGER, bytes INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (10, 20, 4), (50, 40, 4);",
    )
    .unwrap();
    drop(c);
    let e = parse_file(&bad, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("CUPTI_ACTIVITY_KIND_MEMSET, row 1") && e.contains("ends before it starts"),
        "{e}"
    );

    // A file with the SQLite header but cut short: SQLite's own error, naming the file.
    let cut = tmp.path().join("cut.sqlite");
    let bytes = std::fs::read(dir().join("rpd_3.rpd")).unwrap();
    std::fs::write(&cut, &bytes[..5000]).unwrap();
    let e = parse_file(&cut, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut.sqlite"), "{e}");
}

#[test]
fn the_format_is_in_the_summary() {
    let p = parse(&dir().join("rpd_3.rpd"));
    let s = serde_json::to_value(kineto_trace::summary::Summary::of(&p)).unwrap();
    assert_eq!(s["format"], "rpd_sqlite");
    assert_eq!(s["format_version"], "3");
    assert_eq!(s["kernels_complete"], true);
    assert_eq!(s["capture"]["queue_overruns"]["count"], 1);
    assert_eq!(TraceFormat::RpdSqlite.title(), "RPD SQLite");
}

/// Early Nsight Systems exports (schema 3.0–3.1, seen in public ones: nsys 2021–2023) keep their
/// versions in EXPORT_META_DATA and key TARGET_INFO_GPU by `deviceId`, with the SM count and memory in
/// TARGET_INFO_CUDA_GPU; some have no ENUM_* tables at all. The 3.17 file rewritten that way must read
/// as the same trace, down to every name (the copy names come from the enum ids), device and NVTX mark
/// (its one eventType-34 row, named NvtxMark only by ENUM_NSYS_EVENT_TYPE).
#[test]
fn an_early_nsys_export_reads_as_the_same_trace_as_a_later_one() {
    let tmp = tempfile::tempdir().unwrap();
    let later = dir().join("nsys_node_3.17.sqlite");
    let early = tmp.path().join("early.sqlite");
    std::fs::copy(&later, &early).unwrap();
    let c = rusqlite::Connection::open(&early).unwrap();
    c.execute_batch(
        "ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA;
         CREATE TABLE TARGET_INFO_CUDA_GPU (vmId INTEGER, name TEXT, numMultiprocessors INTEGER,
             globalMemorySize INTEGER, deviceId INTEGER, pid INTEGER);
         INSERT INTO TARGET_INFO_CUDA_GPU
             SELECT vmId, name, smCount, totalMemory, id, 1 FROM TARGET_INFO_GPU;
         CREATE TABLE gpu AS SELECT vmId, id AS deviceId, name, busLocation, isDiscrete FROM TARGET_INFO_GPU;
         DROP TABLE TARGET_INFO_GPU;
         ALTER TABLE gpu RENAME TO TARGET_INFO_GPU;
         DROP TABLE ENUM_CUDA_MEMCPY_OPER;
         DROP TABLE ENUM_CUDA_MEM_KIND;
         DROP TABLE ENUM_NSYS_EVENT_TYPE;",
    )
    .unwrap();
    drop(c);
    let (a, b) = (parse(&later), parse(&early));
    assert_eq!(b.trace.header.format_version.as_deref(), Some("3.17.1"));
    assert!(
        b.trace
            .header
            .devices
            .iter()
            .all(|d| d.num_sms == Some(132))
    );
    let copies: Vec<&str> = b
        .trace
        .gpu_ops(GpuKind::Memcpy)
        .iter()
        .map(|o| b.trace.name(o.name))
        .collect();
    assert_eq!(copies, ["Memcpy HtoD (Pageable -> Device)"]);
    // The same trace, but for the three notes that say the built-in ids were used.
    let mut b = b;
    let said: Vec<String> = std::mem::take(&mut b.trace.capture.notes)
        .into_iter()
        .filter(|n| !a.trace.capture.notes.contains(n))
        .collect();
    assert_eq!(said.len(), 3, "{said:?}");
    for table in [
        "ENUM_CUDA_MEMCPY_OPER",
        "ENUM_CUDA_MEM_KIND",
        "ENUM_NSYS_EVENT_TYPE",
    ] {
        assert!(said.iter().any(|n| n.contains(table)), "{said:?}");
    }
    b.trace.capture.notes = a.trace.capture.notes.clone();
    assert_eq!(format!("{:?}", a.trace), format!("{:?}", b.trace));
}

/// An export of a capture that traced no CUDA (nsys 2026 writes no CUDA tables then, nor their enum
/// tables): the notes say what is missing — no CUDA activity table, so no GPU work — and never guess the
/// export's age; an enum table whose ids nothing reads is not mentioned.
#[test]
fn an_export_without_cuda_tables_says_so_without_guessing_its_age() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("no-cuda.sqlite");
    std::fs::copy(dir().join("nsys_node_3.17.sqlite"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;
         DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY;
         DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET;
         DROP TABLE ENUM_CUDA_MEMCPY_OPER;
         DROP TABLE ENUM_CUDA_MEM_KIND;",
    )
    .unwrap();
    drop(c);
    let p = parse(&path);
    assert_eq!(
        p.trace.kernels.len() + p.trace.memcpys.len() + p.trace.memsets.len(),
        0
    );
    let notes = &p.trace.capture.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("no CUDA activity table in this export")
                && n.contains("CUPTI_ACTIVITY_KIND_KERNEL")),
        "{notes:?}"
    );
    assert!(!notes.iter().any(|n| n.contains("2021")), "{notes:?}");
    // Nothing reads the copy and memory-kind ids, so their missing enum tables go unmentioned.
    assert!(!notes.iter().any(|n| n.contains("ENUM_CUDA")), "{notes:?}");
    // The later file, with its CUDA tables, has no such note.
    let full = parse(&dir().join("nsys_node_3.17.sqlite"));
    assert!(
        !full
            .trace
            .capture
            .notes
            .iter()
            .any(|n| n.contains("no CUDA activity table"))
    );
}

#[test]
fn a_rocpd_file_links_by_stack_id_alone_when_it_has_them() {
    // External correlation ids (a tool's numbering, here each row's stack_id - 1) on every row, and
    // one dispatch (event 12, the second kernel, launched by stack 14; the dispatch of event 6 is
    // hipMemsetAsync's fill, counted as a fill) that lost its stack_id. Mixing
    // the two per row would link that kernel through external id 13 to stack 13, `hipMemcpyAsync`.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("mixed.db");
    std::fs::copy(dir().join("rocpd_3.db"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let table: String = c
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_event_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    c.execute_batch(&format!(
        "UPDATE {table} SET correlation_id = stack_id - 1;
         UPDATE {table} SET stack_id = 0 WHERE id = 12;"
    ))
    .unwrap();
    drop(c);
    let t = parse(&path).trace;
    assert_eq!(t.kernels.len(), 2);
    let launch = |k: kineto_trace::GpuOp| {
        k.correlation.and_then(|c| {
            t.launches
                .iter()
                .find(|l| l.correlation == Some(c))
                .map(|l| t.name(l.name))
        })
    };
    let launched: Vec<Option<&str>> = t.kernels.iter().map(launch).collect();
    assert_eq!(
        launched,
        [Some("hipLaunchKernel"), None],
        "the kernel without a stack_id is left unlinked, not linked by its external id"
    );
}

/// Nsight Systems 2022 exports list a call twice with one correlation id, once under its name and once
/// under its versioned name (`cudaLaunchKernel`, `cudaLaunchKernel_v7000`). The 3.17 file with every
/// versioned call listed again under its plain name must read as the same calls: 9 (8 versioned rows —
/// 5 `cudaLaunchKernel_v7000`, `cudaMemcpyAsync_v3020`, `cudaGraphLaunch_v10000`, `cudaMemsetAsync_v3020`
/// — and the driver's `cuLaunchKernel`), not 9 + 8 = 17, each GPU op still linked to its one call, and a
/// note counting the 8.
#[test]
fn a_call_listed_under_its_name_and_its_versioned_name_counts_once() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("nsys2022.sqlite");
    std::fs::copy(dir().join("nsys_node_3.17.sqlite"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "INSERT INTO StringIds (id, value)
             SELECT 1000 + id, substr(value, 1, instr(value, '_v') - 1) FROM StringIds
             WHERE value LIKE 'cuda%\\_v%' ESCAPE '\\';
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
             (eventClass, start, \"end\", globalTid, correlationId, nameId, returnValue)
             SELECT r.eventClass, r.start, r.\"end\", r.globalTid, r.correlationId, 1000 + r.nameId, 0
             FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
             WHERE s.value LIKE 'cuda%\\_v%' ESCAPE '\\';",
    )
    .unwrap();
    let dups: i64 = c
        .query_row(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId > 1000",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dups, 8);
    drop(c);
    let (plain, twice) = (parse(&dir().join("nsys_node_3.17.sqlite")), parse(&path));
    assert_eq!(plain.trace.launches.len(), 9);
    assert_eq!(twice.trace.launches.len(), 9);
    let names = |p: &Parsed| -> Vec<String> {
        p.trace
            .launches
            .iter()
            .map(|l| p.trace.name(l.name).to_string())
            .collect()
    };
    assert_eq!(names(&plain), names(&twice));
    let rules = Rules::builtin();
    let a = Analysis::new(&twice.trace, &StepPattern::builtin(), &rules);
    let r = &a.links.report;
    // Every launch has its GPU op and no id is carried twice (the doctor's "launch calls have no GPU
    // op" came from the second listing).
    assert_eq!(r.launches_without_gpu_op.len(), 0, "{r:?}");
    assert_eq!(r.duplicate_correlations, 0);
    assert_eq!(r.kernels_without_launch.count, 0);
    let notes = &twice.trace.capture.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("8 API calls were listed twice")),
        "{notes:?}"
    );
    assert!(
        !plain
            .trace
            .capture
            .notes
            .iter()
            .any(|n| n.contains("listed twice"))
    );
}

/// Per rank of a file read through the session: (label, kernels, copies, fills, calls, marker ranges,
/// steps).
type RankCounts = (String, usize, usize, usize, usize, usize, usize);

fn ranks_of(path: &Path) -> Vec<RankCounts> {
    kineto_sqlite::install();
    let session = kineto_trace::Session::new(kineto_trace::SessionConfig::default()).unwrap();
    let ranks = session.open_ranks(path).unwrap_or_else(|e| panic!("{e}"));
    ranks
        .iter()
        .map(|a| {
            let t = a.trace();
            let part = t.header.part.as_ref().expect("a rank of a split file");
            assert_eq!(part.of, ranks.len());
            assert_eq!(a.file(), format!("{}#{}", path.display(), part.label));
            if let Some(d) = part.device {
                assert!(t.header.devices.iter().all(|p| p.id == Some(d)));
            }
            (
                part.label.clone(),
                t.kernels.len(),
                t.memcpys.len(),
                t.memsets.len(),
                t.launches.len(),
                t.user_annotations.len(),
                a.analysis.steps.steps.len(),
            )
        })
        .collect()
}

fn rank(label: &str, counts: [usize; 6]) -> RankCounts {
    let [k, c, f, l, m, s] = counts;
    (label.to_string(), k, c, f, l, m, s)
}

/// `nsys profile` of two processes, each on its own GPU (the 3.17 file: process 4101 on GPU 0, 4201 on
/// GPU 1, by make_native.py's construction): two ranks, each with its own work. Process 4101: kernels
/// warmup, sgemm 128x64, triton, the graph's 3 and the all-reduce = 7; the copy; calls at correlation
/// 1..6 = 6; ranges step#0, forward, request 17, step#1 = 4; steps #0 prefill and #1 decode = 2.
/// Process 4201: sgemm 64x32 and rmsnorm = 2 kernels; the fill; 3 calls; 1 range; 1 step. Before, the
/// file was one rank whose budgets took the union of both GPUs' work. The file read whole (`read`) is
/// unchanged: 9 kernels.
#[test]
fn an_nsys_export_of_two_processes_is_two_ranks() {
    let path = dir().join("nsys_node_3.17.sqlite");
    assert_eq!(
        ranks_of(&path),
        [
            rank("pid 4101 gpu 0", [7, 1, 0, 6, 4, 2]),
            rank("pid 4201 gpu 1", [2, 0, 1, 3, 1, 1]),
        ]
    );
    assert_eq!(parse(&path).trace.kernels.len(), 9);
}

/// Asked for one trace, the same export is refused naming its two ranks (their union would put two
/// GPUs' work in one rank's budget), while a file of one rank opens as itself.
#[test]
fn one_trace_of_a_file_of_two_ranks_is_refused_naming_them() {
    kineto_sqlite::install();
    let session = kineto_trace::Session::new(kineto_trace::SessionConfig::default()).unwrap();
    let path = dir().join("nsys_node_3.17.sqlite");
    let err = session.open(&path).expect_err("two ranks").to_string();
    assert!(
        err.contains("holds 2 ranks")
            && err.contains("#pid 4101 gpu 0")
            && err.contains("#pid 4201 gpu 1"),
        "{err}"
    );
    let one = dir().join("rpd_3.rpd");
    let opened = session.open(&one).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(opened.file(), one.display().to_string());
    assert_eq!(
        opened.trace().kernels.len(),
        parse(&one).trace.kernels.len()
    );
}

/// rocpd of one process driving two GPUs (rocpd_3.db: agent type index 0 runs the GEMM, the fill and
/// the copy, type index 1 the NCCL kernel): two ranks. The calls follow what they launched
/// (hipLaunchKernel 11, hipMemsetAsync 12, hipMemcpyAsync 13 on GPU 0; hipLaunchKernel 14 on GPU 1), the
/// one call that launched nothing (hsa_queue_create) goes with the process's first GPU: 4 and 1; the
/// two roctx ranges, the process's, are on both, so each GPU has both steps.
#[test]
fn a_rocpd_file_of_one_process_on_two_gpus_is_two_ranks() {
    assert_eq!(
        ranks_of(&dir().join("rocpd_3.db")),
        [
            rank("pid 5001 gpu 0", [1, 1, 1, 4, 2, 2]),
            rank("pid 5001 gpu 1", [1, 0, 0, 1, 2, 2]),
        ]
    );
}

/// rpd_3.rpd made a file of two processes at `path`: its hipGraphLaunch call moved to process 7002 and
/// its three Task kernels to GPU 3; with `call_id`, that call's id, and its links, set to it.
fn two_process_rpd(path: &Path, call_id: Option<i64>) {
    std::fs::copy(dir().join("rpd_3.rpd"), path).unwrap();
    let c = rusqlite::Connection::open(path).unwrap();
    let graph_launch = "apiName_id = (SELECT id FROM rocpd_string WHERE string = 'hipGraphLaunch')";
    if let Some(id) = call_id {
        c.execute_batch(&format!(
            "UPDATE rocpd_api_ops SET api_id = {id} WHERE api_id =
                 (SELECT id FROM rocpd_api WHERE {graph_launch});
             UPDATE rocpd_api SET id = {id} WHERE {graph_launch};"
        ))
        .unwrap();
    }
    c.execute_batch(&format!(
        "UPDATE rocpd_api SET pid = 7002 WHERE {graph_launch};
         UPDATE rocpd_op SET gpuId = 3 WHERE opType_id =
             (SELECT id FROM rocpd_string WHERE string = 'Task');"
    ))
    .unwrap();
}

/// The ranks of [`two_process_rpd`]'s file: process 6001 keeps the addition kernel, the two copies, the
/// fill, 5 calls and the 2 marker ranges (2 steps); process 7002 has 3 kernels, 1 call, no ranges (so one
/// step over its whole GPU window, the built-in rule for a trace without markers).
fn two_process_ranks() -> [RankCounts; 2] {
    [
        rank("pid 6001 gpu 2", [1, 2, 1, 5, 2, 2]),
        rank("pid 7002 gpu 3", [3, 0, 0, 1, 0, 1]),
    ]
}

/// RPD of two processes on two GPUs ([`two_process_rpd`]) is two ranks ([`two_process_ranks`]). A
/// single-process RPD file (rpd_3.rpd itself) is one trace, exactly as `read` gives it.
#[test]
fn an_rpd_file_of_two_processes_is_two_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("two.rpd");
    two_process_rpd(&path, None);
    assert_eq!(ranks_of(&path), two_process_ranks());
    kineto_sqlite::install();
    let session = kineto_trace::Session::new(kineto_trace::SessionConfig::default()).unwrap();
    let one = session.read_ranks(&dir().join("rpd_3.rpd")).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].path, dir().join("rpd_3.rpd"));
    assert!(one[0].trace.header.part.is_none());
    let whole = parse(&dir().join("rpd_3.rpd"));
    assert_eq!(format!("{:?}", one[0].trace), format!("{:?}", whole.trace));
}

/// An op still runs for its call's process when the call's id is no correlation id (0 or negative:
/// rpd_tracer writes none): the two-process file with the hipGraphLaunch call's id, and the links of its
/// three Task kernels, set to 0, then to −5, splits as with its own id (the process is found by the
/// call's id, not by a correlation; the call, linked to no correlated op, goes with its process's first
/// GPU, GPU 3, as it did).
#[test]
fn an_rpd_op_linked_to_a_call_of_no_correlation_id_keeps_its_process() {
    let tmp = tempfile::tempdir().unwrap();
    for id in [0, -5] {
        let path = tmp.path().join(format!("call{id}.rpd"));
        two_process_rpd(&path, Some(id));
        assert_eq!(ranks_of(&path), two_process_ranks(), "call id {id}");
    }
}

/// An RPD file missing one of its tables says which table and which file (it said "no column `id` (its
/// columns: )"); one whose op types name no string counts those ops in a warning (rpd_3.rpd has 7 ops,
/// all GPU work: with their type ids pointing nowhere, 7 warned of, 0 kernels), instead of reading as a
/// file of no GPU work without a word.
#[test]
fn an_rpd_file_missing_a_table_or_its_op_types_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("no-api.rpd");
    std::fs::copy(dir().join("rpd_3.rpd"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch("DROP VIEW IF EXISTS api; DROP VIEW IF EXISTS kernel; DROP VIEW IF EXISTS copy; DROP VIEW IF EXISTS op; DROP TABLE rocpd_api;")
        .unwrap();
    drop(c);
    kineto_sqlite::install();
    let e = parse_file(&path, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no-api.rpd") && e.contains("without its `rocpd_api` table"),
        "{e}"
    );

    let path = tmp.path().join("dangling.rpd");
    std::fs::copy(dir().join("rpd_3.rpd"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let ops: i64 = c
        .query_row("SELECT count(*) FROM rocpd_op", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ops, 7);
    c.execute_batch("UPDATE rocpd_op SET opType_id = opType_id + 1000000000000;")
        .unwrap();
    drop(c);
    let p = parse(&path);
    assert_eq!(p.trace.kernels.len(), 0);
    assert!(
        p.trace.warnings.iter().any(|w| w
            .message
            .starts_with("rocpd_op: 7 ops have an `opType_id` that names no `rocpd_string` row")),
        "{:?}",
        p.trace.warnings
    );
}

/// An export whose rows name string ids `StringIds` does not hold (here the 3.17 file without the
/// strings of `rmsnorm_kernel` — demangled and short name alike, 2 kernel rows — and of
/// `cudaGraphLaunch_v10000`, 1 call): each table's warning counts the rows and names the ids; the graph
/// launch is still a graph launch, recognised by the graph's kernels it launched (1 graph launch, 3 graph
/// kernels, as in the whole file), where before it became an `(unnamed call)` and the graph went unseen.
#[test]
fn dangling_nsys_string_ids_are_named_counted_and_a_graph_launch_still_recognised() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("dangling.sqlite");
    std::fs::copy(dir().join("nsys_node_3.17.sqlite"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let id = |s: &str| -> i64 {
        c.query_row("SELECT id FROM StringIds WHERE value = ?1", [s], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let (kernel, call) = (id("rmsnorm_kernel"), id("cudaGraphLaunch_v10000"));
    c.execute("DELETE FROM StringIds WHERE id IN (?1, ?2)", [kernel, call])
        .unwrap();
    drop(c);
    let (plain, lost) = (parse(&dir().join("nsys_node_3.17.sqlite")), parse(&path));
    let warnings: Vec<&str> = lost
        .trace
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert!(
        warnings.contains(&format!(
            "CUPTI_ACTIVITY_KIND_KERNEL: 2 rows name string ids that `StringIds` does not hold ({kernel}): a kernel with none of its names (demangled, mangled, short) is named `(unnamed kernel)`"
        ).as_str()),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.starts_with(&format!(
            "CUPTI_ACTIVITY_KIND_RUNTIME/DRIVER: 1 rows name string ids that `StringIds` does not hold ({call})"
        ))),
        "{warnings:?}"
    );
    let rules = Rules::builtin();
    let report = |p: &Parsed| {
        Analysis::new(&p.trace, &StepPattern::builtin(), &rules)
            .links
            .report
    };
    let (a, b) = (report(&plain), report(&lost));
    assert_eq!((a.graph_launches, a.graph_kernels), (1, 3));
    assert_eq!((b.graph_launches, b.graph_kernels), (1, 3));
    assert_eq!(b.launches_without_gpu_op.len(), 0, "{b:?}");
    assert!(plain.trace.warnings.is_empty());
}

/// rocpd keeps each process's environment (`rocpd_info_process.environment`, a JSON object); `RANK`, as
/// torchrun sets it, names the ranks. rocpd_3.db with `RANK` 0 on its one process (on two GPUs): the
/// labels say the rank, but neither trace claims it in its header (two traces of one rank would be
/// refused by the rank rule). With the NCCL kernel's queue moved to a second process (pid 5002, `RANK` 1),
/// each rank is named by its rank and its header says it. Before, no rank was read from the file.
#[test]
fn a_rocpd_process_environment_names_its_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("env.db");
    std::fs::copy(dir().join("rocpd_3.db"), &path).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let table: String = c
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_info_process_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    c.execute_batch(&format!(
        "ALTER TABLE `{table}` ADD COLUMN environment JSONB DEFAULT '{{}}';
         UPDATE `{table}` SET environment = '{{\"RANK\": \"0\", \"WORLD_SIZE\": \"2\"}}';"
    ))
    .unwrap();
    drop(c);
    // One process on two GPUs: both ranks share the process's RANK, so neither claims it.
    kineto_sqlite::install();
    let session = kineto_trace::Session::new(kineto_trace::SessionConfig::default()).unwrap();
    let shared = session.read_ranks(&path).unwrap();
    let labels: Vec<(&str, Option<u64>)> = shared
        .iter()
        .map(|p| {
            (
                p.trace.header.part.as_ref().unwrap().label.as_str(),
                p.trace.header.rank,
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("rank 0 (pid 5001 gpu 0)", None),
            ("rank 0 (pid 5001 gpu 1)", None)
        ]
    );
    let c = rusqlite::Connection::open(&path).unwrap();
    let queue: String = c
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_info_queue_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // The NCCL kernel's queue (2) and its process: a second process, RANK 1.
    c.execute_batch(&format!(
        "INSERT INTO `{table}` (id, guid, nid, ppid, pid, command, environment)
             SELECT 2, guid, nid, ppid, 5002, command, '{{\"RANK\": \"1\"}}' FROM `{table}` WHERE id = 1;
         UPDATE `{queue}` SET pid = 2 WHERE id = 2;"
    ))
    .unwrap();
    drop(c);
    let ranks = session.read_ranks(&path).unwrap();
    let named: Vec<(String, Option<u64>)> = ranks
        .iter()
        .map(|p| {
            let part = p.trace.header.part.as_ref().unwrap();
            (part.label.clone(), p.trace.header.rank)
        })
        .collect();
    assert_eq!(
        named,
        [
            ("rank 0 (pid 5001 gpu 0)".to_string(), Some(0)),
            ("rank 1 (pid 5002 gpu 1)".to_string(), Some(1)),
        ]
    );
}

/// The never-silent rule (issue 41): every reader reports the input records it skipped (the summary's
/// `warnings`), and reports none on the files it fully understands — the corpus's real native samples
/// (nsys, RPD and its rpd2tracing array, rocprofv3 JSON and CSV) and every file `make_native.py` builds
/// as a well-formed export (those built to hold a fault are tested where the fault is).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_native_readers_skip_no_record_of_the_files_they_understand() {
    let mut files: Vec<PathBuf> = json("corpus_counts.json")
        .as_object()
        .unwrap()
        .keys()
        .map(|rel| corpus::corpus_file("native").join(rel))
        .collect();
    files.extend(
        json("counts.json")
            .as_object()
            .unwrap()
            .keys()
            .map(|rel| dir().join(rel)),
    );
    let skipped: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let s = kineto_trace::summary::Summary::of(&parse(path));
            // The profiler's own diagnostics (nsys's DIAGNOSTIC_EVENT rows) are passed on as warnings
            // too, but they are messages of the capture, not records this reader skipped.
            let skipped: Vec<_> = s
                .warnings
                .iter()
                .filter(|w| !w.message.starts_with("nsys diagnostic:"))
                .collect();
            let forwarded = s.warnings.len() - skipped.len();
            (s.warnings_total != forwarded as u64).then(|| {
                format!(
                    "{}: {} skipped: {skipped:?}",
                    path.display(),
                    s.warnings_total - forwarded as u64
                )
            })
        })
        .collect();
    assert!(skipped.is_empty(), "{}", skipped.join("\n"));
}
