//! [`OpProcesses`]: the process each GPU op ran for, kept in a byte an op (4 past 255 processes),
//! for the rank split (`crate::split`). Filled by the readers of files that hold several processes;
//! what it is not: a table of processes for any other use.

use rustc_hash::FxHashMap;

/// The process each GPU op of one kind ran for, parallel to the ops: a place in a list of the
/// distinct processes, a byte an op while there are at most 255 of them (4 bytes past that),
/// where an `Option<i64>` an op took 16 (a file has a few processes and up to millions of ops; with
/// the ops kept encoded, 4 bytes an op were a third of a Perfetto file's model). Reads as that list
/// of `Option<i64>` (`iter`, `Debug`).
#[derive(Default, Clone)]
pub(crate) struct OpProcesses {
    /// Per op: 0 for none, else 1 + its process's place in `processes`.
    places: Places,
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
        match &mut self.places {
            Places::Bytes(v) => v.resize(len, 0),
            Places::Words(v) => v.resize(len, 0),
        }
    }

    pub(crate) fn swap(&mut self, a: usize, b: usize) {
        match &mut self.places {
            Places::Bytes(v) => v.swap(a, b),
            Places::Words(v) => v.swap(a, b),
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = OpProcesses::default();
    }

    /// Whether any op has a process.
    pub(crate) fn any(&self) -> bool {
        self.places.iter().any(|p| p != 0)
    }

    /// Each op's process, in the ops' order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        self.places.iter().map(|p| {
            p.checked_sub(1)
                .and_then(|i| self.processes.get(i as usize).copied())
        })
    }
}

/// Each op's place: a byte while every place is below 256, widened to 4 bytes at the first that is
/// not.
#[derive(Clone)]
enum Places {
    Bytes(Vec<u8>),
    Words(Vec<u32>),
}

impl Default for Places {
    fn default() -> Self {
        Places::Bytes(Vec::new())
    }
}

impl Places {
    fn len(&self) -> usize {
        match self {
            Places::Bytes(v) => v.len(),
            Places::Words(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&mut self, place: u32) {
        match self {
            Places::Bytes(v) => match u8::try_from(place) {
                Ok(b) => v.push(b),
                Err(_) => {
                    let mut words: Vec<u32> = v.iter().map(|&b| u32::from(b)).collect();
                    words.push(place);
                    *self = Places::Words(words);
                }
            },
            Places::Words(v) => v.push(place),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match self {
            Places::Bytes(v) => Box::new(v.iter().map(|&b| u32::from(b))),
            Places::Words(v) => Box::new(v.iter().copied()),
        }
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
        // Three distinct processes for seven ops: a byte an op, and each process once.
        assert_eq!((kept.len(), kept.processes.len()), (7, 3));
        assert!(matches!(kept.places, super::Places::Bytes(_)));
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

    /// Past 255 distinct processes a place takes 4 bytes: the ops read back the same, those before
    /// the widening included.
    #[test]
    fn places_widen_past_a_byte_and_keep_every_op() {
        let list: Vec<Option<i64>> = (0..300i64)
            .map(|p| if p % 7 == 0 { None } else { Some(p * 1000 - 5) })
            .chain([Some(995), None])
            .collect();
        let mut kept = OpProcesses::default();
        for (i, &p) in list.iter().enumerate() {
            kept.push(p).expect("room");
            // 255 places fit a byte: the widening comes with the 256th distinct process.
            let distinct = kept.processes.len();
            assert_eq!(
                matches!(kept.places, super::Places::Words(_)),
                distinct > 255,
                "op {i}, {distinct} processes"
            );
        }
        assert_eq!(kept.iter().collect::<Vec<_>>(), list);
        kept.swap(1, 299);
        kept.resize(303);
        let mut want = list.clone();
        want.swap(1, 299);
        want.resize(303, None);
        assert_eq!(kept.iter().collect::<Vec<_>>(), want);
    }
}
