//! The Perfetto files of testdata/native/perfetto (written by `perfetto_counts.py` with a hand-written
//! wire-format encoder), read through `kineto_trace::parse_file` with this crate's reader installed,
//! against the counts of the same script's independent wire walker (counts.json).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{Error, GpuKind, Options, Parsed, TraceFormat, parse_file};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

#[path = "../../../tests/native_counts/mod.rs"]
mod native_counts;
use native_counts::int;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native/perfetto")
}

fn counts() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("counts.json")).unwrap()).unwrap()
}

fn parse(path: &Path) -> Parsed {
    kineto_perfetto::install();
    parse_file(path, &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Counts and sums of every kind of row, annotations and launch links, against `want`.
fn check(name: &str, want: &Value) {
    let p = parse(&dir().join(name));
    let t = &p.trace;
    assert_eq!(t.header.format, TraceFormat::Perfetto, "{name}");
    native_counts::assert_op_counts(t, want, name);
    let mut annotations: Vec<&str> = t.user_annotations.iter().map(|s| t.name(s.name)).collect();
    annotations.sort_unstable();
    let want_annotations: Vec<&str> = want["user_annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(annotations, want_annotations, "{name}: user annotations");
    let instants = t
        .counts
        .other_complete
        .get("perfetto instant")
        .copied()
        .unwrap_or(0);
    assert_eq!(instants as i64, int(want, "instants"), "{name}: instants");
    let launched: HashSet<_> = t.launches.iter().filter_map(|l| l.correlation).collect();
    let linked = [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset]
        .iter()
        .flat_map(|&k| t.gpu_ops(k))
        .filter(|o| o.correlation.is_some_and(|c| launched.contains(&c)))
        .count();
    assert_eq!(
        linked as i64,
        int(want, "linked_gpu_ops"),
        "{name}: GPU ops with a call"
    );
    let skipped = int(want, "skipped_packets");
    assert_eq!(
        t.warnings
            .iter()
            .any(|w| w.message.starts_with(&format!("{skipped} packets skipped"))),
        skipped > 0,
        "{name}: {:?}",
        t.warnings
    );
}

#[test]
fn generated_files_match_the_independent_counts() {
    let want = counts();
    for name in [
        "rocprofv3_layout.pftrace",
        "gpu_stages.pftrace",
        "rocprofv3_annotations.pftrace",
        "descriptors_first.pftrace",
    ] {
        check(name, &want[name]);
    }
}

/// An integer of the walker's counts, `None` for its `null`.
fn maybe(v: &Value) -> Option<u64> {
    v.as_u64()
}

#[test]
fn debug_annotations_give_copy_bytes_and_launch_shapes_as_the_walker_reads_them() {
    let want = &counts()["rocprofv3_annotations.pftrace"];
    let t = parse(&dir().join("rocprofv3_annotations.pftrace")).trace;
    // The copies' bytes in file order, against the walker's.
    let bytes: Vec<Option<u64>> = t.memcpys.iter().map(|o| t.detail(&o).bytes).collect();
    let want_bytes: Vec<Option<u64>> = want["memcpy_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(maybe)
        .collect();
    assert_eq!(bytes, want_bytes);
    // The kernels' grid, workgroup, VGPRs and LDS, against the walker's (grid and workgroup are
    // products, kept as [product, 1, 1]; zeros when not read).
    let shapes: Vec<[Option<u64>; 4]> = t
        .kernels
        .iter()
        .map(|k| {
            let d = t.detail(&k);
            let product =
                |v: [u32; 3]| (v != [0; 3]).then(|| v.iter().map(|&x| u64::from(x)).product());
            [
                product(d.grid),
                product(d.block),
                d.registers.map(u64::from),
                d.shared_memory.map(u64::from),
            ]
        })
        .collect();
    let want_shapes: Vec<[Option<u64>; 4]> = want["kernel_launches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let k = k.as_array().unwrap();
            [maybe(&k[0]), maybe(&k[1]), maybe(&k[2]), maybe(&k[3])]
        })
        .collect();
    assert_eq!(shapes, want_shapes);
    // The annotations not read, each kind counted once in a warning, as the walker counts them.
    let warned = |start: &str| {
        t.warnings
            .iter()
            .find(|w| w.message.ends_with("not read") && w.message.contains(start))
            .map(|w| w.message.split(' ').next().unwrap().parse::<i64>().unwrap())
            .unwrap_or(0)
    };
    assert_eq!(warned("iid not interned"), int(want, "annotations_unnamed"));
    assert_eq!(
        warned("not an unsigned integer"),
        int(want, "annotations_odd")
    );
}

#[test]
fn rocprofv3_annotations_read_as_the_file_was_written() {
    let t = parse(&dir().join("rocprofv3_annotations.pftrace")).trace;
    // perfetto_counts.py, rocprofv3_annotations: the first copy is 1 MiB (copy_bytes interned, beside
    // begin_ns, a string src_agent and corr_id); the second 4,096 (a plain name, an int_value).
    let copy = |i: usize| t.detail(&t.memcpys.row(i)).bytes;
    assert_eq!((copy(0), copy(1)), (Some(1 << 20), Some(4_096)));
    // A string, a negative int and an iid never interned give no bytes; after the clear iid 3 names
    // corr_id (777, not read as bytes) and iid 14 copy_bytes.
    assert_eq!(
        (copy(2), copy(3), copy(4), copy(5)),
        (None, None, None, Some(2_048))
    );
    // The first kernel: grid 256·256·1 = 65,536 work-items, workgroups of 16·16·1 = 256, 64 VGPRs,
    // 4,096 bytes of LDS (its Accum_VGPR_Count 4 and SGPR_Count 32 are not registers per thread).
    let k = t.detail(&t.kernels.row(0));
    assert_eq!((k.grid, k.block), ([256 * 256, 1, 1], [16 * 16, 1, 1]));
    assert_eq!((k.registers, k.shared_memory), (Some(64), Some(4_096)));
    // The second: LDS from its end's annotations, its VGPR count from its begin's (the end's 99 not).
    let k = t.detail(&t.kernels.row(1));
    assert_eq!((k.grid, k.block), ([1_024, 1, 1], [64, 1, 1]));
    assert_eq!((k.registers, k.shared_memory), (Some(24), Some(512)));
    // The third: a grid of 2^32 work-items does not fit the model's 32 bits; its workgroup does.
    let k = t.detail(&t.kernels.row(2));
    assert_eq!((k.grid, k.block), ([0; 3], [128, 1, 1]));
    assert_eq!((k.registers, k.shared_memory), (None, None));
    // The calls carry annotations too (begin_ns, corr_id, kind): none of them is read as a size.
    assert_eq!(t.launches.len(), 2);
}

#[test]
fn a_trace_without_annotations_has_no_sizes_from_them() {
    // rocprofv3_layout.pftrace has no debug annotations: its copy has no bytes, its kernels no launch
    // shape, as before the annotations were read.
    let t = parse(&dir().join("rocprofv3_layout.pftrace")).trace;
    assert!(t.memcpys.iter().all(|o| t.detail(&o).bytes.is_none()));
    for k in &t.kernels {
        let d = t.detail(&k);
        assert_eq!(
            (d.grid, d.block, d.registers, d.shared_memory),
            ([0; 3], [0; 3], None, None)
        );
    }
    assert!(
        t.warnings
            .iter()
            .all(|w| !w.message.contains("debug annotation"))
    );
}

#[test]
fn monotonic_times_move_onto_boottime_and_names_follow_the_cleared_state() {
    let t = parse(&dir().join("rocprofv3_layout.pftrace")).trace;
    // perfetto_counts.py: snapshot BOOTTIME 1,000,000 = MONOTONIC 400,000; the first kernel begins
    // at MONOTONIC 500,600 → 1,000,000 + 100,600 = 1,100,600 ns, for 2,000 ns.
    let k = t.kernels.row(0);
    assert_eq!((k.ts_ns, k.dur_ns), (1_100_600, 2_000));
    assert_eq!(t.name(k.name), "gemm_k(float*)");
    // On GPU (agent) 1, stream 0, by the track's name.
    assert_eq!(
        (t.detail(&k).device, t.detail(&k).stream),
        (Some(1), Some(0))
    );
    // After the second clear, iid 2 names the kernel `fusion_add_kernel`, not `hipLaunchKernel`.
    assert_eq!(t.name(t.kernels.row(1).name), "fusion_add_kernel");
    assert!(
        t.launches
            .iter()
            .all(|l| t.name(l.name) != "fusion_add_kernel")
    );
}

#[test]
fn a_compute_kernel_stage_has_its_launch_shape() {
    let t = parse(&dir().join("gpu_stages.pftrace")).trace;
    let k = t.kernels.row(0);
    assert_eq!(t.name(k.name), "axpy(float*, float*)");
    // The packet's timestamp 2,001,000 (BOOTTIME, no snapshot needed), duration 3,000.
    assert_eq!((k.ts_ns, k.dur_ns), (2_001_000, 3_000));
    assert_eq!(
        (t.detail(&k).grid, t.detail(&k).block),
        ([4, 1, 1], [256, 1, 1])
    );
    // registers_per_thread 32 (its name interned); shared 1,024 static + 512 dynamic.
    assert_eq!(
        (t.detail(&k).registers, t.detail(&k).shared_memory),
        (Some(32), Some(1_536))
    );
    assert_eq!(t.name(t.memcpys.row(0).name), "Copy");
}

#[test]
fn a_cut_file_names_the_byte_of_the_cut_packet() {
    kineto_perfetto::install();
    let want = int(&counts()["truncated.pftrace"], "fault_offset");
    let e = parse_file(&dir().join("truncated.pftrace"), &Options::default()).unwrap_err();
    match &e {
        Error::Syntax { offset, .. } => assert_eq!(*offset as i64, want, "{e}"),
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("truncated.pftrace") && text.contains("runs past the end"),
        "{text}"
    );
}

/// A plain file is read twice, its track descriptors first, and its events mapped as paired; a
/// stream (gzip, stdin) is read once, its events logged until the end. Both give the same trace, for
/// every file here (descriptors before and after their events, render stages, a cut file salvaged),
/// and the same error for the cut file read whole.
#[test]
fn a_plain_file_read_descriptors_first_gives_the_streams_trace() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("testdata")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pftrace"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for path in &files {
        let bytes = std::fs::read(path).expect("read");
        for salvage in [false, true] {
            let stream = kineto_perfetto::read_stream_salvaging(&mut &bytes[..], path, salvage);
            let plain = kineto_perfetto::read_plain_salvaging(
                &mut &bytes[..],
                &mut &bytes[..],
                path,
                salvage,
            );
            let show = |r: &kineto_trace::Result<kineto_trace::Trace>| match r {
                Ok(t) => format!("{t:?}"),
                Err(e) => format!("error: {e}"),
            };
            assert_eq!(
                show(&plain),
                show(&stream),
                "{} (salvage {salvage})",
                path.display()
            );
            // The cut file: an error whole, a trace salvaged; the others read.
            let cut = path.ends_with("truncated.pftrace");
            assert_eq!(plain.is_err(), cut && !salvage, "{}", path.display());
        }
    }
}

/// Content other than what the first look read (the file changed between the two reads) is an
/// error, never a trace mapped with another file's tracks.
#[test]
fn content_other_than_the_first_look_is_an_error() {
    let looked = dir().join("rocprofv3_layout.pftrace");
    let first = std::fs::read(&looked).unwrap();
    let other = std::fs::read(dir().join("gpu_stages.pftrace")).unwrap();
    let e = kineto_perfetto::read_plain_salvaging(&mut &first[..], &mut &other[..], &looked, false)
        .unwrap_err();
    assert!(e.to_string().contains("changed while it was read"), "{e}");
}

/// Protobuf's varint of `v`.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// Field `number` holding the varint `v`.
fn num(number: u64, v: u64) -> Vec<u8> {
    [varint(number << 3), varint(v)].concat()
}

/// Field `number` holding `bytes` (length-delimited).
fn len(number: u64, bytes: &[u8]) -> Vec<u8> {
    [
        varint(number << 3 | 2),
        varint(bytes.len() as u64),
        bytes.to_vec(),
    ]
    .concat()
}

#[test]
fn a_descriptor_and_a_snapshot_after_the_events_still_place_and_time_them() {
    kineto_perfetto::install();
    // A slice on track 7 begun at MONOTONIC 500 and ended at 700 (sequence 1), then the clock
    // snapshot (BOOTTIME 10,000 = MONOTONIC 400), then track 7's descriptor: a rocprofv3 GPU stream
    // track of agent 2, stream 3. Both come after the events they place and time.
    let event = |ts: u64, kind: u64, extra: Vec<u8>| {
        let e = [num(9, kind), num(11, 7), extra].concat();
        len(
            1,
            &[num(10, 1), num(8, ts), num(58, 3), len(11, &e)].concat(),
        )
    };
    let named = [len(23, b"k"), len(22, b"kernel_dispatch")].concat();
    let clocks = [
        len(1, &[num(1, 6), num(2, 10_000)].concat()),
        len(1, &[num(1, 3), num(2, 400)].concat()),
    ]
    .concat();
    let descriptor = [num(1, 7), len(2, b"COMPUTE AGENT [2] STREAM [3] (GPU)")].concat();
    let file = [
        event(500, 1, named),
        event(700, 2, Vec::new()),
        len(1, &[num(10, 1), len(6, &clocks)].concat()),
        len(1, &len(60, &descriptor)),
    ]
    .concat();
    let dir = tempfile_dir();
    let path = dir.join("late.pftrace");
    std::fs::write(&path, &file).unwrap();
    let t = parse(&path).trace;
    assert_eq!(t.kernels.len(), 1);
    let k = t.kernels.row(0);
    // 10,000 + (500 − 400) = 10,100 ns on BOOTTIME, for 700 − 500 = 200 ns; on agent 2, stream 3
    // (without the descriptor: device 0 and stream 7, the uuid).
    assert_eq!((k.ts_ns, k.dur_ns), (10_100, 200));
    assert_eq!(
        (t.detail(&k).device, t.detail(&k).stream),
        (Some(2), Some(3))
    );
    assert_eq!(t.name(k.name), "k");
    // The same file read from a stream (no file to read again) gives the same trace.
    let raw = kineto_trace::parse_raw(&path, std::io::Cursor::new(file), &Options::default());
    let raw = raw.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", raw.trace), format!("{t:?}"));
}

/// A directory in the system's temporary directory for this test process's files.
fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kineto-perfetto-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
