//! The native formats kineto-trace reads itself (no SQLite here: this test binary installs no SQLite
//! reader): detection by content, what a file that is none of them gets, Chrome arrays cut short,
//! directories of mixed formats. Counts against independent values are in kineto-sqlite's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{Error, GpuKind, Options, TraceFormat, parse_file, parse_raw};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native")
}

fn write(tmp: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = tmp.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The correlation id of the launch call named `call` (the first such call).
fn launch_correlation(t: &kineto_trace::Trace, call: &str) -> Option<std::num::NonZeroU64> {
    t.launches
        .iter()
        .find(|l| t.name(l.name) == call)
        .unwrap_or_else(|| panic!("no call {call}"))
        .correlation
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
    assert_eq!(
        (t.kernels.row(0).ts_ns, t.kernels.row(0).dur_ns),
        (1500, 2000)
    );
    assert_eq!(t.launches.row(0).dur_ns, 250);
    assert_noted(&t, "no closing");

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
        (t.kernels.row(0).ts_ns, t.kernels.row(0).dur_ns),
        (1_010_400, 1_030_900 - 1_010_400)
    );
    assert_eq!(t.detail(&t.kernels.row(0)).stream, Some(1));
    let copies = t.gpu_ops(kineto_trace::GpuKind::Memcpy);
    assert_eq!(copies.len(), 1);
    assert_eq!(
        (copies.row(0).ts_ns, copies.row(0).dur_ns),
        (1_000_250, 3_500)
    );
    assert!(
        t.name(copies.row(0).name).contains("HtoD"),
        "{}",
        t.name(copies.row(0).name)
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
    let corr = |call: &str| launch_correlation(&t, call);
    assert!(corr("hipLaunchKernel").is_some());
    assert_eq!(t.kernels.row(0).correlation, corr("hipLaunchKernel"));
    assert_eq!(copies.row(0).correlation, corr("hipMemcpy"));

    // What follows the array must be the rest of the object; a file that stops inside it was cut
    // (every event was read: salvage keeps them all), one whose tail is not JSON is a syntax error.
    let text = std::str::from_utf8(doc).unwrap();
    let cut = text.replace("\"CMD\": \"rocminfo\"\n}\n}", "\"CMD\": \"rocminfo\"\n");
    let cut_path = write(tmp.path(), "cut.json", cut.as_bytes());
    match parse_file(&cut_path, &Options::default()) {
        Err(Error::Truncated { offset, events, .. }) => {
            assert_eq!(offset, cut.len() as u64);
            // 1 `{}` + 4 `M` + 6 `X` + 4 flow events.
            assert_eq!(events, 1 + 4 + 6 + 4);
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
    let salvaged = parse_file(
        &cut_path,
        &Options {
            salvage: true,
            ..Options::default()
        },
    )
    .unwrap()
    .trace;
    assert_eq!(salvaged.kernels.len(), 1);
    assert_eq!(
        salvaged.salvaged.as_ref().map(|v| v.cut_offset),
        Some(cut.len() as u64)
    );
    // Cut inside a number, after its `.` (or its `-`): serde calls that an invalid number, not an end
    // of input; the file was cut all the same.
    for end in ["\"ms\": 1.", "\"ms\": -"] {
        let cut = text.replace("\"CMD\": \"rocminfo\"\n}\n}\n", end);
        assert!(cut.ends_with(end));
        match parse_file(
            &write(tmp.path(), "cut_number.json", cut.as_bytes()),
            &Options::default(),
        ) {
            Err(Error::Truncated { offset, .. }) => assert_eq!(offset, cut.len() as u64),
            other => panic!("{end}: expected Truncated, got {other:?}"),
        }
    }
    let bad = text.replace("\"CMD\": \"rocminfo\"", "\"CMD\" \"rocminfo\"");
    let at = text.find("],\n").unwrap() + 3;
    match parse_file(
        &write(tmp.path(), "bad.json", bad.as_bytes()),
        &Options::default(),
    ) {
        Err(Error::Syntax {
            offset, message, ..
        }) => {
            // `"CMD" "rocminfo"`: serde stops at the second string, 6 bytes into line 2 of the tail.
            let want = at + "\"otherData\": {\n  \"CMD\" ".len();
            assert_eq!(offset as usize, want, "{message}");
            assert!(message.contains("after the event array"), "{message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    // Without its `]` the object is cut too (an array may stop without it; this object may not).
    let open = &text[..at - 3];
    match parse_file(
        &write(tmp.path(), "open.json", open.as_bytes()),
        &Options::default(),
    ) {
        Err(Error::Truncated { offset, .. }) => assert_eq!(offset, open.len() as u64),
        other => panic!("expected Truncated, got {other:?}"),
    }
}

/// The legacy rocprof as its writer of 2023 lays it out (rocprofiler's `tblextr.py` and `sqlitedb.py`):
/// copies (from its op table, with `dev-id`) on the OS process, not on `COPY`; barrier packets named
/// `<barrier packet>` on the `GPU<n>` process beside the kernels; flows that start on the `CPU HIP API`
/// section (pid 2) and finish on the section of the op (`COPY` = 1, `GPU0` = 6) with the stream's
/// index as tid, while the events themselves are on the OS pid and host thread.
#[test]
fn the_legacy_rocprof_json_of_2023_finds_copies_fills_and_barriers_by_its_writers_rules() {
    let doc = br#"{ "traceEvents":[{}
,{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":0}
,{"args":{"name":"COPY"},"ph":"M","pid":1,"name":"process_name","sort_index":1}
,{"args":{"name":"GPU0"},"ph":"M","pid":6,"name":"process_name","sort_index":2}
,{"args":{"name":"GPU Barriers0"},"ph":"M","pid":518,"name":"process_name","sort_index":3}
,{"ph":"X","name":"hipMemcpy","pid":4242,"tid":77,"ts":"990","dur":"15","args":{"BeginNs":"990100","EndNs":"1005200","pid":"4242","tid":"77","Name":"hipMemcpy","args":"","Data":""}}
,{"ph":"X","name":"hipMemset","pid":4242,"tid":77,"ts":"1006","dur":"1","args":{"BeginNs":"1006000","EndNs":"1006900","pid":"4242","tid":"77","Name":"hipMemset","args":"","Data":""}}
,{"ph":"X","name":"hipLaunchKernel","pid":4242,"tid":77,"ts":"1007","dur":"2","args":{"BeginNs":"1007000","EndNs":"1009100","pid":"4242","tid":"77","Name":"hipLaunchKernel","args":"","Data":""}}
,{"ph":"X","name":"CopyHostToDevice","pid":4242,"tid":77,"ts":"1000","dur":"3","args":{"BeginNs":"1000250","EndNs":"1003750","dev-id":"0","queue-id":"0","Name":"CopyHostToDevice","pid":"4242","tid":"77","stream-id":"0","Data":""}}
,{"ph":"X","name":"FillBuffer","pid":4242,"tid":77,"ts":"1008","dur":"1","args":{"BeginNs":"1008000","EndNs":"1008800","dev-id":"0","queue-id":"0","Name":"FillBuffer","pid":"4242","tid":"77","stream-id":"0","Data":""}}
,{"ph":"X","name":"my_kernel(float*)","pid":6,"tid":77,"ts":"1010","dur":"20","args":{"BeginNs":"1010400","EndNs":"1030900","dev-id":"1","queue-id":"0","Name":"my_kernel(float*)","pid":"4242","tid":"77","stream-id":"1","Data":""}}
,{"ph":"X","name":"<barrier packet>","pid":6,"tid":77,"ts":"1031","dur":"1","args":{"BeginNs":"1031000","EndNs":"1031500","dev-id":"0","queue-id":"0","Name":"<barrier packet>","pid":"4242","tid":"77","stream-id":"1","Data":""}}
,{"ts":995,"ph":"s","cat":"DataFlow","id":0,"pid":2,"tid":77,"name":"dep"}
,{"ts":1000,"ph":"t","cat":"DataFlow","id":0,"pid":1,"tid":0,"name":"dep"}
,{"ts":1008,"ph":"s","cat":"DataFlow","id":1,"pid":2,"tid":77,"name":"dep"}
,{"ts":1010,"ph":"t","cat":"DataFlow","id":1,"pid":6,"tid":1,"name":"dep"}
],
"otherData": {
    "CMD": "rocminfo"
  }
}"#;
    let tmp = tempfile::tempdir().unwrap();
    let t = parse_file(&write(tmp.path(), "results.json", doc), &Options::default())
        .unwrap()
        .trace;
    assert_eq!(t.header.format, TraceFormat::RocprofLegacyJson);
    assert_eq!(t.kernels.len(), 1);
    // The device is the op's `dev-id` (1), not its pid (6).
    assert_eq!(t.detail(&t.kernels.row(0)).device, Some(1));
    let copies = t.gpu_ops(kineto_trace::GpuKind::Memcpy);
    let fills = t.gpu_ops(kineto_trace::GpuKind::Memset);
    assert_eq!((copies.len(), fills.len()), (1, 1));
    assert_eq!((fills.row(0).ts_ns, fills.row(0).dur_ns), (1_008_000, 800));
    assert_eq!(t.detail(&copies.row(0)).device, Some(0));
    assert_eq!(
        t.counts.other_complete.get("rocprof barrier packet"),
        Some(&1)
    );
    let calls: Vec<&str> = t.launches.iter().map(|l| t.name(l.name)).collect();
    assert_eq!(calls, ["hipMemcpy", "hipMemset", "hipLaunchKernel"]);
    // Flow 0 ends on `COPY` (pid 1, tid 0), where no event is: the one op that starts at 1000 µs is
    // the copy, and its start (995 µs, on pid 2) is within hipMemcpy (990–1005 µs) on tid 77.
    let corr = |call: &str| launch_correlation(&t, call);
    assert!(corr("hipMemcpy").is_some());
    assert_eq!(copies.row(0).correlation, corr("hipMemcpy"));
    // Flow 1 ends on (6, 1); the kernel is on (6, 77): the op of pid 6 at 1010 µs.
    assert!(corr("hipLaunchKernel").is_some());
    assert_eq!(t.kernels.row(0).correlation, corr("hipLaunchKernel"));
}

/// The legacy rocprof as its writers before 2022 lay it out (rocprofiler's `json_utils.py`): every
/// process name after its section's index (`2 GPU0`), every value of an event a string (`"pid":"6"`),
/// a kernel-table row naming its device `gpu-id`, each flow's finish on tid 0, and the object closed
/// right after the array (`]}`).
#[test]
fn the_legacy_rocprof_json_before_2022_reads_its_indexed_process_names_and_string_values() {
    let doc = br#"{ "traceEvents":[{}
,{"args":{"name":"0 CPU HIP API"},"ph":"M","pid":2,"name":"process_name"}
,{"args":{"name":"1 COPY"},"ph":"M","pid":1,"name":"process_name"}
,{"args":{"name":"2 GPU0"},"ph":"M","pid":6,"name":"process_name"}
,{"args":{"name":"3 GPU1"},"ph":"M","pid":7,"name":"process_name"}
,{"ph":"X","name":"hipLaunchKernel","pid":"2","tid":"77","ts":"1007","dur":"2","args":{"BeginNs":"1007000","EndNs":"1009100"}}
,{"ph":"X","name":"CopyKernel","pid":"7","tid":"0","ts":"1010","dur":"20","args":{"Index":"0","KernelName":"CopyKernel","gpu-id":"1","queue-id":"0","BeginNs":"1010400","EndNs":"1030900"}}
,{"ph":"X","name":"CopyDeviceToHost","pid":"1","tid":"0","ts":"1031","dur":"4","args":{"BeginNs":"1031000","EndNs":"1035000"}}
,{"ts":1008,"ph":"s","cat":"DataFlow","id":0,"pid":2,"tid":77,"name":"dep"}
,{"ts":1010,"ph":"t","cat":"DataFlow","id":0,"pid":7,"tid":0,"name":"dep"}
]}
"#;
    let tmp = tempfile::tempdir().unwrap();
    let t = parse_file(&write(tmp.path(), "results.json", doc), &Options::default())
        .unwrap()
        .trace;
    assert_eq!(t.header.format, TraceFormat::RocprofLegacyJson);
    // `CopyKernel` is on `GPU1`: a kernel, whatever its name; its device is its `gpu-id`.
    assert_eq!(t.kernels.len(), 1);
    assert_eq!(t.name(t.kernels.row(0).name), "CopyKernel");
    assert_eq!(t.detail(&t.kernels.row(0)).device, Some(1));
    assert_eq!(
        (t.kernels.row(0).ts_ns, t.kernels.row(0).dur_ns),
        (1_010_400, 20_500)
    );
    let copies = t.gpu_ops(kineto_trace::GpuKind::Memcpy);
    assert_eq!(copies.len(), 1);
    assert!(t.name(copies.row(0).name).contains("DtoH"));
    // The flow's finish is on (7, 0), the kernel on ("7", "0"): the same track once read.
    assert_eq!(t.launches.len(), 1);
    assert!(t.launches.row(0).correlation.is_some());
    assert_eq!(t.kernels.row(0).correlation, t.launches.row(0).correlation);
}

/// A mangled kernel name reads as `c++filt` prints it, in a Chrome array and in legacy rocprof JSON
/// (whose kernels are named only after the pass that finds them), the same name every time it occurs.
#[test]
fn mangled_kernel_names_are_demangled_in_chrome_arrays_and_legacy_rocprof() {
    let mangled = "_Z15addition_kernelIfEvPT_PKS0_S3_ii";
    let demangled = "void addition_kernel<float>(float*, float const*, float const*, int, int)";
    let kernel = |ts: u32| {
        format!(
            r#"{{"ph":"X","cat":"kernel","name":"{mangled}","pid":0,"tid":7,"ts":{ts},"dur":2,"args":{{"correlation":{ts}}}}}"#
        )
    };
    let array = format!(
        r#"[{},{},{{"ph":"X","cat":"kernel","name":"plain","pid":0,"tid":7,"ts":9,"dur":1}}]"#,
        kernel(1),
        kernel(5)
    );
    let legacy = format!(
        r#"{{ "traceEvents":[{{}}
,{{"args":{{"name":"GPU0"}},"ph":"M","pid":6,"name":"process_name","sort_index":0}}
,{{"ph":"X","name":"{mangled}","pid":6,"tid":1,"ts":"10","dur":"2","args":{{"BeginNs":"10000","EndNs":"12000"}}}}
,{{"ph":"X","name":"{mangled}.kd","pid":6,"tid":1,"ts":"20","dur":"2","args":{{"BeginNs":"20000","EndNs":"22000"}}}}
],
"otherData": {{ "CMD": "rocminfo" }}
}}"#
    );
    let tmp = tempfile::tempdir().unwrap();
    for (file, text, format, kernels) in [
        (
            "array.json",
            array,
            TraceFormat::ChromeArray,
            vec![demangled, demangled, "plain"],
        ),
        (
            "results.json",
            legacy,
            TraceFormat::RocprofLegacyJson,
            vec![demangled, demangled],
        ),
    ] {
        let t = parse_file(
            &write(tmp.path(), file, text.as_bytes()),
            &Options::default(),
        )
        .unwrap()
        .trace;
        assert_eq!(t.header.format, format, "{file}");
        let names: Vec<&str> = t.kernels.iter().map(|k| t.name(k.name)).collect();
        assert_eq!(names, kernels, "{file}");
        assert_eq!(t.kernels.row(0).name, t.kernels.row(1).name, "{file}");
    }
}

/// Registers and shared memory of the GPU op named `name` (the first such op of any kind).
fn resources(t: &kineto_trace::Trace, name: &str) -> (Option<u32>, Option<u32>) {
    let op = [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset]
        .into_iter()
        .flat_map(|k| t.gpu_ops(k))
        .find(|o| t.name(o.name) == name)
        .unwrap_or_else(|| panic!("no GPU op {name}"));
    let d = t.detail(&op);
    (d.registers, d.shared_memory)
}

/// One rule in every rocprofv3 reader (`native::rocprof_resources`): registers are the kernel symbol's
/// architected VGPRs, shared memory the dispatch's group segment; set only where the file gives them.
/// The values are make_native.py's.
#[test]
fn rocprofv3_registers_and_lds_are_the_symbols_vgprs_and_the_dispatchs_group_segment() {
    let read = |rel: &str| {
        parse_file(&dir().join(rel), &Options::default())
            .unwrap()
            .trace
    };
    let json = read("rocprofv3_markers.json");
    // The reduce kernel: 40 arch VGPRs (not its 24 SGPRs or 0 accum VGPRs); the dispatch's 6,144 LDS
    // bytes = 2,048 static (its symbol's) + 4,096 dynamic.
    assert_eq!(
        resources(&json, "void at::native::reduce_kernel<512, 1>(int)"),
        (Some(40), Some(6_144))
    );
    let gemm = "Cijk_Ailk_Bljk_BBS_BH_MT64x32x256_MI16x16x1";
    assert_eq!(resources(&json, gemm), (Some(128), Some(16_384)));
    // The copy kernel's symbol has no VGPR count; its dispatch has a group segment of 0.
    let copy_kernel = json
        .gpu_ops(GpuKind::Memcpy)
        .iter()
        .find(|o| json.detail(o).bytes.is_none())
        .unwrap();
    let d = json.detail(&copy_kernel);
    assert_eq!((d.registers, d.shared_memory), (None, Some(0)));
    // A memory copy record has neither.
    let copy = json
        .gpu_ops(GpuKind::Memcpy)
        .iter()
        .find(|o| json.detail(o).bytes.is_some());
    let d = json.detail(&copy.unwrap());
    assert_eq!((d.registers, d.shared_memory), (None, None));

    // Early CSV: Group_Segment_Size (the dispatch's), no VGPR column.
    let old = read("rocprofv3_csv_old/7101_kernel_trace.csv");
    let subtract = "subtract_kernel(float*, float const*, float const*, int, int)";
    assert_eq!(resources(&old, subtract), (None, Some(4_096)));
    // Later CSV: VGPR_Count; its LDS_Block_Size (16,896: the symbol's 16,640 static bytes rounded up to
    // 512) is not the dispatch's, not read. rocpd's export (GUID) gives the dispatch's 16,640.
    let gemm = "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32";
    let later = read("rocprofv3_csv_new/7201_kernel_trace.csv");
    assert_eq!(resources(&later, gemm), (Some(128), None));
    let rocpd = read("rocprofv3_csv_new/7202_kernel_trace.csv");
    assert_eq!(resources(&rocpd, gemm), (Some(128), Some(16_640)));
}

#[test]
fn a_rocprofv3_csv_vgpr_count_that_is_no_32_bit_count_names_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(dir().join("rocprofv3_csv_new/7201_kernel_trace.csv")).unwrap();
    // The second row's VGPR_Count (128) made negative.
    let bad = text.replacen(",16896,0,128,0,32,", ",16896,0,-128,0,32,", 1);
    assert_ne!(bad, text);
    let p = write(tmp.path(), "kernel_trace.csv", bad.as_bytes());
    let e = parse_file(&p, &Options::default()).unwrap_err().to_string();
    assert!(
        e.contains("line 3") && e.contains("column vgprcount is -128"),
        "{e}"
    );
}

/// The header rocprofv3 writes on each API trace (`hip_api_trace.csv`, `hsa_api_trace.csv`,
/// `marker_api_trace.csv`, …).
const API_HEADER: &str = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";

/// The sum of the API calls' durations of `t`, by API.
fn call_ns(t: &kineto_trace::Trace, api: kineto_trace::Api) -> i64 {
    t.launches
        .iter()
        .filter(|l| l.api == api)
        .map(|l| l.dur_ns)
        .sum()
}

#[test]
fn a_rocprofv3_run_traced_without_kernels_is_read_from_its_api_trace() {
    use kineto_trace::Api;
    let tmp = tempfile::tempdir().unwrap();
    // `rocprofv3 --hip-trace` writes no kernel trace: one HIP API trace, compiler and runtime calls.
    let hip = format!(
        "{API_HEADER}\"HIP_COMPILER_API\",\"__hipRegisterFatBinary\",4242,4242,1,1000,1400\n\
         \"HIP_RUNTIME_API\",\"hipMalloc\",4242,4242,2,2000,2600\n\
         \"HIP_RUNTIME_API\",\"hipLaunchKernel\",4242,4243,3,3000,3050\n\
         \"HIP_RUNTIME_API\",\"hipMemcpy\",4242,4242,4,4000,5000\n"
    );
    let p = write(tmp.path(), "4242_hip_api_trace.csv", hip.as_bytes());
    let read = parse_file(&p, &Options::default()).unwrap();
    let t = &read.trace;
    assert_eq!(t.header.format, TraceFormat::Rocprofv3Csv);
    assert_eq!(
        (t.kernels.len(), t.memcpys.len(), t.memsets.len()),
        (0, 0, 0)
    );
    // 4 runtime calls: 400 + 600 + 50 + 1000 = 2,050 ns.
    assert_eq!(t.launches.len(), 4);
    assert_eq!(call_ns(t, Api::Runtime), 2_050);
    assert_noted(t, "no kernel_trace.csv");
    // Read from a stream the same.
    let s = parse_raw(
        Path::new("stream"),
        std::io::Cursor::new(hip.clone().into_bytes()),
        &Options::default(),
    )
    .unwrap()
    .trace;
    assert_eq!((s.launches.len(), call_ns(&s, Api::Runtime)), (4, 2_050));

    // `--hsa-trace` beside it: one process of two files, read once whether the file or the
    // directory is given. HSA calls are driver calls: 2 + 3 = 5 ns.
    let hsa = format!(
        "{API_HEADER}\"HSA_CORE_API\",\"hsa_init\",4242,4242,5,900,902\n\
         \"HSA_AMD_EXT_API\",\"hsa_amd_memory_pool_allocate\",4242,4242,6,2100,2103\n"
    );
    write(tmp.path(), "4242_hsa_api_trace.csv", hsa.as_bytes());
    let dir_paths = kineto_trace::expand_paths(&[tmp.path().to_path_buf()]).unwrap();
    assert_eq!(dir_paths, vec![p.clone()]);
    for given in [
        p.clone(),
        tmp.path().join("4242_hsa_api_trace.csv"),
        tmp.path().to_path_buf(),
    ] {
        let r = parse_file(&given, &Options::default()).unwrap();
        let t = &r.trace;
        assert_eq!(t.launches.len(), 4 + 2, "{given:?}");
        assert_eq!(call_ns(t, Api::Runtime), 2_050, "{given:?}");
        assert_eq!(call_ns(t, Api::Driver), 5, "{given:?}");
        assert_eq!(r.json_bytes, (hip.len() + hsa.len()) as u64, "{given:?}");
    }
    // Two files of the set given (each reads the whole set), or a file and its directory: the
    // process would count twice, so an error names both.
    let hsa_path = tmp.path().join("4242_hsa_api_trace.csv");
    for args in [
        vec![p.clone(), hsa_path.clone()],
        vec![tmp.path().to_path_buf(), hsa_path.clone()],
    ] {
        let e = kineto_trace::expand_paths(&args).unwrap_err().to_string();
        assert!(e.contains("same rocprofv3 CSV set"), "{args:?}: {e}");
    }
}

#[test]
fn a_rocprofv3_memory_copy_trace_alone_is_read_as_copies() {
    let tmp = tempfile::tempdir().unwrap();
    // `rocprofv3 --memory-copy-trace`, the early releases' header (no Stream_Id), no prefix.
    let copies = "Kind,Direction,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,End_Timestamp\n\
                  MEMORY_COPY,MEMORY_COPY_HOST_TO_DEVICE,0,1,0,100,350\n\
                  MEMORY_COPY,MEMORY_COPY_DEVICE_TO_HOST,1,0,0,400,500\n\
                  MEMORY_COPY,MEMORY_COPY_DEVICE_TO_DEVICE,1,1,0,600,610\n";
    let p = write(tmp.path(), "memory_copy_trace.csv", copies.as_bytes());
    let t = parse_file(&p, &Options::default()).unwrap().trace;
    assert_eq!(t.header.format, TraceFormat::Rocprofv3Csv);
    assert_eq!((t.kernels.len(), t.launches.len()), (0, 0));
    // 3 copies: 250 + 100 + 10 = 360 ns, on the destination agent (no agent list says which is a CPU).
    assert_eq!(t.memcpys.len(), 3);
    assert_eq!(t.memcpys.iter().map(|c| c.dur_ns).sum::<i64>(), 360);
    let devices: Vec<Option<i64>> = t.memcpys.iter().map(|c| t.detail(&c).device).collect();
    assert_eq!(devices, [Some(1), Some(0), Some(1)]);
    assert_noted(&t, "no agent_info.csv beside the copy trace");
    // Its agent list alone, or a stats table, is no trace: the error says what it is.
    let agents = write(
        tmp.path(),
        "agent_info.csv",
        b"\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Name\"\n0,0,\"CPU\",\"cpu\"\n",
    );
    let e = parse_file(&agents, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("agent list") && e.contains("not a trace"), "{e}");
    let stats = write(
        tmp.path(),
        "kernel_stats.csv",
        b"\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\"\n\"k\",1,5,5.0\n",
    );
    let e = parse_file(&stats, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("statistics") && e.contains("not a trace"), "{e}");
}

#[test]
fn a_directory_reads_a_process_without_a_kernel_trace_beside_one_with() {
    let tmp = tempfile::tempdir().unwrap();
    // Process 100: a kernel trace of 2 dispatches and 2 HIP calls.
    write(
        tmp.path(),
        "100_kernel_trace.csv",
        b"Kind,Agent_Id,Queue_Id,Kernel_Name,Correlation_Id,Start_Timestamp,End_Timestamp\n\
          KERNEL_DISPATCH,1,1,gemm,1,1000,1500\n\
          KERNEL_DISPATCH,1,1,gemm,2,1600,1700\n",
    );
    write(
        tmp.path(),
        "100_hip_api_trace.csv",
        format!(
            "{API_HEADER}HIP_RUNTIME_API,hipLaunchKernel,100,100,1,900,950\n\
             HIP_RUNTIME_API,hipLaunchKernel,100,100,2,960,990\n"
        )
        .as_bytes(),
    );
    // Process 200, traced without kernels: 3 HIP calls, 1 roctx range, 1 copy.
    let hip200 = format!(
        "{API_HEADER}HIP_RUNTIME_API,hipMalloc,200,200,1,10,20\n\
         HIP_RUNTIME_API,hipMemcpy,200,200,2,30,90\n\
         HIP_RUNTIME_API,hipFree,200,200,3,95,99\n"
    );
    let marker200 = format!("{API_HEADER}MARKER_CORE_API,step 0,200,200,4,5,100\n");
    let copy200 = "Kind,Direction,Stream_Id,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,End_Timestamp\n\
                   MEMORY_COPY,MEMORY_COPY_HOST_TO_DEVICE,0,\"Agent 0\",\"Agent 1\",2,40,80\n";
    write(tmp.path(), "200_hip_api_trace.csv", hip200.as_bytes());
    write(tmp.path(), "200_marker_api_trace.csv", marker200.as_bytes());
    write(tmp.path(), "200_memory_copy_trace.csv", copy200.as_bytes());
    // Two processes, each once: 100 by its kernel trace, 200 by its first trace file by name.
    let paths = kineto_trace::expand_paths(&[tmp.path().to_path_buf()]).unwrap();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["100_kernel_trace.csv", "200_hip_api_trace.csv"]);
    let p100 = parse_file(&paths[0], &Options::default()).unwrap().trace;
    assert_eq!((p100.kernels.len(), p100.launches.len()), (2, 2));
    let r200 = parse_file(&paths[1], &Options::default()).unwrap();
    let p200 = &r200.trace;
    assert_eq!(p200.kernels.len(), 0);
    // 3 calls (10 + 60 + 4 = 74 ns), the copy (40 ns), the roctx range (95 ns).
    assert_eq!(p200.launches.len(), 3);
    assert_eq!(call_ns(p200, kineto_trace::Api::Runtime), 74);
    assert_eq!(p200.memcpys.len(), 1);
    assert_eq!(p200.memcpys.row(0).dur_ns, 40);
    assert_eq!(p200.user_annotations.len(), 1);
    assert_eq!(
        p200.user_annotations.first().expect("an annotation").dur_ns,
        95
    );
    // Its three files read once each, none of process 100's.
    assert_eq!(
        r200.json_bytes,
        (hip200.len() + marker200.len() + copy200.len()) as u64
    );
    // The directory as one trace is two processes: refused, naming how many.
    let e = parse_file(tmp.path(), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 processes"), "{e}");
}

/// A note of `t`'s capture says `text`; the notes are shown when none does.
fn assert_noted(t: &kineto_trace::Trace, text: &str) {
    assert!(
        t.capture.notes.iter().any(|n| n.contains(text)),
        "no note says {text:?}: {:?}",
        t.capture.notes
    );
}
