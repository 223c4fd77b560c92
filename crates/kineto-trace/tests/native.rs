//! The native formats kineto-trace reads itself (no SQLite here: this test binary installs no SQLite
//! reader): detection by content, what a file that is none of them gets, Chrome arrays cut short,
//! directories of mixed formats. Counts against independent values are in kineto-sqlite's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{Error, Options, TraceFormat, parse_file, parse_raw};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native")
}

fn write(tmp: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = tmp.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn each_format_is_told_by_content_whatever_the_name() {
    let tmp = tempfile::tempdir().unwrap();
    for (src, format) in [
        ("rocprofv3_markers.json", TraceFormat::Rocprofv3Json),
        ("chrome_array_open.json", TraceFormat::ChromeArray),
        (
            "rocprofv3_csv_old/7101_kernel_trace.csv",
            TraceFormat::Rocprofv3Csv,
        ),
    ] {
        // Renamed to something that says nothing.
        let p = write(
            tmp.path(),
            "trace.bin",
            &std::fs::read(dir().join(src)).unwrap(),
        );
        let t = parse_file(&p, &Options::default()).unwrap().trace;
        assert_eq!(t.header.format, format, "{src}");
        assert!(!t.kernels.is_empty(), "{src}");
        // And from a stream.
        let raw = std::fs::read(dir().join(src)).unwrap();
        let s = parse_raw(
            Path::new("stream"),
            std::io::Cursor::new(raw),
            &Options::default(),
        )
        .unwrap()
        .trace;
        assert_eq!(s.header.format, format, "{src}");
    }
}

#[test]
fn a_file_that_is_none_of_the_formats_says_what_was_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "notes.txt", b"Some text that is not a trace\n");
    let e = parse_file(&p, &Options::default()).unwrap_err().to_string();
    for looked in [
        "notes.txt",
        "byte 0",
        "not JSON",
        "Nsight Systems",
        "rocprofv3",
        "RPD",
        "Chrome-trace",
    ] {
        assert!(e.contains(looked), "{e:?} lacks {looked:?}");
    }
}

#[test]
fn an_sqlite_file_without_the_sqlite_reader_is_named_as_such() {
    // This test binary links no SQLite: the error says what the file is and why it is not read.
    let e = parse_file(&dir().join("rpd_3.rpd"), &Options::default()).unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("rpd_3.rpd") && e.contains("SQLite") && e.contains("`sqlite` feature"),
        "{e}"
    );
    assert!(!kineto_trace::native::sqlite_reader_installed());
}

#[test]
fn a_chrome_array_may_lack_its_bracket_but_not_end_inside_an_event() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":"1.5","dur":"2","args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":0.25,"args":{"correlation":1}}"#;
    let t = parse_file(&write(tmp.path(), "open.json", ok), &Options::default())
        .unwrap()
        .trace;
    assert_eq!(t.kernels.len(), 1);
    // String times read digit by digit: "1.5" µs is 1500 ns, "2" µs 2000 ns.
    assert_eq!((t.kernels[0].ts_ns, t.kernels[0].dur_ns), (1500, 2000));
    assert_eq!(t.launches[0].dur_ns, 250);
    assert!(t.capture.notes.iter().any(|n| n.contains("no closing")));

    let mut cut = ok.to_vec();
    cut.extend_from_slice(br#",{"ph":"X","cat":"kernel","name":"k2","ts":5,"#);
    let p = write(tmp.path(), "cut.json", &cut);
    match parse_file(&p, &Options::default()) {
        Err(Error::Truncated { offset, events, .. }) => {
            assert_eq!(offset, ok.len() as u64 + 1);
            assert_eq!(events, 2);
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
    let s = parse_file(
        &p,
        &Options {
            salvage: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(s.trace.kernels.len(), 1);
    assert_eq!(
        s.trace.salvaged.as_ref().map(|v| v.cut_offset),
        Some(ok.len() as u64 + 1)
    );

    // A bad event names its index and byte.
    let bad = br#"[{"ph":"X","cat":"kernel","ts":"x","dur":1}]"#;
    match parse_file(&write(tmp.path(), "bad.json", bad), &Options::default()) {
        Err(
            e @ Error::Event {
                index: 0,
                offset: 1,
                ..
            },
        ) => {
            assert!(e.to_string().contains("\"ts\""), "{e}");
        }
        other => panic!("expected an event error, got {other:?}"),
    }
}

#[test]
fn rocprofv3_json_that_is_not_the_schema_is_an_error_with_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(
        tmp.path(),
        "r.json",
        br#"{"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch": [{"start_timestamp": "soon"}]}}]}"#,
    );
    let e = parse_file(&p, &Options::default()).unwrap_err().to_string();
    assert!(
        e.contains("r.json") && e.contains("line 1 column") && e.contains("rocprofv3"),
        "{e}"
    );
    // A dispatch that ends before it starts.
    let p = write(
        tmp.path(),
        "r2.json",
        br#"{"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch": [{"start_timestamp": 9, "end_timestamp": 3}]}}]}"#,
    );
    let e = parse_file(&p, &Options::default()).unwrap_err().to_string();
    assert!(
        e.contains("kernel_dispatch[0]") && e.contains("ends before it starts"),
        "{e}"
    );
}

#[test]
fn a_csv_cell_that_is_not_a_number_names_its_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(
        tmp.path(),
        "1_kernel_trace.csv",
        b"Kind,Agent_Id,Kernel_Name,Correlation_Id,Start_Timestamp,End_Timestamp\nKERNEL_DISPATCH,1,k,1,100,200\nKERNEL_DISPATCH,1,k,2,three,400\n",
    );
    let e = parse_file(&p, &Options::default()).unwrap_err().to_string();
    assert!(
        e.contains("1_kernel_trace.csv") && e.contains("line 3") && e.contains("starttimestamp"),
        "{e}"
    );
}

#[test]
fn a_directory_of_ranks_holds_one_format() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir().join("rocprofv3_markers.json"),
        tmp.path().join("a.json"),
    )
    .unwrap();
    std::fs::copy(
        dir().join("chrome_array_open.json"),
        tmp.path().join("b.json"),
    )
    .unwrap();
    match kineto_trace::expand_paths(&[tmp.path().to_path_buf()]) {
        Err(e @ Error::MixedFormats { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("rocprofv3 JSON") && m.contains("Chrome-trace JSON array"),
                "{m}"
            );
        }
        other => panic!("expected MixedFormats, got {other:?}"),
    }
    // SQLite exports are picked up by name in a directory of ranks.
    let one = tempfile::tempdir().unwrap();
    std::fs::copy(dir().join("rpd_3.rpd"), one.path().join("rank0.rpd")).unwrap();
    std::fs::copy(dir().join("rpd_3.rpd"), one.path().join("rank1.rpd")).unwrap();
    let p = kineto_trace::expand_paths(&[one.path().to_path_buf()]).unwrap();
    assert_eq!(p.len(), 2);
}

/// A marker that ends where it starts is an instant: counted (its time bounds the trace) and noted, never a
/// range a step could be. The expected count is read from the file here, by the schema's fields.
#[test]
fn rocprofv3_json_instant_markers_are_counted_and_noted() {
    let p = dir().join("rocprofv3_markers.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let (mut instants, mut ranges) = (0u64, 0usize);
    for proc in v["rocprofiler-sdk-tool"].as_array().unwrap() {
        for m in proc["buffer_records"]["marker_api"].as_array().unwrap() {
            let (s, e) = (m["start_timestamp"].as_i64(), m["end_timestamp"].as_i64());
            if s == e {
                instants += 1;
            } else {
                ranges += 1;
            }
        }
    }
    assert_eq!(
        (instants, ranges),
        (1, 2),
        "the sample's markers, as built by make_native.py"
    );
    let t = parse_file(&p, &Options::default()).unwrap().trace;
    assert_eq!(t.user_annotations.len(), ranges);
    let marks: u64 = t
        .counts
        .other_complete
        .iter()
        .filter(|(k, _)| k.ends_with(" mark"))
        .map(|(_, n)| *n)
        .sum();
    assert_eq!(marks, instants);
    let note = format!("{instants} roctx marks (instants) are not ranges: counted, not steps");
    assert!(t.capture.notes.contains(&note), "{:?}", t.capture.notes);
}

/// The legacy rocprof's (v1/v2) `results.json`, laid out as its writer writes it: the object opened
/// with `{ "traceEvents":[{}`, processes named by `M` events, µs `ts`/`dur` as strings beside the exact
/// `args.BeginNs`/`EndNs`, flows `s` → `t`, and `otherData` after the array.
#[test]
fn the_legacy_rocprof_json_reads_its_processes_flows_and_exact_times() {
    let doc = br#"{ "traceEvents":[{}
,{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":0}
,{"args":{"name":"COPY"},"ph":"M","pid":1,"name":"process_name","sort_index":1}
,{"args":{"name":"GPU0"},"ph":"M","pid":6,"name":"process_name","sort_index":2}
,{"args":{"name":"GPU Barriers0"},"ph":"M","pid":518,"name":"process_name","sort_index":3}
,{"ph":"X","name":"CopyHostToDevice","pid":1,"tid":0,"ts":"1000","dur":"3",
  "args":{"BeginNs":"1000250","EndNs":"1003750","dev-id":"0","stream-id":"0"}}
,{"ph":"X","name":"my_kernel(float*)","pid":6,"tid":1,"ts":"1010","dur":"20",
  "args":{"BeginNs":"1010400","EndNs":"1030900","dev-id":"0","queue-id":"0","stream-id":"1"}}
,{"ph":"X","name":"barrier","pid":518,"tid":1,"ts":"1031","dur":"0","args":{"BeginNs":"1031000","EndNs":"1031500"}}
,{"ph":"X","name":"hipMemcpy","pid":2,"tid":77,"ts":"990","dur":"15","args":{"BeginNs":"990100","EndNs":"1005200"}}
,{"ph":"X","name":"__hipPushCallConfiguration","pid":2,"tid":77,"ts":"1006","dur":"0",
  "args":{"BeginNs":"1006000","EndNs":"1006300"}}
,{"ph":"X","name":"hipLaunchKernel","pid":2,"tid":77,"ts":"1007","dur":"2","args":{"BeginNs":"1007000","EndNs":"1009100"}}
,{"ts":995,"ph":"s","cat":"DataFlow","id":0,"pid":2,"tid":77,"name":"dep"}
,{"ts":1000,"ph":"t","cat":"DataFlow","id":0,"pid":1,"tid":0,"name":"dep"}
,{"ts":1008,"ph":"s","cat":"DataFlow","id":1,"pid":2,"tid":77,"name":"dep"}
,{"ts":1010,"ph":"t","cat":"DataFlow","id":1,"pid":6,"tid":1,"name":"dep"}
],
"otherData": {
  "CMD": "rocminfo"
}
}
"#;
    let tmp = tempfile::tempdir().unwrap();
    let t = parse_file(&write(tmp.path(), "results.json", doc), &Options::default())
        .unwrap()
        .trace;
    assert_eq!(t.header.format, TraceFormat::RocprofLegacyJson);
    // The exact ns times, not the whole µs: 1010400 .. 1030900 ns.
    assert_eq!(t.kernels.len(), 1);
    assert_eq!(
        (t.kernels[0].ts_ns, t.kernels[0].dur_ns),
        (1_010_400, 1_030_900 - 1_010_400)
    );
    assert_eq!(t.kernels[0].stream, Some(1));
    let copies = t.gpu_ops(kineto_trace::GpuKind::Memcpy);
    assert_eq!(copies.len(), 1);
    assert_eq!((copies[0].ts_ns, copies[0].dur_ns), (1_000_250, 3_500));
    assert!(
        t.name(copies[0].name).contains("HtoD"),
        "{}",
        t.name(copies[0].name)
    );
    // Three calls, the runtime's `__hip…` entry point among them; the barrier is counted, not a kernel.
    let calls: Vec<&str> = t.launches.iter().map(|l| t.name(l.name)).collect();
    assert_eq!(
        calls,
        ["hipMemcpy", "__hipPushCallConfiguration", "hipLaunchKernel"]
    );
    assert_eq!(
        t.counts.other_complete.get("rocprof barrier packet"),
        Some(&1)
    );
    // Flow 1 leaves hipLaunchKernel (1007.0–1009.1 µs holds 1008) and lands at the kernel's whole-µs
    // start; flow 0 links the copy to hipMemcpy.
    let corr = |name: &str| {
        t.launches
            .iter()
            .find(|l| t.name(l.name) == name)
            .unwrap()
            .correlation
    };
    assert!(corr("hipLaunchKernel").is_some());
    assert_eq!(t.kernels[0].correlation, corr("hipLaunchKernel"));
    assert_eq!(copies[0].correlation, corr("hipMemcpy"));

    // What follows the array must be the rest of the object.
    let text = std::str::from_utf8(doc).unwrap();
    let cut = text.replace("\"CMD\": \"rocminfo\"\n}\n}", "\"CMD\": \"rocminfo\"\n");
    let at = text.find("],\n").unwrap() + 3;
    match parse_file(
        &write(tmp.path(), "cut.json", cut.as_bytes()),
        &Options::default(),
    ) {
        Err(Error::Syntax {
            offset, message, ..
        }) => {
            assert!(offset as usize >= at, "{offset} {message}");
            assert!(message.contains("after the event array"), "{message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}
