//! CSV cells: the one rule every CSV writer of the workspace follows (kineto's listings and budgets,
//! gpu-monitor's samples), so that a cell from an input (a kernel name, a rule's bucket, a GPU's UUID)
//! cannot break the file, reach a terminal raw, or run in a spreadsheet.
//!
//! A text cell ([`text_cell`]):
//!
//! 1. shows every unsafe character ([`crate::terminal::is_unsafe`]: control characters, newline, tab and
//!    NUL included; bidirectional overrides; line separators) as a `\u{…}` escape, as the text tables do:
//!    `--csv` goes to terminals, `less` and spreadsheets as often as to scripts, and a raw ESC or BEL there
//!    acts. So every record of our CSV is one line. The exact bytes are in the JSON form;
//! 2. is guarded against formulas: a cell starting with `=`, `+`, `-` or `@` that is not a number gets a
//!    leading `'` (what spreadsheets themselves use to mean "text"); a spreadsheet would otherwise run
//!    `=HYPERLINK(…)` from a kernel name. A number (`-1.5`, `+3`, `-inf` is not one) stays as it is, so
//!    sorting and sums still work; numeric columns never pass through here;
//! 3. is quoted as RFC 4180 says when it holds `,` or `"` (a `"` doubled).
//!
//! The reasons are in `docs/result-files.md` ("CSV cells").

use crate::terminal::escape;
use std::borrow::Cow;

/// The characters that make a spreadsheet read a cell as a formula.
const FORMULA_START: [char; 4] = ['=', '+', '-', '@'];

/// `s` as one CSV cell of text: unsafe characters escaped, a formula guarded with a leading `'`, quoted
/// when it needs it.
///
/// ```
/// use tool_io::csv::text_cell;
/// assert_eq!(text_cell("gemm<1, 2>"), "\"gemm<1, 2>\"");
/// assert_eq!(text_cell("bell\u{7}"), "bell\\u{7}");
/// assert_eq!(text_cell("=1+2"), "'=1+2");
/// assert_eq!(text_cell("-1.5"), "-1.5");
/// ```
pub fn text_cell(s: &str) -> Cow<'_, str> {
    let escaped = escape(s);
    let guarded = if is_formula(&escaped) {
        Cow::Owned(format!("'{escaped}"))
    } else {
        escaped
    };
    quote(guarded)
}

/// Whether a spreadsheet would read `s` as a formula: it starts with [`FORMULA_START`] and is not a
/// finite number.
fn is_formula(s: &str) -> bool {
    s.starts_with(FORMULA_START) && !s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// `s` in double quotes, its `"` doubled, when it holds a `,` or `"` (RFC 4180); else itself. A line end
/// cannot be in it: [`text_cell`] escaped it.
fn quote(s: Cow<'_, str>) -> Cow<'_, str> {
    if s.contains([',', '"']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells of one RFC 4180 record, read back: quoted cells unquoted, `""` as `"`.
    fn read_record(line: &str) -> Vec<String> {
        let mut cells = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', false) => quoted = true,
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    cells.last_mut().unwrap().push('"');
                }
                ('"', true) => quoted = false,
                (',', false) => cells.push(String::new()),
                (c, _) => cells.last_mut().unwrap().push(c),
            }
        }
        assert!(!quoted, "unterminated quote in {line}");
        cells
    }

    #[test]
    fn control_characters_are_escaped_and_the_record_stays_one_line() {
        let hostile = "k\u{1b}[2J\u{7}\u{8}\u{0}\r\n\t,\"x\"\u{202e}\u{2028}";
        let cell = text_cell(hostile);
        assert!(!cell.chars().any(crate::terminal::is_unsafe), "{cell}");
        let line = format!("1,{cell},2");
        // Three cells, the middle one the escapes written out by hand.
        assert_eq!(
            read_record(&line),
            [
                "1",
                "k\\u{1b}[2J\\u{7}\\u{8}\\u{0}\\u{d}\\u{a}\\u{9},\"x\"\\u{202e}\\u{2028}",
                "2"
            ]
        );
    }

    #[test]
    fn formulas_are_guarded_and_numbers_are_not() {
        assert_eq!(text_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(text_cell("+cmd"), "'+cmd");
        assert_eq!(text_cell("-x"), "'-x");
        assert_eq!(text_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(text_cell("-"), "'-");
        // Not a finite number: guarded.
        assert_eq!(text_cell("-inf"), "'-inf");
        assert_eq!(text_cell("-NaN"), "'-NaN");
        // Numbers, and text that does not start a formula, stay as they are.
        for s in ["-1.5", "+3", "-0", "-2e3", "a=b", "x-y", "", "gemm"] {
            assert_eq!(text_cell(s), s);
        }
        // A formula behind an escaped control character is not at the start any more.
        assert_eq!(text_cell("\u{9}=1"), "\\u{9}=1");
    }
}
