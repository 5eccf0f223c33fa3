//! Secrets never leave lwirc: every scenario that hands lwirc an API key, a registry
//! password or a PostgreSQL password — and a server that echoes it back, as an error body,
//! a redirect, a JSON error, an `Authorization` header quoted plain or in base64 — runs in
//! one temporary directory; then every file under it and everything lwirc printed is
//! searched for the secrets and their base64 forms, and none may be there.

use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use base64::Engine as _;
use common::fake::{Reply, Request};
use common::*;
use serde_json::json;

/// The API key the model server is given.
const API_KEY: &str = "sk-marker-apikey-7f3a9c0e";
/// The registry password.
const REGISTRY_PASSWORD: &str = "oci-marker-password-a8e4";
/// The PostgreSQL password.
const PG_PASSWORD: &str = "pg-marker-password-51d2";

/// What `needle` may look like in a file or a stream: as it is, and base64-encoded at each
/// of the three alignments it can have inside a longer encoded text (its first and last
/// characters, which share bits with its neighbours, left out), in both alphabets.
fn forms(needle: &str) -> Vec<String> {
    let mut out = vec![needle.to_owned()];
    for offset in 0..3 {
        let mut bytes = vec![b'~'; offset];
        bytes.extend_from_slice(needle.as_bytes());
        let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
        let middle = &encoded[4..encoded.len() - 4];
        out.push(middle.to_owned());
        out.push(middle.replace('+', "-").replace('/', "_"));
    }
    out
}

/// Every file under `dir`.
fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The scenarios' directory, and what lwirc printed in each.
struct Suite {
    dir: tempfile::TempDir,
    printed: Vec<(String, Output)>,
}

impl Suite {
    fn run(&mut self, scenario: &str, mut command: std::process::Command) -> &Output {
        let out = output_within(
            {
                command
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                command
            },
            Duration::from_secs(120),
        );
        self.printed.push((scenario.to_owned(), out));
        &self.printed.last().unwrap().1
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `lwirc compile` of the example, planned by the built-in harness against `url` with
/// the marker key, its session in `session-<scenario>`.
fn compile(s: &mut Suite, scenario: &str, url: &str, extra: &[&str]) -> String {
    let session = format!("session-{scenario}");
    let input = example("input.json");
    let mut args = vec![
        "compile",
        "workflow.json",
        "--input",
        &input,
        "--planner-url",
        url,
        "--session",
        &session,
        "--max-planner-calls",
        "1",
        "--planner-timeout",
        "30",
    ];
    args.extend_from_slice(extra);
    let mut cmd = command(s.path(), &args);
    cmd.env("OPENAI_API_KEY", API_KEY);
    let out = s.run(scenario, cmd);
    assert_exit(out, 1);
    format!("{}{}", stdout(out), stderr(out))
}

/// A model server that answers every request by `reply`, given the request and the
/// server's own address.
fn model_server(reply: impl Fn(&Request, &str) -> Reply + Send + Sync + 'static) -> String {
    let address = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let seen = address.clone();
    let fake = common::fake::serve(move |r| reply(r, seen.get().map_or("", String::as_str)));
    address.set(fake.address.clone()).unwrap();
    format!("http://{}/v1", fake.address)
}

fn json_reply(status: u16, body: serde_json::Value) -> Reply {
    Reply::Answer(
        status,
        vec![("Content-Type".into(), "application/json".into())],
        body.to_string().into_bytes(),
    )
}

/// What a careless server says back: the `Authorization` header it got, as it is, its
/// credentials decoded, and both in base64.
fn echo(r: &Request) -> String {
    let auth = r.header("authorization").unwrap_or_default();
    let credentials = auth.split_once(' ').map_or("", |(_, c)| c);
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let b64 = base64::engine::general_purpose::STANDARD;
    format!(
        "Incorrect API key provided: {auth}; credentials {credentials} ({decoded}); request \
         {} {}; again {} {}",
        r.method,
        r.path,
        b64.encode(auth),
        b64.encode(format!("#{decoded}#"))
    )
}

/// A PostgreSQL server that asks for the password in clear text and refuses it, quoting
/// it: its port.
fn echoing_database() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let read = |stream: &mut std::net::TcpStream, tagged: bool| -> Option<Vec<u8>> {
                    let mut head = vec![0u8; if tagged { 5 } else { 4 }];
                    stream.read_exact(&mut head).ok()?;
                    let len = u32::from_be_bytes(head[head.len() - 4..].try_into().ok()?);
                    let mut rest = vec![0u8; (len as usize).checked_sub(4)?];
                    stream.read_exact(&mut rest).ok()?;
                    Some(rest)
                };
                // The startup message, then AuthenticationCleartextPassword.
                if read(&mut stream, false).is_none() {
                    return;
                }
                let _ = stream.write_all(b"R\0\0\0\x08\0\0\0\x03");
                let Some(password) = read(&mut stream, true) else {
                    return;
                };
                let password = String::from_utf8_lossy(&password)
                    .trim_end_matches('\0')
                    .to_owned();
                let mut fields = Vec::new();
                for (code, value) in [
                    (b'S', "FATAL".to_owned()),
                    (b'V', "FATAL".to_owned()),
                    (b'C', "28P01".to_owned()),
                    (
                        b'M',
                        format!("password authentication failed: `{password}` is not it"),
                    ),
                ] {
                    fields.push(code);
                    fields.extend_from_slice(value.as_bytes());
                    fields.push(0);
                }
                fields.push(0);
                let mut message = vec![b'E'];
                message.extend_from_slice(&(fields.len() as u32 + 4).to_be_bytes());
                message.extend_from_slice(&fields);
                let _ = stream.write_all(&message);
            });
        }
    });
    port
}

#[test]
fn no_secret_is_printed_or_written_anywhere() {
    let mut s = Suite {
        dir: tempfile::tempdir().unwrap(),
        printed: Vec::new(),
    };
    std::fs::copy(example("workflow.json"), s.path().join("workflow.json")).unwrap();

    // The model server: 401 and 500 bodies that quote the key.
    let url = model_server(|r, _| json_reply(401, json!({ "error": { "message": echo(r) } })));
    let text = compile(&mut s, "401", &url, &[]);
    assert!(
        text.contains("LW801") && text.contains("answered 401"),
        "{text}"
    );
    let url = model_server(|r, _| json_reply(500, json!({ "error": echo(r) })));
    let text = compile(&mut s, "500", &url, &[]);
    assert!(
        text.contains("LW802") && text.contains("answered 500"),
        "{text}"
    );
    // A redirect whose location carries the key, to a place that quotes it back.
    let url = model_server(|r, address| {
        if r.path.starts_with("/v1/chat/completions") {
            Reply::Answer(
                307,
                vec![(
                    "Location".into(),
                    format!("http://{address}/elsewhere?api_key={API_KEY}&key={API_KEY}"),
                )],
                echo(r).into_bytes(),
            )
        } else {
            json_reply(403, json!({ "error": echo(r) }))
        }
    });
    let text = compile(&mut s, "redirect", &url, &[]);
    assert!(
        text.contains("LW801") && text.contains("answered 307 (a redirect to `http://"),
        "{text}"
    );
    // A 200 whose body is a JSON error that quotes the key.
    let url = model_server(|r, _| {
        json_reply(
            200,
            json!({ "error": { "message": echo(r), "code": "invalid_api_key" } }),
        )
    });
    let text = compile(&mut s, "json-error", &url, &[]);
    assert!(text.contains("LW806"), "{text}");
    // The key in the server's URL itself, which the session records as its planner.
    let url = model_server(|r, _| json_reply(401, json!({ "error": echo(r) })));
    let with_key = url.replacen("http://", &format!("http://planner:{API_KEY}@"), 1);
    compile(&mut s, "url", &with_key, &[]);
    // A planner command that prints the key it inherited on its standard error.
    let mut cmd = command(
        s.path(),
        &[
            "compile",
            "workflow.json",
            "--input",
            &example("input.json"),
            "--planner",
            "echo \"auth failed for Bearer $OPENAI_API_KEY (key $OPENAI_API_KEY)\" >&2; exit 3",
            "--planner-shell",
            "--session",
            "session-command",
            "--max-planner-calls",
            "1",
        ],
    );
    cmd.env("OPENAI_API_KEY", API_KEY);
    let out = s.run("planner command", cmd);
    assert_exit(out, 1);
    assert!(
        stderr(out).contains("auth failed for Bearer"),
        "{}",
        stderr(out)
    );

    // A goal whose runner prints the key it inherited on its standard error, and fails.
    for draft in [
        "examples/issue-triage/draft.json",
        "examples/goals/triage-lite.json",
    ] {
        let out = s.run(
            "register",
            command(
                s.path(),
                &[
                    "register",
                    &root().join(draft).display().to_string(),
                    "-d",
                    &example("workflow.json"),
                ],
            ),
        );
        assert_exit(out, 0);
    }
    let goal_file = root()
        .join("examples/goals/goal.json")
        .display()
        .to_string();
    let out = s.run(
        "goal create",
        command(s.path(), &["goal", "create", &goal_file]),
    );
    assert_exit(out, 0);
    let goal = stdout(out).trim().to_owned();
    let runner = "echo \"401 from the API for Bearer $OPENAI_API_KEY\" >&2; exit 1";
    let mut cmd = command(
        s.path(),
        &["goal", "run", &goal, "--runner", runner, "--runner-shell"],
    );
    cmd.env("OPENAI_API_KEY", API_KEY);
    s.run("goal run", cmd);
    let out = s.run(
        "goal show",
        command(s.path(), &["goal", "show", &goal, "--format", "json"]),
    );
    assert!(
        stdout(out).contains("401 from the API for Bearer <redacted>"),
        "{}",
        stdout(out)
    );

    // A registry whose refusal quotes the Authorization header, plain and in base64.
    let fake =
        common::fake::serve(|r| json_reply(401, json!({ "errors": [{ "message": echo(r) }] })));
    let home = s.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    for (scenario, registry) in [
        ("registry", format!("oci+http://{}/team/lwir", fake.address)),
        (
            "registry url",
            format!(
                "oci+http://alice:{REGISTRY_PASSWORD}@{}/team/lwir",
                fake.address
            ),
        ),
    ] {
        let mut cmd = command(s.path(), &["registry", "list", "--registry", &registry]);
        cmd.env("HOME", &home)
            .env_remove("DOCKER_CONFIG")
            .env("LWIR_REGISTRY_USER", "alice")
            .env("LWIR_REGISTRY_PASSWORD", REGISTRY_PASSWORD);
        let out = s.run(scenario, cmd);
        assert_exit(out, 2);
    }
    assert!(
        stderr(&s.printed[s.printed.len() - 2].1).contains("Incorrect API key provided"),
        "the registry's reason is kept"
    );

    // PostgreSQL: a password as `password=` and in the user part, and a server that
    // quotes the password it was sent.
    let closed = unused_port();
    let echoing = echoing_database();
    for (scenario, url) in [
        (
            "postgres password=",
            format!("postgres://lwir@127.0.0.1:{closed}/goals?password={PG_PASSWORD}"),
        ),
        (
            "postgres user part",
            format!("postgres://lwir:{PG_PASSWORD}@127.0.0.1:{closed}/goals"),
        ),
        (
            "postgres echo",
            format!("postgres://lwir@127.0.0.1:{echoing}/goals?password={PG_PASSWORD}"),
        ),
    ] {
        let out = s.run(
            scenario,
            command(s.path(), &["goal", "list", "--goals", &url]),
        );
        assert_exit(out, 2);
    }
    let echoed = stderr(&s.printed.last().unwrap().1);
    assert!(
        echoed.contains("password authentication failed: `<redacted>` is not it"),
        "{echoed}"
    );

    // Nothing lwirc printed or wrote holds a secret.
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("alice:{REGISTRY_PASSWORD}"));
    let secrets: Vec<String> = [
        API_KEY.to_owned(),
        format!("Bearer {API_KEY}"),
        REGISTRY_PASSWORD.to_owned(),
        format!("alice:{REGISTRY_PASSWORD}"),
        format!("Basic {basic}"),
        PG_PASSWORD.to_owned(),
    ]
    .iter()
    .flat_map(|s| forms(s))
    .collect();
    let mut written = Vec::new();
    files(s.path(), &mut written);
    for session in ["401", "500", "redirect", "json-error", "url", "command"] {
        for log in ["events.jsonl", "model/events.jsonl"] {
            let path = s.path().join(format!("session-{session}/{log}"));
            assert!(
                session == "command" && log.starts_with("model") || written.contains(&path),
                "{} was not written",
                path.display()
            );
        }
    }
    for path in &written {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "`{secret}` is in {}:\n{text}",
                path.display()
            );
        }
    }
    for (scenario, out) in &s.printed {
        let text = format!("{}{}", stdout(out), stderr(out));
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "`{secret}` was printed ({scenario}):\n{text}"
            );
        }
    }
}
