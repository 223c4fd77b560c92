//! `cargo xtask model-columnar FILE...`: what the model of each file holds as rows today, against what
//! the same rows would take stored by column, delta-encoded. An estimate for a decision the memory
//! bound of `cargo xtask bench-native` asks for (docs/parse-costs.md, "What a columnar model would
//! hold"): where the rows alone are over a quarter of the file, no reader can meet the bound, and only a
//! smaller model could.
//!
//! The encoding (ESTIMATED bytes: no model stores this today): each kind's rows grouped by track, in
//! start order within a track; per row, LEB128 varints of the start less the row before's (the first
//! row's less 0), the duration, the name as a number dense in first-seen order, and the external id and
//! correlation less the row before's; a GPU op adds its detail as a dense number, an API call its `cbid`
//! and whether it is a runtime or a driver call (one number), a flow its id less the one before's and its
//! phase. Every signed number is zigzag-encoded, durations and sorted start deltas too (they may be
//! negative in a model that takes a file's values as written): a bit a value more than a plain varint at
//! most. Not counted: a GPU op's process place in the files of several processes (a byte a row where
//! they have fewer than 128), where each track's rows begin (a few bytes a track), and the names and
//! tracks themselves (the model holds those already, once each). The rows column is `len × size_of` of
//! each row type, the least the model holds now (no `Vec` slack); for spans, which the model keeps
//! encoded ([`Rows`]), the bytes of their encoding (`Rows::encoded_bytes`).
//!
//! What it is not: a benchmark (nothing is timed) or a model (nothing reads the encoding back).

use kineto_trace::native::detect::{put_varint, zigzag};
use kineto_trace::{Api, Detail, Flow, GemmRows, GpuOp, Rows, Span, Sym, Track};
use std::collections::HashMap;
use std::hash::Hash;
use std::path::Path;

/// Numbers dense in first-seen order (names, details).
struct Dense<K>(HashMap<K, u64>);

impl<K: Hash + Eq> Dense<K> {
    fn new() -> Self {
        Dense(HashMap::new())
    }

    fn of(&mut self, k: K) -> u64 {
        let n = self.0.len() as u64;
        *self.0.entry(k).or_insert(n)
    }
}

/// One row as the encoding sees it: its track, start, duration, name and up to four more numbers, each
/// stored as the difference from the row before's on the same track (`deltas`) or as is (`plain`).
/// `None`: a column this kind of row does not have.
struct Row<T = Track> {
    track: T,
    ts: i64,
    dur: Option<i64>,
    name: Option<u64>,
    deltas: [Option<i64>; 2],
    plain: [Option<u64>; 2],
}

/// The encoded bytes of `rows`: per track, in start order.
fn encoded<T: Hash + Eq + Copy>(rows: Vec<Row<T>>) -> u64 {
    let mut by_track: HashMap<T, Vec<Row<T>>> = HashMap::new();
    for r in rows {
        by_track.entry(r.track).or_default().push(r);
    }
    let mut bytes = Vec::new();
    for (_, mut rows) in by_track {
        rows.sort_by_key(|r| r.ts);
        let (mut ts, mut deltas) = (0i64, [0i64; 2]);
        for r in rows {
            put_varint(&mut bytes, zigzag(r.ts.wrapping_sub(ts)));
            if let Some(dur) = r.dur {
                put_varint(&mut bytes, zigzag(dur));
            }
            if let Some(name) = r.name {
                put_varint(&mut bytes, name);
            }
            for (d, before) in r.deltas.iter().zip(deltas.iter_mut()) {
                if let Some(d) = *d {
                    put_varint(&mut bytes, zigzag(d.wrapping_sub(*before)));
                    *before = d;
                }
            }
            for p in r.plain.into_iter().flatten() {
                put_varint(&mut bytes, p);
            }
            ts = r.ts;
        }
    }
    bytes.len() as u64
}

fn id(v: Option<std::num::NonZeroU64>) -> i64 {
    v.map_or(0, |v| v.get() as i64)
}

/// One kind of row: its name, count, bytes as rows and bytes encoded.
struct Kind {
    what: &'static str,
    rows: usize,
    as_rows: u64,
    columnar: u64,
}

fn kinds(trace: &kineto_trace::Trace) -> Vec<Kind> {
    use std::mem::size_of;
    let mut names: Dense<Sym> = Dense::new();
    let mut details: Dense<Detail> = Dense::new();
    let mut out = Vec::new();
    let mut push = |what, rows: usize, as_rows: usize, columnar| {
        out.push(Kind {
            what,
            rows,
            as_rows: as_rows as u64,
            columnar,
        });
    };
    let spans: [(&str, &Rows<Span>); 4] = [
        ("cpu ops", &trace.cpu_ops),
        ("user annotations", &trace.user_annotations),
        ("GPU annotations", &trace.gpu_user_annotations),
        ("python functions", &trace.python_functions),
    ];
    for (what, spans) in spans {
        let rows = spans
            .iter()
            .map(|s| Row {
                track: s.track,
                ts: s.ts_ns,
                dur: Some(s.dur_ns),
                name: Some(names.of(s.name)),
                deltas: [Some(id(s.external_id)), None],
                plain: [None, None],
            })
            .collect();
        push(what, spans.len(), spans.encoded_bytes(), encoded(rows));
    }
    let rows = trace
        .launches
        .iter()
        .map(|l| Row {
            track: l.track,
            ts: l.ts_ns,
            dur: Some(l.dur_ns),
            name: Some(names.of(l.name)),
            deltas: [Some(id(l.external_id)), Some(id(l.correlation))],
            plain: [
                Some(l.cbid.map_or(0, |c| u64::from(c) + 1) << 1 | u64::from(l.api == Api::Driver)),
                None,
            ],
        })
        .collect();
    push(
        "API calls",
        trace.launches.len(),
        trace.launches.encoded_bytes(),
        encoded(rows),
    );
    let ops: [(&str, &Rows<GpuOp>); 3] = [
        ("kernels", &trace.kernels),
        ("copies", &trace.memcpys),
        ("fills", &trace.memsets),
    ];
    for (what, ops) in ops {
        let rows = ops
            .iter()
            .map(|o| Row {
                track: o.track,
                ts: o.ts_ns,
                dur: Some(o.dur_ns),
                name: Some(names.of(o.name)),
                deltas: [Some(id(o.external_id)), Some(id(o.correlation))],
                plain: [Some(details.of(o.detail)), None],
            })
            .collect();
        push(what, ops.len(), ops.encoded_bytes(), encoded(rows));
    }
    let flows = trace
        .flows
        .iter()
        .map(|f: &Flow| Row {
            track: f.track,
            ts: f.ts_ns,
            dur: None,
            name: None,
            deltas: [Some(f.id as i64), None],
            plain: [
                Some(u64::from(f.phase == kineto_trace::FlowPhase::Finish)),
                None,
            ],
        })
        .collect();
    push(
        "flows",
        trace.flows.len(),
        trace.flows.len() * size_of::<Flow>(),
        encoded(flows),
    );
    let gemm = trace.gemm_rows.len();
    // Kept as they are: two small numbers a GEMM op.
    push(
        "GEMM rows",
        gemm,
        gemm * size_of::<GemmRows>(),
        (gemm * size_of::<GemmRows>()) as u64,
    );
    out
}

/// The task: each file read as `kineto` reads it, its rows counted and encoded.
pub fn run(args: &[String]) -> Result<(), String> {
    if args.is_empty() {
        return Err("usage: cargo xtask model-columnar FILE...".into());
    }
    let session = crate::kineto_session(true)?;
    for file in args {
        let path = Path::new(file);
        let size = std::fs::metadata(path)
            .map_err(|e| format!("{file}: {e}"))?
            .len() as f64;
        let parsed = session.read_one(path).map_err(|e| e.to_string())?;
        println!(
            "\n{file} ({:.1} MB): rows / file, columnar / file (ESTIMATED, module doc)",
            size / 1e6
        );
        let (mut rows, mut columnar) = (0, 0);
        for k in kinds(&parsed.trace).into_iter().filter(|k| k.rows > 0) {
            println!(
                "  {:<18} {:>9} rows  {:.3} as rows  {:.3} columnar  ({:.2} bytes a row)",
                k.what,
                k.rows,
                k.as_rows as f64 / size,
                k.columnar as f64 / size,
                k.columnar as f64 / k.rows as f64
            );
            rows += k.as_rows;
            columnar += k.columnar;
        }
        println!(
            "  {:<18} {:>9}       {:.3} as rows  {:.3} columnar",
            "all",
            "",
            rows as f64 / size,
            columnar as f64 / size
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(track: u8, ts: i64, dur: i64, name: u64, external: i64) -> Row<u8> {
        Row {
            track,
            ts,
            dur: Some(dur),
            name: Some(name),
            deltas: [Some(external), None],
            plain: [None, None],
        }
    }

    /// Three rows, out of start order, two tracks interleaved.
    fn rows() -> Vec<Row<u8>> {
        vec![
            row(1, 5000, 200, 1, 300),
            row(2, 4990, 0, 0, 7),
            row(1, 10, 5, 0, 10),
        ]
    }

    #[test]
    fn rows_are_encoded_per_track_in_start_order() {
        // Track 1 in start order: (10, 5, name 0, id 10), then (5000, 200, name 1, id 300).
        //   first:  zigzag(10) = 20 (1 byte), zigzag(5) = 10 (1), 0 (1), zigzag(10) = 20 (1): 4
        //   second: zigzag(4990) = 9980 (2), zigzag(200) = 400 (2), 1 (1), zigzag(290) = 580 (2): 7
        // Track 2: (4990, 0, name 0, id 7): 9980 (2), 0 (1), 0 (1), zigzag(7) = 14 (1): 5.
        // 4 + 7 + 5 = 16. (Unsorted it would be 18, one track 15, both 17.)
        assert_eq!(encoded(rows()), 16);
        // A column a kind of row does not have (None) costs nothing: the ids' 1 + 2 + 1 bytes less.
        let without_ids = rows()
            .into_iter()
            .map(|r| Row {
                deltas: [None, None],
                ..r
            })
            .collect();
        assert_eq!(encoded(without_ids), 12);
    }

    #[test]
    fn each_kind_of_row_is_encoded_with_its_columns() {
        let json = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
   "args": {"External id": 5}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1.5,
   "dur": 0.5, "args": {"External id": 5, "cbid": 211, "correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, "dur": 1,
   "args": {"External id": 5, "correlation": 7, "device": 0, "stream": 7}},
  {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 1.5, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 3, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]}"#;
        let (trace, _) =
            kineto_trace::parse_reader(Path::new("t.json"), &mut json.as_bytes(), false, false)
                .expect("parses");
        let got: Vec<(&str, usize, u64, u64)> = kinds(&trace)
            .into_iter()
            .filter(|k| k.rows > 0)
            .map(|k| (k.what, k.rows, k.as_rows, k.columnar))
            .collect();
        // Times in ns (µs × 1000), each row the first of its track (deltas from 0), every number
        // zigzag-encoded (× 2), a varint 1 byte below 128, 2 below 16 384:
        // cpu op: 1000 → 2000 (2), 2000 → 4000 (2), name 0 (1), id 5 → 10 (1): 6
        // API call: 1500 → 3000 (2), 500 → 1000 (2), name 1 (1), id (1), correlation 7 → 14 (1),
        //   cbid and kind (211 + 1) × 2 + 0 (runtime) = 424 (2): 9
        // kernel: 3000 → 6000 (2), 1000 → 2000 (2), name 2 (1), id (1), correlation (1), detail 0 (1): 8
        // flows, one a track: 1500 → 3000 (2), id 7 → 14 (1), phase 0 (1); 3000 (2), 14 (1), 1 (1): 8
        let (span, launch, op, flow) = (
            std::mem::size_of::<Span>() as u64,
            std::mem::size_of::<kineto_trace::Launch>() as u64,
            std::mem::size_of::<GpuOp>() as u64,
            std::mem::size_of::<Flow>() as u64,
        );
        assert_eq!(
            got,
            [
                ("cpu ops", 1, span, 6),
                ("API calls", 1, launch, 9),
                ("kernels", 1, op, 8),
                ("flows", 2, 2 * flow, 8),
            ]
        );
    }
}
