//! `provenance diff`: the changes as aligned text.

use provenance::diff::{Change, telling};

/// The changes as aligned text, one per line, the informational ones last under a heading of their own; a
/// sentence when none counts.
pub fn render(changes: &[Change]) -> String {
    let mut s = String::new();
    if !telling(changes) {
        s.push_str("no differences in what is recorded that usually explains a changed number\n");
    }
    let w = changes
        .iter()
        .map(|c| c.what.chars().count())
        .max()
        .unwrap_or(0);
    let counted = changes.iter().filter(|c| !c.informational);
    let info: Vec<&Change> = changes.iter().filter(|c| c.informational).collect();
    let mut heading =
        (!info.is_empty()).then_some("for information (not counted as differences):\n");
    for c in counted.chain(info.iter().copied()) {
        if c.informational
            && let Some(h) = heading.take()
        {
            s.push_str(h);
        }
        let pad = w - c.what.chars().count();
        // Values from the records: control characters escaped (`tool_io::terminal`).
        let e = tool_io::terminal::escape;
        s.push_str(&format!(
            "{}{}  {} → {}  ({})\n",
            e(&c.what),
            " ".repeat(pad),
            e(&c.a),
            e(&c.b),
            e(&c.why)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(what: &str, informational: bool) -> Change {
        Change {
            what: what.to_owned(),
            a: "x".to_owned(),
            b: "y".to_owned(),
            why: "because".to_owned(),
            informational,
            section: provenance::diff::Section::Measured,
        }
    }

    #[test]
    fn nothing_counted_says_so_and_lists_information_last() {
        assert!(render(&[]).starts_with("no differences"));
        let text = render(&[change("command line", true)]);
        assert!(
            text.starts_with("no differences") && text.contains("for information"),
            "{text}"
        );
        let text = render(&[change("command line", true), change("commit", false)]);
        assert!(!text.starts_with("no differences"), "{text}");
        let commit = text.find("commit ").expect("commit listed");
        let info = text.find("for information").expect("heading");
        assert!(commit < info, "{text}");
    }
}
