//! `lwirc lsp`: a language server for LWIR drafts, WorkflowDefinitions and goal files.
//!
//! Synchronous, on `lsp-server`'s message types, like the validators: one thread reads
//! messages and answers them in order; [`wire`] frames them on the byte stream, every
//! length checked before it is read. Every finding is a diagnostic (pushed after a change settles, or pulled
//! with `textDocument/diagnostic` when the client asks that way), every fix a code action
//! (`source.fixAll.lwirc` applies the machine-applicable ones as the repair loop does), and
//! hover, go-to-definition, completion and the outline read the spanned tree of the
//! document and of the draft's definition.
//!
//! Positions are in UTF-8 when the client offers it, else UTF-16; lwirc's byte spans are
//! converted only here ([`text`]). A request the server cannot answer (a closed document,
//! a line past the end, an unknown method, a handler that failed) gets an LSP error, never
//! a crash.

pub mod analysis;
pub mod features;
mod templates;
pub mod text;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lwir_repair::fixes::FixStop;
use lwir_spec::{Applicability, Finding, Origin, PatchOp, Severity};
use lwir_validators::pipeline::{Definition, Source};
use serde_json::Value;

use analysis::{Analysis, DefinitionFrom, Kind, LinkedDefinition, Notice, Patterns};
use text::{Encoding, Text};

/// The code action kind that applies every machine-applicable fix.
pub const FIX_ALL: &str = "source.fixAll.lwirc";

/// How long a document must stay unchanged before its diagnostics are pushed, by default.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(150);

/// Where the code descriptions point, by default: the finding codes' documentation.
pub const DEFAULT_CODES_URL: &str =
    concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/codes.md");

/// A definition file larger than this is not read for a draft (a notice says so).
const MAX_DEFINITION_BYTES: u64 = 64 * 1024 * 1024;

/// The client's settings (`initializationOptions`, or `workspace/didChangeConfiguration`
/// with these under `lwirc` or at the top).
#[derive(Clone, Debug)]
pub struct Config {
    /// The definition drafts are checked against when they name none in `x-definition`
    /// (relative to the workspace root). Without it, `workflow.json` beside the draft.
    pub definition: Option<PathBuf>,
    /// Globs for files that are drafts or definitions whatever they hold.
    pub patterns: Patterns,
    /// How long a document must stay unchanged before its diagnostics are pushed.
    pub debounce: Duration,
    /// The base of each code's `codeDescription` (`#lw301` is added).
    pub codes_url: String,
    /// The registry goal files' templates are read from (relative to the workspace root);
    /// without it, `$LWIR_REGISTRY`, else `.lwir/registry` in the workspace.
    pub registry: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            definition: None,
            patterns: Patterns::default(),
            debounce: DEFAULT_DEBOUNCE,
            codes_url: DEFAULT_CODES_URL.to_owned(),
            registry: None,
        }
    }
}

impl Config {
    /// Applies the settings in `value` (`definition`, `drafts`, `definitions`, `debounceMs`,
    /// `codesUrl`, `registry`), under `lwirc` or at the top; returns what could not be used.
    pub fn update(&mut self, value: &Value) -> Vec<String> {
        let value = value.get("lwirc").unwrap_or(value);
        let mut problems = Vec::new();
        if let Some(d) = value.get("definition") {
            match d {
                Value::String(s) if !s.is_empty() => self.definition = Some(PathBuf::from(s)),
                Value::Null => self.definition = None,
                _ => problems.push("`definition` must be a path".to_owned()),
            }
        }
        for (key, list) in [
            ("drafts", &mut self.patterns.drafts),
            ("definitions", &mut self.patterns.definitions),
        ] {
            let Some(v) = value.get(key) else { continue };
            let Some(items) = v.as_array() else {
                problems.push(format!("`{key}` must be a list of globs"));
                continue;
            };
            list.clear();
            for item in items {
                match item.as_str().map(glob::Pattern::new) {
                    Some(Ok(p)) => list.push(p),
                    Some(Err(e)) => problems.push(format!("`{key}`: {e}")),
                    None => problems.push(format!("`{key}` must be a list of globs")),
                }
            }
        }
        if let Some(v) = value.get("debounceMs") {
            match v.as_u64() {
                Some(ms) => self.debounce = Duration::from_millis(ms.min(10_000)),
                None => problems.push("`debounceMs` must be a number of milliseconds".to_owned()),
            }
        }
        if let Some(r) = value.get("registry") {
            match r {
                Value::String(s) if !s.is_empty() => self.registry = Some(PathBuf::from(s)),
                Value::Null => self.registry = None,
                _ => problems.push("`registry` must be a path".to_owned()),
            }
        }
        if let Some(v) = value.get("codesUrl") {
            match v.as_str() {
                Some(s) => self.codes_url = s.trim_end_matches('#').to_owned(),
                None => problems.push("`codesUrl` must be a URL".to_owned()),
            }
        }
        problems
    }
}

/// How the server's loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// `shutdown`, then `exit`: exit status 0.
    Shutdown,
    /// `exit` without `shutdown`: exit status 1, as the protocol says.
    ExitWithoutShutdown,
    /// The client's end of the connection closed (stdin, say).
    Disconnected,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(String);

/// Runs the handshake and then the server on `connection` until the client is done.
pub fn serve(connection: &Connection, defaults: Config) -> Result<Ended, StartError> {
    let (id, params) = connection
        .initialize_start()
        .map_err(|e| StartError(format!("the client did not initialize: {e}")))?;
    let params: lsp::InitializeParams = serde_json::from_value(params)
        .map_err(|e| StartError(format!("the initialize request is not valid: {e}")))?;
    let mut server = Server::new(connection, &params, defaults);
    let result = serde_json::json!({
        "capabilities": server.capabilities(),
        "serverInfo": { "name": "lwirc", "version": env!("CARGO_PKG_VERSION") },
    });
    connection
        .initialize_finish(id, result)
        .map_err(|e| StartError(format!("the handshake did not finish: {e}")))?;
    for problem in std::mem::take(&mut server.config_problems) {
        server.show(lsp::MessageType::WARNING, &format!("lwirc: {problem}"));
    }
    Ok(server.run())
}

/// An open document.
#[derive(Debug)]
struct Doc {
    uri: lsp::Uri,
    path: Option<PathBuf>,
    text: Text,
    /// The analysis of the current text; `None` when it changed since.
    analysis: Option<Analysis>,
    /// What the expression pass kept of the last revision it checked: at a change, the
    /// steps it left as they were are not typed again.
    memo: lwir_validators::expr::Memo,
}

impl Doc {
    /// How findings name the document: its path, else its URI.
    fn name(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| self.uri.as_str().to_owned(), |p| p.display().to_string())
    }
}

struct Server<'c> {
    connection: &'c Connection,
    encoding: Encoding,
    config: Config,
    config_problems: Vec<String>,
    /// The first workspace folder: what relative settings are relative to.
    root: Option<PathBuf>,
    /// Every workspace folder: the files a draft names are read only inside the one that
    /// holds it.
    folders: Vec<PathBuf>,
    /// The definition given on the command line, read wherever it is.
    trusted_definition: Option<PathBuf>,
    /// The client pulls diagnostics (so they are not pushed).
    pull: bool,
    /// The client can be asked to pull again (after a definition changed).
    refresh: bool,
    docs: HashMap<String, Doc>,
    /// Documents whose diagnostics are due, and when.
    due: BTreeMap<String, Instant>,
    /// Definitions read from disk, by path: their bytes and the definition.
    definitions: HashMap<PathBuf, (Vec<u8>, Arc<Definition>)>,
    /// Definitions whose diagnostics were pushed without being open, and the definition
    /// they were of.
    published: HashMap<PathBuf, usize>,
    shutting_down: bool,
    next_request: i32,
    /// Goal files' templates, read once per registry and version (off this thread for a
    /// network registry).
    templates: templates::TemplateCache,
}

impl<'c> Server<'c> {
    fn new(connection: &'c Connection, params: &lsp::InitializeParams, mut config: Config) -> Self {
        let trusted_definition = config.definition.clone();
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref());
        let encoding = if offered.is_some_and(|o| o.contains(&lsp::PositionEncodingKind::UTF8)) {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        let config_problems = params
            .initialization_options
            .as_ref()
            .map(|o| config.update(o))
            .unwrap_or_default();
        let mut folders: Vec<PathBuf> = params
            .workspace_folders
            .iter()
            .flatten()
            .filter_map(|f| uri_path(&f.uri))
            .collect();
        #[allow(deprecated, reason = "older clients send only rootUri")]
        if folders.is_empty() {
            folders.extend(params.root_uri.as_ref().and_then(uri_path));
        }
        let root = folders.first().cloned();
        let text_caps = params.capabilities.text_document.as_ref();
        let pull = text_caps.and_then(|t| t.diagnostic.as_ref()).is_some();
        let refresh = params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.diagnostic.as_ref())
            .and_then(|d| d.refresh_support)
            .unwrap_or(false);
        Self {
            connection,
            encoding,
            config,
            config_problems,
            root,
            folders,
            trusted_definition,
            pull,
            refresh,
            docs: HashMap::new(),
            due: BTreeMap::new(),
            definitions: HashMap::new(),
            published: HashMap::new(),
            shutting_down: false,
            next_request: 0,
            templates: templates::TemplateCache::default(),
        }
    }

    fn capabilities(&self) -> lsp::ServerCapabilities {
        lsp::ServerCapabilities {
            position_encoding: Some(self.encoding.kind()),
            text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
                lsp::TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                    save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                    ..Default::default()
                },
            )),
            code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
                lsp::CodeActionOptions {
                    code_action_kinds: Some(vec![
                        lsp::CodeActionKind::QUICKFIX,
                        lsp::CodeActionKind::new(FIX_ALL),
                    ]),
                    ..Default::default()
                },
            )),
            hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
            definition_provider: Some(lsp::OneOf::Left(true)),
            completion_provider: Some(lsp::CompletionOptions {
                trigger_characters: Some(vec![".".into(), "\"".into(), "{".into()]),
                ..Default::default()
            }),
            document_symbol_provider: Some(lsp::OneOf::Left(true)),
            diagnostic_provider: Some(lsp::DiagnosticServerCapabilities::Options(
                lsp::DiagnosticOptions {
                    identifier: Some("lwirc".into()),
                    inter_file_dependencies: true,
                    workspace_diagnostics: false,
                    ..Default::default()
                },
            )),
            ..Default::default()
        }
    }

    fn run(&mut self) -> Ended {
        loop {
            let next = self.due.values().min().copied();
            let received = match next {
                Some(deadline) => self.connection.receiver.recv_deadline(deadline),
                None => self
                    .connection
                    .receiver
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
            };
            let message = match received {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    self.publish_due();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return Ended::Disconnected,
            };
            match message {
                Message::Request(request) => self.on_request(request),
                Message::Notification(n) if n.method == lsp::notification::Exit::METHOD => {
                    return if self.shutting_down {
                        Ended::Shutdown
                    } else {
                        Ended::ExitWithoutShutdown
                    };
                }
                Message::Notification(n) => self.on_notification(n),
                Message::Response(_) => {}
            }
        }
    }

    fn send(&self, message: Message) {
        // A client that went away is noticed by the loop when its messages stop.
        let _ = self.connection.sender.send(message);
    }

    fn show(&self, typ: lsp::MessageType, message: &str) {
        self.send(
            Notification::new(
                lsp::notification::ShowMessage::METHOD.to_owned(),
                lsp::ShowMessageParams {
                    typ,
                    message: message.to_owned(),
                },
            )
            .into(),
        );
    }

    // -- notifications ------------------------------------------------------------------

    fn on_notification(&mut self, n: Notification) {
        use lsp::notification as N;
        match n.method.as_str() {
            N::DidOpenTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(n.params) {
                    let key = p.text_document.uri.as_str().to_owned();
                    let path = uri_path(&p.text_document.uri);
                    self.docs.insert(
                        key.clone(),
                        Doc {
                            uri: p.text_document.uri,
                            path: path.clone(),
                            text: Text::new(p.text_document.text, p.text_document.version),
                            analysis: None,
                            memo: Default::default(),
                        },
                    );
                    self.changed(&key, path.as_deref(), true);
                }
            }
            N::DidChangeTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<lsp::DidChangeTextDocumentParams>(n.params)
                {
                    let key = p.text_document.uri.as_str().to_owned();
                    let encoding = self.encoding;
                    let Some(doc) = self.docs.get_mut(&key) else {
                        return;
                    };
                    let applied =
                        doc.text
                            .apply(p.content_changes, p.text_document.version, encoding);
                    if let Err(e) = applied {
                        // The client and the server disagree on the text: say so; the next
                        // full change or reopen puts it right.
                        self.show(
                            lsp::MessageType::ERROR,
                            &format!("lwirc: a change to {key} does not fit its text ({e}); reopen the file"),
                        );
                    }
                    let Some(doc) = self.docs.get_mut(&key) else {
                        return;
                    };
                    doc.analysis = None;
                    let path = doc.path.clone();
                    self.changed(&key, path.as_deref(), false);
                }
            }
            N::DidSaveTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<lsp::DidSaveTextDocumentParams>(n.params) {
                    // A definition saved: drafts that read it from disk read it again.
                    if let Some(path) = uri_path(&p.text_document.uri) {
                        self.definitions.remove(&path);
                        self.dependents_changed(&path);
                    }
                }
            }
            N::DidCloseTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(n.params) {
                    let key = p.text_document.uri.as_str().to_owned();
                    if let Some(doc) = self.docs.remove(&key) {
                        self.due.remove(&key);
                        // Its diagnostics go with it.
                        self.publish(&doc.uri, Vec::new(), None);
                        if let Some(path) = doc.path {
                            self.dependents_changed(&path);
                        }
                    }
                }
            }
            N::DidChangeConfiguration::METHOD => {
                if let Ok(p) = serde_json::from_value::<lsp::DidChangeConfigurationParams>(n.params)
                {
                    for problem in self.config.update(&p.settings) {
                        self.show(lsp::MessageType::WARNING, &format!("lwirc: {problem}"));
                    }
                    self.definitions.clear();
                    let now = Instant::now();
                    for (key, doc) in &mut self.docs {
                        doc.analysis = None;
                        self.due.insert(key.clone(), now);
                    }
                }
            }
            N::DidChangeWatchedFiles::METHOD => {
                if let Ok(p) = serde_json::from_value::<lsp::DidChangeWatchedFilesParams>(n.params)
                {
                    for change in p.changes {
                        if let Some(path) = uri_path(&change.uri) {
                            self.definitions.remove(&path);
                            self.dependents_changed(&path);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A document's text changed (or it opened): its diagnostics are due after the
    /// debounce (at once when it just opened), and so are those of the drafts that use it
    /// as their definition.
    fn changed(&mut self, key: &str, path: Option<&Path>, now: bool) {
        self.schedule(key, now);
        if let Some(path) = path {
            self.dependents_changed(path);
        }
    }

    fn schedule(&mut self, key: &str, now: bool) {
        let at = if now {
            Instant::now()
        } else {
            Instant::now() + self.config.debounce
        };
        self.due.insert(key.to_owned(), at);
    }

    /// The drafts checked against the definition at `path` are out of date.
    fn dependents_changed(&mut self, path: &Path) {
        let mut stale = Vec::new();
        for (key, doc) in &mut self.docs {
            let uses = doc
                .analysis
                .as_ref()
                .and_then(|a| a.definition.as_ref())
                .is_some_and(|d| d.path == path);
            if uses {
                doc.analysis = None;
                stale.push(key.clone());
            }
        }
        for key in &stale {
            self.schedule(key, false);
        }
        if !stale.is_empty() && self.pull && self.refresh {
            self.next_request += 1;
            self.send(
                Request::new(
                    RequestId::from(format!("lwirc-refresh-{}", self.next_request)),
                    lsp::request::WorkspaceDiagnosticRefresh::METHOD.to_owned(),
                    (),
                )
                .into(),
            );
        }
    }

    // -- analysis -------------------------------------------------------------------------

    /// Brings the analysis of `key` up to date. `false` when it is not open.
    fn analyze(&mut self, key: &str) -> bool {
        let Some(doc) = self.docs.get(key) else {
            return false;
        };
        if doc.analysis.is_some() {
            return true;
        }
        let path = doc.path.clone();
        let name = doc.name();
        // Read once: to tell what the file is, then to validate it.
        let read = lwir_spec::document::read_document(doc.text.as_str().as_bytes().to_vec());
        let root = read.0.as_ref().ok().map(|d| d.root());
        let kind = Kind::of(
            path.as_deref(),
            doc.text.as_str(),
            root,
            &self.config.patterns,
        );
        let (definition, notices) = match kind {
            Some(Kind::Draft) => self.definition_for(path.as_deref(), root),
            _ => (None, Vec::new()),
        };
        let mut memo = self
            .docs
            .get_mut(key)
            .map(|doc| std::mem::take(&mut doc.memo))
            .unwrap_or_default();
        let analysis =
            kind.map(|kind| Analysis::new(kind, &name, read, definition, notices, &mut memo));
        // `None`: not a file for lwirc, nothing to say.
        if let Some(doc) = self.docs.get_mut(key) {
            doc.analysis = analysis;
            doc.memo = memo;
        }
        true
    }

    /// The definition a draft is checked against: named by its `x-definition` member
    /// (relative to the draft), else configured (relative to the workspace root), else
    /// `workflow.json` beside it. Its text is the editor's when it is open.
    fn definition_for(
        &mut self,
        path: Option<&Path>,
        root: Option<&lwir_spec::Node>,
    ) -> (Option<LinkedDefinition>, Vec<Notice>) {
        let dir = path.and_then(Path::parent);
        let member = root.and_then(|r| r.get("x-definition"));
        let (candidate, from, span) = if let Some(node) = member {
            let Some(named) = node.as_str() else {
                return (
                    None,
                    vec![Notice {
                        span: node.span,
                        message: "`x-definition` must be the path of the draft's definition".into(),
                    }],
                );
            };
            let p = Path::new(named);
            let p = match dir {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p.to_path_buf(),
            };
            (p, DefinitionFrom::Member, Some(node.span))
        } else if let Some(configured) = &self.config.definition {
            let p = match &self.root {
                Some(root) if configured.is_relative() => root.join(configured),
                _ => configured.clone(),
            };
            (p, DefinitionFrom::Configured, None)
        } else if let Some(dir) = dir {
            let beside = dir.join("workflow.json");
            if !self.is_open(&beside) && !beside.is_file() {
                return (None, Vec::new());
            }
            (beside, DefinitionFrom::Beside, None)
        } else {
            return (None, Vec::new());
        };
        match self.read_definition(&candidate, path) {
            Ok(definition) => (
                Some(LinkedDefinition {
                    path: candidate,
                    from,
                    definition,
                }),
                Vec::new(),
            ),
            Err(why) => {
                let span = span.unwrap_or_default();
                (
                    None,
                    vec![Notice {
                        span,
                        message: plain(&format!(
                            "the definition `{}` cannot be read ({why}): only the draft-only checks ran",
                            candidate.display()
                        )),
                    }],
                )
            }
        }
    }

    /// The open document of the file at `path`.
    fn open_at(&self, path: &Path) -> Option<&Doc> {
        self.docs.values().find(|d| d.path.as_deref() == Some(path))
    }

    fn is_open(&self, path: &Path) -> bool {
        self.open_at(path).is_some()
    }

    /// The definition at `path` for the draft at `draft`: the editor's text when it is
    /// open, else the file, read only inside the draft's workspace folder
    /// ([`Server::confinement`]) unless it is the one given on the command line.
    fn read_definition(
        &mut self,
        path: &Path,
        draft: Option<&Path>,
    ) -> Result<Arc<Definition>, String> {
        let open = self
            .open_at(path)
            .map(|d| d.text.as_str().as_bytes().to_vec());
        let bytes = match open {
            Some(bytes) => bytes,
            None => {
                let trusted = self.trusted_definition.as_deref() == Some(path);
                let root = if trusted {
                    path.parent().map(Path::to_path_buf)
                } else {
                    self.confinement(draft)
                };
                let root =
                    root.ok_or("a draft that is no file, outside any workspace, can name none")?;
                lwir_repair::files::read_confined(&root, path, MAX_DEFINITION_BYTES)
                    .map_err(|e| e.to_string())?
            }
        };
        if let Some((cached, definition)) = self.definitions.get(path)
            && *cached == bytes
        {
            return Ok(Arc::clone(definition));
        }
        let definition = Arc::new(Definition::read(Source {
            name: path.display().to_string(),
            bytes: bytes.clone(),
        }));
        self.definitions
            .insert(path.to_path_buf(), (bytes, Arc::clone(&definition)));
        Ok(definition)
    }

    /// Where the files a document at `path` names may be: the workspace folder that holds
    /// it, else (outside every folder) its own directory. `None` for a document that is no
    /// file and a workspace without folders.
    fn confinement(&self, path: Option<&Path>) -> Option<PathBuf> {
        let Some(path) = path else {
            return self.root.clone();
        };
        self.folders
            .iter()
            .filter(|f| path.starts_with(f))
            .max_by_key(|f| f.components().count())
            .cloned()
            .or_else(|| path.parent().map(Path::to_path_buf))
    }

    // -- diagnostics ----------------------------------------------------------------------

    fn publish_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.due.remove(&key);
            if self.pull {
                // The client asks; nothing is pushed.
                continue;
            }
            // A check that fails says so on the document; the server goes on.
            let checked =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.diagnostics(&key)));
            match checked {
                Ok(Some((uri, diagnostics, version))) => {
                    self.publish(&uri, diagnostics, Some(version))
                }
                Ok(None) => {}
                Err(_) => {
                    if let Some(doc) = self.docs.get_mut(&key) {
                        let uri = doc.uri.clone();
                        let version = doc.text.version();
                        let failed = lsp::Diagnostic {
                            range: lsp::Range::default(),
                            severity: Some(lsp::DiagnosticSeverity::ERROR),
                            source: Some("lwirc".into()),
                            message: "lwirc failed while checking this document (a bug: please report it with the document)".into(),
                            ..Default::default()
                        };
                        self.publish(&uri, vec![failed], Some(version));
                    }
                }
            }
        }
    }

    fn publish(&self, uri: &lsp::Uri, diagnostics: Vec<lsp::Diagnostic>, version: Option<i32>) {
        self.send(
            Notification::new(
                lsp::notification::PublishDiagnostics::METHOD.to_owned(),
                lsp::PublishDiagnosticsParams {
                    uri: uri.clone(),
                    diagnostics,
                    version,
                },
            )
            .into(),
        );
    }

    /// The diagnostics of an open document (analysing it first).
    fn diagnostics(&mut self, key: &str) -> Option<(lsp::Uri, Vec<lsp::Diagnostic>, i32)> {
        self.analyze(key);
        let encoding = self.encoding;
        let codes_url = self.config.codes_url.clone();
        let mut unopened_definition = None;
        let doc = self.docs.get_mut(key)?;
        let uri = doc.uri.clone();
        let version = doc.text.version();
        let Some(analysis) = &doc.analysis else {
            return Some((uri, Vec::new(), version));
        };
        // The definition's text, to place related places in it: made only when a finding
        // has one there.
        let needs_definition = analysis
            .findings()
            .any(|f| f.related.iter().any(|r| r.origin == Origin::Definition));
        let mut definition_text = analysis
            .definition
            .as_ref()
            .filter(|_| needs_definition)
            .map(|d| {
                Text::new(
                    String::from_utf8_lossy(d.definition.bytes()).into_owned(),
                    0,
                )
            });
        let definition_uri = analysis.definition.as_ref().map(|d| path_uri(&d.path));
        let mut out: Vec<lsp::Diagnostic> = analysis
            .findings()
            .map(|f| {
                diagnostic(
                    f,
                    &uri,
                    &mut doc.text,
                    definition_uri.as_ref().zip(definition_text.as_mut()),
                    encoding,
                    &codes_url,
                )
            })
            .collect();
        for notice in &analysis.notices {
            out.push(lsp::Diagnostic {
                range: doc.text.range(notice.span, encoding),
                severity: Some(lsp::DiagnosticSeverity::WARNING),
                source: Some("lwirc".into()),
                message: notice.message.clone(),
                ..Default::default()
            });
        }
        let errors = analysis.definition_errors();
        if errors > 0
            && let Some(linked) = &analysis.definition
        {
            let span = analysis
                .document()
                .and_then(|d| d.root().get("x-definition"))
                .map(|n| n.span)
                .unwrap_or_default();
            out.push(lsp::Diagnostic {
                range: doc.text.range(span, encoding),
                severity: Some(lsp::DiagnosticSeverity::WARNING),
                source: Some("lwirc".into()),
                message: format!(
                    "the definition `{}` has {errors} error{}: checks that need what it gets wrong may be missing",
                    linked.path.display(),
                    if errors == 1 { "" } else { "s" }
                ),
                ..Default::default()
            });
            unopened_definition = Some((linked.path.clone(), Arc::clone(&linked.definition)));
        }
        // A broken definition that is not open: its own diagnostics are pushed on it, so
        // that the problems list shows where they are.
        if let (Some((path, definition)), Some(def_uri)) = (unopened_definition, definition_uri)
            && !self.pull
            && !self.is_open(&path)
            && self.published.get(&path) != Some(&(Arc::as_ptr(&definition) as usize))
        {
            let mut def_text =
                Text::new(String::from_utf8_lossy(definition.bytes()).into_owned(), 0);
            let diagnostics = definition
                .findings()
                .iter()
                .map(|f| diagnostic(f, &def_uri, &mut def_text, None, encoding, &codes_url))
                .collect();
            self.publish(&def_uri, diagnostics, None);
            self.published
                .insert(path, Arc::as_ptr(&definition) as usize);
        }
        Some((uri, out, version))
    }

    // -- requests -------------------------------------------------------------------------

    fn on_request(&mut self, request: Request) {
        let id = request.id.clone();
        if request.method == lsp::request::Shutdown::METHOD {
            self.shutting_down = true;
            self.send(Response::new_ok(id, ()).into());
            return;
        }
        if self.shutting_down {
            self.send(
                Response::new_err(
                    id,
                    ErrorCode::InvalidRequest as i32,
                    "the server is shutting down".into(),
                )
                .into(),
            );
            return;
        }
        // A handler that fails is an error answer; the server goes on.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.answer(request)));
        let response = match outcome {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(_) => Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                "lwirc failed on this request (a bug: please report it with the document)".into(),
            ),
        };
        self.send(response.into());
    }

    fn answer(&mut self, request: Request) -> Result<Value, (ErrorCode, String)> {
        use lsp::request as R;
        fn params<P: serde::de::DeserializeOwned>(v: Value) -> Result<P, (ErrorCode, String)> {
            serde_json::from_value(v)
                .map_err(|e| (ErrorCode::InvalidParams, format!("invalid parameters: {e}")))
        }
        let to_value = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| (ErrorCode::InternalError, e.to_string()))
        };
        match request.method.as_str() {
            R::DocumentDiagnosticRequest::METHOD => {
                let p: lsp::DocumentDiagnosticParams = params(request.params)?;
                let key = self.open_key(&p.text_document.uri)?;
                self.due.remove(&key);
                let (_, items, version) = self
                    .diagnostics(&key)
                    .unwrap_or_else(|| (p.text_document.uri.clone(), Vec::new(), 0));
                to_value(serde_json::to_value(
                    lsp::DocumentDiagnosticReportResult::Report(
                        lsp::DocumentDiagnosticReport::Full(
                            lsp::RelatedFullDocumentDiagnosticReport {
                                related_documents: None,
                                full_document_diagnostic_report:
                                    lsp::FullDocumentDiagnosticReport {
                                        result_id: Some(version.to_string()),
                                        items,
                                    },
                            },
                        ),
                    ),
                ))
            }
            R::CodeActionRequest::METHOD => {
                let p: lsp::CodeActionParams = params(request.params)?;
                let key = self.open_key(&p.text_document.uri)?;
                let actions = self.code_actions(&key, &p)?;
                to_value(serde_json::to_value(actions))
            }
            R::HoverRequest::METHOD => {
                let p: lsp::HoverParams = params(request.params)?;
                let at = &p.text_document_position_params;
                let key = self.open_key(&at.text_document.uri)?;
                let offset = self.offset(&key, at.position)?;
                let encoding = self.encoding;
                // Configured (relative to the workspace root, or `oci://…`), else
                // `$LWIR_REGISTRY`, else `.lwir/registry` in the workspace.
                let dir =
                    lwir_registry::location(self.config.registry.as_deref(), self.root.as_deref());
                let doc = self.docs.get_mut(&key).ok_or_else(|| not_open(&key))?;
                let Some(analysis) = &doc.analysis else {
                    return Ok(Value::Null);
                };
                let found = if analysis.kind == Kind::Goal {
                    // Templates are read (and verified) from the registry when first asked
                    // for, and kept: they are content-addressed.
                    let location = dir.to_string_lossy();
                    match lwir_registry::AnyStorage::parse(&location) {
                        Ok(_) => {
                            features::goal_hover(analysis, offset, &self.templates.of(&location))
                        }
                        Err(why) => Some((
                            format!(
                                "The registry `{}` cannot be used: {}",
                                dir.display(),
                                plain(&why)
                            ),
                            analysis
                                .document()
                                .map_or_else(Default::default, |d| d.root().span),
                        )),
                    }
                } else {
                    features::hover(analysis, doc.text.as_str(), offset)
                };
                let Some((markdown, span)) = found else {
                    return Ok(Value::Null);
                };
                let range = doc.text.range(span, encoding);
                to_value(serde_json::to_value(lsp::Hover {
                    contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                        kind: lsp::MarkupKind::Markdown,
                        value: markdown,
                    }),
                    range: Some(range),
                }))
            }
            R::GotoDefinition::METHOD => {
                let p: lsp::GotoDefinitionParams = params(request.params)?;
                let at = &p.text_document_position_params;
                let key = self.open_key(&at.text_document.uri)?;
                let offset = self.offset(&key, at.position)?;
                let location = self.goto(&key, offset);
                to_value(serde_json::to_value(
                    location.map(lsp::GotoDefinitionResponse::Scalar),
                ))
            }
            R::Completion::METHOD => {
                let p: lsp::CompletionParams = params(request.params)?;
                let at = &p.text_document_position;
                let key = self.open_key(&at.text_document.uri)?;
                let offset = self.offset(&key, at.position)?;
                let doc = self.docs.get(&key).ok_or_else(|| not_open(&key))?;
                let items: Vec<lsp::CompletionItem> =
                    features::complete(doc.analysis.as_ref(), doc.text.as_str(), offset)
                        .into_iter()
                        .map(|c| lsp::CompletionItem {
                            label: c.label,
                            detail: Some(c.detail),
                            kind: Some(c.kind),
                            ..Default::default()
                        })
                        .collect();
                to_value(serde_json::to_value(lsp::CompletionResponse::Array(items)))
            }
            R::DocumentSymbolRequest::METHOD => {
                let p: lsp::DocumentSymbolParams = params(request.params)?;
                let key = self.open_key(&p.text_document.uri)?;
                let encoding = self.encoding;
                let doc = self.docs.get_mut(&key).ok_or_else(|| not_open(&key))?;
                let Some(analysis) = &doc.analysis else {
                    return Ok(Value::Array(Vec::new()));
                };
                let symbols = features::symbols(analysis);
                let converted = convert_symbols(symbols, &mut doc.text, encoding);
                to_value(serde_json::to_value(lsp::DocumentSymbolResponse::Nested(
                    converted,
                )))
            }
            method => Err((
                ErrorCode::MethodNotFound,
                format!("lwirc does not answer `{method}`"),
            )),
        }
    }

    /// The key of an open document, analysed; an error for one that is not open.
    fn open_key(&mut self, uri: &lsp::Uri) -> Result<String, (ErrorCode, String)> {
        let key = uri.as_str().to_owned();
        if !self.analyze(&key) {
            return Err(not_open(&key));
        }
        Ok(key)
    }

    fn offset(&self, key: &str, position: lsp::Position) -> Result<usize, (ErrorCode, String)> {
        let doc = self.docs.get(key).ok_or_else(|| not_open(key))?;
        doc.text
            .offset(position, self.encoding)
            .map_err(|e| (ErrorCode::InvalidParams, e.to_string()))
    }

    fn goto(&mut self, key: &str, offset: usize) -> Option<lsp::Location> {
        let encoding = self.encoding;
        let doc = self.docs.get_mut(key)?;
        let analysis = doc.analysis.as_ref()?;
        match features::definition(analysis, offset)? {
            features::Target::Here(span) => Some(lsp::Location {
                uri: doc.uri.clone(),
                range: doc.text.range(span, encoding),
            }),
            features::Target::InDefinition(pointer) => {
                let linked = analysis.definition.as_ref()?;
                let path = linked.path.clone();
                let definition = Arc::clone(&linked.definition);
                let def_doc = definition.document()?;
                def_doc.root().at(&pointer)?;
                let span = def_doc.key_span_of(&pointer)?;
                // The editor's text when the definition is open, else the file's.
                let range = match self
                    .docs
                    .values_mut()
                    .find(|d| d.path.as_deref() == Some(&path))
                {
                    Some(open) => open.text.range(span, encoding),
                    None => text::range_in(def_doc.source(), span, encoding),
                };
                Some(lsp::Location {
                    uri: path_uri(&path),
                    range,
                })
            }
        }
    }

    fn code_actions(
        &mut self,
        key: &str,
        p: &lsp::CodeActionParams,
    ) -> Result<Vec<lsp::CodeActionOrCommand>, (ErrorCode, String)> {
        let encoding = self.encoding;
        let codes_url = self.config.codes_url.clone();
        let start = self.offset(key, p.range.start)?;
        let end = self.offset(key, p.range.end)?.max(start);
        let only = p.context.only.as_ref();
        let wants = |kind: &str| {
            only.is_none_or(|kinds| {
                kinds
                    .iter()
                    .any(|k| kind == k.as_str() || kind.starts_with(&format!("{}.", k.as_str())))
            })
        };
        let doc = self.docs.get_mut(key).ok_or_else(|| not_open(key))?;
        let Some(analysis) = &doc.analysis else {
            return Ok(Vec::new());
        };
        let Some(spanned) = analysis.document() else {
            return Ok(Vec::new());
        };
        let mut actions = Vec::new();
        if wants(lsp::CodeActionKind::QUICKFIX.as_str()) {
            for f in analysis.findings() {
                let Some(fix) = &f.fix else { continue };
                let overlaps = f.span.start() <= end && start <= f.span.end();
                if !overlaps || fix.patch.is_empty() {
                    continue;
                }
                let Ok(new) = lwir_repair::edit::apply_to_document(spanned, &fix.patch) else {
                    continue;
                };
                let new = String::from_utf8_lossy(&new).into_owned();
                let Some(edit) = text_edit(&mut doc.text, &new, encoding) else {
                    continue;
                };
                let machine = fix.applicability == Applicability::MachineApplicable;
                let mut diag = diagnostic(f, &doc.uri, &mut doc.text, None, encoding, &codes_url);
                diag.related_information = None;
                actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                    title: fix_title(f, &fix.patch, machine),
                    kind: Some(lsp::CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![diag]),
                    edit: Some(workspace_edit(&doc.uri, doc.text.version(), edit)),
                    is_preferred: Some(machine),
                    ..Default::default()
                }));
            }
        }
        if wants(FIX_ALL) && analysis.kind == Kind::Draft {
            let has_safe = analysis.findings().any(|f| {
                f.is_error()
                    && f.fix
                        .as_ref()
                        .is_some_and(|x| x.applicability == Applicability::MachineApplicable)
            });
            if has_safe {
                let definition = analysis
                    .definition
                    .as_ref()
                    .map(|d| Arc::clone(&d.definition));
                // What `lwirc fix` does, byte for byte.
                let mut check = lwir_session::DraftCheck::new(definition, doc.name());
                let bytes = doc.text.as_str().as_bytes().to_vec();
                let outcome = lwir_repair::fixes::fix_draft(&mut check, bytes, false);
                let fixed: usize = outcome.passes.iter().map(|p| p.applied.len()).sum();
                let new = String::from_utf8_lossy(&outcome.draft).into_owned();
                if fixed > 0
                    && let Some(edit) = text_edit(&mut doc.text, &new, encoding)
                {
                    let left = outcome.checked.errors();
                    let title = match (&outcome.stop, left) {
                        (FixStop::Clean, _) => {
                            format!("Apply every safe fix ({fixed}): the draft is clean")
                        }
                        (_, left) => format!(
                            "Apply every safe fix ({fixed}); {left} error{} without one stay",
                            if left == 1 { "" } else { "s" }
                        ),
                    };
                    actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                        title,
                        kind: Some(lsp::CodeActionKind::new(FIX_ALL)),
                        edit: Some(workspace_edit(&doc.uri, doc.text.version(), edit)),
                        ..Default::default()
                    }));
                }
            }
        }
        Ok(actions)
    }
}

fn not_open(key: &str) -> (ErrorCode, String) {
    (
        ErrorCode::InvalidParams,
        format!("`{key}` is not open (open it with textDocument/didOpen first)"),
    )
}

/// A finding as a diagnostic: its code, the code's documentation, severity, message (and
/// help), and its related places (in this document, or in the definition at
/// `definition`).
fn diagnostic(
    f: &Finding,
    uri: &lsp::Uri,
    text: &mut Text,
    mut definition: Option<(&lsp::Uri, &mut Text)>,
    encoding: Encoding,
    codes_url: &str,
) -> lsp::Diagnostic {
    let mut message = plain(&f.message);
    if let Some(help) = &f.help {
        message.push_str("\nhelp: ");
        message.push_str(&plain(help));
    }
    let href = format!("{codes_url}#{}", f.code.as_str().to_ascii_lowercase());
    let related: Vec<lsp::DiagnosticRelatedInformation> = f
        .related
        .iter()
        .filter_map(|r| {
            let location = if r.origin == f.origin {
                lsp::Location {
                    uri: uri.clone(),
                    range: text.range(r.span, encoding),
                }
            } else if r.origin == Origin::Definition {
                let (def_uri, def_text) = definition.as_mut()?;
                lsp::Location {
                    uri: (*def_uri).clone(),
                    range: def_text.range(r.span, encoding),
                }
            } else {
                return None;
            };
            Some(lsp::DiagnosticRelatedInformation {
                location,
                message: plain(&r.message),
            })
        })
        .collect();
    lsp::Diagnostic {
        range: text.range(f.span, encoding),
        severity: Some(match f.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        }),
        code: Some(lsp::NumberOrString::String(f.code.as_str().to_owned())),
        code_description: href.parse().ok().map(|href| lsp::CodeDescription { href }),
        source: Some("lwirc".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        data: Some(
            serde_json::json!({ "pointer": f.pointer, "fix": f.fix.as_ref().map(|x| x.applicability.as_str()) }),
        ),
        ..Default::default()
    }
}

/// The title of a fix's code action.
fn fix_title(f: &Finding, patch: &[PatchOp], machine: bool) -> String {
    let what: Vec<String> = patch
        .iter()
        .map(|op| match op {
            PatchOp::Replace { path, value } => format!("set `{path}` to {}", short(value)),
            PatchOp::Add { path, value } => format!("add {} at `{path}`", short(value)),
            PatchOp::Remove { path } => format!("remove `{path}`"),
            PatchOp::Move { from, path } => format!("move `{from}` to `{path}`"),
        })
        .collect();
    let mut title = format!("{}: {}", f.code, what.join(", "));
    if !machine {
        title.push_str(" (check it: may be incorrect)");
    }
    title
}

fn short(value: &Value) -> String {
    let text = plain(&value.to_string());
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// The smallest text edit that turns the document into `new`.
fn text_edit(text: &mut Text, new: &str, encoding: Encoding) -> Option<lsp::TextEdit> {
    let (span, replacement) = text::diff(text.as_str(), new)?;
    Some(lsp::TextEdit {
        range: text.range(span, encoding),
        new_text: replacement,
    })
}

fn workspace_edit(uri: &lsp::Uri, version: i32, edit: lsp::TextEdit) -> lsp::WorkspaceEdit {
    lsp::WorkspaceEdit {
        document_changes: Some(lsp::DocumentChanges::Edits(vec![lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                uri: uri.clone(),
                version: Some(version),
            },
            edits: vec![lsp::OneOf::Left(edit)],
        }])),
        ..Default::default()
    }
}

fn convert_symbols(
    symbols: Vec<features::Symbol>,
    text: &mut Text,
    encoding: Encoding,
) -> Vec<lsp::DocumentSymbol> {
    symbols
        .into_iter()
        .map(|s| {
            #[allow(deprecated, reason = "the field is required by the type")]
            lsp::DocumentSymbol {
                name: plain(&s.name),
                detail: s.detail.as_deref().map(plain),
                kind: s.kind,
                tags: None,
                deprecated: None,
                range: text.range(s.span, encoding),
                selection_range: text.range(s.selection, encoding),
                children: Some(convert_symbols(s.children, text, encoding))
                    .filter(|c| !c.is_empty()),
            }
        })
        .collect()
}

/// Text from a document, made safe to show: control characters other than newline and
/// tab become `�`, so that an escape sequence in a draft reaches no terminal-backed editor.
pub fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// The path of a `file:` URI.
pub fn uri_path(uri: &lsp::Uri) -> Option<PathBuf> {
    let s = uri.as_str();
    let rest = s.strip_prefix("file://")?;
    // `file:///path` or `file://localhost/path`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(rest).collect::<Vec<u8>>();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(std::ffi::OsString::from_vec(decoded)))
    }
    #[cfg(not(unix))]
    {
        Some(PathBuf::from(
            String::from_utf8_lossy(&decoded).into_owned(),
        ))
    }
}

/// The `file:` URI of an absolute path.
pub fn path_uri(path: &Path) -> lsp::Uri {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path))
    };
    let text = absolute.to_string_lossy();
    let encoded = percent_encoding::utf8_percent_encode(&text, KEEP).to_string();
    format!("file://{encoded}")
        .parse()
        .unwrap_or_else(|_| "file:///".parse().expect("a constant URI"))
}
