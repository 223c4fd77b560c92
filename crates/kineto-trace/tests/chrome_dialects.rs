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
        let k = t.kernels.row(0);
        // 1000.5 µs = 1 000 500 ns; 2.25 µs = 2 250 ns; device and stream from "Device 1", "Stream 7".
        assert_eq!((k.ts_ns, k.dur_ns), (1_000_500, 2_250), "{name}");
        assert_eq!(
            (t.detail(&k).device, t.detail(&k).stream),
            (Some(1), Some(7)),
            "{name}"
        );
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
        let k = p.trace.kernels.row(0);
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
        assert_eq!(
            (t.kernels.row(0).ts_ns, t.kernels.row(0).dur_ns),
            (13_000, 3_500)
        );
        assert_eq!(t.kernels.row(0).correlation.map(|c| c.get()), Some(4));
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
        let k = p.trace.kernels.row(0);
        assert_eq!(k.correlation.map(|c| c.get()), Some(5), "{odd}");
        assert_eq!(
            (p.trace.detail(&k).device, p.trace.detail(&k).block),
            (Some(3), [4, 1, 1]),
            "{odd}"
        );
        assert_eq!(p.trace.warnings_total, 1, "{odd}: {:?}", warnings(&p));
        assert!(warnings(&p)[0].contains(field), "{:?}", warnings(&p));
    }
    // A fractional correlation: the link is lost (counted), the device kept.
    let text = format!(
        r#"[{launch},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {{"correlation": 1.0, "device": 3}}}}]"#
    );
    let p = parse(tmp.path(), "frac.json", &text).unwrap();
    let k = p.trace.kernels.row(0);
    assert_eq!((k.correlation, p.trace.detail(&k).device), (None, Some(3)));
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
        assert_eq!(t.detail(&t.kernels.row(0)).stream, Some(7), "{name}");
        assert_eq!(t.launches.row(0).correlation.map(|c| c.get()), Some(31));
        // 0.5 µs = 500 ns.
        assert_eq!(t.launches.row(0).dur_ns, 500);
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

/// Events of phases neither reader reads (counters `C`, object snapshots `O`) are counted and named in
/// a note, per phase; `M` and the timed phases are not named. A file of only a snapshot (catapult's
/// `gpu_state_trace.json` is one) says so instead of reading as an empty trace with nothing said.
#[test]
fn events_of_phases_not_read_are_named_in_a_note_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "k", "ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "pid": 0, "tid": 7},
{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "GPU 0"}},
{"name": "mem", "ph": "C", "ts": 2, "pid": 3, "args": {"used": 1}},
{"name": "mem", "ph": "C", "ts": 3, "pid": 3, "args": {"used": 2}},
{"name": "gpu::State", "ph": "O", "id": "0x1", "ts": 4, "pid": 3, "tid": 3, "args": {"snapshot": {}}}"#;
    // C: 2 events, O: 1 (the map's order: `C` before `O`).
    let want = "events of phases not read (counted, not kept): 2 `C`, 1 `O`";
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let notes = &p.trace.capture.notes;
        assert!(notes.iter().any(|n| n == want), "{name}: {notes:?}");
        assert_eq!(p.trace.kernels.len(), 1, "{name}");
    }
    let only = r#"{"name": "gpu::State", "ph": "O", "id": "0x1", "ts": 4, "pid": 3, "tid": 3, "args": {"snapshot": {}}}"#;
    for (name, text) in both_forms(only) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let notes = &p.trace.capture.notes;
        assert!(
            notes
                .iter()
                .any(|n| n == "events of phases not read (counted, not kept): 1 `O`"),
            "{name}: {notes:?}"
        );
    }
}

/// Converters that number their pids write the device in a `process_name` metadata event (`M`), before
/// or after the events it names: a `cuda` event on such a pid is a GPU op in both forms, as on a pid
/// whose text says `Device N`.
#[test]
fn a_device_named_by_process_name_metadata_places_cuda_events_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let kernel = r#"{"name": "gemm", "ph": "X", "cat": "cuda", "ts": 10, "dur": 2, "pid": 5, "tid": 7, "args": {}},
{"name": "Memcpy DtoH", "ph": "B", "cat": "cuda", "ts": 20, "pid": 5, "tid": 7},
{"ph": "E", "ts": 21.5, "pid": 5, "tid": 7}"#;
    let meta = r#"{"name": "process_name", "ph": "M", "pid": 5, "args": {"name": "Device 2"}}"#;
    for events in [format!("{meta},\n{kernel}"), format!("{kernel},\n{meta}")] {
        for (name, text) in both_forms(&events) {
            let p = parse(tmp.path(), name, &text).unwrap();
            let t = &p.trace;
            assert_eq!((t.kernels.len(), t.memcpys.len()), (1, 1), "{name}: {text}");
            // 10 µs, 2 µs; the copy 20 µs → 21.5 µs = 1 500 ns.
            assert_eq!(
                (t.kernels.row(0).ts_ns, t.kernels.row(0).dur_ns),
                (10_000, 2_000)
            );
            assert_eq!(
                (t.memcpys.row(0).ts_ns, t.memcpys.row(0).dur_ns),
                (20_000, 1_500)
            );
            // The device is the one the process name says (2, not the pid 5), the stream the tid.
            assert_eq!(
                (
                    t.detail(&t.kernels.row(0)).device,
                    t.detail(&t.kernels.row(0)).stream
                ),
                (Some(2), Some(7))
            );
            assert_eq!(t.detail(&t.memcpys.row(0)).device, Some(2), "{name}");
            assert!(t.capture.notes.is_empty(), "{name}: {:?}", t.capture.notes);
            assert_eq!(t.warnings_total, 0, "{name}: {:?}", warnings(&p));
        }
    }
}

/// The same in a parallel parse of the object form, the `process_name` ranges after the events it
/// names: the pid is resolved once every range is read.
#[test]
fn a_device_named_in_a_later_range_places_cuda_events_read_in_parallel() {
    use kineto_trace::{Feed, parse_raw};
    let filler: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"name": "op{i}", "ph": "X", "cat": "cpu_op", "ts": {}, "dur": 1, "pid": 1, "tid": 1}}"#,
                100 + i
            )
        })
        .collect();
    let text = format!(
        r#"{{"traceEvents": [{{"name": "gemm", "ph": "X", "cat": "cuda", "ts": 10, "dur": 2, "pid": 5, "tid": 7}},
{},
{{"name": "process_name", "ph": "M", "pid": 5, "args": {{"name": "Device 2"}}}}]}}"#,
        filler.join(",\n")
    );
    assert!(text.len() > 8_000, "{} bytes: too few to split", text.len());
    let opts = Options {
        feed: Feed::Threaded,
        threads: 3,
        range_bytes: 1000,
        ..Options::default()
    };
    let p = parse_raw(
        Path::new("split.json"),
        std::io::Cursor::new(text.into_bytes()),
        &opts,
    )
    .unwrap();
    let t = &p.trace;
    assert_eq!((t.kernels.len(), t.cpu_ops.len()), (1, 200));
    assert_eq!(
        (t.kernels.row(0).ts_ns, t.detail(&t.kernels.row(0)).device),
        (10_000, Some(2))
    );
    assert!(t.capture.notes.is_empty(), "{:?}", t.capture.notes);
}

/// XLA's profiler (tsl `TraceEventsToJson`: JAX's `perfetto_trace.json.gz` is this file with its
/// `metadata` removed) writes `{"displayTimeUnit":"ns","metadata":{…},"traceEvents":[…,{}]}`, its
/// planes as processes named `/device:GPU:0` and `/host:CPU`, its events without `cat`, and ends the
/// array with `{}`. No rule tells its kernels from the XLA op spans on the same device: refused, by
/// name, in both forms, whichever line the process names come on.
#[test]
fn an_xla_profiler_trace_is_refused_by_name_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let meta = r#"{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},
{"ph":"M","pid":1,"name":"process_sort_index","args":{"sort_index":1}},
{"ph":"M","pid":1,"tid":5,"name":"thread_name","args":{"name":"Stream #13(Compute)"}},
{"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}}"#;
    let events = r#"{"pid":1,"tid":5,"ts":1000.12345,"dur":2.50000,"name":"gemm_fusion","ph":"X"},
{"pid":701,"tid":3,"ts":999.00000,"dur":0.50000,"name":"cuLaunchKernel","ph":"X"}"#;
    let object = format!(
        "{{\"displayTimeUnit\":\"ns\",\"metadata\":{{\"highres-ticks\":true}},\"traceEvents\":[{meta},\n{events},\n{{}}]}}"
    );
    let array = format!("[{events},\n{meta}]");
    for (name, text) in [("perfetto_trace.json", object), ("xla.json", array)] {
        match parse(tmp.path(), name, &text) {
            Err(e @ Error::Format { .. }) => {
                let m = e.to_string();
                assert!(
                    m.contains(name) && m.contains("XLA") && m.contains("/device:GPU:0"),
                    "{m}"
                );
            }
            other => panic!("{name}: expected a format error, got {other:?}"),
        }
    }
}

/// `displayTimeUnit` says how a viewer shows times, not what unit `ts` is in (the Trace Event Format:
/// `ts` and `dur` are µs; XLA's profiler writes `"displayTimeUnit": "ns"` over µs with 5 decimals):
/// times are read as µs whatever it says.
#[test]
fn display_time_unit_does_not_scale_the_times() {
    let tmp = tempfile::tempdir().unwrap();
    for unit in ["ns", "ms"] {
        let text = format!(
            r#"{{"displayTimeUnit": "{unit}", "traceEvents": [{{"name": "k", "ph": "X", "cat": "kernel", "ts": 1000.12345, "dur": 2.5, "pid": 0, "tid": 7}}]}}"#
        );
        let p = parse(tmp.path(), "unit.json", &text).unwrap();
        let k = p.trace.kernels.row(0);
        // 1000.12345 µs = 1 000 123.45 ns: 1 000 123 (rounded half up on the fourth decimal, a 4);
        // 2.5 µs = 2 500 ns. Scaled as ns they would be 1 000 ns and 2 ns.
        assert_eq!((k.ts_ns, k.dur_ns), (1_000_123, 2_500), "{unit}");
        assert_eq!(p.trace.header.display_time_unit.as_deref(), Some(unit));
    }
}

/// rpd2tracing (ROCm/rocmProfileData `tools/rpd2tracing.py`) writes `[ {}` then `,{event}` lines, every
/// value a string (pid = the GPU id, tid = the queue; ts/dur whole µs from SQL integer division), and
/// with `--format object` the same array inside `{"traceEvents": …} `: an opening `{}` as the legacy
/// rocprof's. Both forms read alike: ops by their `args.desc` op type, the UserMarker frames it draws on
/// the GPU a GPU-side annotation (not a kernel, as the legacy rocprof's rules would make them).
#[test]
fn rpd2tracing_reads_alike_as_an_array_and_as_an_object() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        r#"{"name": "process_name", "ph": "M", "pid":"0","args":{"name":"GPU0"}}"#,
        r#"{"name": "process_sort_index", "ph": "M", "pid":"0","args":{"sort_index":"1000000"}}"#,
        r#"{"name":"thread_name","ph":"M","pid":"123","tid":"456","args":{"name":"Hip 456"}}"#,
        r#"{"pid":"0","tid":"1","name":"Cijk_gemm","ts":"1010","dur":"5","ph":"X","args":{"desc":"KernelExecution"}}"#,
        r#"{"pid":"0","tid":"1","name":"CopyHostToDevice","ts":"1020","dur":"3","ph":"X","args":{"desc":"CopyHostToDevice"}}"#,
        r#"{"pid":"123","tid":"456","name":"hipLaunchKernel","ts":"1000","dur":"4","ph":"X","args":{"desc":"stream=0"}}"#,
        r#"{"pid":"123","tid":"456","name":"hipMemcpy","ts":"1015","dur":"9","ph":"X","args":{"desc":"dst=0x1"}}"#,
        r#"{"pid":"123","tid":"456","name":"step","ts":"999","dur":"30","ph":"X","args":{"desc":"step"}}"#,
        r#"{"pid":"123","tid":"456","cat":"api_op","name":"api_op","ts":"1002","id":"1","ph":"s"}"#,
        r#"{"pid":"0","tid":"1","cat":"api_op","name":"api_op","ts":"1010","id":"1","ph":"f", "bp":"e"}"#,
        r#"{"pid":"0","name":"QueueDepth","ph":"C","ts":1000,"args":{"depth":1}}"#,
        r#"{"pid":"0","tid":"1","name":"step","ts":"1009","dur":"15","ph":"X","args":{"desc":"UserMarker frame: 2 ops"}}"#,
    ];
    let array: String = events.iter().map(|e| format!(",{e}\n")).collect();
    let array = format!("[ {{}}\n{array}]\n");
    let object = format!("{{\"traceEvents\": {array}}} \n");
    for (name, text) in [("rpd.json", array), ("rpd_object.json", object)] {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        assert_eq!((t.kernels.len(), t.memcpys.len()), (1, 1), "{name}");
        // The kernel: 1010 µs, 5 µs; its launch by the flow (id 1).
        assert_eq!(
            (t.kernels.row(0).ts_ns, t.kernels.row(0).dur_ns),
            (1_010_000, 5_000)
        );
        assert_eq!(t.launches.len(), 2, "{name}");
        assert_eq!(
            (t.user_annotations.len(), t.gpu_user_annotations.len()),
            (1, 1),
            "{name}"
        );
        assert_eq!(t.warnings_total, 0, "{name}: {:?}", warnings(&p));
        // Named as what it is in both forms, not as the legacy rocprof's JSON it was sniffed as.
        assert_eq!(
            t.header.format,
            kineto_trace::TraceFormat::ChromeArray,
            "{name}"
        );
    }
}

/// The multi-file nsys2json (chenyu-jiang/nsys2json, `--filenames`) names each device's process
/// `"<sqlite file> Device <deviceId>"`, its calls `cuda_api` on the same pid: kernels in both forms.
#[test]
fn nsys2json_devices_named_after_their_file_are_devices() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "gemm", "ph": "X", "cat": "cuda", "ts": 10, "dur": 2, "tid": "Stream 7", "pid": "rank0.sqlite Device 3", "args": {}},
{"name": "cudaLaunchKernel", "ph": "X", "cat": "cuda_api", "ts": 9, "dur": 0.5, "tid": "CUDA API Thread 42", "pid": "rank0.sqlite Device 3", "args": {"correlationId": 31}}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        assert_eq!((t.kernels.len(), t.launches.len()), (1, 1), "{name}");
        assert_eq!(
            (
                t.detail(&t.kernels.row(0)).device,
                t.detail(&t.kernels.row(0)).stream
            ),
            (Some(3), Some(7))
        );
        assert!(t.capture.notes.is_empty(), "{name}: {:?}", t.capture.notes);
    }
}

/// A device written without a space (`"GPU1"`) is the same device in both forms: the object form's
/// direct path takes it from the pid's text as the array form does (it read no number there before).
#[test]
fn a_device_pid_without_a_space_is_its_device_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "gemm", "ph": "X", "cat": "cuda", "ts": 10, "dur": 2, "tid": "Stream 7", "pid": "GPU1", "args": {}}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        assert_eq!(t.kernels.len(), 1, "{name}");
        assert_eq!(t.detail(&t.kernels.row(0)).device, Some(1), "{name}");
    }
}

/// Nsight Systems' own JSON export (`nsys export --type json`, its documentation's "JSON and Text
/// Format Description") serialises its protobuf messages one per line — the events, then the strings
/// (`{"data":[…]}`, or with `--line-by-line` one `{"type":"String",…}` each), then thread names. It is
/// not the Chrome trace format: refused by name, at the second object's byte.
#[test]
fn nsight_systems_own_json_export_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let default = "{\"data\":[\"[Unknown]\",\"Process 14944 was launched by the profiler\"]}\n{\"data\":[{\"nameIdx\":\"14\",\"priority\":\"10\",\"globalTid\":\"72057844756653436\"}]}\n";
    let by_line = "{\"type\":\"String\",\"id\":\"3720\",\"value\":\"Profiling has started.\"}\n{\"type\":\"ThreadName\",\"globalTid\":\"72057844756653436\",\"nameId\":\"14\",\"priority\":\"10\"}\n";
    for (name, text) in [("nsys.json", default), ("nsys_lines.json", by_line)] {
        let second = text.find('\n').unwrap() + 1;
        match parse(tmp.path(), name, text) {
            Err(e @ Error::Syntax { offset, .. }) => {
                let m = e.to_string();
                assert!(m.contains(name) && m.contains("Nsight Systems"), "{m}");
                assert_eq!(offset, second as u64, "{m}");
            }
            other => panic!("{name}: expected a syntax error, got {other:?}"),
        }
    }
}

/// Kineto's `python_function` events (a `with_stack` profile's Python frames) in a bare array are read
/// as the Kineto parser reads them in an object: counted under their category, kept as Python frames
/// only when every frame is asked for or a step profile needs one (vLLM's `execute_model`), and never
/// user annotations.
#[test]
fn python_frames_are_read_alike_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 4, "ts": 10, "dur": 50},
{"ph": "X", "cat": "python_function", "name": "vllm/v1/worker/gpu_model_runner.py(1503): execute_model", "pid": 1, "tid": 4, "ts": 11, "dur": 40},
{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1747): _call_impl", "pid": 1, "tid": 4, "ts": 12.5, "dur": 30},
{"ph": "X", "cat": "python_function", "name": "<built-in method mm>", "pid": 1, "tid": 4, "ts": 13, "dur": 70},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 4, "ts": 13.25, "dur": 2}"#;
    for (name, text) in both_forms(events) {
        for all in [false, true] {
            let p = dir_parse(tmp.path(), name, &text, all);
            let t = &p.trace;
            let what = format!("{name}, all frames {all}");
            assert_eq!(t.user_annotations.len(), 1, "{what}");
            assert_eq!(t.cpu_ops.len(), 1, "{what}");
            // Three frames counted; kept: all three, or only `execute_model`.
            assert_eq!(
                t.counts.other_complete.get("python_function"),
                Some(&3),
                "{what}"
            );
            let kept: Vec<&str> = t.python_functions.iter().map(|s| t.name(s.name)).collect();
            let want: &[&str] = if all {
                &[
                    "vllm/v1/worker/gpu_model_runner.py(1503): execute_model",
                    "torch/nn/modules/module.py(1747): _call_impl",
                    "<built-in method mm>",
                ]
            } else {
                &["vllm/v1/worker/gpu_model_runner.py(1503): execute_model"]
            };
            assert_eq!(kept, want, "{what}");
            // The last frame ends at 13 + 70 = 83 µs, past every other event: the trace's end.
            assert_eq!(t.time_bounds, Some((10_000, 83_000)), "{what}");
        }
    }
}

fn dir_parse(dir: &Path, name: &str, text: &str, python_frames: bool) -> Parsed {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let opts = Options {
        python_frames,
        ..Options::default()
    };
    parse_file(&p, &opts).unwrap()
}

/// Events whose role their own fields settle (a Kineto-category span, a GPU op with its correlation)
/// go into the model as read; the ids the flow links give the ops without one (rpd2tracing's) stay
/// above theirs, which are no longer among the held events: 7000 is the largest id written (a kernel
/// whose launch is outside the profiled window), so the linked pair gets 7001, not an id a Kineto
/// kernel already has. An odd `args` field is warned of once.
#[test]
fn flow_ids_stay_above_the_ids_of_events_read_into_the_model_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 7000}},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 3, "dur": 3, "args": {"External id": "x"}},
{"name": "process_name", "ph": "M", "pid": "1", "args": {"name": "GPU1"}},
{"pid": "1", "tid": "1", "name": "Cijk_gemm", "ts": "1010", "dur": "5", "ph": "X", "args": {"desc": "KernelExecution"}},
{"pid": "123", "tid": "456", "name": "hipLaunchKernel", "ts": "1000", "dur": "4", "ph": "X", "args": {"desc": "stream=0"}},
{"pid": "123", "tid": "456", "cat": "api_op", "name": "api_op", "ts": "1002", "id": "1", "ph": "s"},
{"pid": "1", "tid": "1", "cat": "api_op", "name": "api_op", "ts": "1010", "id": "1", "ph": "f", "bp": "e"}"#;
    // The array form only: as an object it is the Kineto parser's, which reads no rpd2tracing op.
    let p = parse(tmp.path(), "array.json", &format!("[{events}]")).unwrap();
    let t = &p.trace;
    assert_eq!(
        kernels(t),
        [
            ("sm90_gemm".into(), Some(7000)),
            ("Cijk_gemm".into(), Some(7001))
        ]
    );
    let launch_ids: Vec<_> = (0..t.launches.len())
        .map(|i| t.launches.row(i).correlation.map(|c| c.get()))
        .collect();
    assert_eq!(launch_ids, [Some(7001)]);
    assert_eq!(t.cpu_ops.len(), 1);
    assert_eq!(t.warnings_total, 1, "{:?}", warnings(&p));
    assert!(
        warnings(&p)[0].contains("External id"),
        "{:?}",
        warnings(&p)
    );
}

/// The kernels' names and correlation ids, in the model's order.
fn kernels(t: &kineto_trace::Trace) -> Vec<(String, Option<u64>)> {
    (0..t.kernels.len())
        .map(|i| {
            let k = t.kernels.row(i);
            (t.name(k.name).to_string(), k.correlation.map(|c| c.get()))
        })
        .collect()
}

/// Kineto's kernel facts (`registers per thread`, `shared memory`, `graph id`, `graph node id`) are
/// read from a bare array as the Kineto parser reads them from its object; one too large for its field
/// (registers past 2^32 - 1) is absent and warned of in both forms.
#[test]
fn kernel_facts_are_read_alike_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 11, "registers per thread": 32, "shared memory": 4096, "graph id": 3, "graph node id": 77}},
{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 7, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 12, "registers per thread": 4294967296, "shared memory": 0}}"#;
    for (name, text) in both_forms(events) {
        let p = parse(tmp.path(), name, &text).unwrap();
        let t = &p.trace;
        let facts = |i: usize| {
            let d = t.detail(&t.kernels.row(i));
            (d.registers, d.shared_memory, d.graph_id, d.graph_node_id)
        };
        assert_eq!(
            facts(0),
            (Some(32), Some(4096), Some(3), Some(77)),
            "{name}"
        );
        assert_eq!(facts(1), (None, Some(0), None, None), "{name}");
        assert_eq!(t.warnings_total, 1, "{name}: {:?}", warnings(&p));
        assert!(
            warnings(&p)[0].contains("registers per thread"),
            "{name}: {:?}",
            warnings(&p)
        );
    }
}

/// Rows of equal times keep file order: a GPU op held to the end (rpd2tracing's, which a flow may yet
/// give a correlation) is followed in its table by the Kineto kernel written after it at the same
/// start and end, though that kernel could have gone into the model as read.
#[test]
fn rows_of_equal_times_keep_file_order_when_one_is_held() {
    let tmp = tempfile::tempdir().unwrap();
    let events = r#"{"name": "process_name", "ph": "M", "pid": "1", "args": {"name": "GPU1"}},
{"pid": "1", "tid": "1", "name": "Cijk_gemm", "ts": "10", "dur": "5", "ph": "X", "args": {"desc": "KernelExecution"}},
{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 3}},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 3, "dur": 3, "args": {}}"#;
    let p = parse(tmp.path(), "array.json", &format!("[{events}]")).unwrap();
    let t = &p.trace;
    assert_eq!(
        kernels(t),
        [("Cijk_gemm".into(), None), ("sm90_gemm".into(), Some(3))]
    );
    assert_eq!(t.cpu_ops.len(), 1);
}
