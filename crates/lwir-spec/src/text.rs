//! Text cut to a length, one way everywhere: at most `max` characters of the text are kept
//! (never part of a character), followed by a mark that says it was cut — the mark is not
//! counted. A text of `max` characters or fewer is returned as it is.
//!
//! Where the text came from a server and may carry a secret, cut it with
//! [`crate::redact::excerpt`] instead, which redacts before it cuts.

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
