//! Renderers: the same findings for people ([`human`]), programs ([`json`], the wire
//! contract) and editors and code-scanning services ([`sarif`]). Each wire format is its own
//! set of `Serialize` view structs, so changing an internal type cannot change the contract
//! by accident. Every string from a draft or a planner printed for people goes through
//! [`terminal::sanitize`].

pub mod human;
pub mod json;
pub mod sarif;
pub mod terminal;

use lwir_spec::finding::Summary;
use lwir_spec::span::{LineColumn, Locator};
use lwir_spec::{Finding, Origin, SpannedDocument};
use lwir_validators::pipeline::Validation;

/// A file findings point into, as the renderers show it.
#[derive(Clone, Copy, Debug)]
pub struct File<'a> {
    /// Its name, as given.
    pub name: &'a str,
    /// Its bytes, as given.
    pub bytes: &'a [u8],
    /// Its read document, when it could be read (SARIF turns fixes into text edits with it).
    pub document: Option<&'a SpannedDocument>,
}

/// What a renderer shows: findings, the files they point into, and the version. Made from
/// a [`Validation`] (`Report::from`), or from findings a caller already has — the reader's,
/// drift's, a session's last draft — without validating anything again.
#[derive(Clone, Copy, Debug)]
pub struct Report<'a> {
    /// The findings, in reading order.
    pub findings: &'a [Finding],
    /// The file the report is about, which draft findings point into. For a definition
    /// validated on its own, there is none.
    pub draft: Option<File<'a>>,
    /// The definition, which definition findings point into, when there is one.
    pub definition: Option<File<'a>>,
    /// The WorkflowVersion, when the draft is clean.
    pub version: Option<&'a str>,
}

impl<'a> From<&'a Validation> for Report<'a> {
    fn from(validation: &'a Validation) -> Self {
        let file = |origin: Origin| File {
            name: &validation.source(origin).name,
            bytes: validation.bytes(origin),
            document: validation.document(origin),
        };
        Report {
            findings: &validation.findings,
            draft: validation.has_draft().then(|| file(Origin::Draft)),
            definition: validation
                .definition
                .is_some()
                .then(|| file(Origin::Definition)),
            version: validation.version.as_deref(),
        }
    }
}

impl<'a> Report<'a> {
    /// Findings in one file, `file`, as a draft's (the reader's findings, say).
    pub fn of_file(findings: &'a [Finding], file: File<'a>) -> Self {
        Report {
            findings,
            draft: Some(file),
            definition: None,
            version: None,
        }
    }

    /// The name of the file the report is about: the draft's, else the definition's.
    pub fn name(&self) -> &'a str {
        self.draft.or(self.definition).map_or("", |f| f.name)
    }

    /// The file findings of `origin` point into (the report's own file when there is no
    /// other). An empty file when the report has none.
    pub fn file(&self, origin: Origin) -> File<'a> {
        let file = match origin {
            Origin::Definition => self.definition.or(self.draft),
            Origin::Draft | Origin::Planner => self.draft.or(self.definition),
        };
        file.unwrap_or(File {
            name: "",
            bytes: &[],
            document: None,
        })
    }

    /// Error and warning counts.
    pub fn summary(&self) -> Summary {
        Summary::of(self.findings)
    }
}

/// Line/column lookups for both files of a report, each index built when a finding first
/// needs it (a clean report of a large draft builds none).
pub(crate) struct Locators<'a> {
    draft_bytes: &'a [u8],
    definition_bytes: Option<&'a [u8]>,
    draft: Option<Locator<'a>>,
    definition: Option<Locator<'a>>,
}

impl<'a> Locators<'a> {
    pub(crate) fn new(report: &Report<'a>) -> Self {
        Self {
            draft_bytes: report.file(Origin::Draft).bytes,
            definition_bytes: report.draft.and(report.definition).map(|f| f.bytes),
            draft: None,
            definition: None,
        }
    }

    pub(crate) fn locate(&mut self, origin: Origin, offset: usize) -> LineColumn {
        match (origin, self.definition_bytes) {
            (Origin::Definition, Some(bytes)) => self
                .definition
                .get_or_insert_with(|| Locator::new(bytes))
                .locate(offset),
            _ => {
                let bytes = self.draft_bytes;
                self.draft
                    .get_or_insert_with(|| Locator::new(bytes))
                    .locate(offset)
            }
        }
    }
}
