//! Text from inputs made safe for a terminal: the one escaping rule for every human-readable line.
//!
//! Names, paths, argv words, GPU names and UUIDs come from files and machines the user does not control. A
//! control character in one (ESC, CSI, a carriage return, a newline) printed raw can move the cursor, clear
//! the screen, recolour or rewrite what was printed before, or forge a line; a bidirectional override or
//! isolate (U+202A–202E, U+2066–2069, and the marks U+200E, U+200F, U+061C) reorders what follows it on the
//! line, so a name can show as another ("Trojan Source"); a line or paragraph separator (U+2028, U+2029)
//! breaks the line in some terminals and editors. So every human-readable line a tool prints, on stdout or
//! stderr, shows these characters ([`is_unsafe`]: control characters C0, DEL, C1, and the others named
//! here) as `\u{…}` escapes:
//!
//! - [`escape`] for one value (a name, a path) placed in a line: every control character, newline included;
//! - [`escape_text`] for a whole block a renderer built: every control character but the newlines (and tabs)
//!   that lay it out, so a value that escaped the per-value rule still cannot reach the terminal raw;
//! - [`note`] for one line on stderr, escaped like [`escape`] (a message is one line: a newline in a name
//!   it quotes must not start a forged one), never panicking.
//!
//! JSON is not escaped here: its own quoting keeps the value exact. CSV cells follow the same rule, with
//! the CSV's own quoting and formula guard on top (`crate::csv`).
//!
//! Lines for a person also fit a terminal of [`WIDTH`] columns: on a terminal (or at the width
//! `KL1_TEXT_WIDTH` gives, 0 for never), a longer line is wrapped at spaces ([`wrap`], [`Wrapping`]),
//! its continuation indented. Into a pipe or a file lines stay whole, so that what reads them — a
//! script, `grep`, a test — sees one message per line.

use std::borrow::Cow;
use std::io::Write;

/// Whether `c` must not reach a terminal raw: a control character (C0, DEL, C1), a bidirectional
/// override, isolate or mark, or a line or paragraph separator.
///
/// ```
/// use tool_io::terminal::is_unsafe;
/// assert!(is_unsafe('\u{1b}') && is_unsafe('\u{202e}') && is_unsafe('\u{2028}'));
/// assert!(!is_unsafe('µ') && !is_unsafe('→') && !is_unsafe(' '));
/// ```
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
                | '\u{2028}' | '\u{2029}'
        )
}

/// `s` with every unsafe character ([`is_unsafe`]: control characters, C0 including newline and tab, DEL,
/// C1; bidirectional overrides; line separators) as a `\u{…}` escape.
///
/// ```
/// assert_eq!(tool_io::terminal::escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
/// assert_eq!(tool_io::terminal::escape("x\ny"), "x\\u{a}y");
/// ```
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_but(s, |_| false)
}

/// `s` with every unsafe character ([`is_unsafe`]) but `\n` and `\t` as a `\u{…}` escape: for a block of lines built by a
/// renderer (values in it should already have gone through [`escape`]).
///
/// ```
/// assert_eq!(tool_io::terminal::escape_text("a\tb\nc\rd\n"), "a\tb\nc\\u{d}d\n");
/// ```
pub fn escape_text(s: &str) -> Cow<'_, str> {
    escape_but(s, |c| c == '\n' || c == '\t')
}

fn escape_but(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_unsafe(c) && !keep(c);
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
    use std::io::IsTerminal;
    let err = std::io::stderr();
    let line = escape(line);
    let mut lock = err.lock();
    match text_width(err.is_terminal()) {
        Some(width) => {
            for l in wrap(&line, width) {
                let _ = writeln!(lock, "{l}");
            }
        }
        None => {
            let _ = writeln!(lock, "{line}");
        }
    }
}

/// The columns of the terminal lines are made for.
pub const WIDTH: usize = 120;

/// The width to wrap a stream's lines at: `KL1_TEXT_WIDTH` when set (0: never), else [`WIDTH`] when the
/// stream is a terminal, else none (lines stay whole).
pub fn text_width(is_terminal: bool) -> Option<usize> {
    match std::env::var("KL1_TEXT_WIDTH") {
        Ok(v) => v.trim().parse::<usize>().ok().filter(|&n| n > 0),
        Err(_) => is_terminal.then_some(WIDTH),
    }
}

/// `line` as lines of at most `width` characters: cut at the last space that fits, each continuation
/// indented by the line's own indent and four spaces more; a word longer than the room is cut where the
/// room ends. A line that fits is itself.
///
/// ```
/// let w = tool_io::terminal::wrap("  note: a b c d", 10);
/// // The continuation's indent, 2 + 4, is held to half the width (5), so that half of it is text.
/// assert_eq!(w, ["  note: a", "     b c d"]);
/// ```
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= width {
        return vec![line.to_string()];
    }
    let indent = chars.iter().take_while(|c| **c == ' ').count();
    // Continuations stay readable however deep the first line's indent: at least half the width is text.
    let cont = (indent + 4).min(width / 2);
    let mut out = Vec::new();
    let mut rest: &[char] = &chars;
    let mut lead = 0;
    while lead + rest.len() > width {
        let room = width - lead;
        let cut = rest[..=room.min(rest.len() - 1)]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&i| i > 0 && rest[..i].iter().any(|c| *c != ' '))
            .unwrap_or(room);
        let head: String = rest[..cut].iter().collect();
        out.push(format!("{}{}", " ".repeat(lead), head.trim_end()));
        rest = &rest[cut..];
        while rest.first() == Some(&' ') {
            rest = &rest[1..];
        }
        lead = cont;
    }
    if !rest.is_empty() {
        out.push(format!(
            "{}{}",
            " ".repeat(lead),
            rest.iter().collect::<String>()
        ));
    }
    out
}

/// A writer that passes its text to `inner` a line at a time, each line wrapped at `width` ([`wrap`]);
/// `width` `None` passes everything through as it is. For a human-readable text stream; never for JSON
/// or CSV.
pub struct Wrapping<W: Write> {
    inner: W,
    width: Option<usize>,
    line: Vec<u8>,
}

impl<W: Write> Wrapping<W> {
    /// Wraps `inner`'s lines at `width`.
    pub fn new(inner: W, width: Option<usize>) -> Wrapping<W> {
        Wrapping {
            inner,
            width,
            line: Vec::new(),
        }
    }

    fn emit_line(&mut self, width: usize) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        for l in wrap(&text, width) {
            writeln!(self.inner, "{l}")?;
        }
        Ok(())
    }
}

impl<W: Write> Write for Wrapping<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some(width) = self.width else {
            return self.inner.write(buf);
        };
        for part in buf.split_inclusive(|b| *b == b'\n') {
            match part.strip_suffix(b"\n") {
                Some(body) => {
                    self.line.extend_from_slice(body);
                    self.emit_line(width)?;
                }
                None => self.line.extend_from_slice(part),
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(width) = self.width
            && !self.line.is_empty()
        {
            // A last line without its newline is written as it is, wrapped, without one.
            let text = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            let lines = wrap(&text, width);
            write!(self.inner, "{}", lines.join("\n"))?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_fit_and_keep_every_word() {
        let line = format!("  note: {}", ["word"; 60].join(" "));
        let lines = wrap(&line, 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert!(lines[1..].iter().all(|l| l.starts_with("      w")));
        let words: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
        // "note:" and the 60 words, none lost or split.
        assert_eq!(words, 61);
        // A word longer than the room is cut where the room ends, and nothing is lost.
        let long = "x".repeat(25);
        assert_eq!(
            wrap(&long, 10),
            ["xxxxxxxxxx", "    xxxxxx", "    xxxxxx", "    xxx"]
        );
        assert_eq!(wrap("short", 10), ["short"]);
    }

    #[test]
    fn a_wrapping_writer_wraps_each_line_and_passes_through_without_a_width() {
        let mut w = Wrapping::new(Vec::new(), Some(10));
        w.write_all(b"aaa bbb ccc ddd\nshort\n").unwrap();
        w.flush().unwrap();
        // "    ccc ddd" would be 11 characters: the continuation (indent 4) holds one word of three.
        assert_eq!(
            String::from_utf8(w.inner).unwrap(),
            "aaa bbb\n    ccc\n    ddd\nshort\n"
        );
        let mut w = Wrapping::new(Vec::new(), None);
        w.write_all(b"aaa bbb ccc ddd\n").unwrap();
        assert_eq!(w.inner, b"aaa bbb ccc ddd\n");
    }

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(escape("gemm<1, 2>"), "gemm<1, 2>");
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("x\ny\u{7f}\u{9b}"), "x\\u{a}y\\u{7f}\\u{9b}");
        assert_eq!(escape("µs → ok"), "µs → ok");
    }

    #[test]
    fn bidirectional_overrides_and_line_separators_are_escaped() {
        // RLO … PDF would show "gemm_evil" reversed; LRI/PDI isolate; U+2028/2029 break lines.
        assert_eq!(
            escape("gemm\u{202e}live\u{202c}"),
            "gemm\\u{202e}live\\u{202c}"
        );
        assert_eq!(escape("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(
            escape_text("a\u{2028}b\u{2029}c\n"),
            "a\\u{2028}b\\u{2029}c\n"
        );
        // Every override, isolate and mark in the ranges, and nothing next to them.
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}') {
            assert!(is_unsafe(c), "{:x}", c as u32);
        }
        for c in ['\u{200e}', '\u{200f}', '\u{61c}'] {
            assert!(is_unsafe(c), "{:x}", c as u32);
        }
        for c in ['\u{2027}', '\u{202f}', '\u{2065}', '\u{206a}', '\u{200d}'] {
            assert!(!is_unsafe(c), "{:x}", c as u32);
        }
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
