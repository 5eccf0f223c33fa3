//! Findings for people: miette's graphical report, one per finding, then a summary line.
//!
//! Colour only when asked for (the CLI asks when stdout is a terminal and `NO_COLOR` is not
//! set). Source snippets come from [`SnippetSource`], which finds lines through an index
//! (miette's own `str` source rescans the file from the start for every snippet, which is
//! quadratic over many findings) and shows a window of a very long line (a minified draft)
//! rather than the whole line.

use std::fmt;

use lwir_spec::document::display_text;
use lwir_spec::span::ColumnIndex;
use lwir_spec::{Finding, Origin, PatchOp, Severity};
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use super::Report;
use super::terminal::{excerpt, is_unsafe, sanitize};

/// How to render.
#[derive(Clone, Copy, Debug)]
pub struct HumanOptions {
    /// Use ANSI colours.
    pub color: bool,
    /// Wrap text at this many columns.
    pub width: usize,
}

impl Default for HumanOptions {
    fn default() -> Self {
        Self {
            color: false,
            width: 100,
        }
    }
}

/// The report for a terminal, of a [`Validation`](lwir_validators::pipeline::Validation) or any
/// [`Report`].
pub fn render<'a>(report: impl Into<Report<'a>>, options: HumanOptions) -> String {
    let report = report.into();
    let theme = if options.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(options.width)
        .with_links(false);
    // A file's display text is a copy of it: made only when a finding points into it.
    let snippet = |origin: Origin| {
        let file = report.file(origin);
        SnippetSource::new(file.name, file.bytes)
    };
    let draft = std::cell::OnceCell::new();
    let definition = std::cell::OnceCell::new();
    let mut out = String::new();
    for finding in report.findings {
        let source = match finding.origin {
            Origin::Definition if report.definition.is_some() => {
                definition.get_or_init(|| snippet(Origin::Definition))
            }
            _ => draft.get_or_init(|| snippet(Origin::Draft)),
        };
        let diagnostic = FindingDiagnostic { finding, source };
        // Writing into a String cannot fail.
        let _ = handler.render_report(&mut out, &diagnostic);
        out.push('\n');
    }
    out.push_str(&summary_line(&report));
    out.push('\n');
    out
}

/// `draft.json: 2 errors, 1 warning` (or `no problems found`), plus the version when clean.
fn summary_line(report: &Report<'_>) -> String {
    let summary = report.summary();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let counts = match (summary.errors, summary.warnings) {
        (0, 0) => "no problems found".to_owned(),
        (e, 0) => plural(e, "error"),
        (0, w) => plural(w, "warning"),
        (e, w) => format!("{}, {}", plural(e, "error"), plural(w, "warning")),
    };
    let name = sanitize(report.name());
    match report.version {
        Some(version) => format!("{name}: {counts}; version {version}"),
        None => format!("{name}: {counts}"),
    }
}

struct FindingDiagnostic<'a> {
    finding: &'a Finding,
    source: &'a SnippetSource,
}

impl fmt::Debug for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.finding, f)
    }
}

impl fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&sanitize(&excerpt(&self.finding.message, MAX_MESSAGE)))
    }
}

impl std::error::Error for FindingDiagnostic<'_> {}

impl Diagnostic for FindingDiagnostic<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(format!(
            "{}/{}",
            self.finding.code,
            self.finding.code.name()
        )))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let f = self.finding;
        let fix = f.fix.as_ref().map(|fix| {
            let ops: Vec<String> = fix.patch.iter().map(describe_op).collect();
            let ops = ops.join("; ");
            format!(
                "fix ({}): {}",
                fix.applicability.as_str(),
                sanitize(&excerpt(&ops, MAX_MESSAGE))
            )
        });
        let help = f
            .help
            .as_deref()
            .map(|h| sanitize(&excerpt(h, MAX_MESSAGE)).into_owned());
        let mut text = match (help, fix) {
            (None, None) => String::new(),
            (Some(h), None) => h,
            (None, Some(x)) => x,
            (Some(h), Some(x)) => format!("{h}\n{x}"),
        };
        // Related places too far along the same long line to draw with the finding.
        for r in self.far_related() {
            let at = self.source.locate(r.span.start());
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "{} (line {}, column {})",
                sanitize(&excerpt(&r.message, MAX_MESSAGE)),
                at.line,
                at.column
            ));
        }
        (!text.is_empty()).then(|| Box::new(text) as Box<dyn fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let f = self.finding;
        let pointer = if f.pointer.is_empty() {
            "(document root)".to_owned()
        } else {
            sanitize(&excerpt(&f.pointer, MAX_MESSAGE)).into_owned()
        };
        let primary =
            LabeledSpan::new_primary_with_span(Some(pointer), span(self.source.drawn(f.span)));
        let related = self.drawn_related().map(|r| {
            let message = sanitize(&excerpt(&r.message, MAX_MESSAGE)).into_owned();
            LabeledSpan::new_with_span(Some(message), span(self.source.drawn(r.span)))
        });
        Some(Box::new(std::iter::once(primary).chain(related)))
    }
}

impl FindingDiagnostic<'_> {
    /// The related places in the same file, and whether each is drawn in the snippet: not
    /// when it is on the same very long line as the finding but outside its window (the
    /// snippet would hold everything between the two, and over many findings that is
    /// quadratic; miette also cannot indent past 65 535 columns).
    fn related(&self) -> impl Iterator<Item = (&lwir_spec::finding::Related, bool)> {
        let f = self.finding;
        f.related
            .iter()
            .filter(move |r| r.origin == f.origin)
            .map(move |r| (r, self.source.drawable_together(f.span, r.span)))
    }

    fn drawn_related(&self) -> impl Iterator<Item = &lwir_spec::finding::Related> {
        self.related().filter(|(_, drawn)| *drawn).map(|(r, _)| r)
    }

    fn far_related(&self) -> impl Iterator<Item = &lwir_spec::finding::Related> {
        self.related().filter(|(_, drawn)| !*drawn).map(|(r, _)| r)
    }
}

/// A patch operation in words: `replace /steps/0/tool with "github.list_issues"`.
fn describe_op(op: &PatchOp) -> String {
    let json = |v: &serde_json::Value| serde_json::to_string(v).unwrap_or_default();
    match op {
        PatchOp::Replace { path, value } => format!("replace {path} with {}", json(value)),
        PatchOp::Add { path, value } => format!("add {path} = {}", json(value)),
        PatchOp::Remove { path } => format!("remove {path}"),
        PatchOp::Move { from, path } => match (from.rsplit_once('/'), path.rsplit_once('/')) {
            (Some((a, _)), Some((b, key))) if a == b => format!("rename {from} to `{key}`"),
            _ => format!("move {from} to {path}"),
        },
    }
}

fn span(span: lwir_spec::Span) -> SourceSpan {
    SourceSpan::new(span.start().into(), span.len())
}

/// A file's text for snippets: lines found through an index, very long lines windowed.
struct SnippetSource {
    name: String,
    text: String,
    columns: ColumnIndex,
}

/// Lines longer than this are shown as a window around the span.
const LONG_LINE: usize = 240;
/// Messages, help, labels and pointers longer than this many characters are cut in the
/// human report.
const MAX_MESSAGE: usize = 1000;
/// Spans over more lines than this are drawn by their first line.
const MAX_DRAWN_LINES: usize = 12;
/// Bytes of context on each side of a span in a windowed line.
const WINDOW_CONTEXT: usize = 60;

impl SnippetSource {
    fn new(name: &str, bytes: &[u8]) -> Self {
        // `?` stands for each byte that is not UTF-8, and for each byte of a control or
        // bidirectional character a terminal would act on, so offsets stay those of the
        // file; a trailing space gives a problem at the end of the file (`found the end of
        // the file`) a place to be drawn.
        let mut text = terminal_safe(&display_text(bytes));
        text.push(' ');
        let columns = ColumnIndex::new(text.as_bytes());
        Self {
            name: sanitize(name).into_owned(),
            text,
            columns,
        }
    }

    /// The 1-based line and column of byte `offset`.
    fn locate(&self, offset: usize) -> lwir_spec::span::LineColumn {
        self.columns.locate(self.text.as_bytes(), offset)
    }

    /// Whether spans `a` and `b` can be drawn in one snippet: on different lines (miette
    /// shows each with its own lines), on a short line, or close on a long one.
    fn drawable_together(&self, a: lwir_spec::Span, b: lwir_spec::Span) -> bool {
        let (a, b) = (self.drawn(a), self.drawn(b));
        let lines = self.columns.lines();
        let (la, lb) = (lines.line_of(a.start()), lines.line_of(b.start()));
        if la != lb || self.line_end(la) - lines.line_start(la) <= LONG_LINE {
            return true;
        }
        a.start()
            .max(b.end())
            .saturating_sub(a.end().min(b.start()))
            <= LONG_LINE - 2 * WINDOW_CONTEXT
    }

    /// The part of `span` the snippet underlines: all of it, except that on a very long
    /// line it stops after [`LONG_LINE`] bytes, and a span over more than [`MAX_DRAWN_LINES`]
    /// lines (a whole large object) stops at the end of its first line — the pointer in the
    /// label says what it is. The snippet of one finding stays small whatever it covers.
    fn drawn(&self, span: lwir_spec::Span) -> lwir_spec::Span {
        let lines = self.columns.lines();
        let first = lines.line_of(span.start());
        let first_end = self.line_end(first);
        let end = if first_end - lines.line_start(first) > LONG_LINE {
            self.floor(span.end().min(span.start() + LONG_LINE).min(first_end))
        } else if lines.line_of(span.end().saturating_sub(1).max(span.start())) - first
            > MAX_DRAWN_LINES
        {
            first_end
        } else {
            span.end()
        };
        lwir_spec::Span::new(span.start(), end.max(span.start()))
    }

    /// The end of 0-based `line`, before its line break.
    fn line_end(&self, line: usize) -> usize {
        let end = if line + 1 < self.columns.lines().line_count() {
            self.columns.lines().line_start(line + 1) - 1
        } else {
            self.text.len()
        };
        let bytes = self.text.as_bytes();
        if end > self.columns.lines().line_start(line) && bytes.get(end - 1) == Some(&b'\r') {
            end - 1
        } else {
            end
        }
    }

    fn floor(&self, mut at: usize) -> usize {
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn ceil(&self, mut at: usize) -> usize {
        while !self.text.is_char_boundary(at) {
            at += 1;
        }
        at
    }
}

/// `text` with each byte of each character [`is_unsafe`] replaced by `?`, except the line
/// breaks and tabs that lay the file out (a carriage return only before a line feed).
fn terminal_safe(text: &str) -> String {
    let keep = |c: char, next: Option<char>| {
        c == '\n' || c == '\t' || (c == '\r' && next == Some('\n')) || !is_unsafe(c)
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if keep(c, chars.peek().copied()) {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('?', c.len_utf8()));
        }
    }
    out
}

impl SourceCode for SnippetSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span.offset();
        let end = start + span.len();
        if end > self.text.len() {
            return Err(MietteError::OutOfBounds);
        }
        let first = self.columns.lines().line_of(start);
        let last = self
            .columns
            .lines()
            .line_of(end.saturating_sub(1).max(start));
        let mut from_line = first.saturating_sub(context_lines_before);
        let mut to_line = (last + context_lines_after).min(self.columns.lines().line_count() - 1);
        let mut data_start = self.columns.lines().line_start(from_line);
        let mut data_end = self.line_end(to_line);
        if first == last
            && self.line_end(first) - self.columns.lines().line_start(first) > LONG_LINE
        {
            // A very long line: show a window of it, without context lines.
            from_line = first;
            to_line = first;
            data_start = self.floor(
                start
                    .saturating_sub(WINDOW_CONTEXT)
                    .max(self.columns.lines().line_start(first)),
            );
            data_end = self.ceil((end + WINDOW_CONTEXT).min(self.line_end(first)));
        }
        // The index, not a count from the line start: linear over many findings on one
        // long line.
        let column = self.columns.locate(self.text.as_bytes(), start).column - 1;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            &self.text.as_bytes()[data_start..data_end.max(data_start)],
            SourceSpan::new(data_start.into(), data_end.saturating_sub(data_start)),
            from_line,
            column,
            to_line - from_line + 1,
        )))
    }
}
