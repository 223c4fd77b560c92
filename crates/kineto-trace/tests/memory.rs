//! Memory while parsing, measured by a counting global allocator (which is why this is a test binary
//! of its own: the allocator counts every thread of the process, so its tests run one at a time).
//!
//! The stated bound, for any input: the heap the parser allocates — its peak above what was live
//! before the call — stays within `counting::MULTIPLE` (12) × the JSON bytes + `counting::FIXED`
//! (16 MiB); `tests/property/counting.rs` says where each part comes from.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use flate2::Compression;
use flate2::write::GzEncoder;
use kineto_trace::{Feed, Options, parse_file, parse_reader};
use proptest::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod common;

#[path = "property/counting.rs"]
mod counting;
use counting::{bound, measure};

/// One measurement at a time: the counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    e.write_all(bytes).expect("gz");
    e.finish().expect("gz")
}

fn inflate(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out)
        .expect("gunzip");
    out
}

/// Header values the model does not keep cost their window and nothing after the parse: a long
/// `deviceProperties` of tiny arrays (which as a `serde_json::Value` takes ~16 × its text), a large
/// `distributedInfo`, and many unknown top-level keys.
#[test]
fn header_values_are_not_kept() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = String::from(r#"{"deviceProperties": ["#);
    let n = 4_000_000; // "[0]," × 4 M: 16 MB of JSON.
    for i in 0..n {
        text.push_str(if i + 1 < n { "[0]," } else { "[0]" });
    }
    text.push_str(r#"], "distributedInfo": {"backend": "nccl", "rank": 3, "pg_config": ["#);
    for i in 0..200_000 {
        text.push_str(&format!(r#"{{"pg_name": "{i}", "ranks": [0, 1]}}, "#));
    }
    text.push_str(r#"{}], "world_size": "8"}, "#);
    for i in 0..300_000 {
        text.push_str(&format!(r#""unknown_{i:07}": {i}, "#));
    }
    text.push_str(
        r#""traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}"#,
    );
    let packed = gz(text.as_bytes());
    let json = text.len();
    drop(text);
    let ((trace, read), peak, kept) = measure(|| {
        let mut r = flate2::read::MultiGzDecoder::new(packed.as_slice());
        parse_reader(Path::new("header.json.gz"), &mut r, false, true).expect("parse")
    });
    assert_eq!(read as usize, json);
    eprintln!("header values: {json} bytes of JSON, peak {peak}, kept {kept}");
    assert_eq!(
        (trace.header.rank, trace.header.world_size),
        (Some(3), Some(8))
    );
    assert_eq!(trace.kernels.len(), 1);
    // The largest value is 16 MB (16,000,000 bytes): the window doubles from 4 MiB until it holds it —
    // 16 MiB, or 32 MiB if the value starts late in a window — and the decoder's state is under 1 MiB.
    // Before the header was read without a DOM, this input took 844 MB (26 × its 31.9 MB of JSON).
    assert!(
        peak < (32 << 20) + (4 << 20),
        "peak {peak} bytes for {json} bytes of JSON"
    );
    assert!(peak <= bound(json), "peak {peak} > bound {}", bound(json));
    // What stays is the model of one kernel: a few hundred bytes, nothing of the header.
    let model = std::mem::size_of_val(&trace) + (64 << 10);
    assert!(kept < model as isize, "{kept} bytes kept after the parse");
    drop(trace);
}

/// The small traces (`common::small_traces`: real ones of the corpus, or the generated ones without it),
/// decompressed (read once).
fn real_traces() -> &'static [(PathBuf, Vec<u8>)] {
    static ALL: std::sync::OnceLock<Vec<(PathBuf, Vec<u8>)>> = std::sync::OnceLock::new();
    ALL.get_or_init(read_real_traces)
}

fn read_real_traces() -> Vec<(PathBuf, Vec<u8>)> {
    let out: Vec<(PathBuf, Vec<u8>)> = common::small_traces()
        .into_iter()
        .map(|p| {
            let stored = std::fs::read(&p).expect("read");
            let json = if p.to_string_lossy().ends_with(".gz") {
                inflate(&stored)
            } else {
                stored
            };
            (p, json)
        })
        .collect();
    assert!(out.len() >= 10, "small traces missing: {}", out.len());
    out
}

/// Every small trace, read whole from its file (gzip on the helper thread where it is gzip):
/// the bound holds, and the measured ratio is printed for the record.
#[test]
fn real_traces_parse_within_the_bound() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (path, json) in real_traces() {
        for feed in [Feed::Threaded, Feed::Inline] {
            let opts = Options {
                feed,
                ..Options::default()
            };
            let (parsed, peak, _) = measure(|| parse_file(path, &opts).expect("parse"));
            assert_eq!(parsed.json_bytes as usize, json.len());
            eprintln!(
                "{}: {} bytes of JSON, peak {peak}",
                path.display(),
                json.len()
            );
            assert!(peak <= bound(json.len()), "{}: peak {peak}", path.display());
        }
    }
}

/// Events of the smallest form the model keeps (a kernel with nothing else): the model's worst case
/// per byte of input.
#[test]
fn tiny_kernels_parse_within_the_bound() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ev = r#"{"ph":"X","cat":"kernel","ts":1,"dur":2},"#;
    let mut text = String::from(r#"{"traceEvents":["#);
    for _ in 0..200_000 {
        text.push_str(ev);
    }
    text.push_str(r#"{"ph":"X","cat":"kernel","ts":1,"dur":2}]}"#);
    let ((t, _), peak, _) = measure(|| {
        parse_reader(Path::new("tiny.json"), &mut text.as_bytes(), false, false).expect("parse")
    });
    assert_eq!(t.kernels.len(), 200_001);
    eprintln!("tiny kernels: {} bytes of JSON, peak {peak}", text.len());
    assert!(
        peak <= bound(text.len()),
        "peak {peak} for {} bytes",
        text.len()
    );
}

fn mutate(d: &[u8], kind: u8, a: usize, b: usize, byte: u8) -> Vec<u8> {
    let (a, b) = (a % (d.len() + 1), b % (d.len() + 1));
    let (lo, hi) = (a.min(b), a.max(b));
    match kind % 4 {
        0 => d[..a].to_vec(),
        1 => {
            let mut v = d.to_vec();
            if let Some(x) = v.get_mut(a) {
                *x = byte;
            }
            v
        }
        2 => [&d[..lo], &d[hi..]].concat(),
        // A region repeated: more events, more names, more of everything.
        _ => [&d[..hi], &d[lo..hi], &d[lo..hi], &d[hi..]].concat(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Mutated real traces (cut, flipped, spliced, a region repeated), plain and gzip, with and
    /// without salvage: whether they parse or fail, the bound holds.
    #[test]
    fn mutated_real_traces_parse_within_the_bound(
        which in any::<prop::sample::Index>(),
        kind in any::<u8>(), a in any::<usize>(), b in any::<usize>(), byte in any::<u8>(),
        salvage in any::<bool>(), packed in any::<bool>(),
    ) {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let traces = real_traces();
        let (_, d) = &traces[which.index(traces.len())];
        let m = mutate(d, kind, a, b, byte);
        let input = if packed { gz(&m) } else { m.clone() };
        let (_, peak, _) = measure(|| {
            let mut r: Box<dyn std::io::Read> = if packed {
                Box::new(flate2::read::MultiGzDecoder::new(input.as_slice()))
            } else {
                Box::new(input.as_slice())
            };
            parse_reader(Path::new("m.json"), &mut r, salvage, packed).map(|_| ())
        });
        prop_assert!(peak <= bound(m.len()), "peak {} for {} bytes", peak, m.len());
    }
}
