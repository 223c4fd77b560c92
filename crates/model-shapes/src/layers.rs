//! The decoder layers' kinds, held in memory that does not grow with the layer count where layers repeat.

use crate::weights::LayerKind;

/// The decoder layers' kinds in order, held as runs of one kind and blocks of runs repeated: a model of a
/// million alike layers, or of sliding and full layers alternating, takes the memory of one block whatever
/// its layer count. [`Layers::iter`] gives every layer in order.
///
/// [`Layers::push`] finds the repeats as layers arrive. A layer of the last layer's kind lengthens its run.
/// A finished run continues the repetition under way, or joins the runs not yet repeated; when those end in
/// the same block of up to [`Layers::MAX_BLOCK`] runs twice, that block becomes the repetition under way. A
/// repetition that breaks after fewer than 2 × `MAX_BLOCK` runs was no period of the sequence (in a stretch
/// with a period of `MAX_BLOCK` runs or fewer, a repetition that long never breaks: Fine and Wilf) and goes
/// back among the runs not repeated; a longer one is kept. So any sequence is kept exactly, and one that
/// repeats a block of up to `MAX_BLOCK` runs, after any prefix, takes the memory of the prefix and a few
/// blocks however long it goes on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// What is settled, in order.
    blocks: Vec<Block>,
    /// Finished runs after the blocks, not repeated (yet).
    tail: Vec<(LayerKind, u64)>,
    /// The repetition under way, after the tail.
    repeating: Option<Block>,
    /// The run under way, last.
    open: Option<(LayerKind, u64)>,
    len: u64,
}

/// Runs of layer kinds, `repeats` times, then the first `partial` runs of them once more.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    runs: Vec<(LayerKind, u64)>,
    repeats: u64,
    partial: usize,
}

impl Block {
    fn once(runs: Vec<(LayerKind, u64)>) -> Block {
        Block {
            runs,
            repeats: 1,
            partial: 0,
        }
    }

    /// Its runs in order.
    fn each(&self) -> impl Iterator<Item = &(LayerKind, u64)> + '_ {
        (0..self.repeats)
            .flat_map(move |_| self.runs.iter())
            .chain(&self.runs[..self.partial])
    }

    /// Runs it holds, repeats counted: `repeats · runs + partial`, saturating.
    fn span(&self) -> u64 {
        (self.runs.len() as u64)
            .saturating_mul(self.repeats)
            .saturating_add(self.partial as u64)
    }
}

impl Layers {
    /// The longest block of runs whose repetition is looked for.
    pub const MAX_BLOCK: usize = 16;

    /// No layers.
    pub fn new() -> Layers {
        Layers::default()
    }

    /// `count` layers of one kind.
    pub fn repeat(kind: LayerKind, count: u64) -> Layers {
        Layers {
            open: (count > 0).then_some((kind, count)),
            len: count,
            ..Layers::default()
        }
    }

    /// Appends one layer.
    pub fn push(&mut self, kind: LayerKind) {
        self.len += 1;
        match &mut self.open {
            Some((k, n)) if *k == kind => *n += 1,
            _ => {
                if let Some(run) = self.open.replace((kind, 1)) {
                    self.finish(run);
                }
            }
        }
    }

    /// A run that is over: the next of the repetition under way, or one more of the tail.
    fn finish(&mut self, run: (LayerKind, u64)) {
        if let Some(r) = &mut self.repeating {
            if r.runs[r.partial] == run {
                r.partial += 1;
                if r.partial == r.runs.len() {
                    r.repeats += 1;
                    r.partial = 0;
                }
                return;
            }
            if let Some(r) = self.repeating.take() {
                if r.span() < 2 * Self::MAX_BLOCK as u64 {
                    self.tail.extend(r.each().copied());
                } else {
                    if !self.tail.is_empty() {
                        self.blocks
                            .push(Block::once(std::mem::take(&mut self.tail)));
                    }
                    self.blocks.push(r);
                }
            }
        }
        self.tail.push(run);
        let n = self.tail.len();
        for width in 1..=Self::MAX_BLOCK.min(n / 2) {
            if self.tail[n - 2 * width..n - width] == self.tail[n - width..] {
                let runs = self.tail.split_off(n - width);
                self.tail.truncate(n - 2 * width);
                self.repeating = Some(Block {
                    runs,
                    repeats: 2,
                    partial: 0,
                });
                return;
            }
        }
        // Runs that repeat nothing near the end are settled.
        if n > 4 * Self::MAX_BLOCK {
            let keep = self.tail.split_off(n - 2 * Self::MAX_BLOCK);
            self.blocks
                .push(Block::once(std::mem::replace(&mut self.tail, keep)));
        }
    }

    /// Decoder layers.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every layer's kind, in order.
    pub fn iter(&self) -> impl Iterator<Item = &LayerKind> + '_ {
        self.blocks
            .iter()
            .flat_map(Block::each)
            .chain(&self.tail)
            .chain(self.repeating.iter().flat_map(Block::each))
            .chain(&self.open)
            .flat_map(|(k, n)| std::iter::repeat_n(k, usize::try_from(*n).unwrap_or(usize::MAX)))
    }

    /// How many runs the layers are stored as (the memory they take).
    pub fn stored_runs(&self) -> usize {
        self.blocks.iter().map(|b| b.runs.len()).sum::<usize>()
            + self.tail.len()
            + self.repeating.as_ref().map_or(0, |r| r.runs.len())
            + usize::from(self.open.is_some())
    }
}

impl FromIterator<LayerKind> for Layers {
    fn from_iter<I: IntoIterator<Item = LayerKind>>(iter: I) -> Layers {
        let mut l = Layers::new();
        for k in iter {
            l.push(k);
        }
        l
    }
}

impl<'a> IntoIterator for &'a Layers {
    type Item = &'a LayerKind;
    type IntoIter = Box<dyn Iterator<Item = &'a LayerKind> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kind(k: u8) -> LayerKind {
        LayerKind {
            sliding_window: (k & 1 == 1).then_some(4096),
            compress_ratio: (k & 2 == 2).then_some(4),
            moe: k & 4 == 4,
        }
    }

    proptest! {
        /// Any sequence of layers comes back exactly, whatever blocks it is held as.
        #[test]
        fn layers_come_back_in_order(seq in prop::collection::vec(0u8..5, 0..200)) {
            let kinds: Vec<LayerKind> = seq.iter().map(|&k| kind(k)).collect();
            let layers: Layers = kinds.iter().copied().collect();
            prop_assert_eq!(layers.len(), kinds.len() as u64);
            let back: Vec<LayerKind> = layers.iter().copied().collect();
            prop_assert_eq!(back, kinds);
        }

        /// A block repeated after a prefix is held in the memory of the prefix and a few blocks, however
        /// many times it repeats.
        #[test]
        fn a_repeated_block_costs_its_runs_not_its_repeats(
            prefix in prop::collection::vec(0u8..5, 0..8),
            block in prop::collection::vec(0u8..5, 1..=16),
            repeats in 1usize..300,
        ) {
            let mut seq: Vec<u8> = prefix.clone();
            for _ in 0..repeats {
                seq.extend(&block);
            }
            let layers: Layers = seq.iter().map(|&k| kind(k)).collect();
            let back: Vec<LayerKind> = layers.iter().copied().collect();
            prop_assert_eq!(back, seq.iter().map(|&k| kind(k)).collect::<Vec<_>>());
            // The prefix's runs, a block twice while it is found, the run under way; and the runs it
            // may settle before the block repeats (at most 2 × MAX_BLOCK at a time).
            let bound = prefix.len() + 3 * block.len() + 1 + 2 * Layers::MAX_BLOCK;
            prop_assert!(
                layers.stored_runs() <= bound,
                "{} runs for {:?} then {:?} × {}", layers.stored_runs(), prefix, block, repeats
            );
        }
    }

    #[test]
    fn repeat_is_one_run() {
        let l = Layers::repeat(kind(4), 1 << 40);
        assert_eq!((l.len(), l.stored_runs()), (1 << 40, 1));
        assert!(Layers::repeat(kind(4), 0).is_empty());
        let pushed: Layers = std::iter::repeat_n(kind(4), 100).collect();
        assert_eq!(pushed, Layers::repeat(kind(4), 100));
    }
}
