//! `lwirc lsp`, in process: a client on an in-memory connection does the real handshake,
//! opens the shipped example and asks what an editor asks. At the end of every test the
//! server has shut down cleanly and no message is left unread.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lwir_lsp::{self as lsp, Config, Ended};
use serde_json::{Value, json};

use crate::common::root as repo;

const WAIT: Duration = Duration::from_secs(20);

struct Client {
    conn: Connection,
    server: Option<JoinHandle<Result<Ended, lsp::StartError>>>,
    queue: VecDeque<Message>,
    next: i32,
    /// The result of `initialize`.
    init: Value,
}

impl Client {
    /// A client offering `encodings` (none: the protocol's UTF-16), pushing diagnostics at
    /// once (`debounceMs: 0`) unless `options` say otherwise.
    fn start(encodings: &[&str], options: Value, pull: bool) -> Self {
        Self::start_in(&repo(), encodings, options, pull)
    }

    /// As [`Client::start`], with `root` as the workspace.
    fn start_in(root: &Path, encodings: &[&str], options: Value, pull: bool) -> Self {
        let (server, conn) = Connection::memory();
        let handle = std::thread::spawn(move || {
            let ended = lsp::serve(&server, Config::default());
            drop(server);
            ended
        });
        let mut client = Client {
            conn,
            server: Some(handle),
            queue: VecDeque::new(),
            next: 0,
            init: Value::Null,
        };
        let mut options = options;
        if options.get("debounceMs").is_none() {
            options["debounceMs"] = json!(0);
        }
        let mut capabilities = json!({
            "general": { "positionEncodings": encodings },
            "textDocument": {},
            "workspace": {},
        });
        if pull {
            capabilities["textDocument"]["diagnostic"] = json!({ "dynamicRegistration": false });
        }
        let init = client
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": uri(root),
                    "capabilities": capabilities,
                    "initializationOptions": options,
                }),
            )
            .expect("initialize succeeds");
        client.init = init;
        client.notify("initialized", json!({}));
        client
    }

    fn send(&self, message: Message) {
        self.conn
            .sender
            .send(message)
            .expect("the server is running");
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(Notification::new(method.to_owned(), params).into());
    }

    fn recv(&mut self) -> Message {
        self.conn
            .receiver
            .recv_timeout(WAIT)
            .expect("the server answers in time")
    }

    /// Sends a request and waits for its response; what comes before it is kept.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, (i32, String)> {
        self.next += 1;
        let id = RequestId::from(self.next);
        self.send(Request::new(id.clone(), method.to_owned(), params).into());
        loop {
            match self.recv() {
                Message::Response(Response {
                    id: got,
                    response_result,
                }) if got == id => {
                    return response_result.map_err(|e| (e.code, e.message));
                }
                other => self.queue.push_back(other),
            }
        }
    }

    /// The next diagnostics pushed for `uri`.
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let is_for = |m: &Message| match m {
            Message::Notification(n) => {
                n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri
            }
            _ => false,
        };
        let found = if let Some(i) = self.queue.iter().position(is_for) {
            self.queue.remove(i).expect("the index is in range")
        } else {
            loop {
                let m = self.recv();
                if is_for(&m) {
                    break m;
                }
                self.queue.push_back(m);
            }
        };
        let Message::Notification(n) = found else {
            unreachable!()
        };
        n.params["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// A request about `position` in `uri` (hover, definition, completion).
    fn at(&mut self, method: &str, uri: &str, position: Value) -> Value {
        self.request(
            method,
            json!({ "textDocument": { "uri": uri }, "position": position }),
        )
        .unwrap_or_else(|e| panic!("{method} failed: {e:?}"))
    }

    fn open(&mut self, path: &Path, text: &str) -> String {
        let u = uri(path);
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": u, "languageId": "json", "version": 1, "text": text } }),
        );
        u
    }

    fn change(&mut self, uri: &str, version: i32, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": changes }),
        );
    }

    /// Opens `path` with the text it has on disk and waits for its first diagnostics.
    fn open_file(&mut self, path: &Path) -> (String, String, Vec<Value>) {
        let text = read(path);
        let u = self.open(path, &text);
        let diagnostics = self.diagnostics(&u);
        (text, u, diagnostics)
    }

    /// Replaces the whole text of `uri` and waits for its diagnostics.
    fn replace(&mut self, uri: &str, version: i32, text: &str) -> Vec<Value> {
        self.change(uri, version, json!([{ "text": text }]));
        self.diagnostics(uri)
    }

    /// The text of the hover at `position` in `uri` (empty where there is none).
    fn hover(&mut self, uri: &str, position: Value) -> String {
        let h = self.at("textDocument/hover", uri, position);
        h["contents"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The outline of `uri`.
    fn symbols(&mut self, uri: &str) -> Value {
        self.request(
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": uri } }),
        )
        .unwrap()
    }

    /// The `source.fixAll` code actions offered for `uri`.
    fn fix_all_actions(&mut self, uri: &str) -> Value {
        self.request(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": uri },
                "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } },
                "context": { "diagnostics": [], "only": ["source.fixAll"] },
            }),
        )
        .unwrap()
    }

    /// Shuts the server down; no message may be left unread.
    fn finish(mut self) {
        self.request("shutdown", Value::Null)
            .expect("shutdown succeeds");
        self.notify("exit", Value::Null);
        let ended = self
            .server
            .take()
            .unwrap()
            .join()
            .expect("the server does not panic");
        assert_eq!(ended.expect("the server started"), Ended::Shutdown);
        // Diagnostics of closed documents (empty) may remain; nothing else.
        let left: Vec<Message> = self
            .queue
            .drain(..)
            .chain(self.conn.receiver.try_iter())
            .collect();
        assert!(left.is_empty(), "unread messages: {left:?}");
    }
}

fn example(name: &str) -> PathBuf {
    repo().join("examples/issue-triage").join(name)
}

fn uri(path: &Path) -> String {
    lwir_lsp::path_uri(path).as_str().to_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Diagnostics as `code line:char-line:char severity`.
fn brief(diagnostics: &[Value]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|d| {
            let r = &d["range"];
            format!(
                "{} {}:{}-{}:{} {}",
                d["code"].as_str().unwrap_or("-"),
                r["start"]["line"],
                r["start"]["character"],
                r["end"]["line"],
                r["end"]["character"],
                d["severity"]
            )
        })
        .collect()
}

/// Applies the text edits of a workspace edit for `uri` to `text` (UTF-8 positions).
fn apply_edit(text: &str, edit: &Value, encoding_utf8: bool) -> String {
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for change in edit["documentChanges"].as_array().unwrap() {
        for e in change["edits"].as_array().unwrap() {
            let at = |p: &Value| offset(text, p, encoding_utf8);
            edits.push((
                at(&e["range"]["start"]),
                at(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_owned(),
            ));
        }
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_owned();
    for (start, end, new) in edits {
        out.replace_range(start..end, &new);
    }
    out
}

fn offset(text: &str, position: &Value, utf8: bool) -> usize {
    let line = position["line"].as_u64().unwrap() as usize;
    let character = position["character"].as_u64().unwrap() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    let line_text = &text[start..];
    if utf8 {
        return start + character;
    }
    let mut units = 0;
    for (i, c) in line_text.char_indices() {
        if units >= character {
            return start + i;
        }
        units += c.len_utf16();
    }
    text.len()
}

fn position_of(text: &str, needle: &str, extra: usize) -> Value {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` is in the text"))
        + extra;
    let line = text[..at].matches('\n').count();
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": text[start..at].encode_utf16().count() })
}

/// Registers the example draft (against its definition) in a folder registry at `registry`.
fn register_example(registry: &Path) {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_lwirc"))
        .arg("register")
        .arg(example("draft.json"))
        .arg("-d")
        .arg(example("workflow.json"))
        .arg("--registry")
        .arg(registry)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// The example goal file with one more work item, `again`, that refers to `triage`.
fn goal_with_a_reference() -> String {
    read(&repo().join("examples/goals/goal.json")).replacen(
        "\"work\": [\n",
        "\"work\": [\n    { \"key\": \"again\", \"template\": \"triage\", \"input\": { \"repo\": \"${ work.triage.output.summary }\" } },\n",
        1,
    )
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c =
        std::ffi::CString::new(path.to_path_buf().into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn validate_codes(text: &str) -> Vec<String> {
    let validation = lwir_validators::pipeline::validate(
        lwir_validators::pipeline::Source {
            name: "draft.json".into(),
            bytes: text.as_bytes().to_vec(),
        },
        Some(lwir_validators::pipeline::Source {
            name: "workflow.json".into(),
            bytes: std::fs::read(example("workflow.json")).unwrap(),
        }),
    );
    validation
        .findings
        .iter()
        .map(|f| format!("{} {}", f.code, f.pointer))
        .collect()
}

#[test]
fn the_handshake_negotiates_utf8_and_says_what_the_server_does() {
    let client = Client::start(&["utf-8", "utf-16"], json!({}), false);
    let caps = &client.init["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-8");
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental sync");
    assert_eq!(
        caps["codeActionProvider"]["codeActionKinds"],
        json!(["quickfix", "source.fixAll.lwirc"])
    );
    assert_eq!(client.init["serverInfo"]["name"], "lwirc");
    client.finish();

    let client = Client::start(&[], json!({}), false);
    assert_eq!(client.init["capabilities"]["positionEncoding"], "utf-16");
    client.finish();
}

#[test]
fn diagnostics_on_open_are_the_ten_findings_of_the_example() {
    let mut client = Client::start(&[], json!({}), false);
    let (_, _, diagnostics) = client.open_file(&example("draft-with-mistakes.json"));
    insta::assert_json_snapshot!("open_draft_with_mistakes", brief(&diagnostics));
    assert_eq!(diagnostics.len(), 10);
    let first = &diagnostics[0];
    assert_eq!(first["source"], "lwirc");
    assert!(
        first["codeDescription"]["href"]
            .as_str()
            .unwrap()
            .ends_with("docs/codes.md#lw301")
    );
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("github.list_isues")
    );
    // The cycle's other edge is related information.
    let cycle = diagnostics.iter().find(|d| d["code"] == "LW603").unwrap();
    assert!(
        cycle["relatedInformation"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    );
    client.finish();
}

#[test]
fn an_incremental_edit_updates_the_diagnostics() {
    let mut client = Client::start(&[], json!({}), false);
    let (text, u, diagnostics) = client.open_file(&example("draft-with-mistakes.json"));
    assert_eq!(diagnostics.len(), 10);
    // Fix the misspelt tool by typing the missing `s`.
    let at = position_of(&text, "list_isues", "list_is".len());
    client.change(
        &u,
        2,
        json!([{ "range": { "start": at, "end": at }, "text": "s" }]),
    );
    let after = client.diagnostics(&u);
    insta::assert_json_snapshot!("after_incremental_edit", brief(&after));
    assert_eq!(after.len(), 9);
    assert!(after.iter().all(|d| d["code"] != "LW301"));
    client.finish();
}

#[test]
fn positions_count_utf16_or_utf8_on_a_line_with_accents_and_emoji() {
    // An unknown field after `é` and an emoji on the same line.
    let text = "{\"lwir\": \"1\", \"workflow\": \"é😀\", \"steps\": [], \"bogus\": 1}\n";
    let path = repo().join("target/lsp-positions/draft.json");
    let mut ranges = Vec::new();
    for encodings in [&["utf-16"][..], &["utf-8"][..]] {
        let mut client = Client::start(encodings, json!({}), false);
        let u = client.open(&path, text);
        let diagnostics = client.diagnostics(&u);
        let bogus = diagnostics
            .iter()
            .find(|d| d["message"].as_str().unwrap().contains("bogus"))
            .expect("the unknown field is found");
        ranges.push(bogus["range"].clone());
        client.finish();
    }
    let start = text.find("\"bogus\"").unwrap();
    let utf16 = text[..start].encode_utf16().count();
    assert_eq!(ranges[0]["start"], json!({ "line": 0, "character": utf16 }));
    assert_eq!(ranges[1]["start"], json!({ "line": 0, "character": start }));
    assert_eq!(
        start - utf16,
        1 + 2,
        "é is 1 more byte than unit, the emoji 2 more"
    );
}

#[test]
fn every_quick_fix_applied_removes_its_finding() {
    let mut client = Client::start(&[], json!({}), false);
    let (text, u, diagnostics) = client.open_file(&example("draft-with-mistakes.json"));
    let mut titles = Vec::new();
    for d in &diagnostics {
        let actions = client
            .request(
                "textDocument/codeAction",
                json!({
                    "textDocument": { "uri": u },
                    "range": d["range"],
                    "context": { "diagnostics": [d], "only": ["quickfix"] },
                }),
            )
            .unwrap();
        let code = d["code"].as_str().unwrap();
        let pointer = d["data"]["pointer"].as_str().unwrap();
        for action in actions.as_array().unwrap() {
            assert_eq!(action["kind"], "quickfix");
            let fixed_here = action["diagnostics"][0]["data"]["pointer"] == pointer
                && action["diagnostics"][0]["code"] == code;
            if !fixed_here {
                continue;
            }
            titles.push(action["title"].as_str().unwrap().to_owned());
            let new = apply_edit(&text, &action["edit"], false);
            let left = validate_codes(&new);
            assert!(
                !left.contains(&format!("{code} {pointer}")),
                "{code} at {pointer} is still there after `{}`",
                action["title"]
            );
            // Only the edited place changed: the text around it is the author's.
            let (a, b) = (text.as_bytes(), new.as_bytes());
            let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            let suffix = a
                .iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count();
            assert!(
                a.len() - prefix - suffix.min(a.len() - prefix) < 80,
                "a small edit"
            );
        }
    }
    insta::assert_json_snapshot!("quick_fix_titles", titles);
    assert!(
        titles.len() >= 5,
        "every machine-applicable fix has an action"
    );
    client.finish();
}

#[test]
fn fix_all_leaves_only_the_findings_without_a_safe_fix() {
    let mut client = Client::start(&[], json!({}), false);
    let (text, u, before) = client.open_file(&example("draft-with-mistakes.json"));
    let unsafe_codes: Vec<&str> = before
        .iter()
        .filter(|d| d["data"]["fix"] != "machine-applicable")
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    let actions = client.fix_all_actions(&u);
    let actions = actions.as_array().unwrap();
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert_eq!(actions[0]["kind"], "source.fixAll.lwirc");
    assert_eq!(
        actions[0]["title"],
        "Apply every safe fix (5); 5 errors without one stay"
    );
    let fixed = apply_edit(&text, &actions[0]["edit"], false);
    let after = client.replace(&u, 2, &fixed);
    let mut left: Vec<&str> = after.iter().map(|d| d["code"].as_str().unwrap()).collect();
    let mut expected = unsafe_codes.clone();
    left.sort_unstable();
    expected.sort_unstable();
    assert_eq!(left, expected);
    client.finish();
}

#[test]
fn hover_shows_types_schemas_and_explanations() {
    let mut client = Client::start(&[], json!({}), false);
    let (text, u, diagnostics) = client.open_file(&example("draft.json"));
    assert_eq!(diagnostics, Vec::<Value>::new());
    let on_tool = client.hover(&u, position_of(&text, "\"github.list_issues\"", 3));
    assert!(
        on_tool.starts_with("Tool `github.list_issues`"),
        "{on_tool}"
    );
    assert!(on_tool.contains("output:"), "{on_tool}");
    let on_ref = client.hover(&u, position_of(&text, "steps.issues", 8));
    assert!(on_ref.contains("of type"), "{on_ref}");
    assert!(on_ref.contains("Step `issues` (`tool.call`"), "{on_ref}");
    let on_model = client.hover(&u, position_of(&text, "\"model\": \"", 11));
    assert!(on_model.starts_with("Model slot"), "{on_model}");
    insta::assert_snapshot!("hover_reference", on_ref);

    let (text, u2, _) = client.open_file(&example("draft-with-mistakes.json"));
    let h = client.at(
        "textDocument/hover",
        &u2,
        position_of(&text, "list_isues", 2),
    );
    let value = h["contents"]["value"].as_str().unwrap();
    assert!(value.contains("**LW301** `unknown-tool`"), "{value}");
    client.finish();
}

#[test]
fn definition_leads_to_tools_slots_and_steps() {
    let mut client = Client::start(&[], json!({}), false);
    let (text, u, _) = client.open_file(&example("draft.json"));
    let definition = read(&example("workflow.json"));
    let mut goto = |at: Value| client.at("textDocument/definition", &u, at);
    let tool = goto(position_of(&text, "\"github.list_issues\"", 3));
    assert_eq!(tool["uri"], uri(&example("workflow.json")));
    assert_eq!(
        tool["range"]["start"],
        position_of(&definition, "\"github.list_issues\"", 0)
    );
    let slot = goto(position_of(&text, "\"model\": \"", 11));
    assert_eq!(slot["uri"], uri(&example("workflow.json")));
    let reference = goto(position_of(&text, "steps.issues", 8));
    assert_eq!(reference["uri"], u);
    assert_eq!(
        reference["range"]["start"],
        position_of(&text, "\"issues\"", 0)
    );
    assert_eq!(goto(position_of(&text, "\"lwir\"", 1)), Value::Null);
    // From an `after` entry to the step it names.
    let (text, u2, _) = client.open_file(&example("draft-with-mistakes.json"));
    let after = client.at(
        "textDocument/definition",
        &u2,
        position_of(&text, "\"after\": [\"write", 12),
    );
    assert_eq!(after["uri"], u2);
    assert_eq!(
        after["range"]["start"],
        position_of(&text, "\"write\", \"kind\"", 0)
    );
    client.finish();
}

#[test]
fn completion_offers_tools_steps_functions_and_fields() {
    let mut client = Client::start(&[], json!({}), false);
    let (text, u, _) = client.open_file(&example("draft.json"));
    let labels = |client: &mut Client, text: &str, version: i32, at: Value| -> Vec<String> {
        client.replace(&u, version, text);
        let items = client.at("textDocument/completion", &u, at);
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_owned())
            .collect()
    };
    // A tool id, half typed (the document does not need to read).
    let half = text.replacen("\"github.list_issues\"", "\"git", 1);
    let at = position_of(&half, "\"git", 4);
    let tools = labels(&mut client, &half, 2, at);
    assert_eq!(tools, ["github.list_issues", "github.add_label"]);
    // After `steps.` inside `${ … }`: the step ids.
    let steps = labels(&mut client, &text, 3, position_of(&text, "steps.issues", 6));
    // Only the steps before `each`, whose `over` this is: `issues`.
    assert_eq!(steps, ["issues"]);
    // Inside `${ … }`: functions.
    let functions = labels(&mut client, &text, 4, position_of(&text, "${ ", 3));
    assert!(functions.contains(&"size".to_owned()), "{functions:?}");
    // A key of a step: the fields it may still have.
    let fields = labels(&mut client, &text, 5, position_of(&text, "\"kind\"", 1));
    assert!(
        fields.contains(&"when".to_owned()) && !fields.contains(&"kind".to_owned()),
        "{fields:?}"
    );
    // In an `after` list: the other steps of the same list.
    let mistakes = read(&example("draft-with-mistakes.json"));
    let siblings = labels(
        &mut client,
        &mistakes,
        6,
        position_of(&mistakes, "\"clasify\"", 4),
    );
    assert_eq!(siblings, ["classify"]);
    client.finish();
}

#[test]
fn the_outline_is_the_step_tree() {
    let mut client = Client::start(&[], json!({}), false);
    let (_, u, _) = client.open_file(&example("draft.json"));
    let symbols = client.symbols(&u);
    fn names(symbols: &Value, depth: usize, out: &mut Vec<String>) {
        for s in symbols.as_array().unwrap() {
            out.push(format!(
                "{}{} ({})",
                "  ".repeat(depth),
                s["name"].as_str().unwrap(),
                s["detail"].as_str().unwrap_or("")
            ));
            if let Some(children) = s.get("children") {
                names(children, depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    names(&symbols, 0, &mut out);
    insta::assert_json_snapshot!("outline", out);
    client.finish();
}

#[test]
fn pull_diagnostics_when_the_client_asks_for_them() {
    let mut client = Client::start(&[], json!({}), true);
    let path = example("draft-with-mistakes.json");
    let u = client.open(&path, &read(&path));
    let report = client
        .request(
            "textDocument/diagnostic",
            json!({ "textDocument": { "uri": u } }),
        )
        .unwrap();
    assert_eq!(report["kind"], "full");
    assert_eq!(report["items"].as_array().unwrap().len(), 10);
    assert_eq!(report["resultId"], "1");
    client.finish();
}

#[test]
fn a_definition_edit_revalidates_the_drafts_that_use_it() {
    let mut client = Client::start(&[], json!({}), false);
    let draft = example("draft.json");
    let definition = example("workflow.json");
    let du = client.open(&draft, &read(&draft));
    assert!(client.diagnostics(&du).is_empty());
    let text = read(&definition);
    let wu = client.open(&definition, &text);
    client.diagnostics(&wu);
    // Opening it re-checks the draft against the editor's text (the same).
    assert!(client.diagnostics(&du).is_empty());
    // The definition loses the tool the draft calls.
    let renamed = text.replace("\"github.list_issues\"", "\"github.issues\"");
    client.change(&wu, 2, json!([{ "text": renamed }]));
    client.diagnostics(&wu);
    let after = client.diagnostics(&du);
    assert!(after.iter().any(|d| d["code"] == "LW301"), "{after:?}");
    client.finish();
}

#[test]
fn a_draft_with_no_definition_gets_the_draft_only_checks() {
    let mut client = Client::start(&[], json!({}), false);
    let dir = repo().join("target/lsp-alone");
    let path = dir.join("draft.json");
    let u = client.open(&path, &read(&example("draft.json")));
    let diagnostics = client.diagnostics(&u);
    assert_eq!(brief(&diagnostics).len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["code"], "LW901");
    // Named in the draft: found, relative to it.
    let named = read(&example("draft.json")).replacen(
        "{",
        &format!(
            "{{\n  \"x-definition\": \"{}\",",
            example("workflow.json").display()
        ),
        1,
    );
    client.change(&u, 2, json!([{ "text": named }]));
    assert_eq!(client.diagnostics(&u), Vec::<Value>::new());
    // Named but missing: said where it is named.
    let missing = named.replace("workflow.json", "nothing-here.json");
    let diagnostics = client.replace(&u, 3, &missing);
    assert!(
        diagnostics.iter().any(
            |d| d["message"].as_str().unwrap().contains("cannot be read")
                && d["range"]["start"]["line"] == 1
        ),
        "{diagnostics:?}"
    );
    client.finish();
}

#[test]
fn a_half_typed_document_still_gets_diagnostics() {
    let mut client = Client::start(&[], json!({}), false);
    let path = example("draft.json");
    let text = read(&path);
    let u = client.open(&path, &text[..text.len() / 2]);
    let diagnostics = client.diagnostics(&u);
    assert!(!diagnostics.is_empty());
    assert_eq!(diagnostics[0]["severity"], 1);
    client.finish();
}

#[test]
fn bad_requests_get_errors_and_the_server_goes_on() {
    let mut client = Client::start(&[], json!({}), false);
    let closed = uri(&example("draft.json"));
    let hover = |client: &mut Client, uri: &str, line: u32| {
        client.request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": 0 } }),
        )
    };
    let err = hover(&mut client, &closed, 0).unwrap_err();
    assert_eq!(err.0, -32602);
    assert!(err.1.contains("is not open"), "{}", err.1);
    let u = client.open(&example("draft.json"), &read(&example("draft.json")));
    client.diagnostics(&u);
    let err = hover(&mut client, &u, 100_000).unwrap_err();
    assert_eq!(err.0, -32602);
    assert!(err.1.contains("past the end"), "{}", err.1);
    let err = client
        .request("workspace/unknownThing", json!({}))
        .unwrap_err();
    assert_eq!(err.0, -32601);
    let err = client
        .request("textDocument/hover", json!({ "nonsense": true }))
        .unwrap_err();
    assert_eq!(err.0, -32602);
    // Still answering.
    assert!(hover(&mut client, &u, 3).is_ok());
    // A change to a document that is not open is ignored; closing clears its diagnostics.
    client.change("file:///nowhere.json", 2, json!([{ "text": "{}" }]));
    client.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": u } }),
    );
    assert_eq!(client.diagnostics(&u), Vec::<Value>::new());
    client.finish();
}

#[test]
fn exit_without_shutdown_and_a_closed_connection_end_the_server() {
    let mut client = Client::start(&[], json!({}), false);
    client.notify("exit", Value::Null);
    let ended = client.server.take().unwrap().join().unwrap().unwrap();
    assert_eq!(ended, Ended::ExitWithoutShutdown);

    let mut client = Client::start(&[], json!({}), false);
    let server = client.server.take().unwrap();
    drop(client);
    assert_eq!(server.join().unwrap().unwrap(), Ended::Disconnected);
}

#[test]
fn goal_files_get_their_findings_and_an_outline_of_their_work() {
    let mut client = Client::start(&[], json!({}), false);
    let path = repo().join("examples/goals/goal.json");
    let text = read(&path);
    let u = client.open(&path, &text);
    assert_eq!(client.diagnostics(&u), Vec::<Value>::new());
    let symbols = client.symbols(&u);
    assert_eq!(symbols[0]["name"], "triage");
    // A goal file without its `root`: the meta-schema's finding.
    let broken = text.replacen("\"root\": \"triage\",", "", 1);
    assert_ne!(broken, text);
    let diagnostics = client.replace(&u, 2, &broken);
    assert!(
        diagnostics
            .iter()
            .any(|d| d["message"].as_str().unwrap().contains("root")),
        "{diagnostics:?}"
    );
    client.finish();
}

#[test]
fn configured_patterns_and_definition_decide_what_a_file_is() {
    let mut client = Client::start(
        &[],
        json!({ "drafts": ["**/*.plan"], "definition": "examples/issue-triage/workflow.json" }),
        false,
    );
    // Not a draft by its content (no `lwir`), but by the pattern: the draft's checks run.
    let path = repo().join("target/lsp-patterns/first.plan");
    let u = client.open(&path, "{ \"steps\": [] }");
    let diagnostics = client.diagnostics(&u);
    assert!(
        diagnostics
            .iter()
            .any(|d| d["message"].as_str().unwrap().contains("lwir")),
        "{diagnostics:?}"
    );
    // The configured definition (relative to the workspace root) is the draft's.
    let elsewhere = repo().join("target/lsp-patterns/draft.json");
    let u = client.open(&elsewhere, &read(&example("draft-with-mistakes.json")));
    assert_eq!(client.diagnostics(&u).len(), 10);
    // A file that is none of lwirc's gets no diagnostics.
    let other = repo().join("target/lsp-patterns/package.json");
    let u = client.open(&other, "{ \"name\": \"x\" }");
    assert_eq!(client.diagnostics(&u), Vec::<Value>::new());
    client.finish();
}

#[test]
fn hover_in_a_goal_file_shows_the_templates_from_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    register_example(&registry);
    let mut client = Client::start(&[], json!({ "registry": registry }), false);
    let path = dir.path().join("goal.json");
    let text = goal_with_a_reference();
    let u = client.open(&path, &text);
    client.diagnostics(&u);
    let on_ref = client.hover(&u, position_of(&text, "work.triage", 6));
    assert!(on_ref.starts_with("Work item `triage`"), "{on_ref}");
    assert!(on_ref.contains("workflow `issue-triage`"), "{on_ref}");
    assert!(
        on_ref.contains("\"summary\""),
        "the template's output schema: {on_ref}"
    );
    // A template the registry does not have: said so.
    let lite = client.hover(&u, position_of(&text, "\"triage-lite\":", 2));
    assert_eq!(lite, "", "a key is not a reference");
    let missing = text.replacen(
        "\"template\": \"triage\",",
        "\"template\": \"triage-lite\",",
        1,
    );
    client.replace(&u, 2, &missing);
    let on_template = client.hover(
        &u,
        position_of(&missing, "\"template\": \"triage-lite\",", 14),
    );
    assert!(on_template.contains("is not registered"), "{on_template}");
    // A template read once is kept (versions are content-addressed): with the registry
    // gone, the same hover shows it still.
    client.replace(&u, 3, &text);
    std::fs::remove_dir_all(&registry).unwrap();
    let again = client.hover(&u, position_of(&text, "work.triage", 6));
    assert_eq!(again, on_ref);
    client.finish();
}

/// A goal file whose registry is an OCI registry that accepts connections and never
/// answers: the hover answers at once (the template is read on a thread of its own, and
/// the hover says it is on its way), and the next hover asks the registry nothing more.
#[test]
fn a_hover_never_waits_for_a_silent_registry() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().map_while(Result::ok) {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(stream); // read nothing, answer nothing, close nothing
        }
    });
    let mut client = Client::start(
        &[],
        json!({ "registry": format!("oci+http://127.0.0.1:{port}/lwir") }),
        false,
    );
    let dir = tempfile::tempdir().unwrap();
    let text = read(&repo().join("examples/goals/goal.json"));
    let u = client.open(&dir.path().join("goal.json"), &text);
    client.diagnostics(&u);
    let at = position_of(&text, "\"template\": \"triage\"", 14);
    for _ in 0..2 {
        let h = client.at("textDocument/hover", &u, at.clone());
        let shown = h["contents"]["value"].as_str().unwrap_or_default();
        assert!(shown.contains("being read in the background"), "{shown}");
    }
    // Give the reader time to connect; the second hover started no second read.
    let deadline = std::time::Instant::now() + WAIT;
    while connections.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(connections.load(Ordering::SeqCst), 1);
    client.finish();
}

#[test]
fn a_deep_or_huge_hostile_document_gets_diagnostics_and_the_server_goes_on() {
    let mut client = Client::start(&[], json!({}), false);
    let dir = repo().join("target/lsp-hostile");
    // A hundred thousand nested arrays: the reader's depth bound, not a stack overflow.
    let deep = format!("{{\"lwir\": \"1\", \"steps\": {}}}", "[".repeat(100_000));
    let u = client.open(&dir.join("deep.json"), &deep);
    let diagnostics = client.diagnostics(&u);
    assert!(!diagnostics.is_empty());
    // Hover, completion and the outline on it answer too.
    for method in ["textDocument/hover", "textDocument/completion"] {
        client.at(method, &u, json!({ "line": 0, "character": 50_000 }));
    }
    client.symbols(&u);
    // Escape sequences in a draft's strings reach the editor as replacement characters.
    let escapes = read(&example("draft.json")).replacen(
        "\"issue-triage\"",
        "\"issue-triage\", \"x\u{1b}[2J\": 1",
        1,
    );
    let u = client.open(&dir.join("escapes.json"), &escapes);
    let diagnostics = client.diagnostics(&u);
    assert!(!diagnostics.is_empty());
    assert!(
        diagnostics
            .iter()
            .all(|d| !d["message"].as_str().unwrap().contains('\u{1b}')),
        "{diagnostics:?}"
    );
    client.finish();
}

#[test]
fn a_definition_a_draft_names_is_read_only_inside_the_workspace_and_only_as_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(workspace.join("drafts")).unwrap();
    std::fs::copy(example("workflow.json"), workspace.join("workflow.json")).unwrap();
    // A definition outside the workspace, with a tool of its own.
    let secret = read(&example("workflow.json")).replace("github.add_label", "secret.tool");
    std::fs::write(dir.path().join("secret.json"), &secret).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.json"), workspace.join("link.json"))
        .unwrap();
    mkfifo(&workspace.join("fifo.json"));

    let mut client = Client::start_in(&workspace, &[], json!({}), false);
    let path = workspace.join("drafts/draft.json");
    let draft = |named: &str| {
        read(&example("draft.json")).replacen(
            "{",
            &format!("{{\n  \"x-definition\": \"{named}\","),
            1,
        )
    };
    let u = client.open(&path, &draft("../workflow.json"));
    assert_eq!(client.diagnostics(&u), Vec::<Value>::new(), "inside: read");
    let outside_uri = uri(&dir.path().join("secret.json"));
    for (version, (named, why)) in [
        ("../../secret.json", "outside"),
        ("../link.json", "outside"),
        ("/etc/passwd", "outside"),
        ("/dev/zero", "outside"),
        ("../fifo.json", "not a regular file"),
    ]
    .into_iter()
    .enumerate()
    {
        let text = draft(named);
        let diagnostics = client.replace(&u, version as i32 + 2, &text);
        assert!(
            diagnostics.iter().any(|d| {
                let m = d["message"].as_str().unwrap();
                m.contains("cannot be read") && m.contains(why) && d["range"]["start"]["line"] == 1
            }),
            "{named}: {diagnostics:?}"
        );
        // Nothing of the file reaches the editor: no tool of it to complete.
        let half = text.replacen("\"github.list_issues\"", "\"s", 1);
        client.change(&u, 100 + version as i32, json!([{ "text": half }]));
        client.diagnostics(&u);
        let items = client.at(
            "textDocument/completion",
            &u,
            position_of(&half, "\"tool\": \"s", 10),
        );
        assert!(
            !items.to_string().contains("secret.tool"),
            "{named}: {items}"
        );
    }
    assert!(
        !client.queue.iter().any(|m| matches!(m,
            Message::Notification(n) if n.params["uri"] == outside_uri.as_str())),
        "diagnostics were published for the file outside"
    );
    client.finish();
}

#[test]
fn a_registry_file_that_is_a_fifo_or_a_device_is_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    register_example(&registry);
    // Every file of the registry: a FIFO nobody writes to, or a link to `/dev/zero`.
    let mut files = Vec::new();
    for area in ["objects/sha256", "versions"] {
        for entry in std::fs::read_dir(registry.join(area)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    for (i, file) in files.iter().enumerate() {
        std::fs::remove_file(file).unwrap();
        if i % 2 == 0 {
            mkfifo(file);
        } else {
            std::os::unix::fs::symlink("/dev/zero", file).unwrap();
        }
    }
    for swap in [false, true] {
        if swap {
            // The other way round: each kind where the other was.
            for (i, file) in files.iter().enumerate() {
                std::fs::remove_file(file).unwrap();
                if i % 2 == 1 {
                    mkfifo(file);
                } else {
                    std::os::unix::fs::symlink("/dev/zero", file).unwrap();
                }
            }
        }
        let mut client = Client::start(&[], json!({ "registry": registry }), false);
        let path = dir.path().join("goal.json");
        let text = goal_with_a_reference();
        let u = client.open(&path, &text);
        client.diagnostics(&u);
        // Answered (the client waits at most 20 s), saying the template cannot be read.
        let hover = client.at(
            "textDocument/hover",
            &u,
            position_of(&text, "work.triage", 6),
        );
        let shown = hover["contents"]["value"].as_str().unwrap_or_default();
        assert!(
            shown.contains("cannot read the registry")
                && (shown.contains("not a regular file") || shown.contains("outside")),
            "{shown}"
        );
        client.finish();
    }
}

/// The editor's fix-all and `lwirc fix` make the same bytes, on every fixture of the
/// corpus that is checked against the shared definition: both are `fix_draft`.
#[test]
fn fix_all_and_lwirc_fix_give_the_same_bytes_on_the_corpus() {
    let cases = repo().join("crates/lwir-corpus/cases");
    let definition = cases.join("workflow.json");
    let mut client = Client::start(
        &["utf-8"],
        json!({ "definition": "crates/lwir-corpus/cases/workflow.json" }),
        false,
    );
    let out_dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.join("workflow.json").exists())
        .collect();
    folders.sort();
    for folder in folders {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let stem = name.strip_suffix(".json").unwrap_or_default();
            if !name.starts_with("invalid_")
                || !name.ends_with(".json")
                || folder.join(format!("{stem}.workflow.json")).exists()
            {
                continue;
            }
            // Only UTF-8 drafts open in an editor; only drafts (naming `lwir`) get fix-all.
            let Ok(text) = String::from_utf8(std::fs::read(&path).unwrap()) else {
                continue;
            };
            if !text.contains("\"lwir\"") {
                continue;
            }
            let u = client.open(&path, &text);
            client.diagnostics(&u);
            let actions = client.fix_all_actions(&u);
            let editor = match actions.as_array().unwrap().as_slice() {
                [] => text.clone(),
                [action] => apply_edit(&text, &action["edit"], true),
                more => panic!("{name}: {more:?}"),
            };
            let out = out_dir.path().join(&name);
            let cli = std::process::Command::new(env!("CARGO_BIN_EXE_lwirc"))
                .arg("fix")
                .arg(&path)
                .arg("-d")
                .arg(&definition)
                .arg("-o")
                .arg(&out)
                .output()
                .unwrap();
            assert!(cli.status.code().is_some_and(|c| c < 2), "{name}: {cli:?}");
            let cli = std::fs::read_to_string(&out).unwrap();
            assert_eq!(editor, cli, "{name}: fix-all and `lwirc fix` differ");
            client.notify(
                "textDocument/didClose",
                json!({ "textDocument": { "uri": u } }),
            );
            // A closed document's diagnostics are cleared.
            client.diagnostics(&u);
            compared += 1;
        }
    }
    assert!(compared > 50, "compared {compared} fixtures");
    client.finish();
}
