//! Against `server-everything` over streamable HTTP (it serves `/mcp` on `PORT`).

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lwir_mcp::{ConnectOptions, Error, HttpSpec, Secret, Server};
use serde_json::json;

use crate::common::*;

const TOKEN: &str = "secret-token-5d1e88";

/// The HTTP server process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `server-everything` serving streamable HTTP on a free port, and its URL.
fn everything_http() -> Option<(Running, String)> {
    let mut command = everything_command()?;
    command[2] = "streamableHttp".into();
    let port = free_port();
    let child = Command::new(&command[0])
        .args(&command[1..])
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "server-everything does not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((running, format!("http://127.0.0.1:{port}/mcp")))
}

fn spec(url: &str) -> HttpSpec {
    HttpSpec {
        name: "remote".into(),
        url: url.into(),
        headers: vec![("X-Test-Token".into(), Secret::new(TOKEN))],
        options: ConnectOptions::default(),
    }
}

#[test]
fn tools_are_listed_and_called_over_http() {
    let Some((_running, url)) = everything_http() else {
        return;
    };
    let spec = spec(&url);
    assert!(!format!("{spec:?}").contains(TOKEN));
    let server = Server::connect_http(&spec).unwrap();
    let tools = server.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    assert_eq!(
        text(&call(&server, "echo", json!({"message": "over http"}))),
        "Echo: over http"
    );
    let structured_result = call(
        &server,
        "get-structured-content",
        json!({"location": "New York"}),
    );
    assert!(structured(&structured_result).get("temperature").is_some());
    server.shutdown();
}

#[test]
fn nothing_listening_is_an_http_error_without_the_secret() {
    let url = format!("http://user:pw@127.0.0.1:{}/mcp?key=k", free_port());
    let mut spec = spec(&url);
    spec.options.start_timeout = Duration::from_secs(10);
    let error = Server::connect_http(&spec).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, Error::Http { .. } | Error::Timeout { .. }),
        "{message}"
    );
    assert!(
        !message.contains(TOKEN) && !message.contains("pw") && !message.contains("key=k"),
        "{message}"
    );
    assert!(!format!("{error:?}").contains(TOKEN));
}

#[test]
fn a_bad_header_is_refused_without_its_value() {
    let mut spec = spec("http://127.0.0.1:1/mcp");
    spec.headers = vec![("X-Bad".into(), Secret::new("line\nbreak-secret"))];
    let error = Server::connect_http(&spec).unwrap_err();
    assert!(matches!(error, Error::InvalidSpec { .. }), "{error}");
    assert!(!error.to_string().contains("break-secret"), "{error}");
    spec.url = "ftp://example.com".into();
    assert!(matches!(
        Server::connect_http(&spec).unwrap_err(),
        Error::InvalidSpec { .. }
    ));
}
