//! Which trace is which rank: the one rule every tool follows when it puts several traces side by side
//! (`kineto ranks`, `kineto diff`, `kineto report`, `kineto-export`, the Python module's `read_ranks`).
//!
//! * Two traces claiming the same rank (`distributedInfo.rank`) are refused, naming both files: pooled
//!   into one rank their steps would be averaged together, counted as two they would be one rank twice.
//! * A trace without a rank is kept apart by its file, never grouped with other rankless traces.
//! * Ranks that look like different runs are warned about, not refused: a rank at or past its trace's
//!   `world_size`, and traces whose world sizes differ.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// What one trace says about its place in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankClaim<'a> {
    /// The trace's file, as given.
    pub file: &'a Path,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u64>,
}

/// Why a set of traces may not be one run. Printed as a note; nothing is refused for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankWarning {
    /// A trace's rank is not below its own world size.
    BeyondWorld {
        /// The trace.
        file: String,
        /// Its rank.
        rank: u64,
        /// Its world size.
        world_size: u64,
    },
    /// The traces give different world sizes: (world size, the first file that gives it), ascending.
    WorldSizes(Vec<(u64, String)>),
}

impl std::fmt::Display for RankWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RankWarning::BeyondWorld {
                file,
                rank,
                world_size,
            } => write!(
                f,
                "{file}: rank {rank} is not below its world size {world_size}: is it from another run?"
            ),
            RankWarning::WorldSizes(sizes) => {
                let list: Vec<String> = sizes
                    .iter()
                    .map(|(w, file)| format!("{w} ({file})"))
                    .collect();
                write!(
                    f,
                    "the traces give different world sizes: {}; are they from different runs?",
                    list.join(", ")
                )
            }
        }
    }
}

/// Checks the ranks of traces put side by side ([the rule](self)): an error naming both files when two
/// claim one rank; otherwise the warnings, in input order.
pub fn check_ranks<'a>(
    claims: impl IntoIterator<Item = RankClaim<'a>>,
) -> Result<Vec<RankWarning>> {
    let mut by_rank: BTreeMap<u64, &Path> = BTreeMap::new();
    let mut sizes: BTreeMap<u64, &Path> = BTreeMap::new();
    let mut warnings = Vec::new();
    for c in claims {
        if let Some(rank) = c.rank {
            if let Some(first) = by_rank.insert(rank, c.file) {
                return Err(Error::SameRank {
                    rank,
                    first: first.to_path_buf(),
                    second: c.file.to_path_buf(),
                });
            }
            if let Some(w) = c.world_size.filter(|&w| rank >= w) {
                warnings.push(RankWarning::BeyondWorld {
                    file: c.file.display().to_string(),
                    rank,
                    world_size: w,
                });
            }
        }
        if let Some(w) = c.world_size {
            sizes.entry(w).or_insert(c.file);
        }
    }
    if sizes.len() > 1 {
        warnings.push(RankWarning::WorldSizes(
            sizes
                .into_iter()
                .map(|(w, f)| (w, f.display().to_string()))
                .collect(),
        ));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(file: &str, rank: Option<u64>, world_size: Option<u64>) -> RankClaim<'_> {
        RankClaim {
            file: Path::new(file),
            rank,
            world_size,
        }
    }

    #[test]
    fn the_same_rank_twice_is_refused_naming_both_files() {
        let e = check_ranks([
            claim("a.json", Some(0), Some(2)),
            claim("b.json", Some(1), Some(2)),
            claim("c.json", Some(1), Some(2)),
        ])
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("rank 1") && msg.contains("b.json") && msg.contains("c.json"),
            "{msg}"
        );
    }

    #[test]
    fn rankless_traces_never_collide_and_other_runs_are_warned_about() {
        assert_eq!(
            check_ranks([claim("a.json", None, None), claim("b.json", None, None)]).unwrap(),
            vec![]
        );
        let w = check_ranks([
            claim("a.json", Some(0), Some(2)),
            claim("b.json", Some(5), Some(2)),
            claim("c.json", Some(1), Some(8)),
        ])
        .unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].to_string()
                .contains("b.json: rank 5 is not below its world size 2")
        );
        assert_eq!(
            w[1].to_string(),
            "the traces give different world sizes: 2 (a.json), 8 (c.json); are they from different runs?"
        );
    }
}
