//! One provenance record per divan benchmark, in `target/divan/<name>/`.
//!
//! `cargo run --release -p provenance --example divan_bench` (CI runs it with a short sample count).
//! In a real harness the same lines go in `benches/*.rs` with `harness = false`.

use divan::Bencher;
use provenance::{Provenance, bench};
use std::hint::black_box;

fn main() {
    divan::main();
}

/// The record wraps divan's measurement of this one benchmark: `bencher.bench` runs every sample.
#[divan::bench(args = [1_000u64, 10_000], sample_count = 20)]
fn sum(bencher: Bencher, n: u64) {
    let prov = Provenance::new()
        .program(provenance::program!())
        .interval_ms(100)
        .field("n", n);
    let recorded = prov.and_then(|p| {
        bench::record_benchmark(p, &bench::divan_dir(&format!("sum_{n}")), || {
            bencher.bench(|| (0..n).map(black_box).sum::<u64>())
        })
    });
    if let Err(e) = recorded {
        eprintln!("provenance for sum_{n}: {e}");
    }
}
