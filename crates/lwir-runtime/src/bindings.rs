//! Bindings (`lwir.bindings/1`): where the tools and model slots of a version run. The
//! definition says *what* a tool is; bindings say where it runs. Read by the strict I-JSON
//! reader, checked against `crates/lwir-spec/schema/bindings-1.schema.json`, then typed, every
//! problem a finding at its pointer. Secrets never appear in a bindings file, only names of
//! environment variables that hold them.

use std::collections::BTreeMap;
use std::time::Duration;

use lwir_spec::{Code, Finding, Node, SpannedDocument, document, pointer};

/// The format tag a bindings file starts with.
pub const FORMAT: &str = "lwir.bindings/1";

/// How long a command tool may take when its binding says nothing (60 s).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long an MCP server may take to start and to list its tools when its binding says
/// nothing (30 s).
pub const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one round of a model may take when its binding says nothing (300 s).
pub const DEFAULT_MODEL_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes a tool result or a model answer may have when its binding says nothing
/// (16 MiB).
pub const DEFAULT_MAX_RESULT: usize = 16 * 1024 * 1024;

/// A bindings file, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Bindings {
    /// MCP servers, by name.
    pub servers: BTreeMap<String, Server>,
    /// Tool bindings, by tool id.
    pub tools: BTreeMap<String, ToolBinding>,
    /// Model bindings, by slot id (`*` for every slot without one of its own).
    pub models: BTreeMap<String, ModelBinding>,
    /// The file as JSON (what a run records).
    pub json: serde_json::Value,
}

/// An MCP server.
#[derive(Clone, Debug, PartialEq)]
pub enum Server {
    /// Started as a process speaking MCP on standard input and output.
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
        /// Variables of lwirc's environment it gets (besides `PATH`, `HOME`, `LANG`).
        env: Vec<String>,
        /// How long starting it (the handshake) and listing its tools may take.
        timeout: Duration,
    },
    /// Reached over streamable HTTP.
    Http {
        /// Its URL.
        url: String,
        /// Header name → the variable holding its value.
        headers_env: BTreeMap<String, String>,
        /// How long the handshake and listing its tools may take.
        timeout: Duration,
    },
}

/// Where one tool runs.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolBinding {
    /// A tool of an MCP server.
    Server {
        /// The server's name under `servers`.
        server: String,
        /// The tool's name on the server.
        name: String,
        /// How long one call may take.
        timeout: Duration,
        /// The most bytes of its answer (the whole message, as sent).
        max_result: usize,
    },
    /// A command that reads `{"tool", "args", "idempotency_key"}` on standard input and
    /// prints the result.
    Command(CommandSpec),
}

/// A command binding: the program, its environment and its limits.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandSpec {
    /// The program and its arguments, run without a shell.
    pub command: Vec<String>,
    /// Variables of lwirc's environment it gets (besides `PATH`, `HOME`, `LANG`).
    pub env: Vec<String>,
    /// How long one call may take.
    pub timeout: Duration,
    /// The most bytes of standard output.
    pub max_output: usize,
}

/// Where one model slot runs.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelBinding {
    /// An OpenAI-compatible chat-completions server.
    Http {
        /// Its base URL (`…/v1`).
        url: String,
        /// The variable holding the API key.
        api_key_env: Option<String>,
        /// The model to ask for (else the slot's).
        model: Option<String>,
        /// How long one round may take.
        timeout: Duration,
    },
    /// A command that reads the chat request on standard input and prints the answer.
    Command {
        /// The command.
        spec: CommandSpec,
        /// The model it stands for (else the slot's).
        model: Option<String>,
    },
}

impl ModelBinding {
    /// The model the binding names, if it names one.
    pub fn model(&self) -> Option<&str> {
        match self {
            ModelBinding::Http { model, .. } | ModelBinding::Command { model, .. } => {
                model.as_deref()
            }
        }
    }
}

impl Bindings {
    /// The binding of slot `slot`: its own, else `*`'s.
    pub fn model(&self, slot: &str) -> Option<&ModelBinding> {
        self.models.get(slot).or_else(|| self.models.get("*"))
    }

    /// `sha256:` over the file's RFC 8785 form.
    pub fn digest(&self) -> String {
        crate::values::digest_of(&self.json)
    }

    /// The bindings recorded in a run (the JSON a `run.started` or `run.resumed` holds).
    pub fn from_recorded(json: &serde_json::Value) -> Result<Bindings, String> {
        let bytes = serde_json::to_vec(json).map_err(|e| e.to_string())?;
        let read = read(bytes);
        match read.bindings {
            Some(b) => Ok(b),
            None => Err(read
                .findings
                .first()
                .map(|f| format!("{} at `{}`: {}", f.code, f.pointer, f.message))
                .unwrap_or_else(|| "they cannot be read".into())),
        }
    }
}

/// A bindings file as read: the document (absent when the bytes are not JSON), the typed
/// bindings (absent when there are errors) and every finding, in reading order.
#[derive(Debug)]
pub struct Read {
    /// The spanned document, for findings' spans.
    pub document: Option<SpannedDocument>,
    /// The typed bindings.
    pub bindings: Option<Bindings>,
    /// Reader, shape and binding findings.
    pub findings: Vec<Finding>,
}

/// Reads `bytes` as a bindings file: the strict reader, the meta-schema, then the typed
/// view (a tool bound to both a server and a command, a server that is not declared, …).
pub fn read(bytes: Vec<u8>) -> Read {
    let outcome = document::read(bytes);
    let mut findings = outcome.findings;
    let Some(doc) = outcome.document else {
        return Read {
            document: None,
            bindings: None,
            findings,
        };
    };
    if !findings.iter().any(Finding::is_error) {
        findings.extend(lwir_validators::shape::check_bindings(&doc));
    }
    let bindings = if findings.iter().any(Finding::is_error) {
        None
    } else {
        let typed = typed(&doc, &mut findings);
        (!findings.iter().any(Finding::is_error)).then_some(typed)
    };
    Read {
        document: Some(doc),
        bindings,
        findings,
    }
}

/// The typed view of a document the meta-schema accepted; what does not fit it is a finding.
fn typed(doc: &SpannedDocument, findings: &mut Vec<Finding>) -> Bindings {
    let root = doc.root();
    let mut bad = |at: String, message: String| {
        let span = doc.span_of(&at).unwrap_or(root.span);
        findings.push(Finding::new(Code::InvalidValue, at, span, message));
    };
    let members = |key: &str| root.get(key).and_then(Node::as_object).unwrap_or_default();
    let strings = |node: Option<&Node>| -> Vec<String> {
        node.and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_str)
            .map(str::to_owned)
            .collect()
    };
    let text = |node: &Node, key: &str| node.get(key).and_then(Node::as_str).map(str::to_owned);
    let duration = |node: &Node, default: Duration| {
        node.get("timeout_s")
            .and_then(|n| n.to_json().as_f64())
            .map_or(default, Duration::from_secs_f64)
    };
    let bytes = |node: &Node, key: &str| {
        node.get(key)
            .and_then(Node::as_i64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_RESULT)
    };

    let mut servers = BTreeMap::new();
    for m in members("servers") {
        let at = pointer::join("/servers", &m.key);
        let node = &m.value;
        let server = match (node.get("command"), text(node, "url")) {
            (Some(_), None) => Server::Stdio {
                command: strings(node.get("command")),
                env: strings(node.get("env")),
                timeout: duration(node, DEFAULT_SERVER_TIMEOUT),
            },
            (None, Some(url)) => Server::Http {
                timeout: duration(node, DEFAULT_SERVER_TIMEOUT),
                url,
                headers_env: node
                    .get("headers_env")
                    .and_then(Node::as_object)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|h| Some((h.key.to_string(), h.value.as_str()?.to_owned())))
                    .collect(),
            },
            _ => {
                bad(
                    at,
                    format!(
                        "server `{}` needs exactly one of `command` (a process speaking MCP on \
                         standard input and output) and `url` (streamable HTTP)",
                        m.key
                    ),
                );
                continue;
            }
        };
        servers.insert(m.key.to_string(), server);
    }

    let mut tools = BTreeMap::new();
    for m in members("tools") {
        let at = pointer::join("/tools", &m.key);
        let node = &m.value;
        let binding = match (text(node, "server"), node.get("command")) {
            (Some(server), None) => {
                if !servers.contains_key(&server) {
                    bad(
                        pointer::join(&at, "server"),
                        format!("no server `{server}` is declared under `servers`"),
                    );
                    continue;
                }
                if node.get("env").is_some() {
                    bad(
                        pointer::join(&at, "env"),
                        "`env` of a tool on a server is its server's (`servers`)".into(),
                    );
                    continue;
                }
                ToolBinding::Server {
                    name: text(node, "name").unwrap_or_else(|| m.key.to_string()),
                    server,
                    timeout: duration(node, DEFAULT_TOOL_TIMEOUT),
                    max_result: bytes(node, "max_result_bytes"),
                }
            }
            (None, Some(_)) => {
                if node.get("name").is_some() {
                    bad(
                        pointer::join(&at, "name"),
                        "`name` is the tool's name on a server; a command tool has none".into(),
                    );
                    continue;
                }
                ToolBinding::Command(CommandSpec {
                    command: strings(node.get("command")),
                    env: strings(node.get("env")),
                    timeout: duration(node, DEFAULT_TOOL_TIMEOUT),
                    max_output: bytes(node, "max_result_bytes"),
                })
            }
            _ => {
                bad(
                    at,
                    format!(
                        "tool `{}` needs exactly one of `server` (a tool of an MCP server) and \
                         `command` (a program)",
                        m.key
                    ),
                );
                continue;
            }
        };
        tools.insert(m.key.to_string(), binding);
    }

    let mut models = BTreeMap::new();
    for m in members("models") {
        let at = pointer::join("/models", &m.key);
        let node = &m.value;
        let model = text(node, "model");
        let binding = match (text(node, "url"), node.get("command")) {
            (Some(url), None) => ModelBinding::Http {
                url,
                api_key_env: text(node, "api_key_env"),
                model,
                timeout: duration(node, DEFAULT_MODEL_TIMEOUT),
            },
            (None, Some(_)) if node.get("api_key_env").is_none() => ModelBinding::Command {
                spec: CommandSpec {
                    command: strings(node.get("command")),
                    env: strings(node.get("env")),
                    timeout: duration(node, DEFAULT_MODEL_TIMEOUT),
                    max_output: bytes(node, "max_answer_bytes"),
                },
                model,
            },
            _ => {
                bad(
                    at,
                    format!(
                        "model slot `{}` needs exactly one of `url` (an OpenAI-compatible \
                         server, with `api_key_env`) and `command` (a program)",
                        m.key
                    ),
                );
                continue;
            }
        };
        models.insert(m.key.to_string(), binding);
    }
    Bindings {
        servers,
        tools,
        models,
        json: root.to_json(),
    }
}

/// Findings for every tool and slot of `tools` and `slots` (what a version references)
/// that `bindings` does not bind, at `/tools` or `/models` of the bindings file.
pub fn unbound(
    bindings: &Bindings,
    document: Option<&SpannedDocument>,
    tools: &[&str],
    slots: &[&str],
) -> Vec<Finding> {
    let span = |at: &str| {
        document
            .and_then(|d| d.span_of(at).or_else(|| Some(d.root().span)))
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for tool in tools.iter().filter(|t| !bindings.tools.contains_key(**t)) {
        out.push(
            Finding::new(
                Code::CapabilityUnavailable,
                "/tools",
                span("/tools"),
                format!("tool `{tool}` is called by the version but not bound"),
            )
            .with_help(format!(
                "add `\"{tool}\": {{\"command\": [\"PROGRAM\"]}}` or `{{\"server\": \"NAME\", \
                 \"name\": \"TOOL\"}}` under `tools`"
            )),
        );
    }
    for slot in slots.iter().filter(|s| bindings.model(s).is_none()) {
        out.push(
            Finding::new(
                Code::CapabilityUnavailable,
                "/models",
                span("/models"),
                format!("model slot `{slot}` is used by the version but not bound"),
            )
            .with_help(format!(
                "add `\"{slot}\"` (or `\"*\"`) under `models`: `{{\"url\": \"http://…/v1\", \
                 \"api_key_env\": \"VAR\"}}` or `{{\"command\": [\"PROGRAM\"]}}`"
            )),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Vec<(Code, String)> {
        read(text.as_bytes().to_vec())
            .findings
            .into_iter()
            .map(|f| (f.code, f.pointer))
            .collect()
    }

    #[test]
    fn the_brief_example_reads() {
        let text = r#"{
          "bindings": "lwir.bindings/1",
          "servers": {
            "everything": { "command": ["npx", "@modelcontextprotocol/server-everything"], "env": ["NODE_OPTIONS"] },
            "remote":     { "url": "http://127.0.0.1:8931/mcp", "headers_env": { "Authorization": "REMOTE_AUTH" } }
          },
          "tools": {
            "util.echo":        { "server": "everything", "name": "echo" },
            "github.add_label": { "command": ["./tools/add-label"], "env": ["GITHUB_TOKEN"] }
          },
          "models": {
            "*":    { "url": "http://127.0.0.1:8080/v1", "api_key_env": "OPENAI_API_KEY" },
            "deep": { "url": "http://127.0.0.1:8081/v1", "model": "acme/large-5" },
            "fast": { "command": ["examples/models/scripted.sh", "examples/issue-triage/model"] }
          }
        }"#;
        let read = read(text.as_bytes().to_vec());
        assert!(read.findings.is_empty(), "{:?}", read.findings);
        let b = read.bindings.unwrap();
        assert_eq!(
            b.tools["util.echo"],
            ToolBinding::Server {
                server: "everything".into(),
                name: "echo".into(),
                timeout: DEFAULT_TOOL_TIMEOUT,
                max_result: DEFAULT_MAX_RESULT,
            }
        );
        assert!(
            matches!(b.model("other"), Some(ModelBinding::Http { url, .. }) if url.ends_with("8080/v1"))
        );
        assert_eq!(
            b.model("deep").and_then(ModelBinding::model),
            Some("acme/large-5")
        );
        assert!(matches!(b.servers["remote"], Server::Http { .. }));
    }

    #[test]
    fn problems_are_findings_at_pointers() {
        assert_eq!(
            findings(r#"{"bindings": "lwir.bindings/1", "tools": {"a": {"comand": ["x"]}}}"#),
            [(Code::UnknownField, "/tools/a/comand".into())]
        );
        assert_eq!(
            findings(r#"{"bindings": "lwir.bindings/2"}"#)[0].1,
            "/bindings"
        );
        assert_eq!(
            findings(r#"{"bindings": "lwir.bindings/1", "tools": {"a": {"server": "s"}}}"#),
            [(Code::InvalidValue, "/tools/a/server".into())]
        );
        assert_eq!(
            findings(
                r#"{"bindings": "lwir.bindings/1", "tools": {"a": {"command": ["x"], "server": "s"}}}"#
            ),
            [(Code::InvalidValue, "/tools/a".into())]
        );
        assert_eq!(
            findings(r#"{"bindings": "lwir.bindings/1", "models": {"fast": {"command": []}}}"#)[0]
                .1,
            "/models/fast/command"
        );
        assert_eq!(
            findings(
                r#"{"bindings": "lwir.bindings/1", "tools": {"a": {"command": ["x"], "env": ["NOT OK"]}}}"#
            )[0],
            (Code::InvalidIdentifier, "/tools/a/env/0".into())
        );
        assert_eq!(
            findings(
                r#"{"bindings": "lwir.bindings/1", "servers": {"s": {"command": ["x"]}},
                    "tools": {"a": {"server": "s", "env": ["KEY"]}}}"#
            ),
            [(Code::InvalidValue, "/tools/a/env".into())]
        );
        // Duplicate keys are the strict reader's finding.
        assert_eq!(
            findings(r#"{"bindings": "lwir.bindings/1", "bindings": "lwir.bindings/1"}"#)[0].0,
            Code::DuplicateKey
        );
    }
}
