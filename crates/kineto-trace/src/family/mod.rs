//! Kernel families and budget buckets: an ordered table of name patterns, kept as data.
//!
//! A rule file (TOML) maps each **family** to a **bucket** and lists **rules** in order; a kernel
//! belongs to the family of the first rule whose pattern matches its demangled name (a regex search,
//! unanchored unless the pattern anchors itself). A file may end with a **fallback words** table
//! (`[[fallback]]`): a name no rule matches is split into the words of its function name
//! ([`crate::template::function_words`]) and placed by the first entry holding one of them, in a
//! family of the entry's own. What is left is *unmatched*: reported with its count and time, never
//! dropped. [`Rules::family_of`] returns a [`Label`] saying which of the three happened (the rule, the
//! fallback word, or neither), so every output can show how a kernel was placed.
//!
//! The built-in table ([`Rules::builtin`], `rules/default.toml`, described in
//! `docs/kernel-families.md`) covers PyTorch, CUDA and ROCm libraries and today's serving kernels;
//! another table, such as one for a serving engine's own kernels, is loaded with [`Rules::load`] (it
//! has a fallback only if it has `[[fallback]]` entries).
//!
//! ```toml
//! [families]              # family = "bucket"
//! nccl = "comm"
//! gemm_cublas = "gemm"
//! "comm?" = "comm"
//!
//! [[rule]]
//! family = "nccl"
//! pattern = '^nccl'
//! examples = ["ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"]
//!
//! [[fallback]]            # after every rule, first entry first
//! family = "comm?"
//! words = ["all_reduce", "dispatch", "*nccl"]
//! examples = ["void my_ep::dispatch_tokens<8>(int)"]
//! ```
//!
//! Validation at load, each failure naming the file, line and rule: a file with no rules; a
//! malformed rule table (a missing or unknown key, a value of the wrong type); a pattern that does
//! not compile; a rule whose family has no bucket; a family with no rule; an empty or reserved
//! (`unmatched`) name; and a rule that an earlier one shadows, detected when
//! * its pattern is the same text as an earlier rule's;
//! * an earlier pattern matches every name: it matches the empty string and its only anchors are all
//!   start anchors (`^`, `\A`) or all end anchors (`$`, `\z`) — `.*`, `^`, `(?s).*`, `a*`;
//! * an earlier pattern is a plain literal contained in a literal run every match of the later one
//!   must contain (`gemm` before `sgemm_`), or a `^`-anchored literal that the later pattern's own
//!   anchored literal prefix starts with (`^nccl` before `^ncclKernel`);
//! * one of its `examples` (names the rule is meant for) is matched by an earlier rule first, or by no
//!   part of its own pattern.
//!
//! The first three are checks on the pattern text and never reject a rule that can match; the
//! examples are the complete check for the names they list.
//!
//! Loading is linear in the file: each check runs through an index over the whole table (`shadow.rs`,
//! `prefilter.rs`, `words.rs`), never one rule against every earlier one, and line numbers come from
//! one index of the file's lines. The one exception is a pattern with no literal to index (`.+x` has
//! `x`, but `.+` has none): it is tried on every later example, as on every name.
//!
//! A fallback entry is refused, naming the file, line and entry, when its family has no bucket or is
//! also a rule's family (a placement by words must stay visible per family); when it has no words;
//! when a word has no letters or digits, or a `*` other than at one end of a single word; when a word
//! repeats an earlier one; and when one of its examples is not placed by it (no word of the example's
//! function name is the entry's, or an earlier entry takes it first). A family with neither a rule nor
//! a fallback entry is refused.

mod load;
mod prefilter;
mod shadow;
mod words;

use crate::model::Trace;
use prefilter::Prefilter;
use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use words::WordIndex;

/// The name reserved for kernels no rule matches, as a bucket in budgets.
pub const UNMATCHED: &str = "unmatched";

/// The built-in rule table, as text.
pub const BUILTIN_TOML: &str = include_str!("../../rules/default.toml");

/// A kernel family's index in its [`Rules`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FamilyId(pub(crate) u16);

/// A kernel family and the budget bucket it is counted in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// The family's name (`gemm_cublas`, `nccl`, `comm?`, …).
    pub name: String,
    /// The bucket (`gemm`, `comm`, …).
    pub bucket: String,
}

/// One rule: a pattern and the family of the kernels it matches first.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The family.
    pub family: FamilyId,
    /// The regex as written.
    pub pattern: String,
    /// Names the rule is meant for; each is checked at load to reach this rule.
    pub examples: Vec<String>,
    /// 1-based line of the pattern in the file.
    pub line: usize,
    /// Compiled at load for a rule file (a pattern that does not compile is an error naming its line);
    /// on first use for the built-in table, whose full load is a unit test, so that a command on a
    /// trace with a few libraries' kernels compiles only the rules those names can reach.
    regex: OnceLock<Regex>,
}

impl Rule {
    /// The compiled pattern.
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            // Only the built-in table's rules are compiled here (a file's are compiled at load), and the
            // unit test `builtin_table_loads` compiles every one of them.
            #[allow(clippy::expect_used)]
            load::compile(&self.pattern).expect("built-in patterns compile")
        })
    }
}

/// An ordered rule table: name patterns → family → bucket, first match wins.
#[derive(Debug, Clone)]
pub struct Rules {
    origin: PathBuf,
    families: Vec<Family>,
    rules: Vec<Rule>,
    fallback: Vec<FallbackEntry>,
    /// Every fallback word, indexed.
    index: WordIndex,
    /// Which rules can match a name.
    prefilter: Prefilter,
}

/// One entry of the fallback words table: kernels no rule matches whose function name has one of
/// these words belong to `family`.
#[derive(Debug, Clone)]
pub struct FallbackEntry {
    /// The family (one no rule uses, so a fallback placement stays visible per family).
    pub family: FamilyId,
    /// The words as written (`gemm`, `all_reduce`, `*gemm`).
    pub words: Vec<String>,
    /// Names the entry is meant for; each is checked at load to be placed by this entry.
    pub examples: Vec<String>,
    /// 1-based line of the `words` key in the file.
    pub line: usize,
}

/// How a kernel name got its family: by a rule, by a fallback word, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// The first rule matching the name, 0-based index into [`Rules::rules`].
    Rule {
        /// The family.
        family: FamilyId,
        /// The rule.
        rule: u16,
    },
    /// No rule matched; a word of the function name is in the fallback table.
    Fallback {
        /// The family.
        family: FamilyId,
        /// 0-based index into [`Rules::fallback`].
        entry: u16,
        /// 0-based index into that entry's `words`.
        word: u16,
    },
    /// Neither a rule nor a fallback word places the name.
    Unmatched,
}

/// The kind of a [`Label`], for outputs that show how each kernel was placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchKind {
    /// By a rule's pattern.
    Rule,
    /// By a word of the function name, from the fallback table.
    Fallback,
    /// Not placed.
    Unmatched,
}

impl MatchKind {
    /// `rule`, `fallback` or `unmatched`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Rule => "rule",
            MatchKind::Fallback => "fallback",
            MatchKind::Unmatched => UNMATCHED,
        }
    }
}

impl Label {
    /// The family; `None` when unmatched.
    pub fn family(self) -> Option<FamilyId> {
        match self {
            Label::Rule { family, .. } | Label::Fallback { family, .. } => Some(family),
            Label::Unmatched => None,
        }
    }

    /// How the family was found.
    pub fn kind(self) -> MatchKind {
        match self {
            Label::Rule { .. } => MatchKind::Rule,
            Label::Fallback { .. } => MatchKind::Fallback,
            Label::Unmatched => MatchKind::Unmatched,
        }
    }
}

impl Rules {
    /// Where the table came from (`<built-in>` or the file).
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    /// The rules, in matching order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The fallback words table, in matching order (empty when the file has none).
    pub fn fallback(&self) -> &[FallbackEntry] {
        &self.fallback
    }

    /// The families, by [`FamilyId`] (sorted by name).
    pub fn families(&self) -> &[Family] {
        &self.families
    }

    /// One family.
    pub fn family(&self, id: FamilyId) -> &Family {
        &self.families[id.0 as usize]
    }

    /// A family by name.
    pub fn find_family(&self, name: &str) -> Option<FamilyId> {
        self.families
            .iter()
            .position(|f| f.name == name)
            .map(|i| FamilyId(i as u16))
    }

    /// The 0-based index of the first rule matching `name`.
    pub fn rule_for(&self, name: &str) -> Option<usize> {
        // Only the rules whose literals the name holds can match it (`prefilter.rs`).
        self.prefilter
            .candidates(name, usize::MAX)
            .into_iter()
            .find(|&k| self.rules[k].regex().is_match(name))
    }

    /// The family of a kernel name and how it was found: the first rule whose pattern matches;
    /// else the first fallback entry with a word of the name's function name
    /// ([`crate::template::function_words`]); else [`Label::Unmatched`].
    pub fn family_of(&self, name: &str) -> Label {
        if let Some(i) = self.rule_for(name) {
            return Label::Rule {
                family: self.rules[i].family,
                rule: i as u16,
            };
        }
        if self.fallback.is_empty() {
            return Label::Unmatched;
        }
        let words = crate::template::function_words(name);
        match self.index.place(&words) {
            Some((entry, word)) => Label::Fallback {
                family: self.fallback[entry].family,
                entry: entry as u16,
                word: word as u16,
            },
            None => Label::Unmatched,
        }
    }

    /// The family of a kernel name, by rule or fallback word ([`Rules::family_of`] without the how).
    pub fn classify(&self, name: &str) -> Option<FamilyId> {
        self.family_of(name).family()
    }

    /// What placed a kernel, in words: `rule 12 (line 240)`, `fallback word gemm (line 500)` or
    /// `unmatched`.
    pub fn how(&self, label: Label) -> String {
        match label {
            Label::Rule { rule, .. } => {
                let line = self.rules.get(usize::from(rule)).map_or(0, |r| r.line);
                format!("rule {} (line {line})", usize::from(rule) + 1)
            }
            Label::Fallback { entry, word, .. } => {
                let e = self.fallback.get(usize::from(entry));
                let w = e.and_then(|e| e.words.get(usize::from(word)));
                format!(
                    "fallback word {} (line {})",
                    w.map_or("?", String::as_str),
                    e.map_or(0, |e| e.line)
                )
            }
            Label::Unmatched => UNMATCHED.to_string(),
        }
    }

    /// Classifies every kernel of a trace. Each distinct name is matched once (names are interned),
    /// so the cost is the number of distinct names times the rules, not the number of kernels.
    pub fn classify_kernels(&self, trace: &Trace) -> Classes {
        let mut by_name: Vec<Option<Label>> = vec![None; trace.distinct_names()];
        let of_kernel = trace
            .kernels
            .iter()
            .map(|k| {
                let slot = &mut by_name[k.name.0 as usize];
                *slot.get_or_insert_with(|| self.family_of(trace.name(k.name)))
            })
            .collect();
        Classes { of_kernel }
    }
}

/// The family of each kernel of a trace, and how it was found, by index into `Trace::kernels`.
#[derive(Debug, Clone, Default)]
pub struct Classes {
    of_kernel: Vec<Label>,
}

impl Classes {
    /// The family of kernel `index` (`None`: unmatched, or no such kernel).
    pub fn of(&self, index: usize) -> Option<FamilyId> {
        self.of_kernel.get(index).and_then(|l| l.family())
    }

    /// The label of kernel `index`: its family and how it was found ([`Label::Unmatched`] for no
    /// such kernel).
    pub fn label(&self, index: usize) -> Label {
        self.of_kernel
            .get(index)
            .copied()
            .unwrap_or(Label::Unmatched)
    }

    /// Number of kernels classified.
    pub fn len(&self) -> usize {
        self.of_kernel.len()
    }

    /// True when there are no kernels.
    pub fn is_empty(&self) -> bool {
        self.of_kernel.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in table passes every check a rule file gets (`Rules::builtin` skips the pattern and
    /// example checks on that ground), and the unchecked load is the same table: the same families,
    /// rules, fallback entries, every pattern compiling, and every example placed as the checked load
    /// places it.
    #[test]
    fn builtin_table_loads() {
        let checked = Rules::parse(BUILTIN_TOML, Path::new("<built-in>")).unwrap();
        let r = Rules::builtin();
        assert!(r.rules().len() >= 20);
        assert!(r.rules().iter().all(|x| !x.examples.is_empty()));
        assert_eq!(r.families(), checked.families());
        let rule = |x: &Rule| (x.family, x.pattern.clone(), x.examples.clone(), x.line);
        assert_eq!(
            r.rules().iter().map(rule).collect::<Vec<_>>(),
            checked.rules().iter().map(rule).collect::<Vec<_>>()
        );
        let entry = |x: &FallbackEntry| (x.family, x.words.clone(), x.examples.clone(), x.line);
        assert_eq!(
            r.fallback().iter().map(entry).collect::<Vec<_>>(),
            checked.fallback().iter().map(entry).collect::<Vec<_>>()
        );
        for x in r.rules() {
            assert!(
                x.regex.get().is_none(),
                "compiled before use: {}",
                x.pattern
            );
        }
        let examples = r.rules().iter().flat_map(|x| &x.examples);
        for ex in examples.chain(r.fallback().iter().flat_map(|x| &x.examples)) {
            assert_eq!(r.family_of(ex), checked.family_of(ex), "{ex}");
        }
        for x in r.rules() {
            x.regex();
        }
    }
}
