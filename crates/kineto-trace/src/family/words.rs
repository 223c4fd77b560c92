//! The fallback words: a word of the table compiled ([`WordMatch`]) and the placement of a name's
//! function words by the first entry holding one of them.

use super::FallbackEntry;

/// A fallback word, compiled: a run of whole words in order (`all_reduce` → `all`, `reduce`), or one
/// word's start (`gemm*`) or end (`*gemm`).
#[derive(Debug, Clone, PartialEq, Eq)]
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

    fn is_in(&self, words: &[String]) -> bool {
        match self {
            WordMatch::Run(run) => words.windows(run.len()).any(|w| w == run.as_slice()),
            WordMatch::Prefix(p) => words.iter().any(|w| w.starts_with(p.as_str())),
            WordMatch::Suffix(p) => words.iter().any(|w| w.ends_with(p.as_str())),
        }
    }
}

/// The first fallback entry (and its first word) found among `words`.
pub(super) fn place_by_words(table: &[FallbackEntry], words: &[String]) -> Option<(usize, usize)> {
    table.iter().enumerate().find_map(|(i, e)| {
        e.matchers
            .iter()
            .position(|m| m.is_in(words))
            .map(|w| (i, w))
    })
}
