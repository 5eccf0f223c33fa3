//! What lwirc knows about one open document: which kind of file it is, the definition a
//! draft is checked against, and the findings of the validation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lwir_spec::{Finding, Node, Origin, SpannedDocument};
use lwir_validators::pipeline::{self, Definition, Source, Validation};

/// The kinds of file the server checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An LWIR draft.
    Draft,
    /// A WorkflowDefinition.
    Definition,
    /// A goal file.
    Goal,
}

impl Kind {
    /// The kind of the file named `name` with `text`: from the configured patterns first,
    /// then from what it holds (a top-level `"lwir"` member is a draft, `"goal"` with
    /// `"templates"` a goal file, `"tools"` or `"models"` a definition), then from its name
    /// (`workflow.json` is a definition). `None`: not a file for lwirc.
    pub fn of(
        path: Option<&Path>,
        text: &str,
        root: Option<&Node>,
        patterns: &Patterns,
    ) -> Option<Kind> {
        if let Some(kind) = path.and_then(|p| patterns.kind_of(p)) {
            return Some(kind);
        }
        let has = |key: &str| match root {
            Some(root) => root.get(key).is_some(),
            // A document that does not read (yet): by its text.
            None => text.contains(&format!("\"{key}\"")),
        };
        match lwir_spec::kind::FileKind::of_members(has) {
            Some(lwir_spec::kind::FileKind::Draft) => return Some(Kind::Draft),
            Some(lwir_spec::kind::FileKind::Goal) => return Some(Kind::Goal),
            Some(lwir_spec::kind::FileKind::Definition) => return Some(Kind::Definition),
            None => {}
        }
        if path
            .and_then(Path::file_name)
            .is_some_and(|n| n == "workflow.json")
        {
            return Some(Kind::Definition);
        }
        None
    }
}

/// The configured file patterns: globs (matched against the whole path, `**` for any
/// directories) that say a file is a draft or a definition whatever it holds.
#[derive(Clone, Debug, Default)]
pub struct Patterns {
    /// Drafts.
    pub drafts: Vec<glob::Pattern>,
    /// Definitions.
    pub definitions: Vec<glob::Pattern>,
}

impl Patterns {
    fn kind_of(&self, path: &Path) -> Option<Kind> {
        let options = glob::MatchOptions {
            require_literal_separator: true,
            ..glob::MatchOptions::new()
        };
        let matches = |list: &[glob::Pattern]| {
            list.iter().any(|p| {
                p.matches_path_with(path, options)
                    || path
                        .file_name()
                        .is_some_and(|n| p.matches_with(&n.to_string_lossy(), options))
            })
        };
        if matches(&self.drafts) {
            Some(Kind::Draft)
        } else if matches(&self.definitions) {
            Some(Kind::Definition)
        } else {
            None
        }
    }
}

/// Where a draft's definition came from, for messages and hover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefinitionFrom {
    /// The draft's `x-definition` member.
    Member,
    /// The client's configuration (`definition`).
    Configured,
    /// `workflow.json` beside the draft.
    Beside,
}

/// The definition a draft is checked against, read and checked once per text.
#[derive(Clone, Debug)]
pub struct LinkedDefinition {
    /// Its path.
    pub path: PathBuf,
    /// How it was found.
    pub from: DefinitionFrom,
    /// The definition.
    pub definition: Arc<Definition>,
}

/// A problem the server itself reports (no finding code): a definition that is named but
/// cannot be read.
#[derive(Clone, Debug)]
pub struct Notice {
    /// Where, in the document.
    pub span: lwir_spec::Span,
    /// What.
    pub message: String,
}

/// The analysis of one version of a document.
#[derive(Debug)]
pub struct Analysis {
    /// What kind of file it is.
    pub kind: Kind,
    /// The validation: of the draft against its definition, or of the definition alone.
    pub validation: Option<Validation>,
    /// A goal file as read (its document and its reader and shape findings).
    pub goal: Option<lwir_goals::file::Read>,
    /// The definition a draft was checked against.
    pub definition: Option<LinkedDefinition>,
    /// The server's own notices.
    pub notices: Vec<Notice>,
    /// The compiled expression plan of a draft, built when hover first needs it.
    pub plan: std::cell::OnceCell<lwir_validators::expr::Plan>,
}

impl Analysis {
    /// Analyses a `kind` file named `name`, as `read` read it (a draft against
    /// `definition`, with what the expression pass kept of its last revision in `memo`);
    /// a draft is not read again.
    pub fn new(
        kind: Kind,
        name: &str,
        read: pipeline::Read,
        definition: Option<LinkedDefinition>,
        notices: Vec<Notice>,
        memo: &mut lwir_validators::expr::Memo,
    ) -> Self {
        // What is not a draft is read by its own reader, from the bytes given back.
        let source = |read: pipeline::Read| Source {
            name: name.to_owned(),
            bytes: match read.0 {
                Ok(doc) => doc.into_source(),
                Err(bytes) => bytes,
            },
        };
        let (validation, goal) = match kind {
            Kind::Draft => {
                let linked = definition.as_ref().map(|d| &d.definition);
                (
                    Some(pipeline::validate_read(
                        name.to_owned(),
                        read,
                        linked,
                        Some(memo),
                    )),
                    None,
                )
            }
            Kind::Definition => (Some(pipeline::validate_definition(source(read))), None),
            Kind::Goal => (None, Some(lwir_goals::file::read(source(read).bytes))),
        };
        Self {
            kind,
            validation,
            goal,
            definition,
            notices,
            plan: std::cell::OnceCell::new(),
        }
    }

    /// The origin of this document's own findings.
    pub fn origin(&self) -> Origin {
        match self.kind {
            Kind::Definition => Origin::Definition,
            Kind::Draft | Kind::Goal => Origin::Draft,
        }
    }

    /// The document's spanned tree, when it reads.
    pub fn document(&self) -> Option<&SpannedDocument> {
        match (&self.validation, &self.goal) {
            (Some(v), _) => v.document(self.origin()),
            (None, Some(goal)) => goal.document.as_ref(),
            (None, None) => None,
        }
    }

    /// The findings in this document, in reading order.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        let origin = self.origin();
        let all: &[Finding] = match (&self.validation, &self.goal) {
            (Some(v), _) => &v.findings,
            (None, Some(goal)) => &goal.findings,
            (None, None) => &[],
        };
        all.iter().filter(move |f| f.origin == origin)
    }

    /// The definition's own findings, when a draft's definition has errors (reported on the
    /// definition, and counted on the draft).
    pub fn definition_errors(&self) -> usize {
        match (&self.validation, self.kind) {
            (Some(v), Kind::Draft) => v
                .findings
                .iter()
                .filter(|f| f.origin == Origin::Definition && f.is_error())
                .count(),
            _ => 0,
        }
    }

    /// The definition's view, for a draft checked against one that reads.
    pub fn definition_document(&self) -> Option<&SpannedDocument> {
        self.definition.as_ref()?.definition.document()
    }

    /// The compiled plan of a draft (every expression typed, with its cost).
    pub fn plan(&self, text: &str) -> &lwir_validators::expr::Plan {
        self.plan.get_or_init(|| {
            let source = Source {
                name: String::new(),
                bytes: text.as_bytes().to_vec(),
            };
            match &self.definition {
                Some(linked) => pipeline::compile_against(source, &linked.definition).plan,
                None => pipeline::compile(source, None).plan,
            }
        })
    }
}
