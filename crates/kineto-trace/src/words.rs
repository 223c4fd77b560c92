//! Word-at-a-time (SWAR) helpers for the scanner: eight bytes as one little-endian `u64` (the byte at
//! the lowest index in the lowest bits), with exact per-byte masks, digit runs and their values, and
//! object keys packed into integers. Plain integer arithmetic: the same on every target.

// Every mask below is exact per byte (no carry or borrow runs from one byte into the next), so the
// lowest flagged byte — the one every caller uses — is the right one.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
pub(crate) const HIGH: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The eight bytes at `i`, or `None` when fewer than eight remain.
#[inline(always)]
pub(crate) fn word_at(buf: &[u8], i: usize) -> Option<u64> {
    let b: [u8; 8] = buf.get(i..i.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The high bit of every byte of `x` that is zero.
#[inline(always)]
pub(crate) const fn zero_bytes(x: u64) -> u64 {
    // (b & 0x7F) + 0x7F sets the high bit for any b with a low bit set, `| x` for b ≥ 0x80; the sum
    // never exceeds 0xFE, so nothing carries into the next byte.
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// The high bit of every byte of `w` equal to `c`.
#[inline(always)]
pub(crate) const fn bytes_eq(w: u64, c: u8) -> u64 {
    zero_bytes(w ^ (ONES * c as u64))
}

/// The high bit of every byte of `w` that is not an ASCII digit.
#[inline(always)]
const fn non_digits(w: u64) -> u64 {
    // b ≥ '0' ⇔ high bit of ((b & 0x7F) + 0x50) | b;  b > '9' ⇔ high bit of ((b & 0x7F) + 0x46) | b.
    let ge0 = ((w & LOW7) + ONES * 0x50) | w;
    let gt9 = ((w & LOW7) + ONES * 0x46) | w;
    (!ge0 | gt9) & HIGH
}

/// How many of the word's bytes, from the first, are ASCII digits (0 to 8).
#[inline(always)]
pub(crate) const fn leading_digits(w: u64) -> usize {
    (non_digits(w).trailing_zeros() / 8) as usize
}

/// Kineto's absolute time as it writes it, 16 digits, a point and 3 decimals (`1712195495526861.039`),
/// then a byte that ends a number (no digit, `e` or `E`), from the three words at its start: (the
/// integer part, the decimals), or `None` for any other form (a leading zero included).
#[inline(always)]
pub(crate) const fn sixteen_point_three(w0: u64, w1: u64, w2: u64) -> Option<(u64, u64)> {
    // Bytes 0–4 of `w2`: the point and the byte after the decimals are no digits, the decimals are.
    let tail = non_digits(w2) & 0x80_8080_8080;
    if non_digits(w0) | non_digits(w1) != 0
        || tail != 0x80_0000_0080
        || w2 as u8 != b'.'
        || (w2 >> 32) as u8 | 0x20 == b'e'
        || w0 as u8 == b'0'
    {
        return None;
    }
    Some((
        digits_value(w0, 8) * 100_000_000 + digits_value(w1, 8),
        digits_value(w2 >> 8, 3),
    ))
}

/// Kineto's duration as it writes it, 1 to 3 digits, a point and 3 decimals (`63.813`), then a byte
/// that ends a number, all in `w`: (the integer part, the decimals, the length), or `None` for any
/// other form (a leading zero before another digit included).
#[inline(always)]
pub(crate) const fn short_point_three(w: u64) -> Option<(u64, u64, usize)> {
    let nd = non_digits(w);
    let k = (nd.trailing_zeros() / 8) as usize;
    // Bytes k+1 to k+4 (k ≤ 3): three decimals, then no digit.
    if k == 0
        || k > 3
        || (nd >> (8 * (k + 1))) & 0x8080_8080 != 0x8000_0000
        || (w >> (8 * k)) as u8 != b'.'
        || (w >> (8 * (k + 4))) as u8 | 0x20 == b'e'
        || (k > 1 && w as u8 == b'0')
    {
        return None;
    }
    Some((
        digits_value(w, k),
        digits_value(w >> (8 * (k + 1)), 3),
        k + 4,
    ))
}

/// The decimal value of the first `k` bytes of `w` (1 ≤ `k` ≤ 8, all ASCII digits).
#[inline(always)]
pub(crate) const fn digits_value(w: u64, k: usize) -> u64 {
    // Shifting the k digits to the top leaves zero bytes below them: leading zeros of the number.
    let v = w << (8 * (8 - k));
    // Pairs, then quads, then the eight digits (the well-known three-multiply reduction).
    let v = ((v & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561)) >> 8;
    let v = ((v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601)) >> 16;
    ((v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001)) >> 32
}

pub(crate) const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The first `k` bytes of `w` (0 ≤ `k` < 8), the rest zeroed.
#[inline(always)]
pub(crate) const fn first_bytes(w: u64, k: usize) -> u64 {
    w & ((1u64 << (8 * k)) - 1)
}

/// Index of the first `"` or `\\` in `s`. Eight bytes at a time for the first 64 (most strings in a
/// trace are keys and short names, where memchr's setup cost dominates), memchr beyond.
#[inline(always)]
pub(crate) fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const QUOTE: u64 = ONES * b'"' as u64;
    const BACKSLASH: u64 = ONES * b'\\' as u64;
    let mut i = 0;
    let swar_end = s.len().min(64);
    while i + 8 <= swar_end {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        let v = u64::from_le_bytes(w);
        let q = v ^ QUOTE;
        let b = v ^ BACKSLASH;
        // A zero byte in q or b marks a match; the lowest flagged byte is exact (borrows only
        // propagate upwards).
        let m = (q.wrapping_sub(ONES) & !q | b.wrapping_sub(ONES) & !b) & HIGH;
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    if s.len() - i < 8 {
        return s[i..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .map(|p| p + i);
    }
    memchr::memchr2(b'"', b'\\', &s[i..]).map(|p| p + i)
}

/// An object key of at most 16 bytes as (length, bytes 0–7, bytes 8–15), zero-padded: compared as
/// three integers instead of as text.
pub(crate) type KeyWords = (usize, u64, u64);

/// `key` packed as [`KeyWords`], or `None` when it is longer than 16 bytes.
pub(crate) const fn pack_key(key: &[u8]) -> Option<KeyWords> {
    if key.len() > 16 {
        return None;
    }
    let mut w = [0u64; 2];
    let mut i = 0;
    while i < key.len() {
        w[i / 8] |= (key[i] as u64) << (8 * (i % 8));
        i += 1;
    }
    Some((key.len(), w[0], w[1]))
}

/// An object key as it stands before its value in the traces we read most: `"key": ` (the quotes,
/// the colon and one space), as two words and masks of the bytes that count. Checked at a key's
/// opening quote with one or two compares, where reading the key, packing it and matching it costs
/// several times that. At most 16 bytes: keys of up to 12.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyText {
    words: [u64; 2],
    masks: [u64; 2],
    len: usize,
}

impl KeyText {
    pub(crate) const fn of(key: &[u8]) -> KeyText {
        let len = key.len() + 4;
        assert!(len <= 16, "a key longer than 12 bytes");
        let mut words = [0u64; 2];
        let mut masks = [0u64; 2];
        let mut i = 0;
        while i < len {
            let b = if i == 0 || i == len - 3 {
                b'"'
            } else if i == len - 2 {
                b':'
            } else if i == len - 1 {
                b' '
            } else {
                key[i - 1]
            };
            words[i / 8] |= (b as u64) << (8 * (i % 8));
            masks[i / 8] |= 0xFF << (8 * (i % 8));
            i += 1;
        }
        KeyText { words, masks, len }
    }

    /// Its length in bytes.
    #[inline(always)]
    pub(crate) const fn len(&self) -> usize {
        self.len
    }

    /// Whether `buf` holds this text at `at`; `false` also when the window ends first (8 or 16 bytes
    /// must be left, as the text is up to 8 bytes or longer).
    #[inline(always)]
    pub(crate) fn at(&self, buf: &[u8], at: usize) -> bool {
        let Some(w0) = word_at(buf, at) else {
            return false;
        };
        let lo = (w0 ^ self.words[0]) & self.masks[0];
        if self.len <= 8 {
            return lo == 0;
        }
        word_at(buf, at + 8).is_some_and(|w1| lo | ((w1 ^ self.words[1]) & self.masks[1]) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_texts_match_only_their_own_text() {
        let ph = KeyText::of(b"ph");
        let ext = KeyText::of(b"External id");
        assert_eq!((ph.len(), ext.len()), (6, 15));
        let pad = |s: &[u8]| [s, &[b'z'; 16][..]].concat();
        assert!(ph.at(&pad(b"\"ph\": 1"), 0));
        assert!(ph.at(b"..\"ph\": \"X\"", 2));
        assert!(ext.at(&pad(b"\"External id\": 7"), 0));
        for miss in [
            &b"\"ph\":1"[..],
            b"\"ph\" : 1",
            b"\"phx\": 1",
            b"\"p\": 1",
            b"\"pH\": 1",
            b"\"p\\u0068\": 1",
            b" \"ph\": 1",
        ] {
            assert!(!ph.at(&pad(miss), 0), "{}", String::from_utf8_lossy(miss));
        }
        for miss in [
            &b"\"External id\":7"[..],
            b"\"External idx\": 7",
            b"\"external id\": 7",
        ] {
            assert!(!ext.at(&pad(miss), 0), "{}", String::from_utf8_lossy(miss));
        }
        // Too few bytes left to compare the words: no match (the general path reads it).
        assert!(!ph.at(b"\"ph\": 1", 0));
        assert!(!ph.at(b"\"ph\": 1z", 1));
        assert!(!ext.at(b"\"External id\": ", 0));
        assert!(ph.at(b"\"ph\": 12", 0));
        assert!(ext.at(b"\"External id\": 7,", 0));
    }

    #[test]
    fn digit_runs_and_their_values() {
        for k in 1..=8usize {
            for tail in [b',', b'.', b'e', b'/', b':', 0x00, 0xb0, 0xff] {
                let mut b = [tail; 8];
                for (i, d) in b.iter_mut().take(k).enumerate() {
                    *d = b'9' - (i as u8 * 7) % 10;
                }
                let w = u64::from_le_bytes(b);
                let want: u64 = std::str::from_utf8(&b[..k])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let k_found = if k < 8 { k } else { 8 };
                assert_eq!(leading_digits(w), k_found, "{b:?}");
                assert_eq!(digits_value(w, k), want, "{b:?}");
            }
        }
        assert_eq!(leading_digits(u64::from_le_bytes(*b"/0123456")), 0);
        assert_eq!(
            bytes_eq(u64::from_le_bytes(*b"a!  \"x\"y"), b'"'),
            (0x80 << 32) | (0x80 << 48)
        );
        assert_eq!(zero_bytes(0x0100), 0x8080_8080_8080_0080);
    }
}
