//! Text from inputs made safe for a terminal: the one escaping rule for every human-readable line.
//!
//! Names, paths, argv words, GPU names and UUIDs come from files and machines the user does not control. A
//! control character in one (ESC, CSI, a carriage return, a newline) printed raw can move the cursor, clear
//! the screen, recolour or rewrite what was printed before, or forge a line. So every human-readable line a
//! tool prints, on stdout or stderr, shows control characters (C0, DEL, C1) as `\u{…}` escapes:
//!
//! - [`escape`] for one value (a name, a path) placed in a line: every control character, newline included;
//! - [`escape_text`] for a whole block a renderer built: every control character but the newlines (and tabs)
//!   that lay it out, so a value that escaped the per-value rule still cannot reach the terminal raw;
//! - [`note`] for one line on stderr, escaped like [`escape`] (a message is one line: a newline in a name
//!   it quotes must not start a forged one), never panicking.
//!
//! Machine-readable output (JSON, CSV) is not escaped here: its own quoting keeps the value exact.

use std::borrow::Cow;
use std::io::Write;

/// `s` with every control character (C0 including newline and tab, DEL, C1) as a `\u{…}` escape.
///
/// ```
/// assert_eq!(tool_io::terminal::escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
/// assert_eq!(tool_io::terminal::escape("x\ny"), "x\\u{a}y");
/// ```
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_but(s, |_| false)
}

/// `s` with every control character but `\n` and `\t` as a `\u{…}` escape: for a block of lines built by a
/// renderer (values in it should already have gone through [`escape`]).
///
/// ```
/// assert_eq!(tool_io::terminal::escape_text("a\tb\nc\rd\n"), "a\tb\nc\\u{d}d\n");
/// ```
pub fn escape_text(s: &str) -> Cow<'_, str> {
    escape_but(s, |c| c == '\n' || c == '\t')
}

fn escape_but(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() && !keep(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Writes `line` and a newline on stderr, every control character in it escaped ([`escape`]); a message of
/// several lines is several calls. A failure is ignored: there is nowhere left to report it.
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", escape(line));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(escape("gemm<1, 2>"), "gemm<1, 2>");
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("x\ny\u{7f}\u{9b}"), "x\\u{a}y\\u{7f}\\u{9b}");
        assert_eq!(escape("µs → ok"), "µs → ok");
    }

    #[test]
    fn text_keeps_its_layout_and_nothing_else() {
        assert_eq!(escape_text("a\tb\n"), "a\tb\n");
        assert_eq!(
            escape_text("GPU \u{1b}]0;owned\u{7}\n"),
            "GPU \\u{1b}]0;owned\\u{7}\n"
        );
        assert_eq!(escape_text("\r\u{85}"), "\\u{d}\\u{85}");
        // Idempotent: an escape holds no control character.
        let once = escape("\u{1b}x").into_owned();
        assert_eq!(escape_text(&once), once);
    }
}
