//! The fuzz target's property (`property::check`: plain and gzip, both feeds, salvage, the analysis)
//! on every `cargo test`: real traces cut, flipped and spliced at random never make the parser or the
//! analysis panic, every error's offset lies inside the input, and every way of reading agrees.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use proptest::prelude::*;

mod common;
mod property;

use property::check;

/// The real trace, decompressed once.
fn real() -> Vec<u8> {
    static DATA: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DATA.get_or_init(common::event_sync_trace).clone()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn flipped_bytes(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut d = real();
        for (i, b) in edits {
            let i = i.index(d.len());
            d[i] = b;
        }
        check(&d);
    }

    #[test]
    fn cut_anywhere(at in any::<prop::sample::Index>()) {
        let d = real();
        check(&d[..at.index(d.len())]);
    }

    #[test]
    fn spliced(a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let d = real();
        let (a, b) = (a.index(d.len()), b.index(d.len()));
        let mut s = d[..a].to_vec();
        s.extend_from_slice(&d[b..]);
        check(&s);
    }

    #[test]
    fn arbitrary_bytes(d in prop::collection::vec(any::<u8>(), 0..300)) {
        check(&d);
    }
}
