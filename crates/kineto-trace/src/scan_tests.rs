//! Tests of the scanner (`scan.rs`): values skipped and read, stops, and the word-at-a-time readers
//! against byte-by-byte references.

use super::*;
use crate::words::find_quote_or_backslash;
use proptest::prelude::*;

fn skip(s: &str) -> Scan<usize> {
    let mut c = Cursor::new(s.as_bytes(), 0);
    c.skip_value()?;
    Ok(c.pos)
}

#[test]
fn skips_valid_values_to_their_end() {
    for (s, end) in [
        (r#"{"a": [1, 2.5e3, {"b": null}], "c": "x\"y"} tail"#, 43),
        ("[]x", 2),
        ("{ }x", 3),
        ("-0.5,", 4),
        ("true]", 4),
        (r#""\u00e9""#, 8),
    ] {
        assert_eq!(skip(s), Ok(end), "{s}");
    }
}

#[test]
fn rejects_invalid_values() {
    for s in [
        r#"{"a" 1}"#,
        "[1 2]",
        "[1,]",
        "{,}",
        "01",
        "1.,",
        "1e,",
        "NaN",
        "-Infinity",
        "[tru]",
        r#""\x""#,
        "{\"a\":1]",
    ] {
        assert!(matches!(skip(s), Err(Stop::Bad(_))), "{s} -> {:?}", skip(s));
    }
}

#[test]
fn asks_for_more_when_the_window_ends_inside_a_value() {
    for s in [
        r#"{"a": [1, 2"#,
        r#""abc"#,
        "12",
        "tr",
        "Na",
        r#"{"a":"\u00"#,
    ] {
        assert_eq!(skip(s), Err(Stop::NeedMore), "{s}");
    }
}

#[test]
fn decodes_escapes_and_keeps_control_characters() {
    let mut c = Cursor::new(b"\"a\\n\\u00e9\\ud83d\\ude00\x01b\"", 0);
    let s = c.string().unwrap_or_default();
    assert_eq!(
        std::str::from_utf8(&s).ok(),
        Some("a\n\u{e9}\u{1F600}\u{1}b")
    );
}

#[test]
fn finds_the_first_quote_or_backslash_at_every_position() {
    for len in 0..140 {
        for at in 0..len {
            for c in [b'"', b'\\'] {
                let mut v = vec![b'a'; len];
                v[at] = c;
                if at + 1 < len {
                    v[at + 1] = b'"';
                }
                assert_eq!(find_quote_or_backslash(&v), Some(at), "len {len} at {at}");
                assert_eq!(
                    find_quote_or_backslash_16(&v),
                    Some(at),
                    "len {len} at {at}"
                );
            }
        }
        // Bytes that differ from the targets by one bit or a borrow must not match.
        let v: Vec<u8> = (0..len)
            .map(|i| [b'#', b'!', b']', b'[', 0x00, 0xA2][i % 6])
            .collect();
        assert_eq!(find_quote_or_backslash(&v), None, "len {len}");
        assert_eq!(find_quote_or_backslash_16(&v), None, "len {len}");
    }
}

#[test]
fn rejects_nesting_past_the_bound() {
    let deep = "[".repeat(300) + &"]".repeat(300);
    assert!(matches!(skip(&deep), Err(Stop::Bad(_))));
    let ok = "[".repeat(200) + &"]".repeat(200);
    assert_eq!(skip(&ok), Ok(400));
}

#[test]
fn one_pass_numbers_agree_with_the_general_path() {
    let toks = [
        "0",
        "7",
        "63.813",
        "63.8",
        "63.81",
        "1712195495519695.812",
        "4.0005",
        "1e3",
        "-2.5",
        "1610366662254362",
        "12345678901234567890",
        "0.5",
        "99999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "3.",
        "01",
    ];
    for t in toks {
        let text = format!("{t},");
        let mut a = Cursor::new(text.as_bytes(), 0);
        let mut b = Cursor::new(text.as_bytes(), 0);
        let fast = a.micros_as_ns();
        let slow = b.number().map(crate::time::us_to_ns);
        assert_eq!(fast, slow, "micros {t}");
        let mut a = Cursor::new(text.as_bytes(), 0);
        let mut b = Cursor::new(text.as_bytes(), 0);
        assert_eq!(a.uint(), b.number().map(parse_u64), "uint {t}");
    }
}

/// Reference readers, byte by byte, for the word-at-a-time ones: the first non-whitespace byte,
/// a key as `string` reads it, a number of µs via `number` and `us_to_ns`, an unsigned integer.
fn ws_reference(buf: &[u8], pos: usize) -> Scan<(u8, usize)> {
    let mut i = pos;
    loop {
        match buf.get(i) {
            None => return Err(Stop::NeedMore),
            Some(b' ' | b'\n' | b'\r' | b'\t') => i += 1,
            Some(&b) => return Ok((b, i)),
        }
    }
}

fn key_reference(buf: &[u8]) -> Scan<(Option<KeyWords>, Vec<u8>, usize)> {
    let mut c = Cursor::new(buf, 0);
    let s = c.string()?;
    Ok((pack_key(&s), s.into_owned(), c.pos))
}

/// Every token, followed by each of a few bytes and then by nothing or by enough padding that the
/// word-at-a-time paths run, reads as the general path reads it: value, end, or the same stop.
#[test]
fn word_at_a_time_readers_agree_with_byte_by_byte_ones() {
    let mut toks: Vec<String> = [
        "0",
        "7",
        "00",
        "01",
        "0.5",
        "63.813",
        "63.8",
        "63.81",
        "63.8130",
        "1.",
        "1e3",
        "1E3",
        "-2.5",
        "12345678",
        "123456789",
        "1234567890123456",
        "12345678901234567",
        "123456789012345678",
        "1234567890123456789",
        "12345678901234567890",
        "99999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "1712195495519695.812",
        "1712195495519695.8125",
        "9223372036854775.807",
        "9223372036854775.808",
        "999999999999999999.999",
        "4.0005",
        "",
        "x",
        "\"1\"",
        "12.e5",
        "1.5e",
        "7.",
        "-",
        "NaN",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Every length of digit run around the word boundaries, with and without decimals.
    for n in 1..=20 {
        let d: String = (0..n).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
        for f in ["", ".", ".1", ".12", ".123", ".1234"] {
            toks.push(format!("{d}{f}"));
        }
    }
    for t in &toks {
        for after in [",", "}", " ", "]", "e", "x", "\u{7f}", "\u{ff}"] {
            for pad in [0, 40] {
                let text = format!("{t}{after}{}", " ".repeat(pad));
                let b = text.as_bytes();
                let mut fast = Cursor::new(b, 0);
                let mut slow = Cursor::new(b, 0);
                let got = fast.micros_as_ns().map(|v| (v, fast.pos));
                let want = slow
                    .number()
                    .map(crate::time::us_to_ns)
                    .map(|v| (v, slow.pos));
                // The general path ends where a valid number ends; on a fault only the stop matters.
                match (&got, &want) {
                    (Ok(g), Ok(w)) => assert_eq!(g, w, "micros {text:?}"),
                    (Err(g), Err(w)) => assert_eq!(g, w, "micros {text:?}"),
                    _ => panic!("micros {text:?}: {got:?} vs {want:?}"),
                }
                let mut fast = Cursor::new(b, 0);
                let mut slow = Cursor::new(b, 0);
                let got = fast.uint().map(|v| (v, fast.pos));
                let want = slow.number().map(parse_u64).map(|v| (v, slow.pos));
                match (&got, &want) {
                    (Ok(g), Ok(w)) => assert_eq!(g, w, "uint {text:?}"),
                    (Err(g), Err(w)) => assert_eq!(g, w, "uint {text:?}"),
                    _ => panic!("uint {text:?}: {got:?} vs {want:?}"),
                }
            }
        }
    }
}

#[test]
fn whitespace_runs_and_keys_read_as_byte_by_byte() {
    let ws = [b' ', b'\n', b'\r', b'\t'];
    let others = [b'"', b'{', b',', b'a', 0x0b, 0x00, 0x21, 0x2a, 0xff, 0x80];
    for run in 0..20usize {
        for (j, &o) in others.iter().enumerate() {
            for pad in [0, 1, 9, 24] {
                let mut v: Vec<u8> = (0..run).map(|i| ws[(i * 7 + j) % 4]).collect();
                v.push(o);
                v.extend(std::iter::repeat_n(b'z', pad));
                let mut c = Cursor::new(&v, 0);
                let got = c.ws_peek().map(|b| (b, c.pos));
                assert_eq!(got, ws_reference(&v, 0), "{v:?}");
            }
            // Whitespace to the end of the window.
            let v: Vec<u8> = (0..run).map(|i| ws[(i + j) % 4]).collect();
            assert_eq!(Cursor::new(&v, 0).ws_peek(), Err(Stop::NeedMore), "{v:?}");
        }
    }
    // Keys of every length around the two words, plain, with an escape at each place, or cut.
    for len in 0..22usize {
        let body: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let mut bodies = vec![body.clone()];
        for at in 0..=len {
            for esc in [&b"\\\""[..], b"\\n", b"\\u0041"] {
                let mut e = body.clone();
                e.splice(at..at, esc.iter().copied());
                bodies.push(e);
            }
        }
        for b in bodies {
            for pad in [0, 3, 20] {
                let mut v = vec![b'"'];
                v.extend_from_slice(&b);
                v.push(b'"');
                v.extend(std::iter::repeat_n(b':', pad));
                let mut c = Cursor::new(&v, 0);
                let got = c.key().map(|k| {
                    let pos = c.pos;
                    match k {
                        Key::Short(p) => (Some(p), pos),
                        Key::Long(s) => {
                            assert_eq!(pack_key(&s), None);
                            (None, pos)
                        }
                    }
                });
                let want = key_reference(&v).map(|(p, _, pos)| (p, pos));
                assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&v));
                // Cut before the closing quote: the window must be refilled.
                let cut = &v[..b.len() + 1];
                assert_eq!(Cursor::new(cut, 0).key().err(), Some(Stop::NeedMore));
            }
        }
    }
    assert_eq!(pack_key(b"ph"), Some((2, 0x6870, 0)));
    assert_eq!(pack_key(b"0123456789abcdef").map(|k| k.0), Some(16));
    assert_eq!(pack_key(b"registers per thread"), None);
}

#[test]
fn integers_parse_exactly_or_not_at_all() {
    assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
    assert_eq!(parse_u64(b"18446744073709551616"), None);
    assert_eq!(parse_u64(b"1.5"), None);
    assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
    assert_eq!(parse_i64(b"9223372036854775808"), None);
}

/// A number as a profiler or a Python tool may write it, and its near misses: a sign, 0–25 digits
/// (leading zeros included), a point with 0–5 decimals or none, an exponent or none.
fn number_text() -> impl Strategy<Value = String> {
    let digits = |len: std::ops::RangeInclusive<usize>| proptest::collection::vec(0u8..10, len);
    // Kineto's forms (16 digits for `ts`, 1–3 for `dur`, 3 decimals) as often as all the others.
    let int = prop_oneof![digits(0..=25), digits(16..=16), digits(1..=3)];
    let frac = prop_oneof![digits(0..=5), digits(3..=3)];
    (
        prop::sample::select(vec!["", "", "", "-", "+"]),
        int,
        prop::option::of(frac),
        prop::sample::select(vec!["", "", "", "e3", "E-2", "e+", "e"]),
        prop::sample::select(vec![",", "}", " ", "e", ".", "0", "x"]),
    )
        .prop_map(|(sign, int, frac, exp, after)| {
            let d = |v: &[u8]| v.iter().map(|&x| char::from(b'0' + x)).collect::<String>();
            let frac = frac.map_or(String::new(), |f| format!(".{}", d(&f)));
            format!("{sign}{}{frac}{exp}{after}", d(&int))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `micros_as_ns` (its word-at-a-time forms, Kineto's `ts` and `dur` read whole among them) gives
    /// what the general path gives, `number` then `us_to_ns`: the value and where it ends, or the same
    /// stop, for the text padded past 32 bytes and cut at every byte (a window ending inside it).
    #[test]
    fn micros_as_ns_agrees_with_the_general_path(text in number_text()) {
        let padded = format!("{text}{}", " ".repeat(40));
        for end in 0..=padded.len() {
            let b = &padded.as_bytes()[..end];
            let mut fast = Cursor::new(b, 0);
            let mut slow = Cursor::new(b, 0);
            let got = fast.micros_as_ns().map(|v| (v, fast.pos));
            let want = slow.number().map(crate::time::us_to_ns).map(|v| (v, slow.pos));
            match (&got, &want) {
                (Ok(g), Ok(w)) => prop_assert_eq!(g, w, "{:?}", b),
                // Cut, the one-pass read may ask for more where the general one already saw a fault
                // (`00` at the window end): the fault comes once more bytes are there (the text
                // whole, `end == padded.len()`, is compared strictly).
                (Err(Stop::NeedMore), Err(Stop::Bad(_))) if end < padded.len() => {}
                (Err(g), Err(w)) => prop_assert_eq!(g, w, "{:?}", b),
                _ => prop_assert!(false, "{:?}: {:?} vs {:?}", b, got, want),
            }
        }
    }
}

/// `skip_container` alone, the byte skipper: the reference for an object's fast path.
fn skip_by_bytes(s: &[u8]) -> Scan<usize> {
    let mut c = Cursor::new(s, 0);
    c.ws_peek()?;
    c.skip_container()?;
    Ok(c.pos)
}

/// Whitespace between tokens: runs of 16 bytes and more too (`Cursor::ws_peek` reads them 16 at a
/// time), and now and then control bytes that are no JSON whitespace.
fn ws() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        16 => prop::sample::select(vec![
            "",
            "",
            " ",
            "\n      ",
            "\t",
            "\r\n",
            "\n                      ",
            "\n                                          ",
        ]),
        1 => prop::sample::select(vec!["\u{b}", " \u{0}", "\u{c}"]),
    ]
}

/// A value in a skipped object or array: mostly scalars a profiler writes, then numbers of every
/// form, then near misses and nested values.
fn skipped_value() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "null",
            "true",
            "false",
            "\"s\"",
            "\"\"",
            "\"long int\"",
            "\"a string of more than sixty-four bytes, so that its end is found by memchr\"",
            "0",
            "7",
            "8192",
            "-1",
            "-1.5e3",
            "0.25",
            // Integers at the edges of the word-at-a-time read: 7 and 8 digits.
            "1234567",
            "12345678",
        ])
        .prop_map(str::to_string),
        2 => number_text().prop_map(|t| t.trim_end_matches([',', '}', ' ']).to_string()),
        1 => prop::sample::select(vec![
            "nul",
            "nulll",
            "tru",
            "\"a\\nb\"",
            r#""a\"#,
            "[1]",
            "{}",
            r#"{"a": 1}"#,
            "-",
            "--1",
            "NaN",
            ":",
            ",",
            // Leading zeros, and a fraction or exponent after 7 digits.
            "01",
            "00",
            "-01",
            "0123456",
            "1234567.5",
            "1.",
            "1e",
        ])
        .prop_map(str::to_string),
    ]
}

/// A byte to change now and then: where, and to what.
fn change() -> impl Strategy<Value = Option<(prop::sample::Index, u8)>> {
    prop_oneof![3 => Just(None), 1 => any::<(prop::sample::Index, u8)>().prop_map(Some)]
}

/// A byte of `v` changed, or none.
fn changed(mut v: Vec<u8>, change: Option<(prop::sample::Index, u8)>) -> Vec<u8> {
    if let Some((at, byte)) = change {
        let i = at.index(v.len());
        v[i] = byte;
    }
    v
}

/// Objects as Python functions' `args` are written, and near misses: keys with escapes and long
/// keys, the values of [`skipped_value`], odd whitespace, a missing colon, a byte changed.
fn flat_object() -> impl Strategy<Value = Vec<u8>> {
    let key = prop::sample::select(vec![
        r#""Python id""#,
        r#""Python parent id""#,
        r#""Ev Idx""#,
        r#""""#,
        r#""k\"q""#,
        r#""a\\""#,
        // A backslash before the colon: an invalid escape, not the key's end.
        r#""k\"#,
        r#""seventeen bytes!!""#,
        r#""a key of more than sixty-four bytes, so that its end is found by memchr""#,
        "k",
        r#""unterminated"#,
    ]);
    let colon = prop_oneof![8 => Just(":"), 1 => prop::sample::select(vec!["", " ", ";"])];
    let pair = ((ws(), key, ws()), (colon, ws(), skipped_value(), ws()));
    (
        ws(),
        ws(),
        prop::collection::vec(pair, 0..5),
        prop_oneof![8 => Just("}"), 1 => prop::sample::select(vec!["", "]", ",}", " ,"])],
        change(),
    )
        .prop_map(|(before, lead, pairs, close, change)| {
            let body: Vec<String> = pairs
                .iter()
                .map(|((w0, k, w1), (colon, w2, v, w3))| format!("{w0}{k}{w1}{colon}{w2}{v}{w3}"))
                .collect();
            changed(
                format!("{before}{{{lead}{}{close}", body.join(",")).into_bytes(),
                change,
            )
        })
}

/// Arrays as `record_shapes` writes its inputs (`[[8192], [], []]`, `["long", "Scalar"]`), and near
/// misses: the values of [`skipped_value`] and arrays of them, a third level, odd whitespace, missing
/// or extra commas, a byte changed.
fn shallow_array() -> impl Strategy<Value = Vec<u8>> {
    let element = || (ws(), skipped_value(), ws()).prop_map(|(a, v, b)| format!("{a}{v}{b}"));
    let close = || prop_oneof![8 => Just("]"), 1 => prop::sample::select(vec!["", "}", ",]"])];
    let sep = || prop_oneof![8 => prop::sample::select(vec![",", ", "]), 1 => prop::sample::select(vec!["", ",,"])];
    let inner = move || {
        (ws(), prop::collection::vec(element(), 0..4), sep(), close())
            .prop_map(|(lead, v, s, c)| format!("[{lead}{}{c}", v.join(s)))
    };
    let item = prop_oneof![element(), inner(), inner().prop_map(|i| format!("[{i}]")),];
    (
        (ws(), ws()),
        prop::collection::vec((ws(), item, ws()), 0..5),
        sep(),
        close(),
        change(),
    )
        .prop_map(|((before, lead), items, sep, close, change)| {
            let items: Vec<String> = items.iter().map(|(a, i, b)| format!("{a}{i}{b}")).collect();
            changed(
                format!("{before}[{lead}{}{close}", items.join(sep)).into_bytes(),
                change,
            )
        })
}

/// `skip_value` of `text` (a container opening with `open` after whitespace) against the byte
/// skipper: the same end or the same stop, whole, cut at every byte and followed by more text. And
/// `fast` (the container's fast path) answers with that end when `eligible` says it must.
fn skips_as_the_byte_skipper(
    text: &[u8],
    open: u8,
    fast: fn(&Cursor<'_>) -> Option<usize>,
    eligible: fn(&[u8]) -> bool,
) -> Result<(), TestCaseError> {
    let mut followed = text.to_vec();
    followed.extend_from_slice(br#", "next": 1}"#);
    let value_at = |b: &[u8]| {
        b.iter()
            .position(|&x| !matches!(x, b' ' | b'\n' | b'\r' | b'\t'))
    };
    for end in 0..=text.len() {
        let b = &text[..end];
        if value_at(b).map(|i| b[i]) != Some(open) {
            continue;
        }
        let mut c = Cursor::new(b, 0);
        let got = c.skip_value().map(|_| c.pos);
        prop_assert_eq!(got, skip_by_bytes(b), "{:?}", String::from_utf8_lossy(b));
    }
    let Some(at) = value_at(&followed).filter(|&i| followed[i] == open) else {
        return Ok(());
    };
    let mut c = Cursor::new(&followed, 0);
    let got = c.skip_value().map(|_| c.pos);
    let want = skip_by_bytes(&followed);
    prop_assert_eq!(&got, &want, "{:?}", String::from_utf8_lossy(&followed));
    if let Ok(end) = want
        && eligible(&followed[at..end])
    {
        prop_assert_eq!(
            fast(&Cursor::new(&followed, at)),
            Some(end),
            "{:?}",
            String::from_utf8_lossy(&followed)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// An object skipped by its fast path (`flat_object_end`) ends or stops as the byte skipper
    /// does, and the fast path answers for every complete object with no nested value and no
    /// backslash.
    #[test]
    fn a_flat_object_skips_as_the_byte_skipper_skips_it(text in flat_object()) {
        skips_as_the_byte_skipper(&text, b'{', |c| c.flat_object_end(), |v| {
            !v[1..].iter().any(|&x| matches!(x, b'{' | b'[' | b'\\'))
        })?;
    }

    /// An array skipped by its fast path (`shallow_array_end`) ends or stops as the byte skipper
    /// does, and the fast path answers for every complete array of two levels at most, with no
    /// object and no backslash.
    #[test]
    fn a_shallow_array_skips_as_the_byte_skipper_skips_it(text in shallow_array()) {
        skips_as_the_byte_skipper(&text, b'[', |c| c.shallow_array_end(), |v| {
            // Brackets outside strings (with no backslash, every quote opens or closes one).
            let (mut depth, mut deepest, mut in_string) = (0i32, 0, false);
            for &x in v {
                match x {
                    b'"' => in_string = !in_string,
                    b'\\' => return false,
                    _ if in_string => {}
                    b'[' => depth += 1,
                    b']' => depth -= 1,
                    b'{' => return false,
                    _ => {}
                }
                deepest = deepest.max(depth);
            }
            deepest <= 2
        })?;
    }
}

#[test]
fn python_function_args_take_the_fast_path() {
    // The fast path answers for these (the byte skipper is not asked): a Python function's `args` as
    // PyTorch writes them, with Kineto's indentation, and the forms of scalar it accepts.
    for s in [
        "{\n      \"Python parent id\": 70259, \"Python id\": 70261, \"Ev Idx\": 75289\n    }",
        r#"{"Python parent id": null, "Python id": 1, "Ev Idx": 5029}"#,
        r#"{"a":-1.5e3,"b":true,"c":false,"d":"x","e":0}"#,
        "{ }",
    ] {
        let c = Cursor::new(s.as_bytes(), 0);
        assert_eq!(c.flat_object_end(), Some(s.len()), "{s}");
        assert_eq!(skip_by_bytes(s.as_bytes()), Ok(s.len()), "{s}");
    }
    // And leaves these to the byte skipper: a nested value, an escape, a fault.
    for s in [
        r#"{"a": [1]}"#,
        r#"{"a\"b": 1}"#,
        r#"{"a": "x\ny"}"#,
        r#"{"a": 01, "b": 2}"#,
        r#"{"a": 1,}"#,
    ] {
        let c = Cursor::new(s.as_bytes(), 0);
        assert_eq!(c.flat_object_end(), None, "{s}");
    }
}

#[test]
fn record_shapes_inputs_take_the_fast_path() {
    // The fast path answers for `record_shapes`'s inputs as PyTorch writes them, and arrays of the
    // scalars it accepts.
    for s in [
        "[[8192], [], [], [], []]",
        r#"["", "[32]", "[1]", "0"]"#,
        r#"["long int", "ScalarList", "ScalarList", "Scalar"]"#,
        "[[1, 4096], [4096, 1]]",
        "[ ]",
        "[[ ], null, true, -1.5e3]",
    ] {
        let c = Cursor::new(s.as_bytes(), 0);
        assert_eq!(c.shallow_array_end(), Some(s.len()), "{s}");
        assert_eq!(skip_by_bytes(s.as_bytes()), Ok(s.len()), "{s}");
    }
    // Brackets inside strings are text: two levels.
    let s = r#"["]", [[1]], "[["]"#;
    assert_eq!(Cursor::new(s.as_bytes(), 0).shallow_array_end(), None);
    let s = r#"["]", [1], "[["]"#;
    assert_eq!(
        Cursor::new(s.as_bytes(), 0).shallow_array_end(),
        Some(s.len())
    );
    // And leaves these to the byte skipper: a third level, an object, an escape, a fault.
    for s in [
        "[[[1]], 2]      ",
        r#"[{"a": 1}]      "#,
        r#"["a\"b"]        "#,
        "[1, [2,], 3]    ",
        "[1 2]           ",
    ] {
        let c = Cursor::new(s.as_bytes(), 0);
        assert_eq!(c.shallow_array_end(), None, "{s}");
    }
}
