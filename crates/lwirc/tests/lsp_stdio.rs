//! `lwirc lsp` as an editor starts it: the built binary, framed JSON-RPC on its standard
//! input and output.

use std::io::BufReader;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use lsp_server::{Message, Notification, Request, RequestId};
use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lwirc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("lwirc starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
        };
        server.send(Request::new(
            RequestId::from(1),
            "initialize".into(),
            json!({ "processId": null, "rootUri": null, "capabilities": {},
                    "initializationOptions": { "debounceMs": 0 } }),
        ));
        let init =
            server.until(|m| matches!(m, Message::Response(r) if r.id == RequestId::from(1)));
        let Message::Response(init) = init else {
            unreachable!()
        };
        assert_eq!(init.response_result.unwrap()["serverInfo"]["name"], "lwirc");
        server.send(Notification::new("initialized".into(), json!({})));
        server
    }

    fn send(&mut self, message: impl Into<Message>) {
        message
            .into()
            .write(self.stdin.as_mut().expect("stdin is open"))
            .expect("lwirc reads its input");
    }

    fn until(&mut self, pick: impl Fn(&Message) -> bool) -> Message {
        loop {
            let message = Message::read(&mut self.stdout)
                .expect("lwirc writes framed messages")
                .expect("lwirc did not close its output");
            if pick(&message) {
                return message;
            }
        }
    }

    fn exit_status(mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().expect("lwirc exits").code()
    }
}

#[test]
fn the_binary_serves_diagnostics_over_stdio_and_exits_cleanly() {
    let draft = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/issue-triage/draft-with-mistakes.json")
        .canonicalize()
        .unwrap();
    let mut server = Server::start();
    let uri = lwir_lsp::path_uri(&draft).as_str().to_owned();
    server.send(Notification::new(
        "textDocument/didOpen".into(),
        json!({ "textDocument": { "uri": uri, "languageId": "json", "version": 1,
                                  "text": std::fs::read_to_string(&draft).unwrap() } }),
    ));
    let published = server.until(
        |m| matches!(m, Message::Notification(n) if n.method == "textDocument/publishDiagnostics"),
    );
    let Message::Notification(n) = published else {
        unreachable!()
    };
    assert_eq!(n.params["uri"], Value::String(uri));
    assert_eq!(n.params["diagnostics"].as_array().unwrap().len(), 10);
    server.send(Request::new(
        RequestId::from(2),
        "shutdown".into(),
        Value::Null,
    ));
    server.until(|m| matches!(m, Message::Response(r) if r.id == RequestId::from(2)));
    server.send(Notification::new("exit".into(), Value::Null));
    assert_eq!(server.exit_status(), Some(0));
}

#[test]
fn the_binary_exits_when_its_input_closes_or_on_exit_without_shutdown() {
    let server = Server::start();
    assert_eq!(server.exit_status(), Some(0), "stdin closed: a clean exit");
    let mut server = Server::start();
    server.send(Notification::new("exit".into(), Value::Null));
    assert_eq!(
        server.exit_status(),
        Some(1),
        "exit without shutdown is status 1"
    );
}
