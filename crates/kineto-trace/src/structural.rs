//! SIMD masks over the JSON text, one bit a byte, in two parts.
//!
//! The searches the scanner runs on every event, sixteen bytes at a time: the end of a key or string
//! (the first `"` or `\\`, [`find_quote_or_backslash_16`]) and the end of a run of whitespace
//! ([`whitespace_16`]). SSE2 on x86_64 (part of the architecture: no detection, so they inline into
//! the scanner's loops), two words elsewhere ([`words16`], also their reference in the tests).
//!
//! Structural indexing 64 bytes at a time (the simdjson approach, Langdale & Lemire 2019): every
//! byte of a block classified into bitmasks (quotes, backslashes, whitespace, the characters
//! `{}[],:`), the escaped bytes found from the runs of backslashes, the inside of the strings by a
//! prefix XOR of the unescaped quotes (carry-less multiply where the CPU has it), leaving what a
//! parser walks: the structural characters, the opening quotes, the first byte of every other value.
//! AVX2 or SSE2 chosen at run time (the choice cached by `std`), the word-at-a-time classifier
//! ([`classify_words`]) on other targets and as the reference. Not wired into the scanner yet: used
//! for the cursor's searches it cost more than it saved (`docs/parse-costs.md`, "SIMD structural
//! scan"); a skipper walking it for the values the model does not keep cost more than the byte
//! skipper too (+11 % of the instructions on a `with_stack` trace, "Skipping what the model does not
//! keep"). Kept, with its tests, as the reference for any later attempt.

use crate::words::{HIGH, bytes_eq, find_quote_or_backslash};

/// The bytes of one 64-byte block that matter to the structure, one bit each.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Classes {
    pub(crate) quote: u64,
    pub(crate) backslash: u64,
    /// JSON whitespace: space, `\n`, `\r`, `\t`.
    pub(crate) whitespace: u64,
    /// `{`, `}`, `[`, `]`, `,`, `:`.
    pub(crate) op: u64,
}

/// Classifies a block with the widest instructions this CPU has.
#[cfg_attr(not(test), allow(dead_code))]
#[inline]
pub(crate) fn classify(block: &[u8; 64]) -> Classes {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { x86::classify_avx2(block) };
        }
        // SAFETY: SSE2 is part of x86_64.
        unsafe { x86::classify_sse2(block) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        classify_words(block)
    }
}

/// Classifies a block eight bytes at a time with integer arithmetic (the reference).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn classify_words(block: &[u8; 64]) -> Classes {
    let mut c = Classes::default();
    for (i, chunk) in block.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        let w = u64::from_le_bytes(b);
        // `[` and `]` differ from `{` and `}` by the 0x20 bit alone, which no other byte of the
        // two pairs has clear: one compare of `w | 0x20…` finds both of a pair.
        let lower = w | (crate::words::ONES * 0x20);
        let at = 8 * i;
        c.quote |= bits_of(bytes_eq(w, b'"')) << at;
        c.backslash |= bits_of(bytes_eq(w, b'\\')) << at;
        c.whitespace |= bits_of(
            bytes_eq(w, b' ') | bytes_eq(w, b'\n') | bytes_eq(w, b'\r') | bytes_eq(w, b'\t'),
        ) << at;
        c.op |= bits_of(
            bytes_eq(lower, b'{') | bytes_eq(lower, b'}') | bytes_eq(w, b',') | bytes_eq(w, b':'),
        ) << at;
    }
    c
}

/// The high bits of a word's bytes (as the word-at-a-time masks set them) gathered into its low
/// eight bits, byte `i` to bit `i`: each flag lands in the top byte of the product at its own place,
/// and no two partial products share a bit, so nothing carries.
#[cfg_attr(not(test), allow(dead_code))]
#[inline(always)]
const fn bits_of(high: u64) -> u64 {
    ((high & HIGH) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Classes;
    use std::arch::x86_64::*;

    /// One lane's masks (32 or 16 bytes), from the same compares as [`super::classify_words`].
    macro_rules! lane_masks {
        ($v:expr, $set1:ident, $eq:ident, $or:ident, $mask:ident, $ty:ty) => {{
            let v = $v;
            let lower = $or(v, $set1(0x20));
            let quote = $mask($eq(v, $set1(b'"' as i8))) as $ty;
            let backslash = $mask($eq(v, $set1(b'\\' as i8))) as $ty;
            let ws = $or(
                $or($eq(v, $set1(b' ' as i8)), $eq(v, $set1(b'\n' as i8))),
                $or($eq(v, $set1(b'\r' as i8)), $eq(v, $set1(b'\t' as i8))),
            );
            let op = $or(
                $or($eq(lower, $set1(b'{' as i8)), $eq(lower, $set1(b'}' as i8))),
                $or($eq(v, $set1(b',' as i8)), $eq(v, $set1(b':' as i8))),
            );
            (quote, backslash, $mask(ws) as $ty, $mask(op) as $ty)
        }};
    }

    /// # Safety
    /// The CPU must have AVX2.
    #[cfg_attr(not(test), allow(dead_code))]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn classify_avx2(block: &[u8; 64]) -> Classes {
        let p = block.as_ptr() as *const __m256i;
        // SAFETY: the block has 64 bytes; unaligned loads.
        let (lo, hi) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        let l = lane_masks!(
            lo,
            _mm256_set1_epi8,
            _mm256_cmpeq_epi8,
            _mm256_or_si256,
            _mm256_movemask_epi8,
            u32
        );
        let h = lane_masks!(
            hi,
            _mm256_set1_epi8,
            _mm256_cmpeq_epi8,
            _mm256_or_si256,
            _mm256_movemask_epi8,
            u32
        );
        let join = |a: u32, b: u32| u64::from(a) | (u64::from(b) << 32);
        Classes {
            quote: join(l.0, h.0),
            backslash: join(l.1, h.1),
            whitespace: join(l.2, h.2),
            op: join(l.3, h.3),
        }
    }

    /// The bytes of `b` equal to `x` or `y`, one bit each.
    #[inline(always)]
    pub(super) fn eq2_16(b: &[u8; 16], x: u8, y: u8) -> u32 {
        // SAFETY: SSE2 is part of x86_64; the load reads the 16 bytes of `b`, unaligned.
        unsafe {
            let v = _mm_loadu_si128(b.as_ptr() as *const __m128i);
            let m = _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(x as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(y as i8)),
            );
            _mm_movemask_epi8(m) as u32
        }
    }

    /// The JSON whitespace bytes of `b`, one bit each.
    #[inline(always)]
    pub(super) fn whitespace_16(b: &[u8; 16]) -> u32 {
        // SAFETY: SSE2 is part of x86_64; the load reads the 16 bytes of `b`, unaligned.
        unsafe {
            let v = _mm_loadu_si128(b.as_ptr() as *const __m128i);
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let m = _mm_or_si128(
                _mm_or_si128(eq(b' '), eq(b'\n')),
                _mm_or_si128(eq(b'\r'), eq(b'\t')),
            );
            _mm_movemask_epi8(m) as u32
        }
    }

    /// SSE2 is part of x86_64: no detection needed.
    #[cfg_attr(not(test), allow(dead_code))]
    #[target_feature(enable = "sse2")]
    pub(super) fn classify_sse2(block: &[u8; 64]) -> Classes {
        let p = block.as_ptr() as *const __m128i;
        let mut c = Classes::default();
        for i in 0..4 {
            // SAFETY: the block has 64 bytes, so lane i (16 bytes at 16 i) is inside it; unaligned load.
            let v = unsafe { _mm_loadu_si128(p.add(i)) };
            let m = lane_masks!(
                v,
                _mm_set1_epi8,
                _mm_cmpeq_epi8,
                _mm_or_si128,
                _mm_movemask_epi8,
                u16
            );
            let at = 16 * i;
            c.quote |= u64::from(m.0) << at;
            c.backslash |= u64::from(m.1) << at;
            c.whitespace |= u64::from(m.2) << at;
            c.op |= u64::from(m.3) << at;
        }
        c
    }

    /// # Safety
    /// The CPU must have PCLMULQDQ.
    #[cfg_attr(not(test), allow(dead_code))]
    #[target_feature(enable = "pclmulqdq")]
    pub(super) unsafe fn prefix_xor_clmul(x: u64) -> u64 {
        // Carry-less multiplication by all ones: bit i of the product is the XOR of bits 0..=i.
        let p = _mm_clmulepi64_si128(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1), 0);
        _mm_cvtsi128_si64(p) as u64
    }
}

/// Bit `i` of the result is the XOR of bits `0..=i` of `x`: with `x` the unescaped quotes, the bytes
/// from an opening quote up to (not including) its closing one.
#[cfg_attr(not(test), allow(dead_code))]
#[inline]
pub(crate) fn prefix_xor(x: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("pclmulqdq") {
            // SAFETY: the CPU has PCLMULQDQ (checked just above).
            return unsafe { x86::prefix_xor_clmul(x) };
        }
    }
    prefix_xor_shifts(x)
}

/// [`prefix_xor`] by six shifts (every target; the reference).
#[cfg_attr(not(test), allow(dead_code))]
#[inline(always)]
pub(crate) const fn prefix_xor_shifts(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The bytes escaped by a backslash (the byte after each backslash that is not itself escaped), with
/// `carry` the previous block's answer for its last byte (1: this block's first byte is escaped),
/// updated for the next block. simdjson's branchless form: a run of backslashes escapes the byte
/// after it when the run is odd, found from where the runs start on odd and on even bits.
#[cfg_attr(not(test), allow(dead_code))]
#[inline(always)]
pub(crate) fn escaped(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows_escape = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (even_runs, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    let invert = even_runs << 1;
    (EVEN ^ invert) & follows_escape
}

/// The state carried from one block to the next: whether the next block starts escaped, inside a
/// string, or just after a value that is neither string nor container.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Carry {
    escape: u64,
    /// All ones when the block ended inside a string.
    in_string: u64,
    /// 1 when the block's last byte was part of a number or a literal.
    scalar: u64,
}

/// What the scanner walks in one block.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Structure {
    /// The structural characters outside strings, the opening quote of every string and the first
    /// byte of every other value (and of any stray byte), in the order the parser meets them.
    pub(crate) starts: u64,
    /// The closing quote of every string (with an opening one before it).
    pub(crate) closes: u64,
    /// Backslashes inside strings: a string with one is read the general way.
    pub(crate) escapes: u64,
}

/// Indexes a block: `c` its classes, `carry` from the block before it (the default for a block
/// that starts outside any string, after whitespace or a structural character).
#[cfg_attr(not(test), allow(dead_code))]
#[inline(always)]
pub(crate) fn index(c: Classes, carry: &mut Carry) -> Structure {
    let escaped = escaped(c.backslash, &mut carry.escape);
    let quote = c.quote & !escaped;
    // From each opening quote up to its closing one (the opening quote in, the closing one out).
    let in_string = prefix_xor(quote) ^ carry.in_string;
    carry.in_string = ((in_string as i64) >> 63) as u64;
    let opens = quote & in_string;
    let closes = quote & !in_string;
    let outside = !(in_string | closes);
    // The bytes of numbers and literals (and stray bytes): outside strings, neither whitespace,
    // quote nor structural character; a run of them starts a value where the byte before is not one.
    let scalar = outside & !(c.op | c.whitespace | c.quote);
    let scalar_starts = scalar & !((scalar << 1) | carry.scalar);
    carry.scalar = scalar >> 63;
    Structure {
        starts: (c.op & outside) | opens | scalar_starts,
        closes,
        escapes: c.backslash & in_string,
    }
}

/// Bit `i` (0 ≤ `i` < 16) set where byte `at + i` is `"` or `\\`; `None` when fewer than 16 bytes
/// are left from `at`. SSE2 (part of x86_64, so inlined where the scanner calls it) or two words.
#[inline(always)]
pub(crate) fn quote_or_backslash_16(buf: &[u8], at: usize) -> Option<u32> {
    let b: &[u8; 16] = buf.get(at..at.checked_add(16)?)?.try_into().ok()?;
    #[cfg(target_arch = "x86_64")]
    {
        Some(x86::eq2_16(b, b'"', b'\\'))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Some(words16(b, |w| bytes_eq(w, b'"') | bytes_eq(w, b'\\')))
    }
}

/// Bit `i` (0 ≤ `i` < 16) set where byte `at + i` is JSON whitespace; `None` when fewer than 16 bytes
/// are left from `at`. As [`quote_or_backslash_16`].
#[inline(always)]
pub(crate) fn whitespace_16(buf: &[u8], at: usize) -> Option<u32> {
    let b: &[u8; 16] = buf.get(at..at.checked_add(16)?)?.try_into().ok()?;
    #[cfg(target_arch = "x86_64")]
    {
        Some(x86::whitespace_16(b))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Some(words16(b, |w| {
            bytes_eq(w, b' ') | bytes_eq(w, b'\n') | bytes_eq(w, b'\r') | bytes_eq(w, b'\t')
        }))
    }
}

/// A 16-bit mask of two words' byte flags (`flags` sets the high bit of each flagged byte): the
/// word-at-a-time form of the 16-byte searches, and their reference in the tests.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn words16(b: &[u8; 16], flags: impl Fn(u64) -> u64) -> u32 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    let lo = bits_of(flags(u64::from_le_bytes(w)));
    w.copy_from_slice(&b[8..]);
    let hi = bits_of(flags(u64::from_le_bytes(w)));
    (lo | (hi << 8)) as u32
}

/// Index of the first `"` or `\\` in `s`: sixteen bytes at a time for the first 64 (most strings in
/// a trace are keys and short names, where memchr's setup cost dominates), memchr beyond; the last
/// bytes of a window (fewer than 16) by [`find_quote_or_backslash`].
#[inline(always)]
pub(crate) fn find_quote_or_backslash_16(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(m) = quote_or_backslash_16(s, i) {
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
        if i == 64 {
            return memchr::memchr2(b'"', b'\\', &s[i..]).map(|p| p + i);
        }
    }
    find_quote_or_backslash(&s[i..]).map(|p| p + i)
}

#[cfg(test)]
#[path = "structural_tests.rs"]
mod tests;
