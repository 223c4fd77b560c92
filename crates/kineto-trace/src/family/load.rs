//! Reading a rule file: the TOML tables, every check at load (each error names the file, line and
//! rule or fallback entry), the built-in table.

use super::prefilter::Prefilter;
use super::shadow::ShadowIndex;
use super::words::{WordIndex, WordMatch};
use super::{BUILTIN_TOML, FallbackEntry, Family, FamilyId, Rule, Rules, UNMATCHED};
use crate::error::{Error, Result};
use regex::RegexBuilder;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

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
    ///
    /// Read once per process and without the load's checks on patterns and examples: the table is part
    /// of the crate and the unit test `builtin_table_loads` gives it every check of [`Rules::parse`]
    /// (and compares the two loads), so what those checks cost (compiling every pattern, matching every
    /// example) is not paid by each command. Its patterns are compiled on first use.
    pub fn builtin() -> Rules {
        static BUILTIN: OnceLock<Rules> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                // Failing here is a build defect: the unit test loads the same text with every check.
                #[allow(clippy::expect_used)]
                Rules::read(BUILTIN_TOML, Path::new("<built-in>"), Checks::Trusted)
                    .expect("built-in rules are valid")
            })
            .clone()
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
        Rules::read(text, origin, Checks::All)
    }

    fn read(text: &str, origin: &Path, checks: Checks) -> Result<Rules> {
        let all = checks == Checks::All;
        let ld = Loader {
            origin,
            lines: Lines::of(text),
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            ld.fail(
                e.span().map(|s| ld.line_of(s.start)),
                e.span().and_then(|s| rule_at(text, s.start)),
                e.message().trim().to_string(),
            )
        })?;
        if raw.rules.is_empty() {
            return Err(ld.fail(
                None,
                None,
                "no rules: the file has no [[rule]] tables, so every kernel would be unmatched"
                    .into(),
            ));
        }
        let (families, family_ids) = ld.families(&raw.families)?;
        let rules = ld.rules(&raw.rules, &family_ids, all)?;
        let prefilter = Prefilter::new(rules.iter().map(|r| r.pattern.as_str()));
        // The shadow and example checks (the built-in table's are a unit test's).
        if all {
            ld.check_rules(&rules, &families, &prefilter)?;
        }
        let (fallback, index) = ld.fallback(&raw.fallback, &family_ids, &rules, &families, all)?;
        ld.check_every_family_used(&raw.families, &families, &rules, &fallback)?;
        Ok(Rules {
            origin: origin.to_path_buf(),
            families,
            rules,
            fallback,
            index,
            prefilter,
        })
    }
}

/// A rule file being loaded: where it is from and where its lines start, for the errors.
struct Loader<'a> {
    origin: &'a Path,
    lines: Lines,
}

impl Loader<'_> {
    /// An error about the file, at a line and rule where known.
    fn fail(&self, line: Option<usize>, rule: Option<usize>, message: String) -> Error {
        Error::Rules {
            file: self.origin.to_path_buf(),
            line,
            rule,
            message,
        }
    }

    /// The 1-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.lines.line(offset)
    }

    /// The `[families]` table, each name and bucket checked, with each family's id.
    fn families<'r>(
        &self,
        raw: &'r BTreeMap<String, toml::Spanned<String>>,
    ) -> Result<(Vec<Family>, BTreeMap<&'r str, FamilyId>)> {
        let mut families = Vec::new();
        let mut family_ids: BTreeMap<&str, FamilyId> = BTreeMap::new();
        for (name, bucket) in raw {
            let line = Some(self.line_of(bucket.span().start));
            check_name("family", name).map_err(|m| self.fail(line, None, m))?;
            check_name("bucket", bucket.get_ref())
                .map_err(|m| self.fail(line, None, format!("family `{name}`: {m}")))?;
            let id = u16::try_from(families.len())
                .map_err(|_| self.fail(line, None, "more than 65535 families".into()))?;
            family_ids.insert(name, FamilyId(id));
            families.push(Family {
                name: name.clone(),
                bucket: bucket.get_ref().clone(),
            });
        }
        Ok((families, family_ids))
    }

    /// Every rule, its family looked up and (with `all` checks) its pattern compiled. They are checked
    /// against each other afterwards ([`Loader::check_rules`]) through indexes over the whole table: each
    /// check is linear in the table, never a rule against every earlier rule.
    fn rules(
        &self,
        raw: &[RawRule],
        family_ids: &BTreeMap<&str, FamilyId>,
        all: bool,
    ) -> Result<Vec<Rule>> {
        let mut rules: Vec<Rule> = Vec::with_capacity(raw.len());
        for (i, r) in raw.iter().enumerate() {
            let n = Some(i + 1);
            let line = self.line_of(r.pattern.span().start);
            let fam = r.family.get_ref();
            let Some(&family) = family_ids.get(fam.as_str()) else {
                return Err(self.fail(
                    Some(self.line_of(r.family.span().start)),
                    n,
                    format!(
                        "family `{fam}` has no bucket: add `{fam} = \"<bucket>\"` to [families]"
                    ),
                ));
            };
            let pattern = r.pattern.get_ref();
            work(pattern.len());
            let regex = OnceLock::new();
            if all {
                let compiled = compile(pattern).map_err(|e| {
                    self.fail(
                        Some(line),
                        n,
                        format!("invalid pattern `{pattern}` (family `{fam}`): {e}"),
                    )
                })?;
                let _ = regex.set(compiled);
            }
            rules.push(Rule {
                family,
                pattern: pattern.clone(),
                examples: r.examples.clone(),
                line,
                regex,
            });
        }
        Ok(rules)
    }

    /// Refuses a rule that can never match first (an earlier one shadows it) and an example its rule
    /// does not match first.
    fn check_rules(
        &self,
        rules: &[Rule],
        families: &[Family],
        prefilter: &Prefilter,
    ) -> Result<()> {
        let shadows = ShadowIndex::new(rules);
        for (i, rule) in rules.iter().enumerate() {
            let (n, line, fam) = (
                Some(i + 1),
                rule.line,
                &families[rule.family.0 as usize].name,
            );
            let pattern = &rule.pattern;
            if let Some(why) = shadows.shadowed(rules, i) {
                return Err(self.fail(
                    Some(line),
                    n,
                    format!("pattern `{pattern}` (family `{fam}`) can never match first: {why}",),
                ));
            }
            for ex in &rule.examples {
                work(ex.len());
                // The first of the rules up to this one that can match the example (the prefilter's
                // candidates) and does.
                let first = prefilter
                    .candidates(ex, i + 1)
                    .into_iter()
                    .find(|&k| rules[k].regex().is_match(ex));
                let message = match first {
                    Some(k) if k < i => format!(
                        "example `{ex}` is matched first by rule {} (family `{}`, line {}): \
                         rule {} (family `{fam}`) is shadowed for it",
                        k + 1,
                        families[rules[k].family.0 as usize].name,
                        rules[k].line,
                        i + 1
                    ),
                    Some(k) if k == i => continue,
                    _ => {
                        format!("example `{ex}` does not match the rule's pattern `{pattern}`")
                    }
                };
                return Err(self.fail(Some(line), n, message));
            }
        }
        Ok(())
    }

    /// The fallback entries and their word index: each entry's family its own (no rule's), its words
    /// unseen before, and (with `all` checks) its examples placed by it first.
    fn fallback(
        &self,
        raw: &[RawFallback],
        family_ids: &BTreeMap<&str, FamilyId>,
        rules: &[Rule],
        families: &[Family],
        all: bool,
    ) -> Result<(Vec<FallbackEntry>, WordIndex)> {
        // The line of the first rule of each family, for a fallback entry that reuses one.
        let mut rule_of_family: BTreeMap<FamilyId, usize> = BTreeMap::new();
        for r in rules {
            rule_of_family.entry(r.family).or_insert(r.line);
        }
        let mut fallback: Vec<FallbackEntry> = Vec::with_capacity(raw.len());
        let mut index = WordIndex::default();
        let mut seen_words: FxHashMap<WordMatch, &str> = FxHashMap::default();
        for (i, r) in raw.iter().enumerate() {
            let line = self.line_of(r.words.span().start);
            let fam = r.family.get_ref();
            let at = |m: String| {
                self.fail(
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
            if let Some(rule_line) = rule_of_family.get(&family) {
                return Err(at(format!(
                    "rule at line {rule_line} also uses family `{fam}`: give the fallback a family of \
                     its own (such as `{fam}?`) so that what the words placed stays visible"
                )));
            }
            if r.words.get_ref().is_empty() {
                return Err(at("no words".into()));
            }
            for (k, w) in r.words.get_ref().iter().enumerate() {
                work(w.len());
                let m = WordMatch::parse(w).map_err(&at)?;
                if let Some(ew) = seen_words.get(&m) {
                    return Err(at(format!(
                        "word `{w}` is the same as the earlier word `{ew}`"
                    )));
                }
                index.insert(&m, i, k);
                seen_words.insert(m, w);
            }
            fallback.push(FallbackEntry {
                family,
                words: r.words.get_ref().clone(),
                examples: r.examples.clone(),
                line,
            });
            if all {
                check_fallback_examples(i, &r.examples, &index, &fallback, families).map_err(at)?;
            }
        }
        Ok((fallback, index))
    }

    /// Refuses a family that no rule and no fallback entry uses.
    fn check_every_family_used(
        &self,
        raw: &BTreeMap<String, toml::Spanned<String>>,
        families: &[Family],
        rules: &[Rule],
        fallback: &[FallbackEntry],
    ) -> Result<()> {
        let mut used = vec![false; families.len()];
        for id in rules
            .iter()
            .map(|r| r.family)
            .chain(fallback.iter().map(|e| e.family))
        {
            used[id.0 as usize] = true;
        }
        if let Some(k) = used.iter().position(|u| !u) {
            let f = &families[k];
            let line = raw.get(&f.name).map(|b| self.line_of(b.span().start));
            return Err(self.fail(
                line,
                None,
                format!("family `{}` has no rule and no fallback entry", f.name),
            ));
        }
        Ok(())
    }
}

/// Why an example of fallback entry `i` is not placed by that entry first (the index holding the entries
/// up to `i`), if it is not.
fn check_fallback_examples(
    i: usize,
    examples: &[String],
    index: &WordIndex,
    fallback: &[FallbackEntry],
    families: &[Family],
) -> std::result::Result<(), String> {
    for ex in examples {
        work(ex.len());
        let words = crate::template::function_words(ex);
        match index.place(&words) {
            Some((k, _)) if k == i => {}
            Some((k, w)) => {
                return Err(format!(
                    "example `{ex}` is placed first by fallback entry {} (family `{}`, word `{}`)",
                    k + 1,
                    families[fallback[k].family.0 as usize].name,
                    fallback[k].words[w]
                ));
            }
            None => {
                return Err(format!(
                    "example `{ex}` has none of the entry's words (its words: {})",
                    words.join(" ")
                ));
            }
        }
    }
    Ok(())
}

/// How much of the load's checking a table gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checks {
    /// Every check `Rules::parse` documents; patterns compiled at load.
    All,
    /// The built-in table, checked in full by a unit test: the table's structure (keys, families,
    /// buckets, words) still, but no pattern compiled, shadowed rule or example looked for.
    Trusted,
}

/// A rule's pattern, compiled with the load's size limit.
pub(super) fn compile(pattern: &str) -> std::result::Result<regex::Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// The start of each line of a text, for line numbers in time logarithmic in its size (counting
/// newlines from the start for every error and rule would make loading quadratic).
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &str) -> Lines {
        work(text.len());
        Lines(memchr::memchr_iter(b'\n', text.as_bytes()).collect())
    }

    /// The 1-based line holding byte `offset`.
    fn line(&self, offset: usize) -> usize {
        work(usize::BITS as usize - self.0.len().leading_zeros() as usize);
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

#[cfg(test)]
std::thread_local! {
    /// Units of work done on this thread by loading rule tables and placing names by words: bytes of
    /// text, pattern, word or name examined, steps of a search.
    static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` units of load work, in tests only: the operation count that shows the load is linear in
/// the file's size (`loading_is_linear_in_the_table`).
#[inline]
pub(super) fn work(n: usize) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid table of `n` rules and `n` fallback entries, each with one example: distinct literal
    /// prefixes and words, so nothing shadows anything.
    fn table(n: usize) -> String {
        // Four letters for `i`, so that no word of one entry ends another's.
        let letters = |i: usize| -> String {
            (0..4)
                .map(|k| char::from(b'a' + (i / 26usize.pow(k) % 26) as u8))
                .collect()
        };
        let mut t = String::from("[families]\n");
        for i in 0..n {
            t.push_str(&format!(
                "f{i} = \"b{}\"\n\"fb{i}?\" = \"b{}\"\n",
                i % 7,
                i % 5
            ));
        }
        for i in 0..n {
            t.push_str(&format!(
                "[[rule]]\nfamily = \"f{i}\"\npattern = '^lib{i}_kernel_\\w+'\nexamples = [\"lib{i}_kernel_fwd<8>(int)\"]\n\
                 [[rule]]\nfamily = \"f{i}\"\npattern = 'other{i}x'\nexamples = [\"void other{i}x(int)\"]\n"
            ));
        }
        for i in 0..n {
            t.push_str(&format!(
                "[[fallback]]\nfamily = \"fb{i}?\"\nwords = [\"w{i}x\", \"*q{}\"]\nexamples = [\"void my::w{i}x_run(int)\"]\n",
                letters(i)
            ));
        }
        t
    }

    fn work_to_load(text: &str) -> u64 {
        WORK.with(|w| w.set(0));
        let rules = Rules::parse(text, Path::new("big.toml")).expect("a valid table");
        assert!(!rules.rules().is_empty());
        WORK.with(|w| w.get())
    }

    /// Loading is linear in the table: four times the rules is about four times the work (a quadratic
    /// load — every rule against every earlier one, line numbers counted from the start each time — is
    /// sixteen times), and the work is a small multiple of the file's bytes. The table has every kind
    /// of check: anchored and unanchored literals, examples, fallback words of both kinds.
    #[test]
    fn loading_is_linear_in_the_table() {
        let (small, large) = (table(200), table(800));
        let (a, b) = (work_to_load(&small), work_to_load(&large));
        assert!(
            b <= 5 * a,
            "work {a} for {} bytes, {b} for {} bytes: not linear",
            small.len(),
            large.len()
        );
        assert!(
            b <= 16 * large.len() as u64,
            "work {b} for {} bytes",
            large.len()
        );
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
}
