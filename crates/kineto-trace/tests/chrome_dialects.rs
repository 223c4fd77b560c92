//! Chrome-trace JSON from producers other than Kineto, both as a bare array and as a
//! `{"traceEvents": [...]}` object: their GPU categories, `B`/`E` duration events, `args` with one odd
//! field, JSON that is not a trace, and what no rule places. Every input is written here; every
//! expected number is worked out beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{Error, Options, Parsed, parse_file};
use std::path::Path;

fn parse(dir: &Path, name: &str, text: &str) -> kineto_trace::Result<Parsed> {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    parse_file(&p, &Options::default())
}

/// The events as a bare array and as an object: both forms of the same file.
fn both_forms(events: &str) -> [(&'static str, String); 2] {
    [
        ("array.json", format!("[{events}]")),
        ("object.json", format!("{{\"traceEvents\": [{events}]}}")),
    ]
}

fn warnings(p: &Parsed) -> Vec<String> {
    p.trace.warnings.iter().map(|w| w.message.clone()).collect()
}

/// nsys2json (chenyu-jiang/nsys2json) writes each kernel as `"cat": "cuda"` on pid `"Device N"`, tid
/// `"Stream N"`, µs as floats (ns / 1000), and NVTX push/pop ranges as `"cat": "nvtx"`.
#[test]
fn nsys2json_kernels_on_a_device_pid_are_kernels_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "gemm", "ph": "X", "cat": "cuda", "ts": 1000.5, "dur": 2.25, "tid": "Stream 7", "pid": "Device 1", "args": {}},
{"name": "Memcpy HtoD", "ph": "X", "cat": "cuda", "ts": 1010, "dur": 1, "tid": "Stream 7", "pid": "Device 1", "args": {}},
{"name": "step 0", "ph": "X", "cat": "nvtx", "ts": 999, "dur": 20, "tid": "NVTX Thread 12", "pid": "Device 1", "args": {}}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        assert_eq!(t.kernels.len(), 1, "{name}");
        let k = &t.kernels[0];
        // 1000.5 µs = 1 000 500 ns; 2.25 µs = 2 250 ns; device and stream from "Device 1", "Stream 7".
        assert_eq!((k.ts_ns, k.dur_ns), (1_000_500, 2_250), "{name}");
        assert_eq!((k.device, k.stream), (Some(1), Some(7)), "{name}");
        assert_eq!(t.memcpys.len(), 1, "{name}");
        assert_eq!(t.user_annotations.len(), 1, "{name}");
        assert_eq!(t.warnings_total, 0, "{name}: {:?}", warnings(&p));
    }
}

/// A converter that keeps the exact ns in `args.start_ns`/`end_ns` beside the rounded µs: the exact
/// times are the op's.
#[test]
fn exact_ns_in_args_are_taken_over_the_rounded_us() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "k", "ph": "X", "cat": "cuda", "ts": 1000.5, "dur": 2.3, "tid": "Stream 7", "pid": "Device 0", "args": {"start_ns": 1000501, "end_ns": 1002752}}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let k = &p.trace.kernels[0];
        // 1 002 752 − 1 000 501 = 2 251 ns.
        assert_eq!((k.ts_ns, k.dur_ns), (1_000_501, 2_251), "{name}");
    }
}

/// GPU-looking events that no rule places are counted in a note by category; when nothing GPU-side
/// was understood the file is refused, by name.
#[test]
fn unplaced_gpu_events_are_noted_and_a_file_of_only_them_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let placed = r#"{"name": "k", "ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "pid": 0, "tid": 7, "args": {}}"#;
    let unplaced = r#"{"name": "a", "ph": "X", "cat": "gpu", "ts": 1, "dur": 1, "pid": 5, "tid": 1},
{"name": "b", "ph": "X", "cat": "gpu", "ts": 2, "dur": 1, "pid": 5, "tid": 1},
{"name": "c", "ph": "X", "cat": "cuda", "ts": 3, "dur": 1, "pid": "[9] Process", "tid": 1}"#;
    for (name, text) in both_forms(&format!("{placed},\n{unplaced}")) {
        let p = parse(tmp.path(), name, &text).unwrap();
        assert_eq!(p.trace.kernels.len(), 1);
        let note = p
            .trace
            .capture
            .notes
            .iter()
            .find(|n| n.contains("no rule places"))
            .unwrap_or_else(|| panic!("{name}: no note in {:?}", p.trace.capture.notes));
        // Two `gpu` events and one `cuda` event (not on a device pid).
        assert!(
            note.contains("1 `cuda`") && note.contains("2 `gpu`"),
            "{note}"
        );
    }
    for (name, text) in both_forms(unplaced) {
        match parse(tmp.path(), name, &text) {
            Err(e @ Error::Format { .. }) => {
                let m = e.to_string();
                assert!(m.contains(name) && m.contains("2 `gpu`"), "{m}");
            }
            other => panic!("{name}: expected a format error, got {other:?}"),
        }
    }
}

/// `B`/`E` pairs nest per thread and read as `X` events; a dangling `B` or `E` is a counted warning.
#[test]
fn begin_end_pairs_nest_per_thread_and_dangling_ends_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "outer", "ph": "B", "cat": "user_annotation", "ts": 10, "pid": 1, "tid": 1},
{"name": "inner", "ph": "B", "cat": "user_annotation", "ts": 12, "pid": 1, "tid": 1},
{"name": "k", "ph": "B", "cat": "kernel", "ts": 13, "pid": 0, "tid": 7, "args": {"correlation": 4}},
{"ph": "E", "ts": 15, "pid": 1, "tid": 1},
{"ph": "E", "ts": 16.5, "pid": 0, "tid": 7},
{"ph": "E", "ts": 20, "pid": 1, "tid": 1},
{"ph": "E", "ts": 21, "pid": 1, "tid": 1},
{"name": "open", "ph": "B", "cat": "user_annotation", "ts": 30, "pid": 2, "tid": 2}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        assert_eq!(t.kernels.len(), 1, "{name}");
        // The kernel: 13 µs to 16.5 µs = 3 500 ns.
        assert_eq!((t.kernels[0].ts_ns, t.kernels[0].dur_ns), (13_000, 3_500));
        assert_eq!(t.kernels[0].correlation.map(|c| c.get()), Some(4));
        let spans: Vec<(&str, i64, i64)> = t
            .user_annotations
            .iter()
            .map(|s| (t.name(s.name), s.ts_ns, s.dur_ns))
            .collect();
        // inner 12→15 µs (the first E of its thread closes the latest B), outer 10→20 µs.
        assert_eq!(
            spans,
            vec![("outer", 10_000, 10_000), ("inner", 12_000, 3_000)],
            "{name}"
        );
        // The E at 21 µs has no open B; the B at 30 µs is never ended.
        assert_eq!(t.warnings_total, 2, "{name}: {:?}", warnings(&p));
    }
}

/// One odd field in `args` costs that field only (counted), never the others nor the launch link.
#[test]
fn one_odd_args_field_costs_only_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let launch = r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 5}}"#;
    for (odd, field) in [
        (r#""grid": "bad""#, "grid"),
        (r#""grid": [1, 2]"#, "grid"),
        (r#""stream": 9, "stream": 3"#, "stream"),
    ] {
        let text = format!(
            r#"[{launch},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {{"correlation": 5, "device": 3, {odd}, "block": [4, 1, 1]}}}}]"#
        );
        let p = parse(tmp.path(), "odd.json", &text).unwrap();
        let k = &p.trace.kernels[0];
        assert_eq!(k.correlation.map(|c| c.get()), Some(5), "{odd}");
        assert_eq!((k.device, k.block), (Some(3), [4, 1, 1]), "{odd}");
        assert_eq!(p.trace.warnings_total, 1, "{odd}: {:?}", warnings(&p));
        assert!(warnings(&p)[0].contains(field), "{:?}", warnings(&p));
    }
    // A fractional correlation: the link is lost (counted), the device kept.
    let text = format!(
        r#"[{launch},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {{"correlation": 1.0, "device": 3}}}}]"#
    );
    let p = parse(tmp.path(), "frac.json", &text).unwrap();
    let k = &p.trace.kernels[0];
    assert_eq!((k.correlation, k.device), (None, Some(3)));
    assert_eq!(p.trace.warnings_total, 1, "{:?}", warnings(&p));
    assert!(warnings(&p)[0].contains("correlation"));
}

/// A JSON array of objects none of which is a trace event (an event has `"ph"`) is refused, saying what
/// it looks like; in a trace, an object without `"ph"` is a counted warning (`{}`, the placeholder some
/// writers open the array with, is not an event).
#[test]
fn a_json_array_that_is_not_a_trace_is_refused_by_what_it_looks_like() {
    let tmp = tempfile::tempdir().unwrap();
    let hatchet = r#"[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 1, "time (ns)": 2000},
"children": [{"frame": {"name": "matmul_kernel", "type": "function"}, "metrics": {"count": 1, "time (ns)": 2000}, "children": []}]}]"#;
    match parse(tmp.path(), "proton.json", hatchet) {
        Err(e @ Error::Format { .. }) => {
            let m = e.to_string();
            assert!(m.contains("proton.json") && m.contains("Proton"), "{m}");
        }
        other => panic!("expected a format error, got {other:?}"),
    }
    let sidecar = r#"[{"file": "a.json", "batch_size": 32, "mode": "FULL"}]"#;
    match parse(tmp.path(), "details.json", sidecar) {
        Err(e @ Error::Format { .. }) => {
            let m = e.to_string();
            assert!(m.contains("\"ph\"") && m.contains("batch_size"), "{m}");
        }
        other => panic!("expected a format error, got {other:?}"),
    }
    let mixed = r#"[{}, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1}, {"name": "no phase"}]"#;
    let p = parse(tmp.path(), "mixed.json", mixed).unwrap();
    assert_eq!(p.trace.kernels.len(), 1);
    assert_eq!(p.trace.warnings_total, 1, "{:?}", warnings(&p));
    assert!(warnings(&p)[0].contains("\"ph\""));
    // An empty array is an empty trace, not a refusal.
    assert!(parse(tmp.path(), "empty.json", "[]").is_ok());
}

/// The later nsys2json (brycelelbach/nsys2json, `parse_all_events`): kernels on tid `"CUDA API <stream>"`,
/// runtime calls as `"cat": "cuda_api"` on pid `"Host N"` with `args.correlationId`, NVTX ranges as `nvtx`
/// on the host and as `nvtx-kernel` (the span of their kernels) on the device.
#[test]
fn the_later_nsys2json_reads_its_calls_and_both_nvtx_views() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "gemm", "ph": "X", "cat": "cuda", "ts": 10, "dur": 2, "tid": "CUDA API 7", "pid": "Device 0", "args": {}},
{"name": "cudaLaunchKernel", "ph": "X", "cat": "cuda_api", "ts": 9, "dur": 0.5, "tid": "CUDA API 4242", "pid": "Host 0", "args": {"correlationId": 31}},
{"name": "step", "ph": "X", "cat": "nvtx", "ts": 8, "dur": 3, "tid": "NVTX 4242", "pid": "Host 0", "args": {}},
{"name": "step", "ph": "X", "cat": "nvtx-kernel", "ts": 10, "dur": 2, "tid": "NVTX 4242", "pid": "Device 0", "args": {}}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        assert_eq!((t.kernels.len(), t.launches.len()), (1, 1), "{name}");
        assert_eq!(t.kernels[0].stream, Some(7), "{name}");
        assert_eq!(t.launches[0].correlation.map(|c| c.get()), Some(31));
        // 0.5 µs = 500 ns.
        assert_eq!(t.launches[0].dur_ns, 500);
        assert_eq!(
            (t.user_annotations.len(), t.gpu_user_annotations.len()),
            (1, 1),
            "{name}"
        );
        assert!(t.capture.notes.is_empty(), "{name}: {:?}", t.capture.notes);
        assert_eq!(t.warnings_total, 0, "{name}: {:?}", warnings(&p));
    }
}

/// Perfetto's JSON export (trace_processor `export_json.cc`) writes slices of async tracks as `b`/`e`
/// pairs with their category: async slices of a GPU-looking category are no GPU op (no device, no
/// stream), but they are counted in the note, one per `b`.
#[test]
fn async_slices_of_gpu_looking_categories_are_noted() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "k", "ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "pid": 0, "tid": 7},
{"name": "render", "ph": "b", "cat": "gpu_render", "id": 1, "ts": 4, "pid": 3, "tid": 3},
{"name": "render", "ph": "e", "cat": "gpu_render", "id": 1, "ts": 5, "pid": 3, "tid": 3},
{"name": "io", "ph": "b", "cat": "disk", "id": 2, "ts": 4, "pid": 3, "tid": 3},
{"name": "io", "ph": "e", "cat": "disk", "id": 2, "ts": 6, "pid": 3, "tid": 3}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let notes = &p.trace.capture.notes;
        assert!(
            notes.iter().any(|n| n.contains("1 `gpu_render`"))
                && !notes.iter().any(|n| n.contains("disk")),
            "{name}: {notes:?}"
        );
    }
}
