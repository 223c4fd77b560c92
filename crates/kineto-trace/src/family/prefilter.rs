//! Which rules can match a name, found in one scan of it: for each rule a finite set of literals one of
//! which every match of its pattern contains (its *needles*), one Aho-Corasick automaton over all of them.
//! A name is tried only against the rules whose needles it contains, and the few rules with no needle.
//!
//! This keeps a rule table's load linear (each rule's examples are checked against the earlier rules
//! that can match them, not against every earlier rule) and classification independent of the number of
//! rules a name cannot match.
//!
//! The needles are never wrong, only sometimes missing: they come from `regex-syntax`'s literal
//! extraction (the literals the `regex` crate's own prefilters use), whose finite prefix (or suffix)
//! sequences are a literal set every match starts (or ends) with; for a pattern that is a concatenation,
//! the same holds for each of its parts, so `(^|[^b])[Gg]emm([^a]|$)` has the needle `emm`. A pattern
//! with no finite set of non-empty literals (`.+x`, `\w+_\d`) is *opaque*: it is tried on every name.

use super::load::work;
use aho_corasick::AhoCorasick;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Hir, HirKind};
use rustc_hash::FxHashMap;

/// At most this many needles per rule: a wide class (`[a-z]`) multiplies them, and past this a pattern
/// is better treated as opaque than as hundreds of one-byte needles.
const MAX_NEEDLES: usize = 64;

/// Every rule's needles, indexed.
#[derive(Debug, Clone)]
pub(super) struct Prefilter {
    /// Over the distinct needles; `None` when no rule has one.
    automaton: Option<AhoCorasick>,
    /// Needle → the rules that have it, ascending.
    rules_of: Vec<Vec<u32>>,
    /// Rules with no needle, ascending: tried on every name.
    opaque: Vec<u32>,
}

impl Prefilter {
    /// Indexes the patterns (in rule order; each already compiled by `regex`).
    pub(super) fn new<'p>(patterns: impl IntoIterator<Item = &'p str>) -> Prefilter {
        let mut ids: FxHashMap<Vec<u8>, usize> = FxHashMap::default();
        let mut needles: Vec<Vec<u8>> = Vec::new();
        let mut rules_of: Vec<Vec<u32>> = Vec::new();
        let mut opaque = Vec::new();
        let mut count = 0;
        for (k, p) in patterns.into_iter().enumerate() {
            count = k + 1;
            work(p.len());
            match needles_of(p) {
                None => opaque.push(k as u32),
                Some(set) => {
                    for n in set {
                        let id = *ids.entry(n.clone()).or_insert_with(|| {
                            needles.push(n);
                            rules_of.push(Vec::new());
                            needles.len() - 1
                        });
                        if rules_of[id].last() != Some(&(k as u32)) {
                            rules_of[id].push(k as u32);
                        }
                    }
                }
            }
        }
        let automaton = if needles.is_empty() {
            None
        } else {
            match AhoCorasick::new(&needles) {
                Ok(a) => Some(a),
                // Only a size limit can refuse plain literals: then every rule is tried on every name,
                // which is slower and as correct.
                Err(_) => {
                    opaque = (0..count as u32).collect();
                    rules_of.clear();
                    None
                }
            }
        };
        Prefilter {
            automaton,
            rules_of,
            opaque,
        }
    }

    /// The rules below `below` that can match `name`, ascending: every such rule that matches it is
    /// among them.
    pub(super) fn candidates(&self, name: &str, below: usize) -> Vec<usize> {
        work(name.len());
        let mut out: Vec<usize> = self
            .opaque
            .iter()
            .map(|&k| k as usize)
            .take_while(|&k| k < below)
            .collect();
        work(out.len());
        if let Some(ac) = &self.automaton {
            for m in ac.find_overlapping_iter(name) {
                let rules = &self.rules_of[m.pattern().as_usize()];
                work(1);
                for &k in rules.iter().take_while(|&&k| (k as usize) < below) {
                    work(1);
                    out.push(k as usize);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// A finite set of non-empty literals one of which every match of `pattern` contains, or `None`.
fn needles_of(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::parse(pattern).ok()?;
    let mut best: Option<Seq> = None;
    let mut consider = |seq: Seq| {
        let Some(lits) = seq.literals() else {
            return;
        };
        if lits.is_empty() || lits.len() > MAX_NEEDLES || lits.iter().any(|l| l.is_empty()) {
            return;
        }
        let better = best.as_ref().is_none_or(|b| {
            let key = |s: &Seq| (s.min_literal_len(), std::cmp::Reverse(s.len()));
            key(&seq) > key(b)
        });
        if better {
            best = Some(seq);
        }
    };
    let extract = |kind: ExtractKind, h: &Hir| {
        Extractor::new()
            .kind(kind)
            .limit_total(MAX_NEEDLES)
            .extract(h)
    };
    consider(extract(ExtractKind::Prefix, &hir));
    consider(extract(ExtractKind::Suffix, &hir));
    // Every match of a concatenation holds a match of each part, so each part's literals serve too.
    if let HirKind::Concat(parts) = hir.kind() {
        for part in parts {
            consider(extract(ExtractKind::Prefix, part));
        }
    }
    let lits = best?.literals()?.to_vec();
    Some(lits.into_iter().map(|l| l.as_bytes().to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles(p: &str) -> Option<Vec<String>> {
        needles_of(p).map(|v| {
            let mut s: Vec<String> = v
                .into_iter()
                .map(|b| String::from_utf8(b).unwrap())
                .collect();
            s.sort();
            s
        })
    }

    #[test]
    fn needles_are_literals_every_match_contains() {
        assert_eq!(needles("^nccl"), Some(vec!["nccl".into()]));
        assert_eq!(needles("(^|[^b])[Gg]emm([^a]|$)"), Some(vec!["emm".into()]));
        // Every match ends with one of these (the suffixes: their shortest is longer than `msccl`).
        assert_eq!(
            needles(r"nccl(Dev)?Kernel|msccl\w*Kernel"),
            Some(vec![
                "Kernel".into(),
                "ncclDevKernel".into(),
                "ncclKernel".into()
            ])
        );
        assert_eq!(needles(r"\w+x"), Some(vec!["x".into()]));
        assert_eq!(needles(r".+"), None);
        assert_eq!(needles(r"\w+_\d+"), Some(vec!["_".into()]));
        assert_eq!(needles("a*"), None);
    }

    /// Whatever the patterns, every rule that matches a name is among its candidates (checked by brute
    /// force over the built-in table's patterns and examples, and odd patterns).
    #[test]
    fn candidates_hold_every_rule_that_matches() {
        let rules = crate::family::Rules::builtin();
        let mut patterns: Vec<String> = rules.rules().iter().map(|r| r.pattern.clone()).collect();
        patterns.extend(
            [
                ".+", r"\w+x", "(?i)GEMM", r"^\d", "a|", r"\bfoo\b", "(?s).", "é+",
            ]
            .map(String::from),
        );
        let regexes: Vec<regex::Regex> = patterns
            .iter()
            .map(|p| regex::Regex::new(p).unwrap())
            .collect();
        let pf = Prefilter::new(patterns.iter().map(String::as_str));
        let mut names: Vec<String> = rules
            .rules()
            .iter()
            .flat_map(|r| r.examples.clone())
            .collect();
        names.extend(["", "x", "GeMm", "9", "foo", "é", "sgemm_nn"].map(String::from));
        for name in &names {
            let c = pf.candidates(name, usize::MAX);
            for (k, re) in regexes.iter().enumerate() {
                if re.is_match(name) {
                    assert!(
                        c.contains(&k),
                        "`{}` matches `{name}` but is no candidate",
                        patterns[k]
                    );
                }
            }
        }
    }
}
