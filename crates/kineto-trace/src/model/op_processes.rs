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

    /// Adds the next op's process; an error when the op would name more distinct processes than a
    /// 32-bit place holds (4 294 967 294: as many ops, more than the model's 32-bit row order allows).
    pub(crate) fn push(&mut self, process: Option<i64>) -> Result<(), String> {
        let place = match process {
            None => 0,
            Some(p) => self.place(p).ok_or_else(|| {
                format!(
                    "more than {} distinct processes run GPU ops: past what the model holds",
                    u32::MAX - 1
                )
            })?,
        };
        self.places.push(place);
        Ok(())
    }

    /// 1 + `p`'s place, given one now if new; `None` when every place is taken.
    fn place(&mut self, p: i64) -> Option<u32> {
        if let Some(&at) = self.place_of.get(&p) {
            return Some(at + 1);
        }
        let at = u32::try_from(self.processes.len()).ok()?;
        let place = at.checked_add(1)?;
        self.processes.push(p);
        self.place_of.insert(p, at);
        Some(place)
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
        let mut kept = OpProcesses::default();
        for p in list {
            kept.push(p).expect("room");
        }
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
        let mut none = OpProcesses::default();
        none.push(None).expect("room");
        assert!(!none.any() && !none.is_empty());
        kept.clear();
        assert!(kept.is_empty() && kept.processes.is_empty());
    }
}
