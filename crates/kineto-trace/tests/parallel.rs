//! One file on every core gives the serial parse's result, byte for byte: over every real trace of
//! the shared corpus, the small traces (generated ones without the corpus) and mutated ones (cut, flipped, spliced), parsed in ranges
//! on 2, 3 and 7 threads with ranges small enough that every file splits, the whole model (its
//! `Debug` dump: every record, name, track, count, warning and the salvage note) equals the serial
//! parse's, and a bad input fails with the same error (message, byte offset, event index).
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use kineto_trace::{Feed, Options, Parsed, Result, parse_raw};
use proptest::prelude::*;
use std::io::Read;
use std::path::{Path, PathBuf};

mod common;
#[path = "property/mutate.rs"]
mod mutate;

use mutate::{cuts, flips, splices};

/// Thread counts and range sizes: each pair splits a file of a few KiB or more into many ranges,
/// with boundaries falling at different places in the events.
const SPLITS: [(usize, usize); 3] = [(2, 1000), (3, 4093), (7, 65_536)];

fn parse(data: &[u8], salvage: bool, threads: usize, range_bytes: usize) -> Result<Parsed> {
    let opts = Options {
        salvage,
        sha256: true,
        feed: Feed::Threaded,
        threads,
        range_bytes,
        stop: None,
        // Every Python frame kept (as the doctor parses): the most records a range folds in; the
        // default keeps a subset of the same events, by the same test in the same function.
        python_frames: true,
    };
    parse_raw(
        Path::new("p.json"),
        std::io::Cursor::new(data.to_vec()),
        &opts,
    )
}

/// Everything a parse returns, as text: the trace's full dump and the file facts, or the error.
fn describe(r: &Result<Parsed>, w: &mut dyn std::fmt::Write) -> std::fmt::Result {
    match r {
        Ok(p) => write!(
            w,
            "ok {:?} {} {} {:?}\n{:?}",
            p.sha256, p.gzip, p.json_bytes, p.trace.header, p.trace
        ),
        Err(e) => write!(w, "error {e}"),
    }
}

fn dump(r: &Result<Parsed>) -> String {
    let mut s = String::new();
    let _ = describe(r, &mut s);
    s
}

/// The sha256 of [`describe`]'s text, written straight into the hasher (a large trace's dump is
/// hundreds of MB).
fn digest(r: &Result<Parsed>) -> [u8; 32] {
    use sha2::Digest;
    struct Hashing(sha2::Sha256);
    impl std::fmt::Write for Hashing {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Hashing(sha2::Sha256::new());
    let _ = describe(r, &mut h);
    h.0.finalize().into()
}

/// The serial parse and every split agree for these stored bytes, with salvage as given.
fn check_with(data: &[u8], what: &str, salvages: &[bool]) {
    for &salvage in salvages {
        let serial = parse(data, salvage, 1, kineto_trace::RANGE_BYTES);
        let want = digest(&serial);
        for (threads, range) in SPLITS {
            let parallel = parse(data, salvage, threads, range);
            if digest(&parallel) != want {
                let (a, b) = first_difference(&dump(&serial), &dump(&parallel));
                panic!(
                    "{what}: {threads} threads, {range}-byte ranges, salvage {salvage} differ from \
                     the serial parse:\n serial: {a}\n parallel: {b}"
                );
            }
        }
    }
}

/// The serial parse and every split agree, salvage off and on.
fn check(data: &[u8], what: &str) {
    check_with(data, what, &[false, true]);
}

/// Where two dumps first differ, with some context.
fn first_difference(a: &str, b: &str) -> (String, String) {
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = at.saturating_sub(80);
    let cut = |s: &str| {
        s.get(from..(at + 160).min(s.len()))
            .unwrap_or("")
            .to_owned()
    };
    (cut(a), cut(b))
}

/// The files of an inventory, as stored.
fn inventory(root: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(root.join("INVENTORY.csv")).expect("inventory");
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .filter(|p| !p.is_empty())
        .map(|p| root.join(p))
        .collect()
}

/// Each file as stored (most are gzip: ranges of the inflated text, the hash on the reader thread),
/// and with `inflated`, its JSON as a plain file too (the hash on its own thread). Whole files read
/// the same with salvage on or off, so only the corpus's cut files need both.
///
/// Files are shared out to one worker per core: the serial parse and the dumps run on one thread, and
/// the corpus check alone took 23 s of a test binary whose other tests were done after 5.
fn check_files(files: &[PathBuf], inflated: bool) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers.min(files.len()) {
            s.spawn(|| {
                while let Some(f) =
                    files.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    check_file(f, inflated);
                }
            });
        }
    });
}

fn check_file(f: &Path, inflated: bool) {
    let stored = std::fs::read(f).expect("read");
    check_with(&stored, &f.display().to_string(), &[false]);
    let mut json = Vec::new();
    if inflated
        && flate2::read::MultiGzDecoder::new(&stored[..])
            .read_to_end(&mut json)
            .is_ok()
    {
        check(&json, &format!("{} (inflated)", f.display()));
    }
}

/// The small traces (`common::small_traces`: real ones of the corpus, or the generated ones without it),
/// as stored and inflated.
#[test]
fn small_traces_parse_the_same_on_every_split() {
    let files = common::small_traces();
    assert!(files.len() >= 10, "only {} small traces", files.len());
    check_files(&files, true);
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn shared_corpus_parses_the_same_on_every_split() {
    let root = common::corpus::required();
    let files = inventory(&root);
    assert!(files.len() >= 40, "only {} corpus traces", files.len());
    check_files(&files, false);
}

/// The real trace the mutations start from, decompressed once.
fn real() -> Vec<u8> {
    static DATA: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DATA.get_or_init(common::mutation_seed).clone()
}

/// Hand-made inputs at the edges of a split: a range guess inside a string, inside a header array
/// of objects, an error and a cut exactly in a range, a comma before `]`, a missing comma, warnings
/// past the hundred kept, names and tracks first seen in a later range, `B`/`E` pairs across ranges.
#[test]
fn edge_cases_parse_the_same_on_every_split() {
    let ev = |i: usize| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k{}", "pid": {}, "tid": "stream {}", "ts": {}, "dur": 2, "args": {{"correlation": {i}, "device": 0}}}}"#,
            i % 7,
            i % 3,
            i % 5,
            i * 10
        )
    };
    let events: Vec<String> = (0..400).map(ev).collect();
    let body = events.join(", ");
    let lookalike = r#"{"ph": "i", "ts": 1, "name": "x}, {\"ph\": \"X\"}, {"}"#;
    let header = r#""deviceProperties": [{"id": 0, "name": "gpu"}, {"id": 1, "name": "gpu"}]"#;
    let odd =
        r#"{"ph": "X", "cat": "kernel", "name": "o", "ts": 5, "dur": 1, "args": {"grid": "x"}}"#;
    let odds = vec![odd; 150].join(",\n  ");
    // B/E pairs nested per thread, whose ends fall in other ranges than their begins; a dangling E.
    let begin_ends: Vec<String> = (0..300)
        .map(|i| {
            let (ph, name) = if (i / 3) % 2 == 0 { ("B", "r") } else { ("E", "") };
            format!(
                r#"{{"ph": "{ph}", "cat": "user_annotation", "name": "{name}{i}", "pid": 1, "tid": {}, "ts": {}}}"#,
                i % 3,
                i * 10
            )
        })
        .collect();
    let begin_ends = begin_ends.join(", ");
    let outer = r#"{"ph": "B", "cat": "kernel", "name": "long", "pid": 0, "tid": 9, "ts": 0}"#;
    let outer_end = r#"{"ph": "E", "pid": 0, "tid": 9, "ts": 99999}, {"ph": "E", "pid": 0, "tid": 9, "ts": 99999}"#;
    let cases = [
        format!(r#"{{"traceEvents": [{body}]}}"#),
        format!(r#"{{{header}, "traceEvents": [{body}, {lookalike}, {body}], "x": 1}}"#),
        format!(r#"{{"traceEvents": [{body}, {{"ph": "X", "ts": 1}}, {body}]}}"#),
        format!(r#"{{"traceEvents": [{body}, {body},]}}"#),
        format!(r#"{{"traceEvents": [{body} {body}]}}"#),
        format!(r#"{{"traceEvents": [{odds}, {body}]}}"#),
        format!(r#"{{"traceEvents": [{body}, {body}"#),
        format!(r#"{{"traceEvents": [{body}, {{"ph": "X", "cat": "kernel", "na"#),
        format!(r#"{{"traceEvents": [{body}], "traceEvents": []}}"#),
        format!(r#"{{"traceEvents": [{body}, 7, {body}]}}"#),
        format!(r#"{{"traceEvents": [{outer}, {body}, {begin_ends}, {body}, {outer_end}]}}"#),
    ];
    for (i, text) in cases.iter().enumerate() {
        check(text.as_bytes(), &format!("case {i}"));
        check(&gzip(text.as_bytes()), &format!("case {i} (gzip)"));
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).expect("gzip to memory");
    e.finish().expect("gzip to memory")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn flipped_bytes(m in flips()) {
        check(&m.apply(&real()), "flipped");
    }

    #[test]
    fn cut_anywhere(m in cuts()) {
        let cut = m.apply(&real());
        check(&cut, "cut");
        check(&gzip(&cut), "cut (gzip)");
    }

    #[test]
    fn spliced(m in splices()) {
        check(&m.apply(&real()), "spliced");
    }
}
