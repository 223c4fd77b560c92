//! The damage the mutation tests do to a real trace, in one place: bytes flipped, the file cut anywhere, two
//! cuts spliced. `tests/mutations.rs` (the parser and the analysis, through `property::check`) and
//! `bins/kineto/tests/mutations.rs` (every listing of the `kineto` binary) draw their cases from these
//! strategies, each with its own check and number of cases; both include this file with `#[path]`. (The fuzz
//! target, which includes `property/`, takes arbitrary bytes from libFuzzer instead.)
#![allow(dead_code)] // Each includer uses its own subset.

use proptest::prelude::*;
use proptest::sample::Index;

/// One way of damaging a real input; [`Mutation::apply`] makes the damaged copy.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// These bytes set to these values (1 to 7 of them).
    Flip(Vec<(Index, u8)>),
    /// Everything from here on dropped.
    Cut(Index),
    /// The input up to the first point, then from the second on.
    Splice(Index, Index),
}

impl Mutation {
    /// The damaged copy of `real` (which is not empty).
    pub fn apply(&self, real: &[u8]) -> Vec<u8> {
        match self {
            Mutation::Flip(edits) => {
                let mut d = real.to_vec();
                for (i, b) in edits {
                    let i = i.index(d.len());
                    d[i] = *b;
                }
                d
            }
            Mutation::Cut(at) => real[..at.index(real.len())].to_vec(),
            Mutation::Splice(a, b) => {
                let (a, b) = (a.index(real.len()), b.index(real.len()));
                let mut s = real[..a].to_vec();
                s.extend_from_slice(&real[b..]);
                s
            }
        }
    }
}

/// 1 to 7 bytes set to random values.
pub fn flips() -> impl Strategy<Value = Mutation> {
    prop::collection::vec((any::<Index>(), any::<u8>()), 1..8).prop_map(Mutation::Flip)
}

/// A cut anywhere.
pub fn cuts() -> impl Strategy<Value = Mutation> {
    any::<Index>().prop_map(Mutation::Cut)
}

/// Two cuts spliced.
pub fn splices() -> impl Strategy<Value = Mutation> {
    (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Splice(a, b))
}
