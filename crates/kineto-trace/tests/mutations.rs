//! The fuzz target's property (`property::check`: plain and gzip, both feeds, salvage, the analysis)
//! on every `cargo test`: real traces cut, flipped and spliced at random never make the parser or the
//! analysis panic, every error's offset lies inside the input, and every way of reading agrees.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use proptest::prelude::*;

mod common;
#[path = "property/mutate.rs"]
mod mutate;
mod property;

use mutate::{cuts, flips, splices};
use property::check;

/// The seed trace (`common::mutation_seed`), decompressed once.
fn real() -> Vec<u8> {
    static DATA: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DATA.get_or_init(common::mutation_seed).clone()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn flipped_bytes(m in flips()) {
        check(&m.apply(&real()));
    }

    #[test]
    fn cut_anywhere(m in cuts()) {
        check(&m.apply(&real()));
    }

    #[test]
    fn spliced(m in splices()) {
        check(&m.apply(&real()));
    }

    #[test]
    fn arbitrary_bytes(d in prop::collection::vec(any::<u8>(), 0..300)) {
        check(&d);
    }
}
