//! Text cut to a length, one way everywhere: at most `max` characters of the text are kept
//! (never part of a character), followed by a mark that says it was cut — the mark is not
//! counted. A text of `max` characters or fewer is returned as it is.
//!
//! Where the text came from a server and may carry a secret, cut it with
//! [`crate::redact::excerpt`] instead, which redacts before it cuts.
//!
//! Also here: which characters must not reach a terminal as they are ([`is_unsafe`]), and
//! how a message names the type of a JSON value ([`json_type`]).

use std::borrow::Cow;

/// How a cut text says that it was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// `…`
    Ellipsis,
    /// `… (cut)`
    Cut,
    /// `… (N more characters)`
    Counted,
}

/// At most `max` characters of `text`, then `mark` when it was cut.
pub fn cut(text: &str, max: usize, mark: Mark) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some((at, _)) => {
            let head = &text[..at];
            Cow::Owned(match mark {
                Mark::Ellipsis => format!("{head}…"),
                Mark::Cut => format!("{head}… (cut)"),
                Mark::Counted => {
                    let rest = text[at..].chars().count();
                    format!("{head}… ({rest} more characters)")
                }
            })
        }
    }
}

/// [`cut`] with [`Mark::Ellipsis`], owned.
pub fn ellipsis(text: &str, max: usize) -> String {
    cut(text, max, Mark::Ellipsis).into_owned()
}

/// Whether `c` must not reach a terminal as it is: the C0 controls (line breaks and tabs
/// included), DEL, the C1 controls U+0080–U+009F, the bidirectional embeddings, overrides
/// and isolates U+202A–U+202E and U+2066–U+2069, the bidirectional marks U+061C, U+200E and
/// U+200F, and the invisible byte order mark U+FEFF. Text from a model or a server is
/// hostile input: an escape sequence in it could retitle a terminal, clear it or move the
/// cursor, and a bidirectional override could make a line read other than it is.
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{feff}'
    )
}

/// The type of a JSON value as a message names it, with its article: `null`, `a boolean`,
/// `a number`, `a string`, `an array`, `an object` ("expected an object, found a string").
pub fn json_type(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_is_not_counted_and_a_character_is_never_split() {
        assert_eq!(cut("abc", 3, Mark::Ellipsis), "abc");
        assert!(matches!(cut("abc", 3, Mark::Cut), Cow::Borrowed(_)));
        assert_eq!(cut("abcd", 3, Mark::Ellipsis), "abc…");
        assert_eq!(cut("abcd", 3, Mark::Cut), "abc… (cut)");
        assert_eq!(cut("ééééé", 2, Mark::Counted), "éé… (3 more characters)");
        assert_eq!(cut("", 0, Mark::Ellipsis), "");
        assert_eq!(cut("a", 0, Mark::Ellipsis), "…");
    }
}
