//! Any bytes, every way the library reads them: as plain JSON and gzip-compressed, inline and on the
//! helper thread, with and without salvage, and — when they parse — through the analysis (links,
//! steps, kernel families, budgets, summary). The checks are `property::check`, which `cargo test`
//! also runs on mutated real traces (`crates/kineto-trace/tests/mutations.rs`).
//!
//! Memory: a counting allocator measures the heap each parse of the plain bytes takes, which must stay
//! within the stated bound (`counting::bound`: 12 × the input + 16 MiB). Run with inputs large enough
//! for growth to show (`-max_len=8388608`); libFuzzer's own `-malloc_limit_mb` stays as a backstop.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

#[path = "../../crates/kineto-trace/tests/property/mod.rs"]
mod property;

#[path = "../../crates/kineto-trace/tests/property/counting.rs"]
mod counting;

fuzz_target!(|data: &[u8]| {
    let (_, peak, _) = counting::measure(|| {
        let _ = kineto_trace::parse_reader(Path::new("fuzz.json"), &mut &data[..], true, false);
    });
    assert!(
        peak <= counting::bound(data.len()),
        "peak heap {peak} bytes for {} bytes of input",
        data.len()
    );
    property::check(data);
});
