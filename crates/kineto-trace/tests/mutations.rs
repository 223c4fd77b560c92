//! The fuzz target's property on every `cargo test`: real traces cut, flipped and spliced at random
//! never make the parser panic, and every error's offset lies inside the input.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use kineto_trace::{Error, parse_reader};
use proptest::prelude::*;
use std::path::Path;

mod common;
use common::event_sync_trace as real;

fn check(data: &[u8]) {
    for salvage in [false, true] {
        let mut r = std::io::Cursor::new(data);
        match parse_reader(Path::new("m.json"), &mut r, salvage, false) {
            Ok((t, n)) => {
                assert_eq!(n, data.len() as u64);
                assert!(t.kernels.iter().all(|k| k.dur_ns >= 0));
            }
            Err(Error::Syntax { offset, .. })
            | Err(Error::Event { offset, .. })
            | Err(Error::Truncated { offset, .. }) => assert!(offset <= data.len() as u64),
            Err(e) => panic!("unexpected error kind: {e}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

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
