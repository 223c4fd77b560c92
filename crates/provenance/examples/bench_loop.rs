//! A benchmark loop that links `provenance` and writes its result with the record beside it.
//!
//! `cargo run --release -p provenance --example bench_loop -- result.json [--overwrite] [--iters N]`
//!
//! The work (a dot product over a few MiB, repeated) stands in for a model's forward pass: what matters is the
//! order of the calls around it: claim the output, set up, `start()`, the timed loop, `finish()`, write.

use serde::Serialize;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Serialize)]
struct BenchResult {
    elapsed_s: f64,
    gflop_per_s: f64,
    checksum: f64,
}

#[derive(Serialize)]
struct Output<'a> {
    result: BenchResult,
    provenance: &'a provenance::Record,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_loop: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut out = None;
    let mut overwrite = false;
    let mut iters: u32 = 200;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--overwrite" => overwrite = true,
            "--iters" => iters = args.next().ok_or("--iters needs a value")?.parse()?,
            _ if out.is_none() => out = Some(a),
            _ => return Err(format!("unexpected argument {a:?}").into()),
        }
    }
    let out = out.ok_or("usage: bench_loop RESULT.json [--overwrite] [--iters N]")?;

    // First, before any work: an hour's run must not end with nowhere to write.
    let out = provenance::claim_output(&out, overwrite)?;

    // Setup (the "model load"): not timed, not monitored.
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 89) as f32 * 0.25).collect();

    let prov = provenance::Provenance::new()
        .program(provenance::program!())
        .field("workload", "dot product, 2^20 f32")?
        .field("iters", iters)?
        .interval_ms(100)
        .start();

    let t0 = Instant::now();
    let mut acc = 0.0f64;
    for _ in 0..iters {
        acc += f64::from(
            black_box(&a)
                .iter()
                .zip(black_box(&b))
                .map(|(x, y)| x * y)
                .sum::<f32>(),
        );
    }
    let elapsed = t0.elapsed().as_secs_f64();

    let record = prov.finish();
    let gflops = 2.0 * f64::from(iters) * n as f64 / elapsed / 1e9;
    // A typed result rather than `json!`: `json!` unwraps serialisation, and a record refuses NaN with an error.
    let written = out.write_json(&Output {
        result: BenchResult {
            elapsed_s: elapsed,
            gflop_per_s: gflops,
            checksum: acc,
        },
        provenance: &record,
    })?;
    if let Some(n) = written.notice() {
        eprintln!("{n}");
    }
    eprintln!(
        "{gflops:.2} GFLOP/s in {elapsed:.3} s; verdict: {}; written to {}",
        if record.verdict.clean {
            "clean"
        } else {
            "flagged"
        },
        written.path().display()
    );
    Ok(())
}
