//! Text from drafts and planners made safe for a terminal.
//!
//! A tool name, a workflow name, a planner's rationale or standard error is model output, and
//! model output is hostile input: an escape sequence in it could retitle the window, clear
//! the screen or move the cursor, and a bidirectional override could make a line read other
//! than it is. Every string printed for people that did not come from lwirc itself goes
//! through [`sanitize`] (the JSON and SARIF renderers need nothing: JSON escapes control
//! characters, and their strings stay exact).

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is (one definition for every crate that
/// shows hostile text; see [`lwir_spec::text::is_unsafe`]).
pub use lwir_spec::text::is_unsafe;

/// `text` with every character [`is_unsafe`] shown escaped, as Rust writes it: ESC is
/// `\u{1b}`, a line break `\u{a}`. Borrowed when there is nothing to escape.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            // Writing into a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// At most `max` characters of `text`: a longer text is cut there, with how much more there
/// was. A message that quotes a 200 KB value from a draft stays readable; the JSON report
/// keeps it whole.
pub fn excerpt(text: &str, max: usize) -> Cow<'_, str> {
    lwir_spec::text::cut(text, max, lwir_spec::text::Mark::Counted)
}

/// Like [`sanitize`], but keeps line breaks (`\n`): for multi-line text such as a planner's
/// standard error, shown line by line. A carriage return is still escaped.
pub fn sanitize_lines(text: &str) -> String {
    text.split('\n')
        .map(sanitize)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_bidi_and_keeps_the_rest() {
        assert_eq!(sanitize("\u{feff}a\u{200f}"), "\\u{feff}a\\u{200f}");
        assert_eq!(
            sanitize("a\u{1b}]0;pwned\u{7}b\u{1b}[2J"),
            "a\\u{1b}]0;pwned\\u{7}b\\u{1b}[2J"
        );
        assert_eq!(
            sanitize("x\u{9b}y\u{202e}z\u{2069}"),
            "x\\u{9b}y\\u{202e}z\\u{2069}"
        );
        assert_eq!(
            sanitize("tab\there\nline\u{7f}"),
            "tab\\u{9}here\\u{a}line\\u{7f}"
        );
        assert!(matches!(
            sanitize("é ✓ `github.list_issues`"),
            Cow::Borrowed(_)
        ));
        assert_eq!(sanitize_lines("one\u{1b}\ntwo\r"), "one\\u{1b}\ntwo\\u{d}");
    }
}
