//! The XPlane files of testdata/native/xplane (written by `xplane_counts.py` from the wire format) and
//! the shared corpus's real one (`../shared/traces/native/xplane`; without it that test is listed as
//! ignored), read through `kineto_trace::parse_file` with this crate's reader installed, against the
//! counts of the same script's independent protobuf walker (counts.json).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{Error, IdValue, Options, Parsed, TraceFormat, parse_file, parse_raw};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;
#[path = "../../../tests/native_counts/mod.rs"]
mod native_counts;
use native_counts::int;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native/xplane")
}

fn counts() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("counts.json")).unwrap()).unwrap()
}

fn parse(path: &Path) -> Parsed {
    kineto_xplane::install();
    parse_file(path, &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Counts and sums of every kind of row, devices, steps and launch links, against `want`.
fn check(path: &Path, want: &Value) {
    let p = parse(path);
    let t = &p.trace;
    let rel = path.display();
    assert_eq!(t.header.format, TraceFormat::XPlane);
    native_counts::assert_op_counts(t, want, &rel.to_string());
    assert_eq!(
        t.gpu_user_annotations.len() as i64,
        int(want, "gpu_annotations"),
        "{rel}: GPU annotations (derived lines)"
    );
    let steps: Vec<&str> = t.user_annotations.iter().map(|s| t.name(s.name)).collect();
    let want_steps: Vec<&str> = want["step_annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(steps, want_steps, "{rel}: step annotations");
    // Each GPU apart: kernels by device, and each device's track pid its own.
    let mut by_device: BTreeMap<String, i64> = BTreeMap::new();
    for k in &t.kernels {
        let d = t.detail(&k).device.unwrap();
        assert_eq!(
            t.track(k.track).pid,
            IdValue::Num(d),
            "{rel}: a kernel's pid is its GPU"
        );
        *by_device.entry(d.to_string()).or_default() += 1;
    }
    let want_by_device: BTreeMap<String, i64> =
        serde_json::from_value(want["kernels_by_device"].clone()).unwrap();
    assert_eq!(by_device, want_by_device, "{rel}: kernels by device");
    let devices: Vec<(Option<i64>, Option<u64>, Option<u64>)> = t
        .header
        .devices
        .iter()
        .map(|d| (d.id, d.num_sms, d.total_global_mem))
        .collect();
    let want_devices: Vec<(Option<i64>, Option<u64>, Option<u64>)> = want["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_i64(),
                d["num_sms"].as_u64(),
                d["total_global_mem"].as_u64(),
            )
        })
        .collect();
    assert_eq!(devices, want_devices, "{rel}: devices");
    // Launch ↔ kernel by correlation.
    let launched: std::collections::HashSet<_> =
        t.launches.iter().filter_map(|l| l.correlation).collect();
    let linked = t
        .kernels
        .iter()
        .filter(|k| k.correlation.is_some_and(|c| launched.contains(&c)))
        .count();
    assert_eq!(
        linked as i64,
        int(want, "kernels_with_launch"),
        "{rel}: kernels with a launch"
    );
    let first = t.kernels.row(0);
    let wf = &want["first_kernel"];
    assert_eq!(
        (first.ts_ns, first.dur_ns, t.detail(&first).stream),
        (int(wf, "ts"), int(wf, "dur"), wf["stream"].as_i64()),
        "{rel}: first kernel"
    );
}

#[test]
fn generated_files_match_the_independent_counts() {
    let want = counts();
    for name in ["multi_gpu.xplane.pb", "copies_steps.xplane.pb"] {
        check(&dir().join(name), &want[name]);
    }
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_real_jax_file_matches_the_independent_counts() {
    let want = counts();
    let name = "jax_te_fused_attn_934987a2fc2f.xplane.pb";
    check(
        &corpus::corpus_file(&format!("native/xplane/{name}")),
        &want[&format!("corpus/{name}")],
    );
}

#[test]
fn kernel_details_and_copies_are_read() {
    let t = parse(&dir().join("multi_gpu.xplane.pb")).trace;
    // GPU 1's second kernel (xplane_counts.py: grid k+1 = 2, dynamic_shared 1024·g = 1024, regs 32).
    let k = t
        .kernels
        .iter()
        .find(|k| t.detail(k).device == Some(1) && t.name(k.name) == "gemm_fusion_dot_1")
        .unwrap();
    assert_eq!(
        (t.detail(&k).grid, t.detail(&k).block),
        ([2, 1, 1], [128, 1, 1])
    );
    assert_eq!(
        (t.detail(&k).registers, t.detail(&k).shared_memory),
        (Some(32), Some(1024))
    );
    let c = t.memcpys.row(0);
    assert_eq!(t.name(c.name), "Memcpy DtoH (DeviceToHost)");
    assert_eq!(t.detail(&c).bytes, Some(4096));
    // The step annotation on the host's python thread: 990_000 ns + 0, for 80_000_000 ps.
    let s = t.user_annotations.first().expect("an annotation");
    assert_eq!((s.ts_ns, s.dur_ns), (990_000, 80_000));
    // A launch at a negative offset: 999_000 ns + (0 − 2_000 + 0)·1000 + 500 ps, floored.
    let first_launch = t.launches.iter().map(|l| l.ts_ns).min().unwrap();
    assert_eq!(
        first_launch,
        999_000 + (-2_000_000_i64 + 500).div_euclid(1000)
    );
}

#[test]
fn planes_not_read_as_work_are_counted_and_noted() {
    let t = parse(&dir().join("copies_steps.xplane.pb")).trace;
    assert_eq!(t.counts.other_complete.get("xplane other plane"), Some(&1));
    assert_eq!(
        t.counts.other_complete.get("xplane GPU memory event"),
        Some(&1)
    );
    assert!(
        t.capture
            .notes
            .iter()
            .any(|n| n.contains("\"/device:CUSTOM:Megascale Trace\"")),
        "{:?}",
        t.capture.notes
    );
    assert!(
        t.capture
            .notes
            .iter()
            .any(|n| n.starts_with("1 runtime fill kernels"))
    );
}

#[test]
fn a_cut_file_names_the_byte_of_the_cut_field() {
    kineto_xplane::install();
    let want = &counts()["truncated.xplane.pb"];
    let path = dir().join("truncated.xplane.pb");
    match parse_file(&path, &Options::default()) {
        Err(Error::Syntax {
            file,
            offset,
            message,
        }) => {
            assert_eq!(file, path);
            assert_eq!(offset as i64, int(want, "fault_offset"), "{message}");
            assert!(message.contains("XLine field 4"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn gzip_xplane_reads_as_the_plain_file() {
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;
    kineto_xplane::install();
    let plain = std::fs::read(dir().join("multi_gpu.xplane.pb")).unwrap();
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(&plain).unwrap();
    let z = e.finish().unwrap();
    let p = parse_raw(
        Path::new("multi_gpu.xplane.pb.gz"),
        std::io::Cursor::new(z),
        &Options::default(),
    )
    .unwrap();
    assert!(p.gzip);
    assert_eq!(
        p.trace.kernels.len() as i64,
        int(&counts()["multi_gpu.xplane.pb"], "kernels")
    );
}

/// A plain file read twice (its planes' own fields and lines first, then its events straight into the
/// model) gives the trace, or the error, that the one read of it as a stream gives.
fn plain_read_is_the_stream_read(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    let show = |r: kineto_trace::Result<kineto_trace::Trace>| match r {
        Ok(t) => format!("{t:?}"),
        Err(e) => format!("error: {e}"),
    };
    let stream = show(kineto_xplane::read_stream(&mut &bytes[..], path));
    let plain = show(kineto_xplane::read_plain(
        &mut &bytes[..],
        &mut &bytes[..],
        path,
    ));
    assert_eq!(plain, stream, "{}", path.display());
}

#[test]
fn a_plain_file_read_planes_first_gives_the_streams_trace() {
    for name in [
        "copies_steps.xplane.pb",
        "multi_gpu.xplane.pb",
        "truncated.xplane.pb",
    ] {
        plain_read_is_the_stream_read(&dir().join(name));
    }
    // The cut file is an error either way, and the others read.
    let cut = std::fs::read(dir().join("truncated.xplane.pb")).unwrap();
    let path = dir().join("truncated.xplane.pb");
    assert!(kineto_xplane::read_plain(&mut &cut[..], &mut &cut[..], &path).is_err());
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_real_file_read_planes_first_gives_the_streams_trace() {
    plain_read_is_the_stream_read(&corpus::corpus_file(
        "native/xplane/jax_te_fused_attn_934987a2fc2f.xplane.pb",
    ));
}

/// A file whose content is not what its first look read (it changed between the two reads) is an
/// error, never a trace of one file's planes with the other's events.
#[test]
fn content_other_than_the_first_look_is_an_error() {
    let looked = dir().join("multi_gpu.xplane.pb");
    let first = std::fs::read(&looked).unwrap();
    let other = std::fs::read(dir().join("copies_steps.xplane.pb")).unwrap();
    let e = kineto_xplane::read_plain(&mut &first[..], &mut &other[..], &looked).unwrap_err();
    assert!(e.to_string().contains("changed while it was read"), "{e}");
    // The same file cut since its first look where its last plane begins: a plane fewer (and the
    // space's own fields after it), the same error. The space's fields are length-delimited (a
    // one-byte tag, then a varint length); its planes' tag is 0x0a.
    let mut at = 0;
    let mut last = 0;
    while at < first.len() {
        assert_eq!(first[at] & 7, 2, "a length-delimited field at byte {at}");
        if first[at] == 0x0a {
            last = at;
        }
        let (len, body) =
            kineto_trace::native::detect::varint_at(&first, at + 1).expect("a length");
        at = body + len as usize;
    }
    assert!(last > 0, "more than one plane");
    let fewer = &first[..last];
    let e = kineto_xplane::read_plain(&mut &first[..], &mut &fewer[..], &looked).unwrap_err();
    assert!(e.to_string().contains("changed while it was read"), "{e}");
}

/// The family table's bucket of each kernel name of the real JAX file, as a person reads the name
/// (XLA: `<kind>_<root op>_fusion`, `gemm_fusion_dot` = a Triton GEMM, `wrapped_convert` = a cast).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_real_files_kernels_fall_in_the_buckets_their_names_say() {
    use kineto_trace::family::Rules;
    let path = corpus::corpus_file("native/xplane/jax_te_fused_attn_934987a2fc2f.xplane.pb");
    let t = parse(&path).trace;
    let rules = Rules::builtin();
    let by_hand = |name: &str| -> &str {
        if name.starts_with("gemm_fusion_dot") || name.starts_with("Cijk_") {
            "gemm"
        } else if name.contains("Fmha") {
            "attention"
        } else if name.starts_with("input_reduce_fusion") || name.starts_with("loop_reduce_fusion")
        {
            "reduce"
        } else if name == "input_concatenate_fusion" {
            "memory"
        } else {
            // wrapped_convert (a cast); TE's populate_rng_state_kernel (no rule: its words).
            "elementwise"
        }
    };
    let mut seen = 0;
    for k in &t.kernels {
        let name = t.name(k.name);
        if name.contains("populate_rng_state") {
            continue; // placed by no rule of the table: reported unmatched or by its words
        }
        let family = rules
            .classify(name)
            .unwrap_or_else(|| panic!("unmatched: {name}"));
        assert_eq!(rules.family(family).bucket, by_hand(name), "{name}");
        seen += 1;
    }
    // 130 kernels, 10 of them populate_rng_state_kernel (counts.json, xplane_counts.py).
    assert_eq!(seen, 130 - 10);
}

/// One host's file with two GPU planes is two ranks, one per GPU, never one union: each with its own
/// kernels and copy (xplane_counts.py: 3 kernels and 1 copy per GPU, each launched by one host call)
/// and a copy of the host's step annotation.
#[test]
fn each_gpu_plane_is_a_rank_of_its_own() {
    let t = parse(&dir().join("multi_gpu.xplane.pb")).trace;
    let ranks = kineto_trace::split::split_ranks(t);
    assert_eq!(ranks.len(), 2);
    for (gpu, r) in ranks.iter().enumerate() {
        assert!(
            r.kernels
                .iter()
                .all(|k| r.detail(&k).device == Some(gpu as i64))
        );
        assert_eq!((r.kernels.len(), r.memcpys.len()), (3, 1), "gpu {gpu}");
        assert_eq!(r.launches.len(), 3 + 1, "gpu {gpu}");
        assert_eq!(r.user_annotations.len(), 1, "gpu {gpu}");
        assert_eq!(r.header.devices.len(), 1, "gpu {gpu}");
    }
}

#[test]
fn a_stream_reads_as_the_space_decoded_whole() {
    // The plane-at-a-time read against `prost`'s decode of the whole space, on every sample (the
    // shared corpus's JAX file too, when it is beside the clone).
    let jax = dir()
        .join("../../../../shared/traces/native/xplane/jax_te_fused_attn_934987a2fc2f.xplane.pb");
    let mut files = vec![
        dir().join("multi_gpu.xplane.pb"),
        dir().join("copies_steps.xplane.pb"),
    ];
    files.extend(jax.exists().then_some(jax));
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let whole = kineto_xplane::read(&bytes, &path).unwrap();
        let streamed = kineto_xplane::read_stream(&mut &bytes[..], &path).unwrap();
        assert_eq!(
            format!("{streamed:?}"),
            format!("{whole:?}"),
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_cut_stream_names_the_byte_of_the_cut_field_without_the_whole_file() {
    kineto_xplane::install();
    let want = &counts()["truncated.xplane.pb"];
    let bytes = std::fs::read(dir().join("truncated.xplane.pb")).unwrap();
    // Read from a stream, with no file to read again whole: the walk names the field itself.
    let name = Path::new("cut.xplane.pb");
    match parse_raw(name, std::io::Cursor::new(bytes), &Options::default()) {
        Err(Error::Syntax {
            offset, message, ..
        }) => {
            assert_eq!(offset as i64, int(want, "fault_offset"), "{message}");
            assert!(message.contains("XLine field 4"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
