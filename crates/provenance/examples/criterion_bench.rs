//! One provenance record per criterion benchmark, in the benchmark's own `target/criterion/<id>/`.
//!
//! `cargo run --release -p provenance --example criterion_bench -- --bench` (CI runs it with short times).
//! In a real harness the same lines go in `benches/*.rs` with `harness = false`.

use criterion::{Criterion, criterion_group, criterion_main};
use provenance::{Provenance, bench};
use std::hint::black_box;
use std::time::Duration;

fn sum(n: u64) -> u64 {
    (0..n).map(black_box).sum()
}

fn benches(c: &mut Criterion) {
    for n in [1_000u64, 10_000] {
        let id = format!("sum_{n}");
        let prov = Provenance::new()
            .program(provenance::program!())
            .interval_ms(100);
        let recorded = bench::record_benchmark(prov, &bench::criterion_dir(&[&id]), || {
            c.bench_function(&id, |b| b.iter(|| sum(n)));
        });
        if let Err(e) = recorded {
            eprintln!("provenance for {id}: {e}");
        }
    }
}

criterion_group! {
    name = tiny;
    // A tiny benchmark: CI only checks that it runs and leaves one record per benchmark.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300));
    targets = benches
}
criterion_main!(tiny);
