//! The validation pipeline: bytes of a draft (and of its definition) → findings → version.

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

/// The outcome of validating one draft.
///
/// A file that could be read keeps its bytes in its document, not in its [`Source`] (whose
/// `bytes` are then empty), so that the bytes are held once: [`Validation::bytes`] gives
/// them either way.
#[derive(Debug)]
pub struct Validation {
    /// The draft as given (its bytes moved into its document when it could be read).
    pub draft: Source,
    /// The definition as given, if any (likewise).
    pub definition: Option<Source>,
    /// Every finding, in reading order: the draft's, then the definition's.
    pub findings: Vec<Finding>,
    /// The WorkflowVersion of the draft, present only when there are no errors.
    pub version: Option<String>,
    /// The compiled expression plan: every expression and template, typed, with its cost.
    pub plan: lwir_validators::expr::Plan,
    draft_document: Option<SpannedDocument>,
    definition_document: Option<SpannedDocument>,
}

impl Validation {
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
            Origin::Definition => self.definition_document.as_ref(),
        }
    }

    /// The source a finding of `origin` points into (its name; for its bytes, see
    /// [`Validation::bytes`]).
    pub fn source(&self, origin: Origin) -> &Source {
        match (origin, &self.definition) {
            (Origin::Definition, Some(def)) => def,
            _ => &self.draft,
        }
    }

    /// The bytes, as given, of the file a finding of `origin` points into: its document's
    /// source when it could be read, else its [`Source`]'s bytes.
    pub fn bytes(&self, origin: Origin) -> &[u8] {
        let origin = match (origin, &self.definition) {
            (Origin::Definition, Some(_)) => Origin::Definition,
            _ => Origin::Draft,
        };
        match self.document(origin) {
            Some(document) => document.source(),
            None => &self.source(origin).bytes,
        }
    }
}

/// Reads and validates `draft` against `definition` (when given), running every validator.
/// The compiled expression plan is left empty; [`compile`] builds it.
pub fn validate(draft: Source, definition: Option<Source>) -> Validation {
    run(draft, definition, false)
}

/// Like [`validate`], and also builds the compiled expression plan that a registration
/// record stores.
pub fn compile(draft: Source, definition: Option<Source>) -> Validation {
    run(draft, definition, true)
}

fn run(mut draft: Source, mut definition: Option<Source>, with_plan: bool) -> Validation {
    // Each file's bytes move into its document (and back into its source when there is
    // none), so that they are held once.
    let (read_draft, mut findings) = document::read_document(std::mem::take(&mut draft.bytes));
    let draft_doc = match read_draft {
        Ok(doc) => Some(doc),
        Err(bytes) => {
            draft.bytes = bytes;
            None
        }
    };

    let mut definition_doc: Option<SpannedDocument> = None;
    if let Some(def) = &mut definition {
        let (read_def, def_findings) = document::read_document(std::mem::take(&mut def.bytes));
        findings.extend(def_findings.into_iter().map(Finding::in_definition));
        match read_def {
            Ok(doc) => definition_doc = Some(doc),
            Err(bytes) => def.bytes = bytes,
        }
    }

    let mut version = None;
    let mut plan = lwir_validators::expr::Plan::default();
    if let Some(doc) = &draft_doc {
        let mut found = if with_plan {
            let report = lwir_validators::run(doc, definition_doc.as_ref());
            plan = report.plan;
            report.findings
        } else {
            lwir_validators::validate(doc, definition_doc.as_ref())
        };
        if definition.is_some() {
            // A definition was given but could not be read: its own findings say so.
            found.retain(|f| f.code != Code::DefinitionNotProvided);
        }
        findings.extend(found);
        if !findings.iter().any(Finding::is_error) {
            version = Some(crate::canon::version_of(doc.root()));
        }
    }
    sort_findings(&mut findings);
    Validation {
        draft,
        definition,
        findings,
        version,
        plan,
        draft_document: draft_doc,
        definition_document: definition_doc,
    }
}
