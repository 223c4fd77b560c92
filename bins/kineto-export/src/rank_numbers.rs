//! The numbers of ranks that carry no `distributedInfo.rank`: each takes its position among all ranks of
//! the inputs — the files in input order, then each file's ranks in the order it holds them
//! (`Session::read_ranks`, the order `kineto ranks` lists them in). So two files of several ranks never
//! give two ranks one number, and a number does not depend on which file a worker happened to read first.
//!
//! The files are read in parallel, so a file's first number (the count of the ranks of every file before
//! it) is known only once those files are read: [`RankCounts::first_of`] waits for them. That cannot
//! stall: `Session::each` starts the files in input order (its workers take the next path from a shared
//! counter), and a worker records its file's count ([`Slot::fill`], or the slot's drop on an error)
//! before it waits, so every file before a waiting one is being read by a worker that waits on none after.

use std::sync::{Condvar, Mutex, MutexGuard};

/// What is known of one input file's rank count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    /// Not read yet.
    Pending,
    /// Read: this many ranks.
    Ranks(u64),
    /// Could not be read, so neither its count nor any later file's first number is known.
    Unreadable,
}

/// The rank count of every input file, recorded as the workers read them.
#[derive(Debug)]
pub struct RankCounts {
    counts: Mutex<Vec<Count>>,
    changed: Condvar,
}

impl RankCounts {
    /// Counts for `files` input files, none read yet.
    pub fn new(files: usize) -> Self {
        RankCounts {
            counts: Mutex::new(vec![Count::Pending; files]),
            changed: Condvar::new(),
        }
    }

    /// Where the worker reading the file at `position` records its count. A slot dropped unfilled (the
    /// file could not be read, or the worker failed) records the file as unreadable, so no later file
    /// waits for it forever.
    pub fn slot(&self, position: usize) -> Slot<'_> {
        Slot {
            counts: self,
            position,
        }
    }

    /// The number of the first rank of the file at `position`: the count of the ranks of every file
    /// before it, once all of them are read. `Err(j)`: the file at `j`, the first before it that could
    /// not be read, leaves the number unknown.
    pub fn first_of(&self, position: usize) -> Result<u64, usize> {
        let mut counts = self.lock();
        loop {
            let before = &counts[..position.min(counts.len())];
            if !before.contains(&Count::Pending) {
                return before
                    .iter()
                    .enumerate()
                    .try_fold(0, |sum, (j, c)| match c {
                        Count::Ranks(n) => Ok(sum + n),
                        _ => Err(j),
                    });
            }
            // A poisoned lock means a worker panicked while recording; its count stays as it was.
            counts = self.changed.wait(counts).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Count>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the count of the file at `position` unless one is recorded already.
    fn record(&self, position: usize, count: Count) {
        let mut counts = self.lock();
        if let Some(c) = counts.get_mut(position).filter(|c| **c == Count::Pending) {
            *c = count;
            drop(counts);
            self.changed.notify_all();
        }
    }
}

/// One file's place in [`RankCounts`], held by the worker reading it.
#[derive(Debug)]
pub struct Slot<'a> {
    counts: &'a RankCounts,
    position: usize,
}

impl Slot<'_> {
    /// The file was read and holds `ranks` ranks.
    pub fn fill(self, ranks: usize) {
        self.counts
            .record(self.position, Count::Ranks(ranks as u64));
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.counts.record(self.position, Count::Unreadable);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_first_number_counts_the_ranks_of_the_files_before_it() {
        let counts = RankCounts::new(4);
        // Recorded out of input order, as parallel workers finish.
        counts.slot(2).fill(1);
        counts.slot(0).fill(2);
        counts.slot(1).fill(3);
        // File 0 starts at 0; file 1 after file 0's 2 ranks; file 2 after 2 + 3; file 3 after 2 + 3 + 1.
        assert_eq!(counts.first_of(0), Ok(0));
        assert_eq!(counts.first_of(1), Ok(2));
        assert_eq!(counts.first_of(2), Ok(5));
        assert_eq!(counts.first_of(3), Ok(6));
        // A count recorded twice keeps the first.
        counts.slot(0).fill(9);
        assert_eq!(counts.first_of(1), Ok(2));
    }

    #[test]
    fn an_unreadable_file_leaves_the_later_numbers_unknown_naming_the_first() {
        let counts = RankCounts::new(5);
        counts.slot(0).fill(2);
        drop(counts.slot(1));
        counts.slot(2).fill(1);
        drop(counts.slot(3));
        assert_eq!(counts.first_of(1), Ok(2));
        assert_eq!(counts.first_of(2), Err(1));
        assert_eq!(counts.first_of(4), Err(1));
    }

    #[test]
    fn a_worker_waits_for_the_files_before_its_own() {
        let counts = RankCounts::new(3);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| counts.first_of(2));
            let early = counts.slot(0);
            let late = counts.slot(1);
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(
                !waiting.is_finished(),
                "file 2 numbered before files 0 and 1 were read"
            );
            late.fill(4);
            early.fill(3);
            assert_eq!(waiting.join().unwrap(), Ok(7));
        });
    }
}
