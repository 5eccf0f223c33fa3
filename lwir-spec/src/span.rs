//! Byte spans into a source file, and their line/column form.

use std::fmt;

/// A half-open byte range `[start, end)` into the bytes of a file as given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// First byte, inclusive.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `[start, end)`.
    pub const fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// Its length in bytes.
    pub const fn len(self) -> usize {
        self.end - self.start
    }

    /// Whether it covers no byte.
    pub const fn is_empty(self) -> bool {
        self.start == self.end
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A 1-based line and column. Columns count Unicode scalar values (characters), as rustc
/// and SARIF's `unicodeCodePoints` column kind do; for ASCII text that is the byte column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineColumn {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// Start offsets of every line of a file, for turning byte offsets into [`LineColumn`]s.
///
/// Looking up a line is a binary search; the column counts characters from the line start,
/// so callers that locate many offsets on one very long line (a minified document) should
/// go through [`Locator`], which walks forward instead of restarting each time.
#[derive(Clone, Debug)]
pub struct LineIndex {
    line_starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes the line starts of `bytes` (`\n` ends a line; a `\r` before it is part of it).
    pub fn new(bytes: &[u8]) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self { line_starts }
    }

    /// 0-based line number of `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// How many lines there are (a file without a newline has one).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset at which 0-based `line` starts.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts[line]
    }
}

/// Turns byte offsets into line/column pairs; linear overall when offsets are asked in
/// increasing order, as sorted findings are.
#[derive(Debug)]
pub struct Locator<'a> {
    bytes: &'a [u8],
    index: LineIndex,
    cursor: usize,
    cursor_line: usize,
    cursor_column: usize,
}

impl<'a> Locator<'a> {
    /// A locator over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            index: LineIndex::new(bytes),
            cursor: 0,
            cursor_line: 0,
            cursor_column: 0,
        }
    }

    /// The 1-based line and character column of byte `offset` (clamped to the file).
    pub fn locate(&mut self, offset: usize) -> LineColumn {
        let offset = offset.min(self.bytes.len());
        let line = self.index.line_of(offset);
        if line != self.cursor_line || offset < self.cursor {
            self.cursor_line = line;
            self.cursor = self.index.line_start(line);
            self.cursor_column = 0;
        }
        self.cursor_column += columns(&self.bytes[self.cursor..offset]);
        self.cursor = offset;
        LineColumn {
            line: line + 1,
            column: self.cursor_column + 1,
        }
    }
}

/// How many columns `bytes` take: one per character, and one per byte that is not part of
/// valid UTF-8 (as [`crate::document::display_text`] shows each such byte as `?`).
fn columns(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => return n + s.chars().count(),
            Err(e) => {
                let valid = e.valid_up_to();
                n += std::str::from_utf8(&bytes[..valid]).map_or(0, |s| s.chars().count());
                let bad = e.error_len().unwrap_or(bytes.len() - valid);
                n += bad;
                bytes = &bytes[valid + bad..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lines_and_character_columns() {
        let text = "ab\n\u{e9}x\r\nyz".as_bytes();
        let mut loc = Locator::new(text);
        assert_eq!(loc.locate(0), LineColumn { line: 1, column: 1 });
        assert_eq!(loc.locate(1), LineColumn { line: 1, column: 2 });
        assert_eq!(loc.locate(3), LineColumn { line: 2, column: 1 });
        // `x` follows a two-byte `é`: byte 5, character column 2.
        assert_eq!(loc.locate(5), LineColumn { line: 2, column: 2 });
        assert_eq!(loc.locate(8), LineColumn { line: 3, column: 1 });
        // Going backwards restarts from the line start.
        assert_eq!(loc.locate(1), LineColumn { line: 1, column: 2 });
        assert_eq!(loc.locate(100), LineColumn { line: 3, column: 3 });
    }

    #[test]
    fn invalid_bytes_take_one_column_each() {
        let text = b"a\x94\xE9b\xC3\xA9c";
        let mut loc = Locator::new(text);
        assert_eq!(loc.locate(3), LineColumn { line: 1, column: 4 });
        assert_eq!(loc.locate(6), LineColumn { line: 1, column: 6 });
    }
}
