//! Reading a rule file: the TOML tables, every check at load (each error names the file, line and
//! rule or fallback entry), the built-in table.

use super::shadow::shadowed_by;
use super::words::{WordMatch, place_by_words};
use super::{BUILTIN_TOML, FallbackEntry, Family, FamilyId, Rule, Rules, UNMATCHED};
use crate::error::{Error, Result};
use regex::RegexBuilder;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

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
