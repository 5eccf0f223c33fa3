//! The validation pipeline: bytes of a draft (and of its definition) → findings → version.

use std::sync::Arc;

use lwir_spec::document::{self, SpannedDocument};
use lwir_spec::finding::{Summary, sort_findings};
use lwir_spec::{Code, Finding, Origin};

/// A file as given on the command line.
#[derive(Clone, Debug)]
pub struct Source {
    /// The name findings are reported against (the path as given, or `<stdin>`).
    pub name: String,
    /// Its bytes, unchanged.
    pub bytes: Vec<u8>,
}

/// A workflow definition read and checked once: its document, and its own findings (the
/// reader's and [`crate::validate_definition`]'s), which no draft changes. Any
/// number of drafts are validated against one ([`validate_against`]) without reading it
/// again.
#[derive(Debug)]
pub struct Definition {
    /// The file as given (its bytes moved into its document when it could be read).
    pub source: Source,
    document: Option<SpannedDocument>,
    findings: Vec<Finding>,
}

impl Definition {
    /// Reads and checks `source`.
    pub fn read(mut source: Source) -> Self {
        let (read, findings) = document::read_document(std::mem::take(&mut source.bytes));
        let mut findings: Vec<Finding> = findings.into_iter().map(Finding::in_definition).collect();
        let document = match read {
            Ok(doc) => {
                findings.extend(crate::validate_definition(&doc));
                Some(doc)
            }
            Err(bytes) => {
                source.bytes = bytes;
                None
            }
        };
        sort_findings(&mut findings);
        Self {
            source,
            document,
            findings,
        }
    }

    /// Its document, when it could be read.
    pub fn document(&self) -> Option<&SpannedDocument> {
        self.document.as_ref()
    }

    /// Its own findings, in reading order.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Its bytes, as given.
    pub fn bytes(&self) -> &[u8] {
        match &self.document {
            Some(doc) => doc.source(),
            None => &self.source.bytes,
        }
    }
}

/// The outcome of validating one draft.
///
/// A file that could be read keeps its bytes in its document, not in its [`Source`] (whose
/// `bytes` are then empty), so that the bytes are held once: [`Validation::bytes`] gives
/// them either way.
#[derive(Debug)]
pub struct Validation {
    /// The draft as given (its bytes moved into its document when it could be read).
    pub draft: Source,
    /// The definition, if any, as read and checked (shared by the drafts validated
    /// against it).
    pub definition: Option<Arc<Definition>>,
    /// Every finding, in reading order: the draft's, then the definition's.
    pub findings: Vec<Finding>,
    /// The WorkflowVersion of the draft, present only when there are no errors.
    pub version: Option<String>,
    /// The SHA-256 of the canonical draft whenever it could be read, errors or not (the
    /// version when there are none): the identity of this state of the draft for the repair
    /// loop. Hashed beside the validation, at no cost in wall time.
    pub digest: Option<String>,
    /// The compiled expression plan: every expression and template, typed, with its cost.
    pub plan: crate::expr::Plan,
    draft_document: Option<SpannedDocument>,
    /// Made by [`validate_definition`]: there is no draft (`draft` names the definition).
    definition_only: bool,
}

impl Validation {
    /// Whether there is a draft: not for [`validate_definition`], whose `draft` only names
    /// the definition.
    pub fn has_draft(&self) -> bool {
        !self.definition_only
    }

    /// Error and warning counts.
    pub fn summary(&self) -> Summary {
        Summary::of(&self.findings)
    }

    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(Finding::is_error)
    }

    /// The read document a finding of `origin` points into, when it could be read.
    pub fn document(&self, origin: Origin) -> Option<&SpannedDocument> {
        match origin {
            Origin::Draft => self.draft_document.as_ref(),
            Origin::Definition => self.definition.as_deref().and_then(Definition::document),
            Origin::Planner => None,
        }
    }

    /// The draft's spanned document, when it could be read, taken out of the validation.
    pub fn into_document(self) -> Option<SpannedDocument> {
        self.draft_document
    }

    /// The source a finding of `origin` points into (its name; for its bytes, see
    /// [`Validation::bytes`]).
    pub fn source(&self, origin: Origin) -> &Source {
        match (origin, &self.definition) {
            (Origin::Definition, Some(def)) => &def.source,
            _ => &self.draft,
        }
    }

    /// The bytes, as given, of the file a finding of `origin` points into: its document's
    /// source when it could be read, else its [`Source`]'s bytes.
    pub fn bytes(&self, origin: Origin) -> &[u8] {
        match (origin, &self.definition) {
            (Origin::Definition, Some(def)) => def.bytes(),
            _ => match &self.draft_document {
                Some(document) => document.source(),
                None => &self.draft.bytes,
            },
        }
    }
}

/// Reads and validates `draft` against `definition` (when given), running every validator.
/// The compiled expression plan is left empty; [`compile`] builds it.
pub fn validate(draft: Source, definition: Option<Source>) -> Validation {
    run(
        draft,
        definition.map(|d| Arc::new(Definition::read(d))),
        false,
    )
}

/// Like [`validate`], and also builds the compiled expression plan that a registration
/// record stores.
pub fn compile(draft: Source, definition: Option<Source>) -> Validation {
    run(
        draft,
        definition.map(|d| Arc::new(Definition::read(d))),
        true,
    )
}

/// [`validate`] against a definition read once ([`Definition::read`]).
pub fn validate_against(draft: Source, definition: &Arc<Definition>) -> Validation {
    run(draft, Some(Arc::clone(definition)), false)
}

/// [`compile`] against a definition read once ([`Definition::read`]).
pub fn compile_against(draft: Source, definition: &Arc<Definition>) -> Validation {
    run(draft, Some(Arc::clone(definition)), true)
}

/// The definition alone: its own findings, reported against it (`lwirc validate -d
/// workflow.json` without a draft). There is no version.
pub fn validate_definition(definition: Source) -> Validation {
    let definition = Arc::new(Definition::read(definition));
    Validation {
        draft: Source {
            name: definition.source.name.clone(),
            bytes: Vec::new(),
        },
        findings: definition.findings().to_vec(),
        definition: Some(definition),
        version: None,
        digest: None,
        plan: crate::expr::Plan::default(),
        draft_document: None,
        definition_only: true,
    }
}

/// A draft as [`document::read_document`] read it: its document (or its bytes, when they
/// hold none) and the reader's findings.
pub type Read = (Result<SpannedDocument, Vec<u8>>, Vec<Finding>);

/// [`validate_against`] (or, without a definition, [`validate`]) of a draft already read,
/// for an editor: it reads each text once to tell what kind of file it is, and does not read
/// it again to validate it; and it shows findings, not versions, so the draft is not hashed
/// (`version` and `digest` are `None`): at every change that would take the second core
/// from the passes that run beside the expression pass. `memo` holds what the
/// expression pass kept of the last revision of this draft (start with
/// [`Memo::default`](crate::expr::Memo)): the steps a change left as they were are not
/// typed again; the findings are the same.
pub fn validate_read(
    name: String,
    read: Read,
    definition: Option<&Arc<Definition>>,
    memo: Option<&mut crate::expr::Memo>,
) -> Validation {
    run_read(name, read, definition.map(Arc::clone), false, false, memo)
}

fn run(mut draft: Source, definition: Option<Arc<Definition>>, with_plan: bool) -> Validation {
    // The draft's bytes move into its document (and back into its source when there is
    // none), so that they are held once.
    let read = document::read_document(std::mem::take(&mut draft.bytes));
    run_read(draft.name, read, definition, with_plan, true, None)
}

fn run_read(
    name: String,
    (read_draft, mut findings): Read,
    definition: Option<Arc<Definition>>,
    with_plan: bool,
    hash: bool,
    memo: Option<&mut crate::expr::Memo>,
) -> Validation {
    let mut draft = Source {
        name,
        bytes: Vec::new(),
    };
    let draft_doc = match read_draft {
        Ok(doc) => Some(doc),
        Err(bytes) => {
            draft.bytes = bytes;
            None
        }
    };
    if let Some(def) = &definition {
        findings.extend_from_slice(def.findings());
    }
    let definition_doc = definition.as_deref().and_then(Definition::document);

    let mut version = None;
    let mut digest = None;
    let mut plan = crate::expr::Plan::default();
    if let Some(doc) = &draft_doc {
        // The version is hashed beside the validation (it is kept only when there is no
        // error), on the core the last of its passes leaves free: the two share nothing
        // but the tree they read.
        let hashing = hash.then_some(|| lwir_spec::canon::version_of(doc.root()));
        let (report, hashed) =
            crate::check_draft_beside(doc, definition_doc, with_plan, memo, hashing);
        plan = report.plan;
        let mut found = report.findings;
        if definition.is_some() {
            // A definition was given but could not be read: its own findings say so.
            found.retain(|f| f.code != Code::DefinitionNotProvided);
        }
        findings.extend(found);
        if let Some(hashed) = hashed {
            if !findings.iter().any(Finding::is_error) {
                version = Some(hashed.clone());
            }
            digest = Some(hashed);
        }
    }
    sort_findings(&mut findings);
    Validation {
        draft,
        definition,
        findings,
        version,
        digest,
        plan,
        draft_document: draft_doc,
        definition_only: false,
    }
}
