//! An open document's text and the conversion between byte offsets (what lwirc's spans
//! are) and LSP positions (line and character, the character counted in the negotiated
//! encoding). Conversions happen here, at the protocol edge, and nowhere else.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};
use lwir_spec::Span;
use lwir_spec::span::{ColumnIndex, LineIndex};

/// How the client counts characters in a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 code units: bytes. Offered by the client, preferred.
    Utf8,
    /// UTF-16 code units: the protocol's default.
    Utf16,
}

impl Encoding {
    /// The protocol's name for it.
    pub fn kind(self) -> lsp_types::PositionEncodingKind {
        match self {
            Encoding::Utf8 => lsp_types::PositionEncodingKind::UTF8,
            Encoding::Utf16 => lsp_types::PositionEncodingKind::UTF16,
        }
    }
}

/// A position that is not in the document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line} is past the end of the document ({lines} lines)")]
pub struct BadPosition {
    /// The 0-based line asked for.
    pub line: u32,
    /// How many lines the document has.
    pub lines: usize,
}

/// The text of an open document, its version, and its line index.
#[derive(Debug)]
pub struct Text {
    text: String,
    version: i32,
    lines: LineIndex,
    columns: Option<ColumnIndex>,
}

impl Text {
    /// The document as opened.
    pub fn new(text: String, version: i32) -> Self {
        let lines = LineIndex::new(text.as_bytes());
        Self {
            text,
            version,
            lines,
            columns: None,
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The client's version of it.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Applies the client's changes, in order (each against the text the one before it
    /// left): a change with a range replaces that range, one without replaces the whole
    /// text. A range past the end is clamped to it.
    pub fn apply(
        &mut self,
        changes: Vec<TextDocumentContentChangeEvent>,
        version: i32,
        encoding: Encoding,
    ) -> Result<(), BadPosition> {
        for change in changes {
            match change.range {
                None => {
                    self.text = change.text;
                    self.lines = LineIndex::new(self.text.as_bytes());
                }
                Some(range) => {
                    let start = self.offset(range.start, encoding)?;
                    let end = self.offset(range.end, encoding)?.max(start);
                    self.text.replace_range(start..end, &change.text);
                    self.lines.replace(start, end, change.text.as_bytes());
                }
            }
            self.columns = None;
        }
        self.version = version;
        Ok(())
    }

    /// The byte offset of `position`. A character past the end of its line is the line's
    /// end (as the protocol says); a line past the end of the document is an error, except
    /// the line just after the last, which is the end.
    pub fn offset(&self, position: Position, encoding: Encoding) -> Result<usize, BadPosition> {
        let line = position.line as usize;
        if line >= self.lines.line_count() {
            if line == self.lines.line_count() && position.character == 0 {
                return Ok(self.text.len());
            }
            return Err(BadPosition {
                line: position.line,
                lines: self.lines.line_count(),
            });
        }
        let start = self.lines.line_start(line);
        let end = if line + 1 < self.lines.line_count() {
            self.lines.line_start(line + 1) - 1
        } else {
            self.text.len()
        };
        let content = &self.text[start..end];
        let content = content.strip_suffix('\r').unwrap_or(content);
        let wanted = position.character as usize;
        let within = match encoding {
            Encoding::Utf8 => floor_char_boundary(content, wanted.min(content.len())),
            Encoding::Utf16 => {
                let mut units = 0;
                let mut at = content.len();
                for (i, c) in content.char_indices() {
                    // A position inside a character (between the halves of a surrogate
                    // pair) is its start.
                    if units + c.len_utf16() > wanted {
                        at = i;
                        break;
                    }
                    units += c.len_utf16();
                }
                at
            }
        };
        Ok(start + within)
    }

    /// The position of byte `offset` (clamped to the text).
    pub fn position(&mut self, offset: usize, encoding: Encoding) -> Position {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let line = self.lines.line_of(offset);
        let character = match encoding {
            Encoding::Utf8 => offset - self.lines.line_start(line),
            Encoding::Utf16 => {
                // Counted by blocks, so that many positions on one long (minified) line
                // each cost the same.
                let columns = self
                    .columns
                    .get_or_insert_with(|| ColumnIndex::new(self.text.as_bytes()));
                columns.locate_utf16(self.text.as_bytes(), offset).column - 1
            }
        };
        Position::new(to_u32(line), to_u32(character))
    }

    /// The range of `span`.
    pub fn range(&mut self, span: Span, encoding: Encoding) -> Range {
        Range::new(
            self.position(span.start(), encoding),
            self.position(span.end(), encoding),
        )
    }

    /// The range of the whole text.
    pub fn whole(&mut self, encoding: Encoding) -> Range {
        let end = self.text.len();
        Range::new(Position::new(0, 0), self.position(end, encoding))
    }
}

/// The positions of bytes of a text that is not open (a definition on disk, for a related
/// place or a go-to-definition target).
pub fn range_in(bytes: &[u8], span: Span, encoding: Encoding) -> Range {
    let mut text = Text::new(String::from_utf8_lossy(bytes).into_owned(), 0);
    text.range(span, encoding)
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The smallest edit that turns `old` into `new`: the range of `old` between their common
/// prefix and suffix, and what replaces it. `None` when they are equal.
pub fn diff(old: &str, new: &str) -> Option<(Span, String)> {
    if old == new {
        return None;
    }
    let prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let prefix = floor_char_boundary(old, prefix.min(new.len()));
    let prefix = floor_char_boundary(new, prefix);
    let max_suffix = (old.len() - prefix).min(new.len() - prefix);
    let mut suffix = old.as_bytes()[old.len() - max_suffix..]
        .iter()
        .rev()
        .zip(new.as_bytes()[new.len() - max_suffix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    while suffix > 0
        && !(old.is_char_boundary(old.len() - suffix) && new.is_char_boundary(new.len() - suffix))
    {
        suffix -= 1;
    }
    Some((
        Span::new(prefix, old.len() - suffix),
        new[prefix..new.len() - suffix].to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_in_both_encodings() {
        // `é` is 2 bytes, 1 UTF-16 unit; `😀` 4 bytes, 2 units.
        let mut text = Text::new("{\n  \"é😀x\": 1\n}".to_owned(), 1);
        let x = text.as_str().find('x').unwrap();
        assert_eq!(text.position(x, Encoding::Utf8), Position::new(1, 9));
        assert_eq!(text.position(x, Encoding::Utf16), Position::new(1, 6));
        assert_eq!(text.offset(Position::new(1, 9), Encoding::Utf8), Ok(x));
        assert_eq!(text.offset(Position::new(1, 6), Encoding::Utf16), Ok(x));
        // Inside a character: its start.
        assert_eq!(text.offset(Position::new(1, 5), Encoding::Utf16), Ok(x - 4));
        // Past the line's end: the end of the line.
        assert_eq!(text.offset(Position::new(0, 40), Encoding::Utf16), Ok(1));
        assert!(text.offset(Position::new(9, 0), Encoding::Utf8).is_err());
    }

    #[test]
    fn incremental_changes() {
        let mut text = Text::new("ab\ncd".to_owned(), 1);
        text.apply(
            vec![TextDocumentContentChangeEvent {
                range: Some(Range::new(Position::new(1, 0), Position::new(1, 1))),
                range_length: None,
                text: "é".to_owned(),
            }],
            2,
            Encoding::Utf16,
        )
        .unwrap();
        assert_eq!(text.as_str(), "ab\néd");
        assert_eq!(text.version(), 2);
    }

    #[test]
    fn smallest_edits() {
        assert_eq!(diff("abc", "abc"), None);
        assert_eq!(
            diff("abXc", "abYc"),
            Some((Span::new(2, 3), "Y".to_owned()))
        );
        assert_eq!(diff("aa", "aaa"), Some((Span::new(2, 2), "a".to_owned())));
        assert_eq!(diff("é", "è"), Some((Span::new(0, 2), "è".to_owned())));
    }
}
