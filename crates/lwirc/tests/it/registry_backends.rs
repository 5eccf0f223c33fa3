//! One conformance suite for every registry backend: a directory, and an OCI distribution
//! registry (CNCF Distribution, which `.ci/run` starts). Each test runs against each
//! backend through the `lwirc` binary, as users and CI jobs do.
//!
//! The OCI backend is the registry at `LWIRC_TEST_OCI` (`oci+http://127.0.0.1:PORT`; each
//! test uses a repository of its own), with its filesystem storage at
//! `LWIRC_TEST_OCI_DATA` for the tests that change a blob behind lwirc's back. Without
//! `LWIRC_TEST_OCI` the OCI half says it is skipped, unless `LWIRC_REQUIRE_ENGINES` is set
//! (CI sets it), which makes a missing engine a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::Digest as _;

use crate::common;

fn lwirc() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lwirc"));
    cmd.env_remove("LWIR_REGISTRY");
    cmd
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/issue-triage")
}

/// A registry to test: its location and, for tampering, where its bytes are.
struct Backend {
    label: &'static str,
    location: String,
    /// The directory registry's root, or the OCI registry's storage root.
    bytes_at: Option<PathBuf>,
    _dir: Option<tempfile::TempDir>,
}

/// The backends for test `name`: a fresh directory, and a fresh repository of the OCI
/// registry when there is one.
fn backends(name: &str) -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![Backend {
        label: "directory",
        location: dir.path().join("registry").display().to_string(),
        bytes_at: Some(dir.path().join("registry")),
        _dir: Some(dir),
    }];
    match std::env::var("LWIRC_TEST_OCI")
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(base) => out.push(Backend {
            label: "oci",
            location: format!(
                "{}/lwirc-test/{name}-{}-{}",
                base.trim_end_matches('/'),
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            ),
            bytes_at: std::env::var_os("LWIRC_TEST_OCI_DATA").map(PathBuf::from),
            _dir: None,
        }),
        None => {
            assert!(
                std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
                "LWIRC_REQUIRE_ENGINES is set but LWIRC_TEST_OCI names no registry"
            );
            skip_note!(
                "skipped the OCI backend: set LWIRC_TEST_OCI=oci+http://127.0.0.1:PORT to a CNCF \
                 Distribution registry (see .ci/run)"
            );
        }
    }
    out
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("lwirc runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A server on the loopback that reads (up to 4 KiB of) each request, whatever it is, and
/// sends `answer` back; its port.
fn answering_with(answer: String) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

/// Registers `draft` against the example definition in `registry`; the version printed.
fn register(registry: &str, draft: &Path) -> String {
    let out = run(lwirc()
        .arg("register")
        .arg(draft)
        .arg("-d")
        .arg(examples().join("workflow.json"))
        .args(["--registry", registry]));
    assert!(out.status.success(), "register failed: {}", text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The example draft with its `description` set to `n`: a different version for each `n`.
fn variant(dir: &Path, n: usize) -> PathBuf {
    let mut draft: Value =
        serde_json::from_slice(&std::fs::read(examples().join("draft.json")).unwrap()).unwrap();
    draft["description"] = json!(format!("variant {n}"));
    let path = dir.join(format!("variant-{n}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&draft).unwrap()).unwrap();
    path
}

/// The example draft with a description of `mib` MiB: a push that takes a while.
fn large(dir: &Path, mib: usize) -> PathBuf {
    let mut draft: Value =
        serde_json::from_slice(&std::fs::read(examples().join("draft.json")).unwrap()).unwrap();
    draft["description"] = json!("lorem ipsum ".repeat(mib * 1024 * 1024 / 12));
    let path = dir.join("large.json");
    std::fs::write(&path, serde_json::to_vec(&draft).unwrap()).unwrap();
    path
}

fn list(registry: &str) -> Vec<Value> {
    let out = run(lwirc().args([
        "registry",
        "list",
        "--format",
        "json",
        "--registry",
        registry,
    ]));
    assert!(out.status.success(), "list failed: {}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn registering_twice_is_a_no_op_and_lists_once() {
    for b in backends("idempotent") {
        let draft = examples().join("draft.json");
        let first = register(&b.location, &draft);
        let out = run(lwirc()
            .arg("register")
            .arg(&draft)
            .arg("-d")
            .arg(examples().join("workflow.json"))
            .args(["--registry", &b.location]));
        assert!(out.status.success(), "{}: {}", b.label, text(&out));
        assert!(
            text(&out).contains("already registered"),
            "{}: {}",
            b.label,
            text(&out)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), first);
        let listed = list(&b.location);
        assert_eq!(listed.len(), 1, "{}: {listed:?}", b.label);
        assert_eq!(listed[0]["version"], first);
        let verify = run(lwirc().args(["registry", "verify", "--registry", &b.location]));
        assert!(verify.status.success(), "{}: {}", b.label, text(&verify));
    }
}

#[test]
fn eight_concurrent_writers_all_land() {
    let scratch = tempfile::tempdir().unwrap();
    let drafts: Vec<PathBuf> = (0..8).map(|n| variant(scratch.path(), n)).collect();
    for b in backends("concurrent") {
        // Eight different versions at once, and eight registrations of one same version.
        let spawn = |draft: &Path| {
            lwirc()
                .arg("register")
                .arg(draft)
                .arg("-d")
                .arg(examples().join("workflow.json"))
                .args(["--registry", &b.location])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let mut children: Vec<_> = drafts.iter().map(|d| spawn(d)).collect();
        children.extend((0..8).map(|_| spawn(&examples().join("draft.json"))));
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}: {}", b.label, text(&out));
        }
        let listed = list(&b.location);
        assert_eq!(listed.len(), 9, "{}: {listed:?}", b.label);
        let verify = run(lwirc().args(["registry", "verify", "--registry", &b.location]));
        assert!(verify.status.success(), "{}: {}", b.label, text(&verify));
    }
}

#[test]
fn a_blob_changed_behind_lwircs_back_is_found_by_every_read_and_by_verify() {
    for b in backends("tamper") {
        let version = register(&b.location, &examples().join("draft.json"));
        let hex = version.trim_start_matches("sha256:");
        let Some(root) = &b.bytes_at else {
            skip_note!(
                "{}: skipped the blob change (LWIRC_TEST_OCI_DATA is not set)",
                b.label
            );
            continue;
        };
        // The LWIR's bytes, wherever this backend keeps them.
        let file = [
            root.join("objects/sha256").join(hex),
            root.join("docker/registry/v2/blobs/sha256")
                .join(&hex[..2])
                .join(hex)
                .join("data"),
        ]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{}: the LWIR's bytes are under {}", b.label, root.display()));
        common::make_writable(&file);
        let original = std::fs::read(&file).unwrap();
        let changed = String::from_utf8(original.clone())
            .unwrap()
            .replacen("open", "shut", 1);
        std::fs::write(&file, changed).unwrap();
        let show =
            run(lwirc().args(["registry", "show", hex, "--lwir", "--registry", &b.location]));
        assert_eq!(show.status.code(), Some(1), "{}: {}", b.label, text(&show));
        assert!(
            text(&show).contains("corrupt"),
            "{}: {}",
            b.label,
            text(&show)
        );
        let verify = run(lwirc().args(["registry", "verify", "--registry", &b.location]));
        assert_eq!(
            verify.status.code(),
            Some(1),
            "{}: {}",
            b.label,
            text(&verify)
        );
        assert!(
            text(&verify).contains("corrupt"),
            "{}: {}",
            b.label,
            text(&verify)
        );
        let drift = run(lwirc()
            .args(["drift", hex, "-d"])
            .arg(examples().join("workflow.json"))
            .args(["--registry", &b.location]));
        assert_ne!(
            drift.status.code(),
            Some(0),
            "{}: {}",
            b.label,
            text(&drift)
        );
        // Put right again (the OCI registry's blob store is shared by every test).
        std::fs::write(&file, original).unwrap();
    }
}

#[test]
fn a_writer_killed_mid_push_leaves_nothing_that_reads_as_a_version() {
    let scratch = tempfile::tempdir().unwrap();
    let draft = large(scratch.path(), 8);
    for b in backends("killed") {
        if b.label == "directory" {
            // An empty registry, so that listing it before anything lands is not an error.
            std::fs::create_dir_all(&b.location).unwrap();
        }
        // How long a whole registration takes here (into another registry of the same
        // kind), so that the kills land all through it: reading, validating, pushing.
        let started = std::time::Instant::now();
        register(&format!("{}-timing", b.location), &draft);
        let whole = started.elapsed().as_millis() as u64;
        let mut version = None;
        for delay_ms in (0..8).map(|k| whole * k / 8) {
            let mut child = lwirc()
                .arg("register")
                .arg(&draft)
                .arg("-d")
                .arg(examples().join("workflow.json"))
                .args(["--registry", &b.location])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(delay_ms));
            let _ = child.kill(); // SIGKILL
            let out = child.wait_with_output().unwrap();
            if out.status.success() {
                version = Some(String::from_utf8(out.stdout).unwrap().trim().to_owned());
            }
            // Whatever was left: every listed version reads back whole, nothing is corrupt.
            for entry in list(&b.location) {
                let v = entry["version"].as_str().unwrap();
                let show =
                    run(lwirc().args(["registry", "show", v, "--lwir", "--registry", &b.location]));
                assert!(
                    show.status.success(),
                    "{} after {delay_ms} ms: {}",
                    b.label,
                    text(&show)
                );
            }
            let verify = run(lwirc().args(["registry", "verify", "--registry", &b.location]));
            let said = text(&verify);
            assert!(
                !said.contains("corrupt") && !said.contains("missing"),
                "{} after {delay_ms} ms: {said}",
                b.label
            );
        }
        // A writer that runs to the end registers it, whatever the killed ones left.
        let final_version = register(&b.location, &draft);
        if let Some(v) = version {
            assert_eq!(v, final_version);
        }
        let listed = list(&b.location);
        assert_eq!(listed.len(), 1, "{}: {listed:?}", b.label);
    }
}

#[test]
fn versions_are_found_by_prefix_and_listed() {
    let scratch = tempfile::tempdir().unwrap();
    for b in backends("prefixes") {
        let first = register(&b.location, &examples().join("draft.json"));
        let second = register(&b.location, &variant(scratch.path(), 1));
        let listed: Vec<String> = list(&b.location)
            .iter()
            .map(|e| e["version"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(listed.len(), 2);
        assert!(listed.contains(&first) && listed.contains(&second));
        let prefix = &first["sha256:".len().."sha256:".len() + 8];
        let show = run(lwirc().args(["registry", "show", prefix, "--registry", &b.location]));
        assert!(show.status.success(), "{}: {}", b.label, text(&show));
        let record: Value = serde_json::from_slice(&show.stdout).unwrap();
        assert_eq!(record["version"], first);
        let lwir = run(lwirc().args([
            "registry",
            "show",
            &first,
            "--lwir",
            "--registry",
            &b.location,
        ]));
        assert_eq!(
            format!("sha256:{:x}", sha2::Sha256::digest(&lwir.stdout)),
            first
        );
        let none = run(lwirc().args([
            "registry",
            "show",
            "ffffffffffff",
            "--registry",
            &b.location,
        ]));
        assert_eq!(none.status.code(), Some(1), "{}: {}", b.label, text(&none));
        let bad = run(lwirc().args(["registry", "show", "xyz", "--registry", &b.location]));
        assert_eq!(bad.status.code(), Some(1), "{}: {}", b.label, text(&bad));
    }
}

#[test]
fn copy_mirrors_versions_between_any_two_registries() {
    let scratch = tempfile::tempdir().unwrap();
    let all = backends("copy");
    let source = &all[0];
    let a = register(&source.location, &examples().join("draft.json"));
    let b_version = register(&source.location, &variant(scratch.path(), 2));
    for to in &all {
        let destination = format!("{}-mirror", to.location);
        let out = run(lwirc().args(["registry", "copy", &source.location, &destination]));
        assert!(out.status.success(), "{}: {}", to.label, text(&out));
        assert!(
            text(&out).contains("2 copied, 0 already there, 0 problems"),
            "{}",
            text(&out)
        );
        let again = run(lwirc().args(["registry", "copy", &source.location, &destination]));
        assert!(
            text(&again).contains("0 copied, 2 already there"),
            "{}",
            text(&again)
        );
        // And back, into a fresh directory: the same records, byte for byte.
        let back = scratch.path().join(format!("back-{}", to.label));
        let out = run(lwirc().args(["registry", "copy", &destination]).arg(&back));
        assert!(out.status.success(), "{}: {}", to.label, text(&out));
        for v in [&a, &b_version] {
            let show = |registry: &str| {
                run(lwirc().args(["registry", "show", v, "--registry", registry])).stdout
            };
            assert_eq!(show(&source.location), show(&back.display().to_string()));
        }
    }
}

#[test]
fn a_registry_that_is_down_or_answers_garbage_is_a_clear_error() {
    // Nothing listens on port 9 of the loopback (discard, never served here).
    let down = "oci+http://127.0.0.1:9/lwir";
    let out = run(lwirc()
        .arg("register")
        .arg(examples().join("draft.json"))
        .arg("-d")
        .arg(examples().join("workflow.json"))
        .args(["--registry", down]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("could not be reached"),
        "{}",
        text(&out)
    );
    assert!(out.stdout.is_empty(), "no version is printed");
    // A server that answers every request with garbage.
    let body = "\u{1b}[31mnot a registry";
    let port = answering_with(format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let garbage = format!("oci+http://127.0.0.1:{port}/lwir");
    let out = run(lwirc().args(["registry", "list", "--registry", &garbage]));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !text(&out).contains('\u{1b}'),
        "no raw escape reaches the terminal"
    );
    let out = run(lwirc()
        .arg("register")
        .arg(examples().join("draft.json"))
        .arg("-d")
        .arg(examples().join("workflow.json"))
        .args(["--registry", &garbage]));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        out.stdout.is_empty(),
        "no version is printed: {}",
        text(&out)
    );
}

#[test]
fn the_artifact_is_an_ordinary_oci_artifact() {
    let Some(b) = backends("artifact").into_iter().find(|b| b.label == "oci") else {
        return;
    };
    let version = register(&b.location, &examples().join("draft.json"));
    // Read back with plain HTTP, as any OCI client would.
    let (base, repository) = b
        .location
        .strip_prefix("oci+http://")
        .unwrap()
        .split_once('/')
        .unwrap();
    let get = |path: &str, accept: &str| -> Vec<u8> {
        let mut response = ureq::get(&format!("http://{base}/v2/{repository}/{path}"))
            .header("Accept", accept)
            .call()
            .unwrap();
        response.body_mut().read_to_vec().unwrap()
    };
    let manifest_bytes = get(
        &format!("manifests/sha256-{}", version.trim_start_matches("sha256:")),
        "application/vnd.oci.image.manifest.v1+json",
    );
    let manifest: Value = serde_json::from_slice(&manifest_bytes).unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["artifactType"],
        "application/vnd.lwir.workflow.v1+json"
    );
    assert_eq!(manifest["annotations"]["dev.lwir.workflow"], "issue-triage");
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["digest"], version,
        "the layer digest is the WorkflowVersion"
    );
    for descriptor in [&manifest["config"], layer] {
        let digest = descriptor["digest"].as_str().unwrap();
        let blob = get(&format!("blobs/{digest}"), "*/*");
        assert_eq!(format!("sha256:{:x}", sha2::Sha256::digest(&blob)), digest);
        assert_eq!(descriptor["size"], blob.len());
    }
    // The workflow's name is an alias of the same manifest.
    let alias = get(
        "manifests/issue-triage",
        "application/vnd.oci.image.manifest.v1+json",
    );
    assert_eq!(alias, manifest_bytes);
    // And an independent client copies it, checking every digest, when it is installed.
    if Command::new("skopeo").arg("--version").output().is_ok() {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("skopeo")
            .args(["copy", "--src-tls-verify=false"])
            .arg(format!("docker://{base}/{repository}:issue-triage"))
            .arg(format!("dir:{}", dir.path().join("copy").display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "skopeo: {}", text(&out));
        let layer = std::fs::read(
            dir.path()
                .join("copy")
                .join(version.trim_start_matches("sha256:")),
        )
        .unwrap();
        assert_eq!(
            layer,
            run(lwirc().args([
                "registry",
                "show",
                &version,
                "--lwir",
                "--registry",
                &b.location
            ]))
            .stdout
        );
    } else {
        assert!(
            std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
            "LWIRC_REQUIRE_ENGINES is set but skopeo is not installed"
        );
        skip_note!("skipped the skopeo copy: skopeo is not installed");
    }
}

/// A registry that wants a Bearer token from its token service, which wants Basic
/// credentials: what Docker Hub, GHCR and most hosted registries do.
#[test]
fn credentials_get_a_token_and_are_never_printed() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut authorization = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if line.to_ascii_lowercase().starts_with("authorization:") {
                    authorization = line["authorization:".len()..].trim().to_owned();
                }
            }
            let path = request_line
                .split(' ')
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            // alice:s3cret
            let (status, extra, body) = if path.starts_with("/token") {
                if authorization == "Basic YWxpY2U6czNjcmV0" {
                    ("200 OK", String::new(), r#"{"token":"tok-123"}"#.to_owned())
                } else {
                    (
                        "401 Unauthorized",
                        String::new(),
                        r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#.to_owned(),
                    )
                }
            } else if authorization == "Bearer tok-123" {
                (
                    "200 OK",
                    String::new(),
                    r#"{"name":"team/lwir","tags":[]}"#.to_owned(),
                )
            } else {
                (
                    "401 Unauthorized",
                    format!(
                        "WWW-Authenticate: Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"fake\",scope=\"repository:team/lwir:pull\"\r\n"
                    ),
                    r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#.to_owned(),
                )
            };
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let registry = format!("oci+http://127.0.0.1:{port}/team/lwir");
    let home = tempfile::tempdir().unwrap();
    let list = |user: Option<(&str, &str)>| {
        let mut cmd = lwirc();
        cmd.args(["registry", "list", "--registry", &registry])
            .env("HOME", home.path())
            .env_remove("DOCKER_CONFIG")
            .env_remove("LWIR_REGISTRY_USER")
            .env_remove("LWIR_REGISTRY_PASSWORD");
        if let Some((u, p)) = user {
            cmd.env("LWIR_REGISTRY_USER", u)
                .env("LWIR_REGISTRY_PASSWORD", p);
        }
        run(&mut cmd)
    };
    let out = list(Some(("alice", "s3cret")));
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("s3cret"));
    let out = list(None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("refused") || text(&out).contains("credentials"),
        "{}",
        text(&out)
    );
    let out = list(Some(("alice", "wrong-pass")));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !text(&out).contains("wrong-pass"),
        "the password is never printed: {}",
        text(&out)
    );
    // From Docker's configuration, as `docker login` leaves it.
    std::fs::create_dir_all(home.path().join(".docker")).unwrap();
    std::fs::write(
        home.path().join(".docker/config.json"),
        format!(r#"{{"auths":{{"127.0.0.1:{port}":{{"auth":"YWxpY2U6czNjcmV0"}}}}}}"#),
    )
    .unwrap();
    let out = list(None);
    assert!(out.status.success(), "{}", text(&out));
}

/// A version as a fake registry serves it: registered in a directory, read back.
struct Served {
    version: String,
    record: Vec<u8>,
    record_digest: String,
    lwir: Vec<u8>,
}

fn served() -> (tempfile::TempDir, Served) {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry").display().to_string();
    let version = register(&registry, &examples().join("draft.json"));
    let show = |lwir: bool| {
        let mut cmd = lwirc();
        cmd.args(["registry", "show", &version, "--registry", &registry]);
        if lwir {
            cmd.arg("--lwir");
        }
        let out = run(&mut cmd);
        assert!(out.status.success(), "{}", text(&out));
        out.stdout
    };
    let record = show(false);
    let record_digest = format!("sha256:{:x}", sha2::Sha256::digest(&record));
    let lwir = show(true);
    (
        dir,
        Served {
            version,
            record,
            record_digest,
            lwir,
        },
    )
}

/// A fake registry holding `served` as repository `lwir`, its manifest declaring the LWIR
/// layer `layer_size` bytes long, whose blob is answered by `lwir`.
fn fake_registry(
    served: &Served,
    layer_size: Value,
    lwir: impl Fn() -> common::fake::Reply + Send + Sync + 'static,
) -> common::fake::Fake {
    use common::fake::Reply;
    let hex = served.version.trim_start_matches("sha256:").to_owned();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.lwir.workflow.v1+json",
        "config": { "mediaType": "application/vnd.lwir.registration.v1+json",
                    "digest": served.record_digest, "size": served.record.len() },
        "layers": [{ "mediaType": "application/vnd.lwir.workflow.v1+json",
                     "digest": served.version, "size": layer_size }],
    })
    .to_string()
    .into_bytes();
    let record = served.record.clone();
    let record_path = format!("/v2/lwir/blobs/{}", served.record_digest);
    let json_type = || vec![("Content-Type".to_owned(), "application/json".to_owned())];
    common::fake::serve(move |r| match r.path.as_str() {
        "/v2/lwir/tags/list?n=1000" => Reply::Answer(
            200,
            json_type(),
            json!({ "name": "lwir", "tags": [format!("sha256-{hex}")] })
                .to_string()
                .into_bytes(),
        ),
        p if p == format!("/v2/lwir/manifests/sha256-{hex}") => {
            Reply::Answer(200, json_type(), manifest.clone())
        }
        p if p == record_path => Reply::Answer(200, vec![], record.clone()),
        p if p == format!("/v2/lwir/blobs/sha256:{hex}") => lwir(),
        _ => Reply::Answer(404, json_type(), b"{\"errors\":[]}".to_vec()),
    })
}

fn show_lwir(registry: &str, version: &str) -> Output {
    let mut cmd = lwirc();
    cmd.args([
        "registry",
        "show",
        version,
        "--lwir",
        "--registry",
        registry,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    common::output_within(cmd, Duration::from_secs(60))
}

#[test]
fn a_blob_is_read_up_to_the_size_its_manifest_declares_and_no_further() {
    let (_dir, served) = served();
    // The fake stops at 256 MiB whatever lwirc does (without the bound, lwirc would read
    // up to 4 GiB).
    let cap = 256 * 1024 * 1024;
    // `registry show` of the version from the fake at `address`: refused (exit 2), saying `why`.
    let refused = |address: &str, why: &str| {
        let out = show_lwir(&format!("oci+http://{address}/lwir"), &served.version);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(why), "{}", text(&out));
        out
    };
    // A 10 GB layer with an endless body: refused before its blob is asked for.
    let fake = fake_registry(&served, json!(10_000_000_000u64), move || {
        common::fake::Reply::Endless(vec![], cap)
    });
    refused(
        &fake.address,
        "as 10000000000 bytes; lwirc reads blobs of up to",
    );
    assert_eq!(fake.streamed.load(std::sync::atomic::Ordering::Relaxed), 0);
    // Its true size declared, but an endless body: read up to that size, then refused.
    let size = served.lwir.len() as u64;
    let fake = fake_registry(&served, json!(size), move || {
        common::fake::Reply::Endless(vec![], cap)
    });
    let out = refused(
        &fake.address,
        &format!("the registry sends more than the {size} bytes its manifest declares"),
    );
    assert!(out.stdout.is_empty());
    let streamed = fake.streamed.load(std::sync::atomic::Ordering::Relaxed);
    assert!(streamed < cap, "{streamed} bytes were read");
    // A length over the declared size is refused before the body is read.
    let fake = fake_registry(&served, json!(size), move || {
        common::fake::Reply::Stalled(vec![], 10_000_000_000, 0)
    });
    refused(&fake.address, "its manifest declares");
    // The same registry serving the blob as it is: read, verified, printed.
    let lwir = served.lwir.clone();
    let fake = fake_registry(&served, json!(size), move || {
        common::fake::Reply::Answer(200, vec![], lwir.clone())
    });
    let out = show_lwir(
        &format!("oci+http://{}/lwir", fake.address),
        &served.version,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(out.stdout, served.lwir);
}

#[test]
fn a_registry_that_says_nothing_is_given_up_after_its_wait() {
    use common::fake::Reply;
    let silent = common::fake::serve(|_| Reply::Silent);
    let stalled = common::fake::serve(|_| {
        Reply::Stalled(
            vec![("Content-Type".into(), "application/json".into())],
            100,
            10,
        )
    });
    for (fake, expected) in [
        (
            &silent,
            "listing tags at oci+http://ADDRESS/lwir: the registry accepted the connection but \
             did not answer within 1 s (LWIR_REGISTRY_TIMEOUT)",
        ),
        (
            &stalled,
            "listing tags at oci+http://ADDRESS/lwir: the registry stopped sending for 1 s in the \
             middle of its answer (LWIR_REGISTRY_TIMEOUT)",
        ),
    ] {
        let registry = format!("oci+http://{}/lwir", fake.address);
        let mut cmd = lwirc();
        cmd.args(["registry", "list", "--registry", &registry])
            .env("LWIR_REGISTRY_TIMEOUT", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = std::time::Instant::now();
        let out = common::output_within(cmd, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let expected = expected.replace("ADDRESS", &fake.address);
        assert!(text(&out).contains(&expected), "{}", text(&out));
        assert!(started.elapsed() < Duration::from_secs(20));
    }
    let out = run(lwirc()
        .args([
            "registry",
            "list",
            "--registry",
            "oci+http://127.0.0.1:9/lwir",
        ])
        .env("LWIR_REGISTRY_TIMEOUT", "soon"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("LWIR_REGISTRY_TIMEOUT is `soon`: expected a number of seconds"),
        "{}",
        text(&out)
    );
}

/// A registry whose refusal quotes the `Authorization` header it got, as it is and
/// decoded, and the password in a few other shapes.
#[test]
fn a_refusal_that_echoes_the_credentials_prints_none_of_them() {
    use base64::Engine as _;
    use common::fake::Reply;
    let fake = common::fake::serve(|r| {
        let auth = r.header("authorization").unwrap_or_default().to_owned();
        let decoded = auth
            .strip_prefix("Basic ")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let b64 = base64::engine::general_purpose::STANDARD;
        Reply::Answer(
            401,
            vec![("Content-Type".into(), "application/json".into())],
            json!({ "errors": [{
                "code": "UNAUTHORIZED",
                "message": format!("bad credentials {auth} ({decoded})"),
                "detail": { "sent": auth.trim_start_matches("Basic "),
                            "again": b64.encode(format!("~{decoded}~")) },
            }] })
            .to_string()
            .into_bytes(),
        )
    });
    let registry = format!("oci+http://{}/team/lwir", fake.address);
    let home = tempfile::tempdir().unwrap();
    let out = run(lwirc()
        .args(["registry", "list", "--registry", &registry])
        .env("HOME", home.path())
        .env_remove("DOCKER_CONFIG")
        .env("LWIR_REGISTRY_USER", "alice")
        .env("LWIR_REGISTRY_PASSWORD", "hunter2-marker"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let printed = text(&out);
    assert!(printed.contains("refuses these credentials"), "{printed}");
    assert!(
        printed.contains("bad credentials"),
        "the reason is kept: {printed}"
    );
    let b64 = base64::engine::general_purpose::STANDARD;
    for secret in [
        "hunter2-marker".to_owned(),
        b64.encode("alice:hunter2-marker"),
        b64.encode("hunter2-marker"),
    ] {
        assert!(!printed.contains(&secret), "{secret} in {printed}");
    }
}

/// `oci://` is TLS; a local registry usually speaks plain HTTP. Asked with the wrong
/// scheme, the error names the one that would work.
#[test]
fn a_plain_http_registry_asked_over_tls_names_oci_http() {
    let port = answering_with(
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
    );
    let location = format!("oci://127.0.0.1:{port}/lwir/x");
    let out = run(lwirc().args(["registry", "list", "--registry", &location]));
    assert_ne!(out.status.code(), Some(0));
    let text = text(&out);
    assert!(
        text.contains(&format!("oci+http://127.0.0.1:{port}/lwir/x")),
        "{text}"
    );
}
