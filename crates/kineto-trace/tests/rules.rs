//! Rule tables: a valid one classifies first-match-wins; each kind of bad table is refused with an
//! error that names the file, the line and the rule.

use kineto_trace::Error;
use kineto_trace::family::{BUILTIN_TOML, Rules};
use std::path::Path;

fn parse(text: &str) -> Result<Rules, Error> {
    Rules::parse(text, Path::new("my-rules.toml"))
}

/// The error text for a table, which must be refused.
fn refused(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => {
            let s = e.to_string();
            assert!(
                s.starts_with("my-rules.toml"),
                "error does not name the file: {s}"
            );
            s
        }
    }
}

const HEAD: &str = "[families]\ngemm = \"gemm\"\ncomm = \"comm\"\n";

#[test]
fn first_match_wins_and_families_map_to_buckets() {
    let r = parse(&format!(
        "{HEAD}\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n\n[[rule]]\nfamily = \"gemm\"\npattern = 'gemm|Reduce'\n"
    ))
    .unwrap();
    let fam = |n: &str| r.classify(n).map(|f| r.family(f).name.as_str());
    assert_eq!(fam("ncclKernel_AllReduce_RING_LL_Sum_float"), Some("comm"));
    assert_eq!(fam("volta_sgemm_128x64_nn"), Some("gemm"));
    assert_eq!(fam("splitKReduce"), Some("gemm"));
    assert_eq!(fam("elementwise"), None);
    let g = r.find_family("gemm").unwrap();
    assert_eq!(r.family(g).bucket, "gemm");
    assert_eq!(r.rules().len(), 2);
    assert_eq!(r.rules()[1].line, 11);
    assert_eq!(r.origin(), Path::new("my-rules.toml"));
}

#[test]
fn an_invalid_pattern() {
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'gemm('\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n"
    ));
    assert!(
        e.starts_with("my-rules.toml:6: rule 1: invalid pattern `gemm(`"),
        "{e}"
    );
}

#[test]
fn a_family_without_a_bucket() {
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'gemm'\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n[[rule]]\nfamily = \"attn\"\npattern = 'flash'\n"
    ));
    assert!(
        e.starts_with("my-rules.toml:11: rule 3: family `attn` has no bucket"),
        "{e}"
    );
}

#[test]
fn a_family_without_a_rule() {
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'gemm'\n"
    ));
    assert!(
        e.starts_with("my-rules.toml:3: family `comm` has no rule"),
        "{e}"
    );
}

#[test]
fn the_same_pattern_twice() {
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'gemm'\n[[rule]]\nfamily = \"comm\"\npattern = 'gemm'\n"
    ));
    assert!(e.starts_with("my-rules.toml:9: rule 2: pattern `gemm` (family `comm`) can never match first: rule 1 (`gemm`, line 6) has the same pattern"), "{e}");
}

#[test]
fn after_a_pattern_that_matches_everything() {
    for catch_all in [".*", "^", "(?s).*", "x*", "", "a*$"] {
        let e = refused(&format!(
            "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = '{catch_all}'\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n"
        ));
        assert!(
            e.contains("rule 2") && e.contains("matches every name"),
            "{catch_all}: {e}"
        );
    }
    // Last, a catch-all is fine; and patterns that only look like one are not refused.
    parse(&format!("{HEAD}[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n[[rule]]\nfamily = \"gemm\"\npattern = '.*'\n")).unwrap();
    for not_all in ["^$", r"\b", ".+", "^a*$"] {
        parse(&format!(
            "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = '{not_all}'\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n"
        ))
        .unwrap_or_else(|e| panic!("{not_all}: {e}"));
    }
}

#[test]
fn after_a_literal_every_match_contains() {
    // `gemm` is in every name `sgemm_\d+` matches.
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'gemm'\n[[rule]]\nfamily = \"comm\"\npattern = 'sgemm_\\d+'\n"
    ));
    assert!(
        e.contains("rule 2") && e.contains("the literal `gemm`"),
        "{e}"
    );
    // `^nccl` is the start of every name `^ncclKernel` matches.
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"comm\"\npattern = '^nccl'\n[[rule]]\nfamily = \"gemm\"\npattern = '^ncclKernel_\\w+'\n"
    ));
    assert!(e.contains("rule 2") && e.contains("at its start"), "{e}");
    // Not shadowed: optional characters, alternations, an anchored literal vs an unanchored one.
    for (first, second) in [
        ("gemm", "ge?mm"),
        ("gemm", "gemv|gemm"),
        ("^gemm", "xgemm"),
        ("gemm", "(?i)GEMM"),
    ] {
        parse(&format!(
            "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = '{first}'\n[[rule]]\nfamily = \"comm\"\npattern = '{second}'\n"
        ))
        .unwrap_or_else(|e| panic!("{first} / {second}: {e}"));
    }
}

#[test]
fn an_example_another_rule_takes_first() {
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'Reduce|gemm'\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\nexamples = [\"ncclKernel_AllReduce\"]\n"
    ));
    assert!(
        e.starts_with("my-rules.toml:9: rule 2: example `ncclKernel_AllReduce` is matched first by rule 1 (family `gemm`, line 6)"),
        "{e}"
    );
}

#[test]
fn an_example_its_own_rule_does_not_match() {
    let e = refused(&format!(
        "{HEAD}[[rule]]\nfamily = \"gemm\"\npattern = 'gemm'\nexamples = [\"volta_hgemv\"]\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\n"
    ));
    assert!(
        e.contains("rule 1: example `volta_hgemv` does not match the rule's pattern `gemm`"),
        "{e}"
    );
}

#[test]
fn names_that_cannot_be_used() {
    let e = refused(
        "[families]\nunmatched = \"other\"\n[[rule]]\nfamily = \"unmatched\"\npattern = 'x'\n",
    );
    assert!(e.contains("`unmatched` is reserved"), "{e}");
    let e =
        refused("[families]\ngemm = \"unmatched\"\n[[rule]]\nfamily = \"gemm\"\npattern = 'x'\n");
    assert!(e.contains("family `gemm`: `unmatched` is reserved"), "{e}");
    let e = refused("[families]\ngemm = \"\"\n[[rule]]\nfamily = \"gemm\"\npattern = 'x'\n");
    assert!(e.contains("family `gemm`: empty bucket name"), "{e}");
}

#[test]
fn toml_faults_name_the_line() {
    let e = refused("[families]\ngemm = \"gemm\"\n[[rule]]\nfamily = \"gemm\"\npatern = 'x'\n");
    assert!(
        e.starts_with("my-rules.toml:5: rule 1: unknown field `patern`"),
        "{e}"
    );
    let e = refused("[families]\ngemm = \"gemm\"\n[[rule]\n");
    assert!(e.starts_with("my-rules.toml:3:"), "{e}");
    let e = refused("[families]\ngemm = \"gemm\"\n[[rule]]\nfamily = \"gemm\"\n");
    assert!(e.contains("missing field `pattern`"), "{e}");
}

/// A malformed rule table (a missing key, an unknown key, a value of the wrong type) names the rule
/// it is in, counted by `[[rule]]` headers; a fault outside every rule names none.
#[test]
fn toml_faults_in_a_rule_name_the_rule() {
    let rule1 = "[[rule]]\nfamily = \"gemm\"\npattern = 'gemm'\n";
    // Rule 2 starts on line 7 (HEAD is three lines, rule 1 three more).
    for (bad, last_line, what) in [
        (
            "[[rule]]\nfamily = \"comm\"\n",
            8,
            "missing field `pattern`",
        ),
        (
            "[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\nexmples = [\"nccl\"]\n",
            10,
            "unknown field `exmples`",
        ),
        (
            "[[rule]]\nfamily = \"comm\"\npattern = 5\n",
            9,
            "invalid type",
        ),
        (
            "[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\nexamples = \"ncclKernel\"\n",
            10,
            "invalid type",
        ),
    ] {
        let e = refused(&format!("{HEAD}{rule1}{bad}"));
        assert!(e.contains("rule 2: "), "{bad}: {e}");
        assert!(e.contains(what), "{bad}: {e}");
        // The line is that of the fault or, for a missing key, one in the rule's table.
        let n: usize = e
            .strip_prefix("my-rules.toml:")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no line: {e}"));
        assert!((7..=last_line).contains(&n), "{bad}: line {n}: {e}");
    }
    // The same fault in the first rule, with a comment and spaces in its header, names rule 1; a
    // `[[rule]]` line inside a multi-line string is not a header.
    let e = refused(&format!(
        "{HEAD}[[ rule ]]  # the first\nfamily = \"gemm\"\nexamples = ['''\n[[rule]]\n''']\npatern = 'x'\n{rule1}"
    ));
    assert!(e.contains("rule 1: unknown field `patern`"), "{e}");
    let e = refused(&format!(
        "{HEAD}{rule1}[[\"rule\"]]\nfamily = \"comm\"\npattern = '''\n[[rule]]\n'''\n[[rule]]\nfamily = \"comm\"\npattern = 'nccl'\nexmples = []\n"
    ));
    assert!(e.contains("rule 3: unknown field `exmples`"), "{e}");
    // A fault in [families], after the rules, is in no rule.
    let e = refused(&format!("{rule1}[families]\ngemm = 5\n"));
    assert!(e.starts_with("my-rules.toml:5: "), "{e}");
    assert!(!e.contains(": rule "), "{e}");
    // An unknown top-level table after the rules is not put in the last rule.
    let e = refused(&format!("{HEAD}{rule1}[other]\nx = 1\n"));
    assert!(e.contains("unknown field `other`"), "{e}");
    assert!(!e.contains(": rule "), "{e}");
}

/// A table with no rules would leave every kernel unmatched: refused.
#[test]
fn a_table_without_rules() {
    for text in ["", "# nothing\n", HEAD] {
        let e = refused(text);
        assert!(e.starts_with("my-rules.toml: no rules"), "{text:?}: {e}");
    }
}

#[test]
fn a_missing_file_is_named() {
    let e = Rules::load(Path::new("/nonexistent/rules.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("rule file /nonexistent/rules.toml:"), "{e}");
}

#[test]
fn the_builtin_table_loads_from_a_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("default.toml");
    std::fs::write(&p, BUILTIN_TOML).unwrap();
    let r = Rules::load(&p).unwrap();
    assert_eq!(r.rules().len(), Rules::builtin().rules().len());
    // Each built-in rule's examples reach it (checked at load), and every family has a bucket.
    for rule in r.rules() {
        for ex in &rule.examples {
            assert_eq!(r.classify(ex), Some(rule.family));
        }
    }
}

/// A table that is the built-in one with one rule moved ahead of a more specific one is refused:
/// the examples catch an order mistake the pattern text alone cannot show.
#[test]
fn reordering_the_builtin_table_is_caught() {
    let moved = BUILTIN_TOML.replacen(
        "[[rule]]\nfamily = \"elementwise\"",
        "[[rule]]\nfamily = \"elementwise_moved\"",
        1,
    );
    // Put a copy of the generic elementwise rule first.
    let first_rule = moved.find("[[rule]]").unwrap();
    let text = format!(
        "{}[[rule]]\nfamily = \"elementwise_first\"\npattern = 'elementwise_kernel'\n\n{}",
        &moved[..first_rule].replace(
            "[families]\n",
            "[families]\nelementwise_first = \"elementwise\"\nelementwise_moved = \"elementwise\"\n"
        ),
        &moved[first_rule..]
    );
    let e = Rules::parse(&text, Path::new("reordered.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is matched first by rule 1 (family `elementwise_first`"),
        "{e}"
    );
}

const WORDS_HEAD: &str = "[families]\ngemm = \"gemm\"\n\"gemm?\" = \"gemm\"\n\"comm?\" = \"comm\"\n\
                          [[rule]]\nfamily = \"gemm\"\npattern = '^volta_sgemm'\n";

/// The fallback words place what no rule matched, first entry first, and the label says how.
#[test]
fn the_fallback_places_by_words_in_table_order() {
    use kineto_trace::family::{Label, MatchKind};
    let r = parse(&format!(
        "{WORDS_HEAD}[[fallback]]\nfamily = \"gemm?\"\nwords = [\"gemm\", \"*mm\", \"matmul*\"]\n\
         [[fallback]]\nfamily = \"comm?\"\nwords = [\"all_reduce\", \"dispatch\"]\n"
    ))
    .unwrap();
    let fam = |n: &str| {
        let l = r.family_of(n);
        (l.family().map(|f| r.family(f).name.clone()), l.kind())
    };
    let by_words = |f: &str| (Some(f.to_string()), MatchKind::Fallback);
    assert_eq!(
        fam("volta_sgemm_128x64_nn"),
        (Some("gemm".into()), MatchKind::Rule)
    );
    // A run of words matches across `_`, camelCase and `::`.
    assert_eq!(fam("void x::OneShotAllReduce<8>(int)"), by_words("comm?"));
    assert_eq!(fam("void x::one_shot_all_reduce(int)"), by_words("comm?"));
    // The earlier entry wins: gemm words outrank comm words in the same name.
    assert_eq!(fam("void x::gemm_all_reduce_fused(int)"), by_words("gemm?"));
    // Word ends and starts.
    assert_eq!(fam("void x::bmm_tile(int)"), by_words("gemm?"));
    assert_eq!(fam("_matmulFP8Kernel"), by_words("gemm?"));
    // Only the function name counts, not template arguments or parameters.
    assert_eq!(
        fam("void x::foo<gemm>(dispatch*)"),
        (None, MatchKind::Unmatched)
    );
    // Whole words only: `reduce` alone is not `all_reduce`, `gemma` is not `gemm`.
    assert_eq!(fam("void x::reduce(int)"), (None, MatchKind::Unmatched));
    assert_eq!(fam("void x::gemma_norm(int)"), (None, MatchKind::Unmatched));
    let l = r.family_of("void x::dispatch(int)");
    assert_eq!(
        l,
        Label::Fallback {
            family: r.find_family("comm?").unwrap(),
            entry: 1,
            word: 1
        }
    );
    assert_eq!(r.how(l), "fallback word dispatch (line 13)");
    assert_eq!(r.fallback().len(), 2);
    assert_eq!(r.fallback()[1].words, ["all_reduce", "dispatch"]);
}

/// Each kind of bad fallback entry is refused, naming the file, the line and the entry.
#[test]
fn bad_fallback_entries() {
    let entry = |family: &str, words: &str, examples: &str| {
        format!(
            "{WORDS_HEAD}[[fallback]]\nfamily = \"{family}\"\nwords = {words}\nexamples = {examples}\n"
        )
    };
    for (text, want) in [
        (
            entry("gemm", "[\"gemm\"]", "[]"),
            "my-rules.toml:10: fallback entry 1 (family `gemm`): rule at line 7 also uses family `gemm`",
        ),
        (
            entry("attn?", "[\"attn\"]", "[]"),
            "my-rules.toml:10: fallback entry 1 (family `attn?`): family `attn?` has no bucket",
        ),
        (
            entry("gemm?", "[]", "[]"),
            "fallback entry 1 (family `gemm?`): no words",
        ),
        (
            entry("gemm?", "[\"__\"]", "[]"),
            "word `__` has no letters or digits",
        ),
        (
            entry("gemm?", "[\"ge*mm\"]", "[]"),
            "word `ge*mm`: `*` only at its start or end",
        ),
        (
            entry("gemm?", "[\"*all_reduce\"]", "[]"),
            "a `*` word must be one word",
        ),
        (entry("gemm?", "[\"*gemm*\"]", "[]"), "`*` at one end only"),
        (
            entry("gemm?", "[\"AllReduce\", \"all_reduce\"]", "[]"),
            "word `all_reduce` is the same as the earlier word `AllReduce`",
        ),
        (
            entry("gemm?", "[\"gemm\"]", "[\"void x::matmul(int)\"]"),
            "example `void x::matmul(int)` has none of the entry's words (its words: x matmul)",
        ),
    ] {
        let e = refused(&text);
        assert!(e.contains(want), "{text}\n{e}");
    }
    // An example an earlier entry places first.
    let e = refused(&format!(
        "{WORDS_HEAD}[[fallback]]\nfamily = \"gemm?\"\nwords = [\"gemm\"]\n\
         [[fallback]]\nfamily = \"comm?\"\nwords = [\"dispatch\"]\nexamples = [\"void x::gemm_dispatch(int)\"]\n"
    ));
    assert!(
        e.contains("fallback entry 2 (family `comm?`): example `void x::gemm_dispatch(int)` is placed first by fallback entry 1 (family `gemm?`, word `gemm`)"),
        "{e}"
    );
    // A family used by neither rules nor words.
    let e = refused(&format!(
        "{WORDS_HEAD}[[fallback]]\nfamily = \"gemm?\"\nwords = [\"gemm\"]\n"
    ));
    assert!(
        e.contains("family `comm?` has no rule and no fallback entry"),
        "{e}"
    );
    // A malformed fallback table is a TOML fault at its line.
    let e = refused(&format!(
        "{WORDS_HEAD}[[fallback]]\nfamily = \"gemm?\"\nword = [\"gemm\"]\n"
    ));
    assert!(e.contains("unknown field `word`"), "{e}");
}

/// The built-in fallback table: each entry has examples that its words place, and every fallback
/// family ends in `?` (so a placement by words shows in every per-family output).
#[test]
fn the_builtin_fallback_table() {
    let r = Rules::builtin();
    assert!(r.fallback().len() >= 20);
    let mut wrong = Vec::new();
    for e in r.fallback() {
        let name = &r.family(e.family).name;
        assert!(name.ends_with('?'), "{name}");
        assert!(!e.examples.is_empty(), "{name}");
        // Examples are names no rule matches, so that they show the words at work.
        for ex in &e.examples {
            let l = r.family_of(ex);
            if (l.family(), l.kind()) != (Some(e.family), kineto_trace::family::MatchKind::Fallback)
            {
                wrong.push(format!("{ex}: {}", r.how(l)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        r.rules()
            .iter()
            .all(|x| !r.family(x.family).name.ends_with('?'))
    );
    // The gemm words come first: an epilogue or communication word never outranks them.
    assert_eq!(r.family(r.fallback()[0].family).name, "gemm?");
}

#[test]
fn a_rule_file_that_is_a_device_is_refused_naming_it() {
    // /dev/zero would grow without bound if read: refused as not a regular file, before reading.
    let e = Rules::load(Path::new("/dev/zero")).expect_err("a device");
    assert!(matches!(e, Error::Input(_)), "{e:?}");
    assert!(e.to_string().contains("/dev/zero"), "{e}");
}
