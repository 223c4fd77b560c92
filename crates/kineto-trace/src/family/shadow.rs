//! The checks on a pattern's text that prove an earlier rule takes every name a later one could match
//! (the same text, a pattern matching everything, a literal every match contains).

use super::Rule;
use super::load::work;
use aho_corasick::AhoCorasick;
use regex::Regex;
use rustc_hash::FxHashMap;

/// The shadow checks of a whole table at once, each rule against every earlier one in time linear in
/// the table's text: the same pattern text (a hash map), the first pattern that matches everything, an
/// unanchored literal inside a later pattern's literal runs (one Aho-Corasick automaton over every
/// literal, scanned over each rule's runs), a `^`-anchored literal that starts a later pattern's
/// anchored prefix (a trie). Each structure keeps, per literal, the first rule that has it, so "an
/// earlier rule" is "a first index below this rule's".
pub(super) struct ShadowIndex {
    shapes: Vec<Shape>,
    /// Pattern text → the first rule with it.
    same: FxHashMap<String, usize>,
    /// The first rule whose pattern matches every name.
    everything: Option<usize>,
    /// Distinct unanchored whole-pattern literals and the first rule of each.
    literals: Vec<(String, usize)>,
    automaton: Option<AhoCorasick>,
    /// Anchored literals: a byte trie, each node with the first rule whose literal ends there.
    anchored: Vec<(FxHashMap<u8, usize>, Option<usize>)>,
}

impl ShadowIndex {
    pub(super) fn new(rules: &[Rule]) -> ShadowIndex {
        let mut ix = ShadowIndex {
            shapes: Vec::with_capacity(rules.len()),
            same: FxHashMap::default(),
            everything: None,
            literals: Vec::new(),
            automaton: None,
            anchored: vec![(FxHashMap::default(), None)],
        };
        let mut literal_ids: FxHashMap<String, usize> = FxHashMap::default();
        for (k, r) in rules.iter().enumerate() {
            work(r.pattern.len());
            let shape = Shape::of(&r.pattern);
            ix.same.entry(r.pattern.clone()).or_insert(k);
            if ix.everything.is_none() && shape.matches_everything(r.regex()) {
                ix.everything = Some(k);
            }
            match &shape.literal {
                Some((false, lit)) => {
                    literal_ids.entry(lit.clone()).or_insert_with(|| {
                        ix.literals.push((lit.clone(), k));
                        ix.literals.len() - 1
                    });
                }
                Some((true, lit)) => {
                    let mut node = 0;
                    for b in lit.bytes() {
                        node = match ix.anchored[node].0.get(&b) {
                            Some(&n) => n,
                            None => {
                                ix.anchored.push((FxHashMap::default(), None));
                                let n = ix.anchored.len() - 1;
                                ix.anchored[node].0.insert(b, n);
                                n
                            }
                        };
                    }
                    ix.anchored[node].1.get_or_insert(k);
                }
                None => {}
            }
            ix.shapes.push(shape);
        }
        // Literals are plain text, so building cannot fail short of a size limit; without the automaton
        // the unanchored literal check is skipped (it never refuses a rule that can match anyway).
        ix.automaton = AhoCorasick::new(ix.literals.iter().map(|(l, _)| l.as_str())).ok();
        ix
    }

    /// Why an earlier rule takes every name rule `i` could match, if the pattern text shows it.
    pub(super) fn shadowed(&self, rules: &[Rule], i: usize) -> Option<String> {
        let later = &self.shapes[i];
        let before = |k: &usize| *k < i;
        let same = self.same.get(&rules[i].pattern).copied().filter(before);
        let everything = self.everything.filter(before);
        let mut contained: Option<usize> = None;
        if let Some(ac) = &self.automaton {
            for run in &later.runs {
                work(run.len());
                for m in ac.find_overlapping_iter(run.as_str()) {
                    work(1);
                    let k = self.literals[m.pattern().as_usize()].1;
                    if k < i {
                        contained = Some(contained.map_or(k, |c| c.min(k)));
                    }
                }
            }
        }
        let mut starts: Option<usize> = None;
        if let Some(p) = &later.anchored_prefix {
            let mut node = 0;
            for b in p.bytes() {
                work(1);
                let Some(&n) = self.anchored[node].0.get(&b) else {
                    break;
                };
                node = n;
                if let Some(k) = self.anchored[node].1.filter(before) {
                    starts = Some(starts.map_or(k, |s| s.min(k)));
                }
            }
        }
        // The first earlier rule any check names, with the reason in the order the checks are listed.
        let k = [same, everything, contained, starts]
            .into_iter()
            .flatten()
            .min()?;
        let e = &rules[k];
        let by = format!("rule {} (`{}`, line {})", k + 1, e.pattern, e.line);
        if same == Some(k) {
            return Some(format!("{by} has the same pattern"));
        }
        if everything == Some(k) {
            return Some(format!("{by} matches every name"));
        }
        let (anchored, lit) = self.shapes[k].literal.clone()?;
        Some(format!(
            "{by} matches the literal `{lit}`, which every name this pattern matches contains{}",
            if anchored { " at its start" } else { "" }
        ))
    }
}

/// What the text of a pattern shows, read conservatively: anything not understood makes the
/// analysis give up (`Shape::of` returns a shape with no literal facts) rather than guess.
#[derive(Debug, Default)]
struct Shape {
    /// `^` / `\A` somewhere.
    start_anchor: bool,
    /// `$` / `\z` somewhere.
    end_anchor: bool,
    /// A word-boundary or other assertion, or syntax not understood.
    other_assertion: bool,
    /// The whole pattern is a literal, possibly after a leading `^`: (anchored, text).
    literal: Option<(bool, String)>,
    /// Literal runs at the top level that every match contains (empty when the pattern has an
    /// alternation or a flag group: then nothing is claimed).
    runs: Vec<String>,
    /// The literal run right after a leading `^`, when every match starts with it.
    anchored_prefix: Option<String>,
}

impl Shape {
    /// A pattern with both kinds of anchor or any other assertion proves nothing; otherwise matching
    /// the empty string means matching it at the start (or end) of every name.
    fn matches_everything(&self, re: &Regex) -> bool {
        let proves_nothing = self.other_assertion || (self.start_anchor && self.end_anchor);
        !proves_nothing && re.is_match("")
    }

    fn of(p: &str) -> Shape {
        let c: Vec<char> = p.chars().collect();
        let mut s = Shape::default();
        let mut depth = 0usize;
        let mut alternation = false;
        let mut flags = false;
        // The current top-level literal run, ended by any non-literal atom at the top level.
        let mut run = String::new();
        let mut runs: Vec<String> = Vec::new();
        let mut pure = true; // every atom so far is a literal char (after an optional leading `^`)
        let mut leading_caret = false;
        // Where the first top-level literal run began: right after a leading `^` means every match
        // starts with it.
        let mut first_start: Option<usize> = None;
        let mut i = 0;
        let end_run = |run: &mut String, runs: &mut Vec<String>| {
            if !run.is_empty() {
                runs.push(std::mem::take(run));
            }
        };
        while i < c.len() {
            let ch = c[i];
            match ch {
                '\\' => {
                    let Some(&n) = c.get(i + 1) else {
                        s.other_assertion = true;
                        break;
                    };
                    i += 2;
                    if "\\.+*?()|[]{}^$#&-~ /".contains(n) {
                        if depth == 0 {
                            if run.is_empty() && runs.is_empty() {
                                first_start = Some(i - 2);
                            }
                            run.push(n);
                        }
                        continue;
                    }
                    pure = false;
                    match n {
                        'A' => s.start_anchor = true,
                        'z' => s.end_anchor = true,
                        'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'n' | 't' | 'r' => {}
                        _ => s.other_assertion = true,
                    }
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                    continue;
                }
                '[' => {
                    pure = false;
                    i = skip_class(&c, i);
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                    continue;
                }
                '(' => {
                    pure = false;
                    if c.get(i + 1) == Some(&'?') {
                        flags = true;
                    }
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                    depth += 1;
                }
                ')' => {
                    pure = false;
                    depth = depth.saturating_sub(1);
                }
                '|' => {
                    pure = false;
                    alternation = true;
                }
                '^' => {
                    s.start_anchor = true;
                    if i == 0 {
                        leading_caret = true;
                    } else {
                        pure = false;
                    }
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                }
                '$' => {
                    s.end_anchor = true;
                    pure = false;
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                }
                '*' | '?' | '{' => {
                    // The previous atom is optional: drop it from the run, and the run ends.
                    pure = false;
                    if depth == 0 {
                        run.pop();
                        end_run(&mut run, &mut runs);
                    }
                    if ch == '{' {
                        while i < c.len() && c[i] != '}' {
                            i += 1;
                        }
                    }
                }
                '+' => {
                    pure = false;
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                }
                '.' => {
                    pure = false;
                    if depth == 0 {
                        end_run(&mut run, &mut runs);
                    }
                }
                _ => {
                    if depth == 0 {
                        if run.is_empty() && runs.is_empty() {
                            first_start = Some(i);
                        }
                        run.push(ch);
                    }
                }
            }
            i += 1;
        }
        end_run(&mut run, &mut runs);
        if alternation || flags || s.other_assertion {
            return s;
        }
        if pure && !runs.is_empty() {
            let text = runs.concat();
            s.literal = Some((leading_caret, text));
        }
        if leading_caret && first_start == Some(1) {
            s.anchored_prefix = runs.first().cloned();
        }
        s.runs = runs;
        s
    }
}

/// The index just past the character class opening at `i`.
fn skip_class(c: &[char], mut i: usize) -> usize {
    i += 1;
    if c.get(i) == Some(&'^') {
        i += 1;
    }
    if c.get(i) == Some(&']') {
        i += 1; // a `]` first in a class is a literal
    }
    let mut depth = 1;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_shapes() {
        let s = Shape::of("gemm");
        assert_eq!(s.literal, Some((false, "gemm".into())));
        let s = Shape::of("^nccl");
        assert_eq!(s.literal, Some((true, "nccl".into())));
        let s = Shape::of(r"^ncclKernel_\w+");
        assert_eq!(s.anchored_prefix.as_deref(), Some("ncclKernel_"));
        assert_eq!(s.literal, None);
        let s = Shape::of("sgemm_?x");
        assert_eq!(s.runs, ["sgemm", "x"]);
        let s = Shape::of("a|b");
        assert!(s.runs.is_empty() && s.literal.is_none());
        let s = Shape::of(r"cutlass::Kernel<");
        assert_eq!(s.literal, Some((false, "cutlass::Kernel<".into())));
        let s = Shape::of(r"x\.y");
        assert_eq!(s.literal, Some((false, "x.y".into())));
        let s = Shape::of(r"[ab]c(d)e");
        assert_eq!(s.runs, ["c", "e"]);
        let everything = |p: &str| Shape::of(p).matches_everything(&Regex::new(p).unwrap());
        assert!(everything(".*"));
        assert!(everything("^"));
        assert!(everything("(?s).*"));
        assert!(everything("x*$"));
        assert!(!everything("^$"));
        assert!(!everything(r"\b"));
        assert!(!everything(".+"));
        assert!(!everything("gemm"));
    }
}
