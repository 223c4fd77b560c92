//! The parser's general promise on any bytes, as one function that both the fuzz target
//! (`fuzz/fuzz_targets/parse.rs`) and `tests/mutations.rs` run, so `cargo test` checks on mutated real
//! traces what the fuzzer checks on everything:
//!
//! - no panic, no hang, in the parser or in the analysis of whatever it accepts;
//! - an accepted trace keeps its invariants (non-negative durations, times within ±`MAX_ABS_NS`,
//!   every byte counted); every error's offset lies inside the input;
//! - the same bytes read as plain JSON, as gzip, inline or on the helper thread, give the same result
//!   (the same counts, or the same error), and the sha256 is of the bytes as stored.
#![allow(dead_code)] // Each includer uses its own subset.
#![allow(clippy::expect_used)] // A failed check is a finding: it should fail loudly.

use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::native::Sniffed;
use kineto_trace::step::StepPattern;
use kineto_trace::summary::Summary;
use kineto_trace::{Error, Feed, MAX_ABS_NS, Options, Trace, parse_raw, parse_reader};
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

/// gzip at the fastest level: the property is about reading it, not about ratio.
pub fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).expect("gzip to memory");
    e.finish().expect("gzip to memory")
}

/// Parses `data` every way the library reads input and checks that they agree. Salvage on and off
/// each meet every reader once (plain both ways; gzip inline without, on the helper thread with; the
/// raw bytes on both feeds with), which keeps a case cheap enough for `cargo test`.
pub fn check(data: &[u8]) {
    let packed = gz(data);
    // Bytes another format's reader takes (a top-level array, rocprofv3's first key, a CSV header):
    // the baseline is the same dispatch on the plain bytes, not the Kineto parser.
    let native = !matches!(
        kineto_trace::native::sniff(data),
        Sniffed::KinetoObject | Sniffed::Unknown
    );
    for salvage in [false, true] {
        let plain = if native {
            let opts = Options {
                salvage,
                feed: Feed::Inline,
                sha256: false,
                ..Options::default()
            };
            parse_raw(
                Path::new("m.json"),
                std::io::Cursor::new(data.to_vec()),
                &opts,
            )
            .map(|p| (p.trace, p.json_bytes))
        } else {
            parse_reader(Path::new("m.json"), &mut &data[..], salvage, false)
        };
        match &plain {
            Ok((t, n)) => {
                assert_eq!(*n, data.len() as u64);
                check_trace(t);
                if salvage {
                    analyse(t);
                }
            }
            Err(e) => check_error(e, data.len() as u64),
        }
        let opts = |feed| Options {
            salvage,
            feed,
            sha256: true,
            ..Options::default()
        };
        // The same JSON, gzip-compressed: the same outcome, and the hash of the gzip bytes.
        let feed = if salvage {
            Feed::Threaded
        } else {
            Feed::Inline
        };
        let packed_read = parse_raw(
            Path::new("m.json"),
            std::io::Cursor::new(packed.clone()),
            &opts(feed),
        );
        match (&plain, packed_read) {
            (Ok((a, _)), Ok(b)) => {
                assert_eq!(a.counts, b.trace.counts, "{feed:?}");
                assert_eq!(a.salvaged, b.trace.salvaged, "{feed:?}");
                assert!(b.gzip);
                assert_eq!(b.json_bytes, data.len() as u64);
                assert_eq!(b.sha256.as_deref(), Some(sha256(&packed).as_str()));
            }
            (Err(a), Err(b)) => assert_eq!(kind(a), kind(&b), "{a} / {b}"),
            (a, b) => panic!(
                "plain and gzip ({feed:?}) disagree: {:?} / {:?}",
                a.as_ref().err(),
                b.err()
            ),
        }
        if !salvage {
            continue;
        }
        // The bytes as they are (a fuzzer may write gzip itself): both feeds agree.
        let raw = |feed| {
            parse_raw(
                Path::new("m.json"),
                std::io::Cursor::new(data.to_vec()),
                &opts(feed),
            )
        };
        match (raw(Feed::Inline), raw(Feed::Threaded)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.trace.counts, b.trace.counts);
                assert_eq!(a.sha256, b.sha256);
                assert_eq!(a.sha256.as_deref(), Some(sha256(data).as_str()));
                check_trace(&b.trace);
                let _ = Summary::of(&b);
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("feeds disagree: {:?} / {:?}", a.err(), b.err()),
        }
    }
}

fn kind(e: &Error) -> (&'static str, u64) {
    match e {
        Error::Syntax { offset, .. } => ("syntax", *offset),
        Error::Event { offset, .. } => ("event", *offset),
        Error::Truncated { offset, .. } => ("truncated", *offset),
        _ => ("other", 0),
    }
}

fn check_error(e: &Error, len: u64) {
    match e {
        Error::Syntax { offset, .. }
        | Error::Event { offset, .. }
        | Error::Truncated { offset, .. } => {
            assert!(*offset <= len, "{e}")
        }
        // The native readers' errors name the file and the place (row, record, byte) in words.
        Error::Native { .. } | Error::Format { .. } => {
            assert!(e.to_string().starts_with("m.json: "), "{e}")
        }
        other => panic!("unexpected error kind for bytes in memory: {other}"),
    }
}

fn check_trace(t: &Trace) {
    let ops = t.kernels.iter().chain(&t.memcpys).chain(&t.memsets);
    for k in ops {
        assert!(k.dur_ns >= 0);
        assert!(k.ts_ns.abs() <= MAX_ABS_NS && k.end_ns() <= MAX_ABS_NS);
    }
    if let Some((lo, hi)) = t.time_bounds {
        assert!(lo <= hi && lo >= -MAX_ABS_NS && hi <= MAX_ABS_NS);
    }
}

/// Everything the CLI computes from a trace: links, steps (the profiler's and a pattern that
/// matches every annotation), kernel families, budgets, the summary.
fn analyse(t: &Trace) {
    static RULES: OnceLock<Rules> = OnceLock::new();
    static ANY: OnceLock<StepPattern> = OnceLock::new();
    let rules = RULES.get_or_init(Rules::builtin);
    let any = ANY.get_or_init(|| StepPattern::new(".").expect("pattern"));
    for pattern in [&StepPattern::profiler_step(), any] {
        let a = Analysis::new(t, pattern, rules);
        for b in a.budgets(t, rules) {
            // The sweep's invariant, which holds exactly for every span a parsed trace can have.
            let excl: i128 = b.buckets.values().map(|v| i128::from(v.exclusive_ns)).sum();
            assert_eq!(excl + i128::from(b.idle_ns), i128::from(b.span_ns));
        }
        let _ = a.kernel_steps(t);
        let _ = a.unmatched_names(t);
    }
}

/// Lowercase hex sha256, computed here independently of the library's feeds.
pub fn sha256(data: &[u8]) -> String {
    use sha2::Digest;
    kineto_trace::hex(&sha2::Sha256::digest(data))
}
