//! The catalogue of bad inputs in `docs/bad-inputs.md`, one test each: every error names the file and
//! the byte offset, nothing panics, and tolerated oddities are read with a warning.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use flate2::Compression;
use flate2::write::GzEncoder;
use kineto_trace::{Error, Feed, Options, Parsed, parse_file};
use std::io::Write;
use std::path::PathBuf;

mod common;

struct Tmp {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn write(name: &str, bytes: &[u8]) -> Tmp {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    Tmp { _dir: dir, path }
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).expect("gz");
    e.finish().expect("gz")
}

/// Parses with both feeds (inline, and read on a helper thread), checks they agree, returns one.
fn parse(t: &Tmp, salvage: bool) -> Result<Parsed, Error> {
    let run = |feed| {
        parse_file(
            &t.path,
            &Options {
                salvage,
                feed,
                ..Options::default()
            },
        )
    };
    let inline = run(Feed::Inline);
    let threaded = run(Feed::Threaded);
    match (&inline, &threaded) {
        (Ok(a), Ok(b)) => assert_eq!(a.trace.counts, b.trace.counts),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("feeds disagree: {:?} vs {:?}", inline.err(), threaded.err()),
    }
    threaded
}

/// Asserts a syntax error at `offset` whose message contains `needle` and names the file.
fn syntax_at(bytes: &[u8], offset: u64, needle: &str) {
    let t = write("bad.json", bytes);
    match parse(&t, false) {
        Err(e @ Error::Syntax { offset: o, .. }) => {
            let msg = e.to_string();
            assert_eq!(o, offset, "{msg}");
            assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
            assert!(msg.contains("bad.json"), "{msg}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

/// Asserts an event error for event `index` starting at `offset`.
fn event_err(bytes: &[u8], index: u64, offset: u64, needle: &str) {
    let t = write("ev.json", bytes);
    match parse(&t, false) {
        Err(
            e @ Error::Event {
                index: i,
                offset: o,
                ..
            },
        ) => {
            let msg = e.to_string();
            assert_eq!((i, o), (index, offset), "{msg}");
            assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
            assert!(msg.contains("ev.json"), "{msg}");
        }
        other => panic!("expected an event error, got {other:?}"),
    }
}

const OK_EVENT: &str =
    r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2}"#;

#[test]
fn not_json() {
    syntax_at(b"hello", 0, "not JSON");
    syntax_at(b"\x00\x01binary", 0, "not JSON");
}

#[test]
fn empty_file() {
    syntax_at(b"", 0, "empty");
    syntax_at(b"  \n", 3, "empty");
}

#[test]
fn wrong_top_level_shape() {
    // A top-level array is a Chrome-trace array (docs/native-formats.md): its events are checked as
    // events, and what is not an event object is named with its byte.
    event_err(b"[{\"ph\": \"X\"}]", 0, 1, "no \"ts\"");
    syntax_at(b"[1, 2]", 1, "expected an event object");
    syntax_at(b"  42", 2, "not JSON");
    syntax_at(b"  42", 2, "Chrome-trace JSON array");
    syntax_at(br#"{"schemaVersion": 1}"#, 0, "no \"traceEvents\"");
    syntax_at(br#"{"traceEvents": {"a": 1}}"#, 16, "'['");
    syntax_at(br#"{"traceEvents": [1, 2]}"#, 17, "event object");
}

#[test]
fn data_after_the_object() {
    syntax_at(br#"{"traceEvents": []} x"#, 20, "after the end");
}

#[test]
fn broken_json_inside_an_event() {
    // Missing ':' after "cat": the offset is the byte found instead.
    syntax_at(
        br#"{"traceEvents": [{"ph": "X", "cat" "kernel"}]}"#,
        35,
        "':'",
    );
    // A bad escape in a skipped args value is still caught.
    syntax_at(
        br#"{"traceEvents": [{"ph": "i", "ts": 1, "args": {"a": "\q"}}]}"#,
        53,
        "escape",
    );
    // Garbage where a value belongs.
    syntax_at(
        br#"{"traceEvents": [{"ph": "i", "ts": 1, "args": {"a": @}}]}"#,
        52,
        "expected a value",
    );
}

#[test]
fn nan_and_infinity() {
    syntax_at(
        br#"{"traceEvents": [{"ph": "X", "ts": NaN, "dur": 1}]}"#,
        35,
        "NaN",
    );
    syntax_at(
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "dur": Infinity}]}"#,
        45,
        "Infinity",
    );
    syntax_at(
        br#"{"traceEvents": [{"ph": "i", "ts": 1, "args": {"x": -Infinity}}]}"#,
        52,
        "Infinity",
    );
}

#[test]
fn missing_ts() {
    let text =
        format!(r#"{{"traceEvents": [{OK_EVENT}, {{"ph": "X", "cat": "kernel", "dur": 1}}]}}"#);
    let second = text.rfind("{\"ph\"").expect("second event") as u64;
    event_err(text.as_bytes(), 1, second, "no \"ts\"");
}

#[test]
fn negative_dur() {
    event_err(
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "dur": -0.5}]}"#,
        0,
        17,
        "negative \"dur\"",
    );
}

#[test]
fn missing_dur_ph_or_number_types() {
    event_err(
        br#"{"traceEvents": [{"ph": "X", "ts": 1}]}"#,
        0,
        17,
        "no \"dur\"",
    );
    event_err(br#"{"traceEvents": [{"ts": 1}]}"#, 0, 17, "no \"ph\"");
    event_err(
        br#"{"traceEvents": [{"ph": "X", "ts": "1", "dur": 1}]}"#,
        0,
        35,
        "not a number",
    );
    event_err(
        br#"{"traceEvents": [{"ph": "X", "ts": 1e300, "dur": 1}]}"#,
        0,
        17,
        "out of range",
    );
}

#[test]
fn nesting_too_deep() {
    let deep = format!(
        r#"{{"traceEvents": [{{"ph": "i", "ts": 1, "args": {}{}}}]}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let t = write("deep.json", deep.as_bytes());
    let e = parse(&t, false).expect_err("too deep");
    assert!(e.to_string().contains("nesting deeper than 256"), "{e}");
}

/// The mutation seed (a real trace, or a generated one without the corpus) rewritten one event per line, so the byte where each event ends is known without the
/// parser: `lines[i]` ends at a known offset.
fn one_event_per_line() -> (String, Vec<usize>) {
    let doc: serde_json::Value = serde_json::from_slice(&common::mutation_seed()).expect("json");
    let events = doc["traceEvents"].as_array().expect("events");
    let mut out = String::from("{\"schemaVersion\": 1, \"traceEvents\": [\n");
    let mut ends = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&serde_json::to_string(e).expect("event"));
        ends.push(out.len());
    }
    out.push_str("\n]}\n");
    (out, ends)
}

#[test]
fn truncated_file_fails_and_salvage_keeps_complete_events() {
    let (text, ends) = one_event_per_line();
    // serde_json's count of the seed's events (92 in the real trace, more in the generated one).
    let n = ends.len();
    assert!(n > 11, "{n} events");
    let whole = write("whole.json", text.as_bytes());
    assert_eq!(
        parse(&whole, false).expect("whole").trace.counts.events,
        n as u64
    );
    // Cut inside event k (k = 0-based): k complete events precede the cut.
    for k in [0usize, 1, n / 2, n - 1] {
        let start = if k == 0 {
            text.find("[\n").expect("[") + 2
        } else {
            ends[k - 1] + 2
        };
        for cut in [start + 1, (start + ends[k]) / 2, ends[k] - 1] {
            let t = write("cut.json", &text.as_bytes()[..cut]);
            match parse(&t, false) {
                Err(e @ Error::Truncated { offset, events, .. }) => {
                    assert_eq!(events, k as u64, "{e}");
                    assert_eq!(offset, start as u64, "{e}");
                    assert!(e.to_string().contains("cut.json"));
                }
                other => panic!("cut at {cut}: expected Truncated, got {other:?}"),
            }
            let s = parse(&t, true).expect("salvage");
            assert_eq!(s.trace.counts.events, k as u64);
            let sv = s.trace.salvaged.expect("marked salvaged");
            assert_eq!(sv.cut_offset, start as u64);
        }
    }
    // Cut right after a complete event (before its comma): that event is kept.
    let t = write("cut.json", &text.as_bytes()[..ends[10]]);
    assert_eq!(parse(&t, true).expect("salvage").trace.counts.events, 11);
}

#[test]
fn truncated_gzip_stream_is_salvageable() {
    let (text, _) = one_event_per_line();
    let full = gz(text.as_bytes());
    let t = write("cut.json.gz", &full[..full.len() * 2 / 3]);
    match parse(&t, false) {
        Err(e @ Error::Truncated { .. }) => assert!(e.to_string().contains("cut.json.gz")),
        other => panic!("expected Truncated, got {other:?}"),
    }
    let s = parse(&t, true).expect("salvage");
    assert!(s.trace.salvaged.is_some());
    assert!(s.trace.counts.events > 0 && s.trace.counts.events < 92);
}

/// A gzip member ends with an 8-byte trailer (CRC-32 and length, RFC 1952 §2.3): a stream that stops
/// inside it, or before it, is cut short even when the JSON inside is complete, and its CRC was never
/// checked — a changed digit would otherwise pass unnoticed. Small files (read in one refill) and large
/// ones, with either feed.
#[test]
fn a_gzip_without_its_whole_trailer_is_truncated() {
    let small = one_event_per_line().0;
    // Large enough that the decoder's data arrives over several reads before the missing trailer.
    let large = {
        let mut s = String::from("{\"traceEvents\": [\n");
        for i in 0..40_000 {
            s.push_str(&format!(
                "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\", \"ts\": {i}, \"dur\": 1, \"pid\": 0, \"tid\": 7}},\n",
                i % 97
            ));
        }
        s.push_str("{\"ph\": \"i\", \"name\": \"end\", \"ts\": 0, \"pid\": 0, \"tid\": 0}]}\n");
        s
    };
    for text in [small, large] {
        let full = gz(text.as_bytes());
        for missing in [8, 5, 1] {
            let t = write("notrailer.json.gz", &full[..full.len() - missing]);
            match parse(&t, false) {
                Err(e @ Error::Truncated { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains("notrailer.json.gz"), "{msg}");
                }
                other => {
                    panic!("{missing} trailer bytes missing: expected Truncated, got {other:?}")
                }
            }
            // Salvage keeps every event (the JSON was whole) and says the file was cut.
            let s = parse(&t, true).expect("salvage");
            assert!(s.trace.salvaged.is_some(), "{missing} bytes missing");
        }
        // The whole file is read as complete.
        let t = write("whole.json.gz", &full);
        assert!(parse(&t, false).expect("whole").trace.salvaged.is_none());
    }
}

#[test]
fn corrupt_gzip_is_an_error_not_a_truncation() {
    let (text, _) = one_event_per_line();
    let mut bytes = gz(text.as_bytes());
    let n = bytes.len();
    for b in &mut bytes[n / 3..n / 3 + 16] {
        *b ^= 0x5a;
    }
    let t = write("corrupt.json.gz", &bytes);
    let e = parse(&t, true).expect_err("corrupt");
    let msg = e.to_string();
    assert!(msg.contains("corrupt.json.gz"), "{msg}");
    assert!(
        matches!(e, Error::Gzip { .. } | Error::Syntax { .. }),
        "{msg}"
    );
}

#[test]
fn missing_file_and_empty_directory() {
    let e = parse_file(&PathBuf::from("/nonexistent/x.json"), &Options::default())
        .expect_err("missing");
    assert!(e.to_string().contains("/nonexistent/x.json"));
    let dir = tempfile::tempdir().expect("tempdir");
    let e = kineto_trace::expand_paths(&[dir.path().to_path_buf()]).expect_err("empty dir");
    assert!(matches!(e, Error::EmptyDir { .. }));
}

#[test]
fn tolerated_oddities_are_read_with_warnings() {
    // A missing comma between events, a comma before ']', a BOM, control characters in a name,
    // "inf" strings, an integer above u64 in args, keys after traceEvents, string pids/tids.
    let text = "\u{feff}{\"schemaVersion\": 1, \"traceEvents\": [\n\
        {\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"a\u{1}b\\tc\", \"pid\": 0, \"tid\": \"stream 7\", \"ts\": 1610366662254562, \"dur\": 397, \"args\": {\"blocks per SM\": \"inf\", \"correlation\": 5, \"big\": 123456789012345678901234567890, \"grid\": [2, 4, 64], \"block\": [8, 32, 1]}}\n\
        {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", \"ts\": 1610366662254999},\n\
        ], \"traceName\": \"t.json\", \"baseTimeNanoseconds\": 1700000000000000000}";
    let t = write("odd.json", text.as_bytes());
    let p = parse(&t, false).expect("tolerated");
    let tr = &p.trace;
    assert_eq!(tr.counts.events, 2);
    assert_eq!(tr.warnings_total, 2, "{:?}", tr.warnings);
    assert!(tr.warnings[0].message.contains("no comma"));
    assert!(tr.warnings[1].message.contains("comma before"));
    let k = tr.kernels.row(0);
    assert_eq!(tr.name(k.name), "a\u{1}b\tc");
    assert_eq!(k.ts_ns, 1_610_366_662_254_562_000);
    assert_eq!(k.dur_ns, 397_000);
    assert_eq!(tr.detail(&k).stream, Some(7));
    assert_eq!(tr.detail(&k).device, Some(0));
    assert_eq!(tr.detail(&k).grid, [2, 4, 64]);
    assert_eq!(k.correlation.map(|c| c.get()), Some(5));
    assert_eq!(tr.header.trace_name.as_deref(), Some("t.json"));
    assert_eq!(tr.header.base_time_ns, Some(1_700_000_000_000_000_000));
    // Spanning both events: 1610366662254999 − 1610366662254562 µs.
    assert_eq!(
        tr.time_bounds,
        Some((1_610_366_662_254_562_000, 1_610_366_662_254_999_000))
    );
}

#[test]
fn an_event_larger_than_the_read_window_is_read_whole() {
    // A 10 MB name forces the window to grow past its initial 4 MiB.
    let name = "n".repeat(10 << 20);
    let text = format!(
        r#"{{"traceEvents": [{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": 0, "dur": 1}}, {OK_EVENT}]}}"#
    );
    for bytes in [text.clone().into_bytes(), gz(text.as_bytes())] {
        let t = write("big.json", &bytes);
        let p = parse(&t, false).expect("big");
        assert_eq!(p.trace.cpu_ops.len(), 1);
        assert_eq!(
            p.trace
                .name(p.trace.cpu_ops.first().expect("a cpu op").name)
                .len(),
            10 << 20
        );
        assert_eq!(p.trace.kernels.len(), 1);
    }
}

#[test]
fn args_before_cat_and_odd_fields() {
    // `args` ahead of `cat` is read once `cat` is known; a fractional correlation and a hex stream are
    // treated as absent, with one warning for the event naming a field.
    let text = r#"{"traceEvents": [
        {"args": {"correlation": 9, "grid": [1, 2, 3], "External id": 4}, "ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"correlation": 1.5, "stream": "0x0"}}
    ]}"#;
    let t = write("late.json", text.as_bytes());
    let p = parse(&t, false).expect("parse");
    let k = &p.trace.kernels;
    assert_eq!(k.row(0).correlation.map(|c| c.get()), Some(9));
    assert_eq!(p.trace.detail(&k.row(0)).grid, [1, 2, 3]);
    assert_eq!(k.row(0).external_id.map(|c| c.get()), Some(4));
    assert_eq!(k.row(1).correlation, None);
    assert_eq!(
        p.trace.detail(&k.row(1)).stream,
        Some(7),
        "falls back to the tid"
    );
    assert_eq!(p.trace.warnings_total, 1, "{:?}", p.trace.warnings);
    assert!(p.trace.warnings[0].message.contains("args."));
}

/// Bytes `head`, then `n` spaces, then `tail`, generated as read (nothing of that size is stored).
struct Spaced {
    head: Vec<u8>,
    n: u64,
    tail: Vec<u8>,
    at: u64,
}

impl std::io::Read for Spaced {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (h, n) = (self.head.len() as u64, self.n);
        let (part, from): (&[u8], u64) = if self.at < h {
            (&self.head, self.at)
        } else if self.at < h + n {
            // Spaces: a fill, so that a gigabyte costs a few memsets.
            let k = (buf.len() as u64).min(h + n - self.at) as usize;
            buf[..k].fill(b' ');
            self.at += k as u64;
            return Ok(k);
        } else {
            (&self.tail, self.at - h - n)
        };
        let rest = part.get(from as usize..).unwrap_or_default();
        let k = buf.len().min(rest.len());
        buf[..k].copy_from_slice(&rest[..k]);
        self.at += k as u64;
        Ok(k)
    }
}

/// The same rule at full size (the parser's own unit test checks it with a small window bound on
/// every run): a gigabyte through the parser takes 3.5 s optimised but 35 s in a debug build (both on
/// a busy 2-core machine), so this
/// one runs with `cargo test --release -p kineto-trace --test bad_input -- --ignored`.
#[test]
#[ignore = "a gigabyte of input: run in release with --ignored"]
fn more_than_1_gib_of_whitespace_between_events_is_read() {
    let ev = r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}"#;
    let n = (1u64 << 30) + 4096;
    let mut r = Spaced {
        head: format!(r#"{{"traceEvents": [{ev},"#).into_bytes(),
        n,
        tail: format!("{ev}]}}").into_bytes(),
        at: 0,
    };
    let total = r.head.len() as u64 + n + r.tail.len() as u64;
    let (t, read) =
        kineto_trace::parse_reader(std::path::Path::new("ws.json"), &mut r, false, false)
            .expect("whitespace is not a value");
    assert_eq!((t.kernels.len(), read), (2, total));
}

#[test]
fn a_second_trace_events_key_is_an_error_naming_both() {
    let ev = r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}"#;
    // Offsets by hand: the first key's quote is byte 1; the second follows `{"traceEvents": [ev], `.
    let text = format!(r#"{{"traceEvents": [{ev}], "traceEvents": [{ev}, {ev}]}}"#);
    let second = 1 + r#""traceEvents": ["#.len() + ev.len() + "], ".len();
    assert_eq!(&text[second..second + 13], "\"traceEvents\"");
    syntax_at(text.as_bytes(), second as u64, "the first is at byte 1");
    // Also when the two are apart, with other keys between.
    let text = format!(r#"{{"traceEvents": [], "traceName": "t", "traceEvents": [{ev}]}}"#);
    let second = r#"{"traceEvents": [], "traceName": "t", "#.len();
    syntax_at(text.as_bytes(), second as u64, "the first is at byte 1");
}

#[test]
fn a_trace_named_entry_that_is_not_a_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (text, _) = one_event_per_line();
    std::fs::write(d.join("rank0.json.gz"), gz(text.as_bytes())).expect("write");
    let expand = || kineto_trace::expand_paths(&[d.to_path_buf()]);
    assert_eq!(expand().expect("one rank").len(), 1);
    // A symlink to a file is a rank like any other.
    std::os::unix::fs::symlink(d.join("rank0.json.gz"), d.join("rank1.json.gz")).expect("ln");
    assert_eq!(expand().expect("two ranks").len(), 2);
    // Dangling: rank 2's file was moved away.
    std::os::unix::fs::symlink(d.join("gone.json.gz"), d.join("rank2.json.gz")).expect("ln");
    let e = expand().expect_err("dangling");
    let msg = e.to_string();
    assert!(matches!(e, Error::NotAFile { .. }), "{msg}");
    assert!(
        msg.contains("rank2.json.gz") && msg.contains("does not exist"),
        "{msg}"
    );
    std::fs::remove_file(d.join("rank2.json.gz")).expect("rm");
    // Looping: a link to itself.
    std::os::unix::fs::symlink(d.join("rank3.json.gz"), d.join("rank3.json.gz")).expect("ln");
    let msg = expand().expect_err("loop").to_string();
    assert!(
        msg.contains("rank3.json.gz") && msg.contains("cannot be followed"),
        "{msg}"
    );
    std::fs::remove_file(d.join("rank3.json.gz")).expect("rm");
    // A directory named like a trace.
    std::fs::create_dir(d.join("rank4.json")).expect("mkdir");
    let msg = expand().expect_err("dir").to_string();
    assert!(
        msg.contains("rank4.json") && msg.contains("a directory"),
        "{msg}"
    );
}

#[test]
fn a_salvaged_gzip_gets_the_sha256_of_its_bytes_with_either_feed() {
    use sha2::Digest;
    let (text, _) = one_event_per_line();
    let full = gz(text.as_bytes());
    let cut = &full[..full.len() * 2 / 3];
    let t = write("cut.json.gz", cut);
    let want = kineto_trace::hex(&sha2::Sha256::digest(cut));
    for feed in [Feed::Threaded, Feed::Inline] {
        let opts = Options {
            salvage: true,
            feed,
            ..Options::default()
        };
        let p = parse_file(&t.path, &opts).expect("salvage");
        assert!(p.trace.salvaged.is_some());
        assert_eq!(p.sha256.as_deref(), Some(want.as_str()), "{feed:?}");
    }
}

/// Times the model cannot hold so that every difference and union fits in i64 ns (|t| < 2^62 ns,
/// ±146 years of the trace's zero) are errors; sums over many events are exact past i64.
#[test]
fn times_and_sums_never_overflow() {
    // 5e15 µs = 5e18 ns: inside i64 (9.2e18) but past 2^62 (4.6e18), where a span from a negative
    // start would overflow.
    event_err(
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 5000000000000000, "dur": 1}]}"#,
        0,
        17,
        "out of range",
    );
    // Each inside the bound, but the end is not.
    event_err(
        br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 4000000000000000, "dur": 1000000000000000}]}"#,
        0,
        17,
        "ends past",
    );
    // The widest span that is allowed: from -(2^62 - 1) ns to 2^62 - 1 ns, written in µs with three
    // decimals (4611686018427387.903 µs = 2^62 - 1 ns). Two kernels of 4.6e18 ns each: their sum
    // (9.2e18 ns) is past i64::MAX.
    let big = "4611686018427387.903";
    let text = format!(
        r#"{{"traceEvents": [
        {{"ph": "X", "cat": "kernel", "name": "a", "ts": -{big}, "dur": {big}, "args": {{"stream": 7}}}},
        {{"ph": "X", "cat": "kernel", "name": "b", "ts": 0, "dur": {big}, "args": {{"stream": 7}}}},
        {{"ph": "X", "cat": "gpu_memcpy", "name": "c", "ts": 0, "dur": 1, "args": {{"bytes": 18446744073709551615}}}},
        {{"ph": "X", "cat": "gpu_memcpy", "name": "c", "ts": 0, "dur": 1, "args": {{"bytes": 18446744073709551615}}}}
        ]}}"#
    );
    let t = write("big.json", text.as_bytes());
    let p = parse(&t, false).expect("inside the bound");
    let limit: i64 = (1 << 62) - 1;
    assert_eq!(p.trace.time_bounds, Some((-limit, limit)));
    let s = kineto_trace::summary::Summary::of(&p);
    let span_ns = 2.0 * limit as f64;
    assert_eq!(s.span_us, span_ns / 1000.0);
    assert_eq!(s.kernels.sum_us, span_ns / 1000.0);
    assert_eq!(s.kernels.union_us, span_ns / 1000.0);
    // Two copies of u64::MAX bytes: 2 × 18446744073709551615.
    assert_eq!(s.memcpy.bytes, 2 * u128::from(u64::MAX));
}
