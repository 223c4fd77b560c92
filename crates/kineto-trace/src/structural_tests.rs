//! Tests of the structural index (`structural.rs`): every classifier against the word-at-a-time one,
//! the carry-less prefix XOR against the shifts, and the index of random JSON-ish text, block after
//! block, against a byte-by-byte reference.

use super::*;
use proptest::prelude::*;

/// Bytes that matter to the structure, weighted up, and any byte at all.
fn jsonish_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(&b"\"\\{}[],: \n\r\t"[..]),
        2 => prop::sample::select(&b"0123456789.-eEtrufalsn"[..]),
        // Bytes one bit or one borrow away from the ones above, and high bytes.
        1 => prop::sample::select(&[b'#', b'!', b'\\' ^ 0x20, b'{' ^ 0x80, b';', b'+', 0x0b, 0x00, 0x22 | 0x80, 0xff][..]),
        1 => any::<u8>(),
    ]
}

fn block_of(v: &[u8]) -> [u8; 64] {
    let mut b = [b' '; 64];
    b[..v.len()].copy_from_slice(v);
    b
}

/// The index of `text` by one pass over its bytes: (starts, closes, escapes) per block of 64.
fn reference(text: &[u8]) -> Vec<Structure> {
    let mut out = vec![Structure::default(); text.len().div_ceil(64)];
    let (mut in_string, mut escape_next, mut scalar_before) = (false, false, false);
    for (i, &b) in text.iter().enumerate() {
        let s = &mut out[i / 64];
        let bit = 1u64 << (i % 64);
        // Escaping counts backslashes everywhere, as the bitwise form does: a byte is escaped when
        // the run of backslashes before it is odd.
        let escaped = escape_next;
        escape_next = b == b'\\' && !escaped;
        let quote = b == b'"' && !escaped;
        if in_string {
            if quote {
                in_string = false;
                s.closes |= bit;
            } else if b == b'\\' {
                s.escapes |= bit;
            }
            scalar_before = false;
            continue;
        }
        let op = matches!(b, b'{' | b'}' | b'[' | b']' | b',' | b':');
        let ws = matches!(b, b' ' | b'\n' | b'\r' | b'\t');
        if quote {
            in_string = true;
            s.starts |= bit;
            scalar_before = false;
        } else if op {
            s.starts |= bit;
            scalar_before = false;
        } else if ws || b == b'"' {
            scalar_before = false;
        } else {
            if !scalar_before {
                s.starts |= bit;
            }
            scalar_before = true;
        }
    }
    out
}

fn indexed(text: &[u8], classify: fn(&[u8; 64]) -> Classes) -> Vec<Structure> {
    let mut carry = Carry::default();
    text.chunks(64)
        .map(|c| index(classify(&block_of(c)), &mut carry))
        .collect()
}

/// Only the bytes of `text` (the padding of its last block is whitespace, which adds nothing).
fn trimmed(mut v: Vec<Structure>, len: usize) -> Vec<Structure> {
    if !len.is_multiple_of(64)
        && let Some(last) = v.last_mut()
    {
        let keep = (1u64 << (len % 64)) - 1;
        last.starts &= keep;
        last.closes &= keep;
        last.escapes &= keep;
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn every_classifier_agrees_with_the_word_at_a_time_one(v in prop::collection::vec(jsonish_byte(), 64)) {
        let b = block_of(&v);
        let want = classify_words(&b);
        prop_assert_eq!(classify(&b), want);
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: SSE2 is part of x86_64.
            prop_assert_eq!(unsafe { x86::classify_sse2(&b) }, want);
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                prop_assert_eq!(unsafe { x86::classify_avx2(&b) }, want);
            }
        }
    }

    #[test]
    fn sixteen_byte_searches_agree_with_the_words(v in prop::collection::vec(jsonish_byte(), 0..40), at in 0usize..24) {
        let want = |flags: fn(u64) -> u64| {
            v.get(at..at + 16).map(|b| words16(b.try_into().unwrap_or(&[0; 16]), flags))
        };
        prop_assert_eq!(
            quote_or_backslash_16(&v, at),
            want(|w| bytes_eq(w, b'"') | bytes_eq(w, b'\\'))
        );
        prop_assert_eq!(
            whitespace_16(&v, at),
            want(|w| bytes_eq(w, b' ') | bytes_eq(w, b'\n') | bytes_eq(w, b'\r') | bytes_eq(w, b'\t'))
        );
        // And both against the bytes themselves.
        if let Some(m) = quote_or_backslash_16(&v, at) {
            for (i, &b) in v[at..at + 16].iter().enumerate() {
                prop_assert_eq!((m >> i) & 1 == 1, b == b'"' || b == b'\\');
            }
        }
        let rest = v.get(at..).unwrap_or_default();
        prop_assert_eq!(
            find_quote_or_backslash_16(rest),
            rest.iter().position(|&b| b == b'"' || b == b'\\')
        );
    }

    #[test]
    fn carry_less_prefix_xor_agrees_with_the_shifts(x in any::<u64>()) {
        prop_assert_eq!(prefix_xor(x), prefix_xor_shifts(x));
        let mut parity = 0;
        let mut want = 0u64;
        for i in 0..64 {
            parity ^= (x >> i) & 1;
            want |= parity << i;
        }
        prop_assert_eq!(prefix_xor_shifts(x), want);
    }

    #[test]
    fn the_index_agrees_with_a_byte_by_byte_walk(v in prop::collection::vec(jsonish_byte(), 0..400)) {
        let want = reference(&v);
        prop_assert_eq!(trimmed(indexed(&v, classify), v.len()), want.clone());
        prop_assert_eq!(trimmed(indexed(&v, classify_words), v.len()), want);
    }
}

#[test]
fn runs_of_backslashes_across_block_edges() {
    // A string whose run of n backslashes ends at every place around the first block's edge, then a
    // quote: the quote is escaped (and the string still open) exactly when n is odd.
    for end in 58..72usize {
        for n in 1..end {
            let mut v = vec![b'a'; end + 2];
            v[0] = b'"';
            v[end - n..end].fill(b'\\');
            v[end] = b'"';
            let want = reference(&v);
            assert_eq!(
                trimmed(indexed(&v, classify), v.len()),
                want,
                "n {n} end {end}"
            );
            let closes: u32 = want.iter().map(|s| s.closes.count_ones()).sum();
            assert_eq!(closes, u32::from(n % 2 == 0), "n {n} end {end}");
        }
    }
}

#[test]
fn a_small_object_by_hand() {
    // {"a": [1, true], "b\"c": "x"}
    //  0123456789012345678 9012345678
    let text = br#"{"a": [1, true], "b\"c": "x"}"#;
    let s = indexed(text, classify)[0];
    let bits = |v: &[usize]| v.iter().fold(0u64, |m, &i| m | (1 << i));
    // {  "  :  [  1  ,  t   ]   ,   "   :   "   }
    assert_eq!(
        s.starts,
        bits(&[0, 1, 4, 6, 7, 8, 10, 14, 15, 17, 23, 25, 28])
    );
    assert_eq!(s.closes, bits(&[3, 22, 27]));
    assert_eq!(s.escapes, bits(&[19]));
}
