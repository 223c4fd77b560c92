//! [`OpProcesses`]: the process each GPU op ran for, kept in 4 bytes an op, for the rank split
//! (`crate::split`). Filled by the readers of files that hold several processes; what it is not: a
//! table of processes for any other use.

use rustc_hash::FxHashMap;

/// The process each GPU op of one kind ran for, parallel to the ops: 4 bytes an op, a place in a list
/// of the distinct processes, where an `Option<i64>` an op took 16 (a file has a few processes and up
/// to millions of ops). Reads as that list of `Option<i64>` (`iter`, `Debug`).
#[derive(Default, Clone)]
pub(crate) struct OpProcesses {
    /// Per op: 0 for none, else 1 + its process's place in `processes`.
    places: Vec<u32>,
    /// The distinct processes, in the order first seen.
    processes: Vec<i64>,
    /// A process's place in `processes`.
    place_of: FxHashMap<i64, u32>,
}

impl OpProcesses {
    pub(crate) fn len(&self) -> usize {
        self.places.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    pub(crate) fn push(&mut self, process: Option<i64>) {
        let place = process.map_or(0, |p| self.place(p));
        self.places.push(place);
    }

    /// 1 + `p`'s place, given one now if new.
    fn place(&mut self, p: i64) -> u32 {
        if let Some(&at) = self.place_of.get(&p) {
            return at + 1;
        }
        // More than 2^32 − 1 distinct processes cannot be in one file's ops (a pid is 32 bits).
        let at = u32::try_from(self.processes.len()).unwrap_or(u32::MAX - 1);
        self.processes.push(p);
        self.place_of.insert(p, at);
        at + 1
    }

    /// Ops with no process up to `len` ops, or the first `len` kept.
    pub(crate) fn resize(&mut self, len: usize) {
        self.places.resize(len, 0);
    }

    pub(crate) fn swap(&mut self, a: usize, b: usize) {
        self.places.swap(a, b);
    }

    pub(crate) fn clear(&mut self) {
        *self = OpProcesses::default();
    }

    /// Whether any op has a process.
    pub(crate) fn any(&self) -> bool {
        self.places.iter().any(|&p| p != 0)
    }

    /// Each op's process, in the ops' order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        self.places.iter().map(|&p| {
            p.checked_sub(1)
                .and_then(|i| self.processes.get(i as usize).copied())
        })
    }
}

impl FromIterator<Option<i64>> for OpProcesses {
    fn from_iter<I: IntoIterator<Item = Option<i64>>>(iter: I) -> OpProcesses {
        let mut out = OpProcesses::default();
        for p in iter {
            out.push(p);
        }
        out
    }
}

impl std::fmt::Debug for OpProcesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::OpProcesses;

    #[test]
    fn op_processes_read_as_the_list_of_options_they_replace() {
        let list = [
            None,
            Some(7),
            Some(-3),
            Some(7),
            None,
            Some(i64::MAX),
            Some(-3),
        ];
        let mut kept: OpProcesses = list.iter().copied().collect();
        assert_eq!(kept.iter().collect::<Vec<_>>(), list);
        // Debug prints what the Vec printed (the readers' results-unchanged checks hash it).
        assert_eq!(format!("{kept:?}"), format!("{:?}", list.to_vec()));
        // Three distinct processes for seven ops: 4 bytes an op, and each process once.
        assert_eq!((kept.len(), kept.processes.len()), (7, 3));
        assert!(kept.any());
        kept.swap(0, 1);
        kept.resize(9);
        let mut want = list.to_vec();
        want.swap(0, 1);
        want.resize(9, None);
        assert_eq!(kept.iter().collect::<Vec<_>>(), want);
        let none: OpProcesses = [None, None].into_iter().collect();
        assert!(!none.any() && !none.is_empty());
        kept.clear();
        assert!(kept.is_empty() && kept.processes.is_empty());
    }
}
