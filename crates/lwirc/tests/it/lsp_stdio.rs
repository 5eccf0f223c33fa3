//! `lwirc lsp` as an editor starts it: the built binary, framed JSON-RPC on its standard
//! input and output.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use lsp_server::{Message, Notification, Request, RequestId};
use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start() -> Self {
        Self::start_with(Stdio::inherit())
    }

    /// Started with its standard error as `stderr`, after the handshake.
    fn start_with(stderr: Stdio) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lwirc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
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

    /// Writes `bytes` as they are, framing and all.
    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("lwirc reads its input");
        stdin.flush().unwrap();
    }

    /// The next frame's body as JSON (which `lsp_server::Message` cannot hold when its
    /// `id` is null).
    fn next_value(&mut self) -> Value {
        let mut length = None;
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("lwirc writes");
            assert!(n > 0, "lwirc closed its output");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                length = Some(v.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; length.expect("a Content-Length")];
        self.stdout.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Its exit status and standard error, waiting at most a minute with its input left
    /// open (a server that waits for more input fails the test).
    fn exit_within_a_minute(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                self.child.kill().ok();
                self.child.wait().ok();
                panic!("lwirc lsp is still running a minute later");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut stderr).unwrap();
        }
        (status.code(), stderr)
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

#[test]
fn a_content_length_that_cannot_be_read_ends_the_server_saying_why() {
    for (header, why) in [
        // Each was an allocation of that size before anything was read: an abort, a
        // capacity-overflow panic, 2.9 GB zero-filled and then a wait.
        ("100000000000000", "more than lwirc lsp reads"),
        ("18446744073709551615", "more than lwirc lsp reads"),
        ("3000000000", "more than lwirc lsp reads"),
        // Each ended the server with status 0, as if it had been shut down.
        ("abc", "not a number of bytes"),
        ("-5", "not a number of bytes"),
    ] {
        let mut server = Server::start_with(Stdio::piped());
        server.send_raw(format!("Content-Length: {header}\r\n\r\n{{}}").as_bytes());
        let (status, stderr) = server.exit_within_a_minute();
        assert_eq!(status, Some(2), "{header}: {stderr}");
        assert!(
            stderr.contains("Content-Length") && stderr.contains(why),
            "{header}: {stderr}"
        );
    }
    // A frame cut short by the end of the input is no clean exit either.
    let mut server = Server::start_with(Stdio::piped());
    server.send_raw(b"Content-Length: 10\r\n\r\n{}");
    drop(server.stdin.take());
    let (status, stderr) = server.exit_within_a_minute();
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("ended inside a message"), "{stderr}");
}

#[test]
fn a_body_that_is_no_message_gets_an_error_answer_and_the_server_goes_on() {
    let mut server = Server::start();
    for (body, code) in [
        (&b"{not json}"[..], -32700),
        (b"[]", -32600),
        (br#"{"jsonrpc":"2.0","id":{},"method":"shutdown"}"#, -32600),
        (b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}", -32700),
    ] {
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body);
        server.send_raw(&frame);
        let answer = server.next_value();
        assert_eq!(
            answer["error"]["code"],
            code,
            "{}: {answer}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
    // Still serving: a request gets its answer, then shutdown and exit as usual.
    server.send(Request::new(
        RequestId::from(2),
        "textDocument/hover".into(),
        json!({ "textDocument": { "uri": "file:///nowhere.json" },
                "position": { "line": 0, "character": 0 } }),
    ));
    let Message::Response(hover) =
        server.until(|m| matches!(m, Message::Response(r) if r.id == RequestId::from(2)))
    else {
        unreachable!()
    };
    assert_eq!(hover.response_result.unwrap_err().code, -32602);
    server.send(Request::new(
        RequestId::from(3),
        "shutdown".into(),
        Value::Null,
    ));
    server.until(|m| matches!(m, Message::Response(r) if r.id == RequestId::from(3)));
    server.send(Notification::new("exit".into(), Value::Null));
    assert_eq!(server.exit_status(), Some(0));
}
