//! The fallback words: a word of the table compiled ([`WordMatch`]), and the index ([`WordIndex`]) that
//! places a name's function words by the first entry holding one of them.
//!
//! The index is three tries — runs of whole words, word starts (`gemm*`) and word ends (`*gemm`) — each
//! node keeping the first (entry, word) that ends there, so a name is placed in time linear in its words
//! (times the longest run) whatever the size of the table, at load and at classification alike.

use super::load::work;
use rustc_hash::FxHashMap;

/// A fallback word, compiled: a run of whole words in order (`all_reduce` → `all`, `reduce`), or one
/// word's start (`gemm*`) or end (`*gemm`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum WordMatch {
    Run(Vec<String>),
    Prefix(String),
    Suffix(String),
}

impl WordMatch {
    pub(super) fn parse(word: &str) -> std::result::Result<WordMatch, String> {
        let (pre, body, suf) = (
            word.starts_with('*'),
            word.trim_matches('*'),
            word.ends_with('*') && word.len() > 1,
        );
        if body.contains('*') {
            return Err(format!("word `{word}`: `*` only at its start or end"));
        }
        let words = crate::template::split_words(body);
        if words.is_empty() {
            return Err(format!("word `{word}` has no letters or digits"));
        }
        match (pre, suf) {
            (false, false) => Ok(WordMatch::Run(words)),
            _ if words.len() != 1 || body.len() != words[0].len() => Err(format!(
                "word `{word}`: a `*` word must be one word of letters and digits"
            )),
            (true, true) => Err(format!("word `{word}`: `*` at one end only")),
            (true, false) => Ok(WordMatch::Suffix(words[0].clone())),
            (false, true) => Ok(WordMatch::Prefix(words[0].clone())),
        }
    }
}

/// (entry, word) indices: the table's order, so the smallest is the first in priority.
type Hit = (usize, usize);

/// A trie over keys of type `K` (whole words, or bytes); each node holds the first hit ending there.
#[derive(Debug, Clone)]
struct Trie<K> {
    next: Vec<FxHashMap<K, usize>>,
    hit: Vec<Option<Hit>>,
}

impl<K: std::hash::Hash + Eq + Clone> Trie<K> {
    fn new() -> Self {
        Trie {
            next: vec![FxHashMap::default()],
            hit: vec![None],
        }
    }

    fn insert(&mut self, key: impl IntoIterator<Item = K>, hit: Hit) {
        let mut node = 0;
        for k in key {
            work(1);
            node = match self.next[node].get(&k) {
                Some(&n) => n,
                None => {
                    self.next.push(FxHashMap::default());
                    self.hit.push(None);
                    let n = self.next.len() - 1;
                    self.next[node].insert(k, n);
                    n
                }
            };
        }
        let slot = &mut self.hit[node];
        *slot = Some(slot.map_or(hit, |h| h.min(hit)));
    }

    /// The first hit of any key that `walk` starts with.
    fn first_along<'k>(&self, walk: impl IntoIterator<Item = &'k K>) -> Option<Hit>
    where
        K: 'k,
    {
        let mut node = 0;
        let mut best: Option<Hit> = None;
        for k in walk {
            work(1);
            let Some(&n) = self.next[node].get(k) else {
                break;
            };
            node = n;
            if let Some(h) = self.hit[node] {
                best = Some(best.map_or(h, |b| b.min(h)));
            }
        }
        best
    }
}

/// Every word of a fallback table, indexed: which entry (and word) places a name first.
#[derive(Debug, Clone)]
pub(super) struct WordIndex {
    runs: Trie<String>,
    prefixes: Trie<u8>,
    suffixes: Trie<u8>,
}

impl Default for WordIndex {
    fn default() -> Self {
        WordIndex {
            runs: Trie::new(),
            prefixes: Trie::new(),
            suffixes: Trie::new(),
        }
    }
}

impl WordIndex {
    /// Adds word `word` of entry `entry` (entries are added in table order).
    pub(super) fn insert(&mut self, m: &WordMatch, entry: usize, word: usize) {
        let hit = (entry, word);
        match m {
            WordMatch::Run(run) => self.runs.insert(run.iter().cloned(), hit),
            WordMatch::Prefix(p) => self.prefixes.insert(p.bytes(), hit),
            WordMatch::Suffix(s) => self.suffixes.insert(s.bytes().rev(), hit),
        }
    }

    /// The first fallback entry (and its first word) found among `words`: a run of them in order, or
    /// the start or end of one.
    pub(super) fn place(&self, words: &[String]) -> Option<(usize, usize)> {
        let mut best: Option<Hit> = None;
        let mut keep = |h: Option<Hit>| {
            if let Some(h) = h {
                best = Some(best.map_or(h, |b| b.min(h)));
            }
        };
        for (i, w) in words.iter().enumerate() {
            keep(self.runs.first_along(&words[i..]));
            keep(self.prefixes.first_along(w.as_bytes()));
            keep(self.suffixes.first_along(w.as_bytes().iter().rev()));
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn the_first_entry_and_word_wins_whatever_the_order_found() {
        let mut ix = WordIndex::default();
        let table = [
            vec!["gemm", "*gemm"],
            vec!["all_reduce", "dispatch"],
            vec!["reduce*", "sum"],
        ];
        for (e, ws) in table.iter().enumerate() {
            for (k, w) in ws.iter().enumerate() {
                ix.insert(&WordMatch::parse(w).unwrap(), e, k);
            }
        }
        // `sgemm` ends with gemm (entry 0, word 1) though `reduce` comes first in the name.
        assert_eq!(ix.place(&words("my reduce sgemm")), Some((0, 1)));
        assert_eq!(ix.place(&words("ring all reduce")), Some((1, 0)));
        assert_eq!(ix.place(&words("all gather")), None);
        assert_eq!(ix.place(&words("reducer sum")), Some((2, 0)));
        assert_eq!(ix.place(&words("x dispatch all reduce")), Some((1, 0)));
        // A run must be whole words in a row: `all x reduce` has no `all_reduce`, only `reduce*`.
        assert_eq!(ix.place(&words("all x reduce")), Some((2, 0)));
    }
}
