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
//! A fallback entry is refused, naming the file, line and entry, when its family has no bucket or is
//! also a rule's family (a placement by words must stay visible per family); when it has no words;
//! when a word has no letters or digits, or a `*` other than at one end of a single word; when a word
//! repeats an earlier one; and when one of its examples is not placed by it (no word of the example's
//! function name is the entry's, or an earlier entry takes it first). A family with neither a rule nor
//! a fallback entry is refused.

use crate::error::{Error, Result};
use crate::model::Trace;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The name reserved for kernels no rule matches, as a bucket in budgets.
pub const UNMATCHED: &str = "unmatched";

/// The built-in rule table, as text.
pub const BUILTIN_TOML: &str = include_str!("../rules/default.toml");

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
    regex: Regex,
}

/// An ordered rule table: name patterns → family → bucket, first match wins.
#[derive(Debug, Clone)]
pub struct Rules {
    origin: PathBuf,
    families: Vec<Family>,
    rules: Vec<Rule>,
    fallback: Vec<FallbackEntry>,
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
    matchers: Vec<WordMatch>,
}

/// A fallback word, compiled: a run of whole words in order (`all_reduce` → `all`, `reduce`), or one
/// word's start (`gemm*`) or end (`*gemm`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum WordMatch {
    Run(Vec<String>),
    Prefix(String),
    Suffix(String),
}

impl WordMatch {
    fn parse(word: &str) -> std::result::Result<WordMatch, String> {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    families: BTreeMap<String, toml::Spanned<String>>,
    #[serde(default, rename = "rule")]
    rules: Vec<RawRule>,
    #[serde(default)]
    fallback: Vec<RawFallback>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFallback {
    family: toml::Spanned<String>,
    words: toml::Spanned<Vec<String>>,
    #[serde(default)]
    examples: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    family: toml::Spanned<String>,
    pattern: toml::Spanned<String>,
    #[serde(default)]
    examples: Vec<String>,
}

/// Regexes are compiled with this size limit: a rule file is trusted less than code, and a pattern
/// that blows up should fail at load, not eat memory.
const REGEX_SIZE_LIMIT: usize = 1 << 22;

impl Rules {
    /// The built-in table (`rules/default.toml`, compiled in).
    pub fn builtin() -> Rules {
        // The table is part of the crate and a unit test loads it, so failing here is a build defect.
        #[allow(clippy::expect_used)]
        Rules::parse(BUILTIN_TOML, Path::new("<built-in>")).expect("built-in rules are valid")
    }

    /// The rule file given, or the built-in table when none is.
    pub fn load_or_builtin(path: Option<&Path>) -> Result<Rules> {
        match path {
            Some(p) => Rules::load(p),
            None => Ok(Rules::builtin()),
        }
    }

    /// Reads and validates a rule file.
    pub fn load(path: &Path) -> Result<Rules> {
        // A regular file, capped: a FIFO must not hang the load, nor /dev/zero grow without bound.
        let text = tool_io::read_input_string(path, "rule file", tool_io::caps::CONFIG)?;
        Rules::parse(&text, path)
    }

    /// Parses and validates rule-file text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Rules> {
        let fail = |line: Option<usize>, rule: Option<usize>, message: String| Error::Rules {
            file: origin.to_path_buf(),
            line,
            rule,
            message,
        };
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            fail(
                e.span().map(|s| line_of(s.start)),
                e.span().and_then(|s| rule_at(text, s.start)),
                e.message().trim().to_string(),
            )
        })?;
        if raw.rules.is_empty() {
            return Err(fail(
                None,
                None,
                "no rules: the file has no [[rule]] tables, so every kernel would be unmatched"
                    .into(),
            ));
        }

        let mut families = Vec::new();
        let mut family_ids: BTreeMap<&str, FamilyId> = BTreeMap::new();
        for (name, bucket) in &raw.families {
            let line = Some(line_of(bucket.span().start));
            check_name("family", name).map_err(|m| fail(line, None, m))?;
            check_name("bucket", bucket.get_ref())
                .map_err(|m| fail(line, None, format!("family `{name}`: {m}")))?;
            let id = u16::try_from(families.len())
                .map_err(|_| fail(line, None, "more than 65535 families".into()))?;
            family_ids.insert(name, FamilyId(id));
            families.push(Family {
                name: name.clone(),
                bucket: bucket.get_ref().clone(),
            });
        }

        let mut rules: Vec<Rule> = Vec::with_capacity(raw.rules.len());
        for (i, r) in raw.rules.iter().enumerate() {
            let n = Some(i + 1);
            let line = line_of(r.pattern.span().start);
            let fam = r.family.get_ref();
            let Some(&family) = family_ids.get(fam.as_str()) else {
                return Err(fail(
                    Some(line_of(r.family.span().start)),
                    n,
                    format!(
                        "family `{fam}` has no bucket: add `{fam} = \"<bucket>\"` to [families]"
                    ),
                ));
            };
            let pattern = r.pattern.get_ref();
            let regex = RegexBuilder::new(pattern)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    fail(
                        Some(line),
                        n,
                        format!("invalid pattern `{pattern}` (family `{fam}`): {e}"),
                    )
                })?;
            let rule = Rule {
                family,
                pattern: pattern.clone(),
                examples: r.examples.clone(),
                line,
                regex,
            };
            if let Some(why) = shadowed_by(&rules, &rule) {
                return Err(fail(
                    Some(line),
                    n,
                    format!("pattern `{pattern}` (family `{fam}`) can never match first: {why}",),
                ));
            }
            for ex in &rule.examples {
                let first = rules.iter().position(|e| e.regex.is_match(ex));
                let message = match first {
                    Some(k) => format!(
                        "example `{ex}` is matched first by rule {} (family `{}`, line {}): \
                         rule {} (family `{fam}`) is shadowed for it",
                        k + 1,
                        families[rules[k].family.0 as usize].name,
                        rules[k].line,
                        i + 1
                    ),
                    None if !rule.regex.is_match(ex) => {
                        format!("example `{ex}` does not match the rule's pattern `{pattern}`")
                    }
                    None => continue,
                };
                return Err(fail(Some(line), n, message));
            }
            rules.push(rule);
        }

        let mut fallback: Vec<FallbackEntry> = Vec::with_capacity(raw.fallback.len());
        for (i, r) in raw.fallback.iter().enumerate() {
            let line = line_of(r.words.span().start);
            let fam = r.family.get_ref();
            let at = |m: String| {
                fail(
                    Some(line),
                    None,
                    format!("fallback entry {} (family `{fam}`): {m}", i + 1),
                )
            };
            let Some(&family) = family_ids.get(fam.as_str()) else {
                return Err(at(format!(
                    "family `{fam}` has no bucket: add `{fam} = \"<bucket>\"` to [families]"
                )));
            };
            if let Some(r) = rules.iter().find(|r| r.family == family) {
                return Err(at(format!(
                    "rule at line {} also uses family `{fam}`: give the fallback a family of its own \
                     (such as `{fam}?`) so that what the words placed stays visible",
                    r.line
                )));
            }
            if r.words.get_ref().is_empty() {
                return Err(at("no words".into()));
            }
            let mut matchers = Vec::new();
            for w in r.words.get_ref() {
                let m = WordMatch::parse(w).map_err(&at)?;
                let earlier = fallback
                    .iter()
                    .flat_map(|e| e.words.iter().zip(&e.matchers))
                    .chain(r.words.get_ref().iter().zip(&matchers))
                    .find(|(_, em)| **em == m);
                if let Some((ew, _)) = earlier {
                    return Err(at(format!(
                        "word `{w}` is the same as the earlier word `{ew}`"
                    )));
                }
                matchers.push(m);
            }
            let entry = FallbackEntry {
                family,
                words: r.words.get_ref().clone(),
                examples: r.examples.clone(),
                line,
                matchers,
            };
            fallback.push(entry);
            for ex in &r.examples {
                let words = crate::template::function_words(ex);
                match place_by_words(&fallback, &words) {
                    Some((k, _)) if k == i => {}
                    Some((k, w)) => {
                        return Err(at(format!(
                            "example `{ex}` is placed first by fallback entry {} (family `{}`, word `{}`)",
                            k + 1,
                            families[fallback[k].family.0 as usize].name,
                            fallback[k].words[w]
                        )));
                    }
                    None => {
                        return Err(at(format!(
                            "example `{ex}` has none of the entry's words (its words: {})",
                            words.join(" ")
                        )));
                    }
                }
            }
        }

        for (k, f) in families.iter().enumerate() {
            let used = |id: FamilyId| id.0 as usize == k;
            if !rules.iter().any(|r| used(r.family)) && !fallback.iter().any(|e| used(e.family)) {
                let line = raw.families.get(&f.name).map(|b| line_of(b.span().start));
                return Err(fail(
                    line,
                    None,
                    format!("family `{}` has no rule and no fallback entry", f.name),
                ));
            }
        }
        Ok(Rules {
            origin: origin.to_path_buf(),
            families,
            rules,
            fallback,
        })
    }

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
        self.rules.iter().position(|r| r.regex.is_match(name))
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
        match place_by_words(&self.fallback, &words) {
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

/// The first fallback entry (and its first word) found among `words`.
fn place_by_words(table: &[FallbackEntry], words: &[String]) -> Option<(usize, usize)> {
    table.iter().enumerate().find_map(|(i, e)| {
        e.matchers
            .iter()
            .position(|m| m.is_in(words))
            .map(|w| (i, w))
    })
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

/// The 1-based rule whose table holds byte `offset` of `text`: the number of `[[rule]]` headers up
/// to the table header governing that offset, when that header is a `[[rule]]` one (`None` when the
/// offset is before every header or in another table). Headers are recognised line by line — a line
/// that is only `[name]` or `[[name]]` (spaces, quotes and a trailing comment allowed) — skipping the
/// inside of multi-line strings.
fn rule_at(text: &str, offset: usize) -> Option<usize> {
    let mut rules = 0usize;
    let mut current: Option<usize> = None;
    let mut in_string: Option<&str> = None;
    let mut start = 0usize;
    for line in text.split_inclusive('\n') {
        if start > offset {
            break;
        }
        start += line.len();
        if let Some(delim) = in_string {
            if line.matches(delim).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        match header(line) {
            Some((true, name)) if name == "rule" => {
                rules += 1;
                current = Some(rules);
            }
            Some(_) => current = None,
            None => {
                for delim in ["\"\"\"", "'''"] {
                    if line.matches(delim).count() % 2 == 1 {
                        in_string = Some(delim);
                        break;
                    }
                }
            }
        }
    }
    current
}

/// A table header line: (is an array-of-tables header, the table name without quotes or spaces).
fn header(line: &str) -> Option<(bool, String)> {
    let l = line.trim();
    let end = l.rfind(']')?;
    let rest = l[end + 1..].trim_start();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    let l = &l[..=end];
    let (array, inner) = if let Some(r) = l.strip_prefix("[[") {
        (true, r.strip_suffix("]]")?)
    } else {
        (false, l.strip_prefix('[')?.strip_suffix(']')?)
    };
    let name: String = inner
        .trim()
        .chars()
        .filter(|c| !matches!(c, '"' | '\'' | ' ' | '\t'))
        .collect();
    if name.is_empty() || name.contains(['[', ']', ',', '=']) {
        return None;
    }
    Some((array, name))
}

fn check_name(what: &str, name: &str) -> std::result::Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!("empty {what} name"));
    }
    if name.trim() != name {
        return Err(format!(
            "{what} name `{name}` has leading or trailing spaces"
        ));
    }
    if name == UNMATCHED {
        return Err(format!(
            "`{UNMATCHED}` is reserved for kernels no rule matches; it cannot be a {what}"
        ));
    }
    Ok(())
}

/// Why an earlier rule takes every name `rule` could match, if the pattern text shows it.
fn shadowed_by(earlier: &[Rule], rule: &Rule) -> Option<String> {
    let later = Shape::of(&rule.pattern);
    for (k, e) in earlier.iter().enumerate() {
        let by = format!("rule {} (`{}`, line {})", k + 1, e.pattern, e.line);
        if e.pattern == rule.pattern {
            return Some(format!("{by} has the same pattern"));
        }
        let shape = Shape::of(&e.pattern);
        if shape.matches_everything(&e.regex) {
            return Some(format!("{by} matches every name"));
        }
        if let Some((anchored, lit)) = &shape.literal {
            let covered = if *anchored {
                later
                    .anchored_prefix
                    .as_deref()
                    .is_some_and(|p| p.starts_with(lit.as_str()))
            } else {
                later.runs.iter().any(|r| r.contains(lit.as_str()))
            };
            if covered {
                return Some(format!(
                    "{by} matches the literal `{lit}`, which every name this pattern matches contains{}",
                    if *anchored { " at its start" } else { "" }
                ));
            }
        }
    }
    None
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
    fn builtin_table_loads() {
        let r = Rules::builtin();
        assert!(r.rules().len() >= 20);
        assert!(r.rules().iter().all(|x| !x.examples.is_empty()));
    }

    #[test]
    fn table_headers_and_the_rule_at_an_offset() {
        assert_eq!(header("[[rule]]\n"), Some((true, "rule".into())));
        assert_eq!(
            header("  [[ \"rule\" ]]  # x\n"),
            Some((true, "rule".into()))
        );
        assert_eq!(header("[families]"), Some((false, "families".into())));
        assert_eq!(header("[[rule]"), None);
        assert_eq!(header("[\"x\"],"), None);
        assert_eq!(header("[1, 2]"), None);
        assert_eq!(header("pattern = '[[rule]]'"), None);
        let text =
            "[families]\na = \"b\"\n[[rule]]\nx = 1\n[[rule]]\ny = '''\n[[rule]]\n'''\n[other]\n";
        let at = |needle: &str| rule_at(text, text.find(needle).unwrap());
        assert_eq!(at("a ="), None);
        assert_eq!(at("x ="), Some(1));
        assert_eq!(at("y ="), Some(2));
        assert_eq!(at("'''\n[other]"), Some(2));
        assert_eq!(at("[other]"), None);
        assert_eq!(rule_at(text, 0), None);
    }

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
