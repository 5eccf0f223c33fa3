//! Text from a server made safe to show: its standard error, its error messages, excerpts
//! of what it sent. A server is hostile input: an escape sequence in its output could
//! retitle a terminal, clear it or move the cursor, and a bidirectional override could make
//! a line read other than it is.

use std::fmt::Write;

use lwir_spec::text::is_unsafe;

/// How many bytes of the end of a server's standard error are kept.
pub(crate) const STDERR_KEEP: usize = 64 * 1024;

/// How many characters of text from a server an error message shows at most.
pub(crate) const SHOWN: usize = 2000;

/// How many lines of a server's standard error an error message shows at most.
const SHOWN_LINES: usize = 20;

/// `text` without terminal escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ST`,
/// and two-byte `ESC x`), with every other control character (line breaks kept), C1
/// control and bidirectional control shown escaped as `\u{…}`.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.next() {
                Some('[') => {
                    // Parameters and intermediates up to the final byte (0x40–0x7e).
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        if c == '\n' || !is_unsafe(c) {
            out.push(c);
        } else {
            // Writing into a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    out
}

/// At most `max` characters of `text`, cut with how much more there was.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    lwir_spec::text::cut(text, max, lwir_spec::text::Mark::Counted).into_owned()
}

/// Bytes a server sent, shown: decoded (invalid UTF-8 replaced), cleaned, cut to
/// [`SHOWN`] characters, on one line.
pub(crate) fn show_bytes(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    excerpt(&clean(&text).replace('\n', "\\u{a}"), SHOWN / 4)
}

/// A message from a server, shown on one line, cleaned and cut.
pub(crate) fn show_message(text: &str) -> String {
    excerpt(&clean(text).replace('\n', " "), SHOWN / 2)
}

/// The end of a server's standard error as an error message shows it: decoded, cleaned,
/// the last [`SHOWN_LINES`] non-empty lines, at most [`SHOWN`] characters (the end kept).
pub(crate) fn stderr_tail(bytes: &[u8]) -> String {
    let text = clean(&String::from_utf8_lossy(bytes));
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    let skipped = lines.len().saturating_sub(SHOWN_LINES);
    let mut kept = lines[skipped..].join("\n");
    let count = kept.chars().count();
    if count > SHOWN {
        let cut = kept.char_indices().nth(count - SHOWN).map_or(0, |(i, _)| i);
        kept = format!("…{}", &kept[cut..]);
    } else if skipped > 0 {
        kept = format!("… ({skipped} earlier lines)\n{kept}");
    }
    kept
}

/// The last [`STDERR_KEEP`] bytes written to a stream.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    /// Appends `chunk`, keeping only the end.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= STDERR_KEEP {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&chunk[chunk.len() - STDERR_KEEP..]);
            return;
        }
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > STDERR_KEEP {
            let cut = self.bytes.len() - STDERR_KEEP;
            self.bytes.drain(..cut);
        }
    }

    /// What is kept.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_removed_and_controls_shown() {
        assert_eq!(clean("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(clean("a\u{1b}]0;pwned\u{7}b"), "ab");
        assert_eq!(clean("a\u{1b}]0;x\u{1b}\\b"), "ab");
        assert_eq!(clean("x\u{9b}y\u{202e}z\r"), "x\\u{9b}y\\u{202e}z\\u{d}");
        assert_eq!(clean("one\ntwo\tthree"), "one\ntwo\\u{9}three");
    }

    #[test]
    fn a_long_stderr_keeps_its_end() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let tail = stderr_tail(text.as_bytes());
        assert!(tail.starts_with("… (80 earlier lines)\nline 80"), "{tail}");
        assert!(tail.ends_with("line 99"));
        let long = "x".repeat(10_000);
        let tail = stderr_tail(long.as_bytes());
        assert_eq!(tail.chars().count(), SHOWN + 1);
    }

    #[test]
    fn the_tail_is_bounded() {
        let mut tail = Tail::default();
        for _ in 0..100 {
            tail.push(&[b'a'; 1000]);
        }
        tail.push(b"end");
        assert_eq!(tail.bytes().len(), STDERR_KEEP);
        assert!(tail.bytes().ends_with(b"aend"));
        tail.push(&vec![b'b'; STDERR_KEEP + 10]);
        assert_eq!(tail.bytes().len(), STDERR_KEEP);
    }
}
