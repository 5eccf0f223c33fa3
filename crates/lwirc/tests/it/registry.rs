//! `lwirc register` and `lwirc registry`: idempotence, refusal, prefixes, verification,
//! concurrent writers and interrupted writes, through the built binary.

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;

const REGISTRY: &str = "reg";

fn objects(dir: &Path) -> PathBuf {
    dir.join(REGISTRY).join("objects/sha256")
}

fn versions(dir: &Path) -> PathBuf {
    dir.join(REGISTRY).join("versions")
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Registers `draft` against `definition` in `dir/reg`.
fn register(dir: &Path, draft: &str, definition: &str) -> std::process::Output {
    lwirc(
        dir,
        &["register", draft, "-d", definition, "--registry", REGISTRY],
    )
}

/// Registers `draft` against `definition` in `dir/reg` with `--rebase`.
fn rebase(dir: &Path, draft: &str, definition: &str) -> std::process::Output {
    lwirc(
        dir,
        &[
            "register",
            draft,
            "-d",
            definition,
            "--registry",
            REGISTRY,
            "--rebase",
        ],
    )
}

/// The example draft with `description` set, so that each `n` is another version.
fn variant(dir: &Path, n: usize) -> String {
    let mut draft = example_draft();
    draft["description"] = format!("variant {n}").into();
    write_json(dir, &format!("draft-{n}.json"), &draft)
}

/// Flips the lowest bit of byte `at` of a read-only stored file.
fn flip_byte(path: &Path, at: usize) {
    make_writable(path);
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= 1;
    fs::write(path, bytes).unwrap();
}

/// `lwirc registry list --format json` of the registry in `dir`, which must succeed.
fn listed_json(dir: &Path) -> serde_json::Value {
    let list = lwirc(
        dir,
        &[
            "registry",
            "list",
            "--format",
            "json",
            "--registry",
            REGISTRY,
        ],
    );
    assert_exit(&list, 0);
    serde_json::from_slice(&list.stdout).unwrap()
}

fn hex_of(version: &str) -> &str {
    version.trim().strip_prefix("sha256:").unwrap()
}

#[test]
fn registering_twice_is_idempotent_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (draft, workflow) = (example("draft.json"), example("workflow.json"));
    let first = register(tmp.path(), &draft, &workflow);
    assert_exit(&first, 0);
    let version = stdout(&first);
    assert_eq!(version, stdout(&lwirc(tmp.path(), &["hash", &draft])));
    assert!(stderr(&first).contains("registered `issue-triage` as sha256:"));
    let stored = (names(&objects(tmp.path())), names(&versions(tmp.path())));
    assert_eq!((stored.0.len(), stored.1.len()), (2, 1), "{stored:?}");

    let second = register(tmp.path(), &draft, &workflow);
    assert_exit(&second, 0);
    assert_eq!(stdout(&second), version);
    assert_stderr_has(&second, "is already registered");
    assert_eq!(
        (names(&objects(tmp.path())), names(&versions(tmp.path()))),
        stored,
        "nothing written"
    );
    // The same draft reformatted is the same version.
    let reformatted = write_json(tmp.path(), "same.json", &example_draft());
    let third = register(tmp.path(), &reformatted, &workflow);
    assert_exit(&third, 0);
    assert!(stderr(&third).contains("is already registered"));

    // Stored files are read-only, and the LWIR object is the canonical bytes.
    let hex = hex_of(&version);
    let lwir = objects(tmp.path()).join(hex);
    assert!(fs::metadata(&lwir).unwrap().permissions().readonly());
    assert!(
        fs::metadata(versions(tmp.path()).join(hex))
            .unwrap()
            .permissions()
            .readonly()
    );
    assert_eq!(
        fs::read(&lwir).unwrap(),
        lwirc(tmp.path(), &["canon", &draft]).stdout
    );
}

#[test]
fn the_record_holds_the_snapshot_and_the_validation() {
    let tmp = tempfile::tempdir().unwrap();
    let out = register(
        tmp.path(),
        &example("draft.json"),
        &example("workflow.json"),
    );
    assert_exit(&out, 0);
    let version = stdout(&out).trim().to_owned();
    let show = lwirc(
        tmp.path(),
        &["registry", "show", &version, "--registry", REGISTRY],
    );
    assert_exit(&show, 0);
    let record: serde_json::Value = serde_json::from_str(&stdout(&show)).unwrap();
    assert_eq!(record["version"], version.as_str());
    assert_eq!(record["workflow"], "issue-triage");
    assert_eq!(record["lwirc_version"], env!("CARGO_PKG_VERSION"));
    // The compiled expression plan: every expression of the draft, typed, with its cost.
    let plan = record["expressions"]["plan"].as_array().unwrap();
    let over = plan
        .iter()
        .find(|e| e["pointer"] == "/steps/1/over")
        .unwrap();
    assert_eq!(over["kind"], "expression");
    assert_eq!(over["source"], "${ steps.issues.output.items }");
    // Flat nodes, children first, the root last; a node's type indexes `types`.
    let root = over["nodes"].as_array().unwrap().last().unwrap();
    let types = record["expressions"]["types"].as_array().unwrap();
    let ty = types[root["type"].as_u64().unwrap() as usize]
        .as_str()
        .unwrap();
    assert!(ty.starts_with("list<"), "{over}");
    assert_eq!(root["node"], "member");
    assert_eq!(root["field"], "items");
    let prompt = plan
        .iter()
        .find(|e| e["pointer"] == "/steps/3/prompt")
        .unwrap();
    assert_eq!(prompt["kind"], "template");
    let total: u64 = plan.iter().map(|e| e["cost"].as_u64().unwrap()).sum();
    assert_eq!(record["expressions"]["cost"], total);
    let at = record["registered_at"].as_str().unwrap();
    assert!(
        at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
        "{at}"
    );
    assert_eq!(
        record["validation"]["summary"],
        serde_json::json!({ "errors": 0, "warnings": 0 })
    );
    assert!(record["validation"]["findings"].is_array());
    let tools: Vec<&str> = record["capability_snapshot"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["github.add_label", "github.list_issues"]);
    // Each tool hash is the hash of the canonical form of that part of the definition.
    let definition = example_definition();
    let tool = &record["capability_snapshot"][0];
    for part in ["description", "input", "output"] {
        let bytes =
            serde_json_canonicalizer::to_vec(&definition["tools"]["github.add_label"][part])
                .unwrap();
        assert_eq!(tool[part], lwir_spec::canon::sha256_of(&bytes), "{part}");
    }
    let fast = &record["model_snapshot"][1];
    assert_eq!(fast["id"], "fast");
    assert_eq!(fast["model"], "acme/small-2");
    assert_eq!(fast["quality"], "standard");
    assert_eq!(fast["capabilities"], serde_json::json!(["json_output"]));
    assert_eq!(fast["context_tokens"], 32000);
    let slot = serde_json_canonicalizer::to_vec(&definition["models"]["fast"]).unwrap();
    assert_eq!(fast["hash"], lwir_spec::canon::sha256_of(&slot));
}

#[test]
fn the_registry_is_found_by_flag_then_environment_then_default() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "register",
        &example("draft.json"),
        "-d",
        &example("workflow.json"),
    ];
    assert_exit(&lwirc(tmp.path(), &args), 0);
    assert_eq!(names(&tmp.path().join(".lwir/registry/versions")).len(), 1);
    let from_env = command(tmp.path(), &args)
        .env("LWIR_REGISTRY", "from-env")
        .output()
        .unwrap();
    assert_exit(&from_env, 0);
    assert_eq!(names(&tmp.path().join("from-env/versions")).len(), 1);
    let mut with_flag = args.to_vec();
    with_flag.extend(["--registry", "from-flag"]);
    let flagged = command(tmp.path(), &with_flag)
        .env("LWIR_REGISTRY", "from-env-2")
        .output()
        .unwrap();
    assert_exit(&flagged, 0);
    assert_eq!(names(&tmp.path().join("from-flag/versions")).len(), 1);
    assert!(!tmp.path().join("from-env-2").exists());
}

#[test]
fn a_draft_with_errors_is_not_registered() {
    let tmp = tempfile::tempdir().unwrap();
    let out = register(
        tmp.path(),
        &example("draft-with-mistakes.json"),
        &example("workflow.json"),
    );
    assert_exit(&out, 1);
    assert!(stdout(&out).contains("LW301/unknown-tool"));
    assert!(stderr(&out).contains("not registered"));
    assert!(names(&versions(tmp.path())).is_empty());
}

#[test]
fn the_same_lwir_against_another_snapshot_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let draft = example("draft.json");
    assert_exit(&register(tmp.path(), &draft, &example("workflow.json")), 0);
    let stored = names(&objects(tmp.path()));

    let mut definition = example_definition();
    definition["tools"]["github.add_label"]["input"]["properties"]["color"] =
        serde_json::json!({ "type": "string" });
    definition["models"]["fast"]["model"] = "acme/small-3".into();
    let changed = write_json(tmp.path(), "workflow.json", &definition);
    let out = register(tmp.path(), &draft, &changed);
    assert_exit(&out, 1);
    let text = stderr(&out);
    assert!(text.contains("refused"), "{text}");
    assert!(
        text.contains("tool `github.add_label`: input schema changed"),
        "{text}"
    );
    assert!(
        text.contains("model slot `fast`: model changed from `acme/small-2` to `acme/small-3`"),
        "{text}"
    );
    assert_eq!(names(&objects(tmp.path())), stored, "nothing written");

    // A change to a tool the draft does not use is not a different snapshot.
    let mut definition = example_definition();
    definition["tools"]["github.close_issue"] = serde_json::json!({
        "description": "Close an issue.", "input": { "type": "object" }, "output": { "type": "object" } });
    let unrelated = write_json(tmp.path(), "workflow-2.json", &definition);
    assert_exit(&register(tmp.path(), &draft, &unrelated), 0);
}

#[test]
fn versions_are_found_by_unique_prefix_and_ambiguity_lists_the_candidates() {
    let tmp = tempfile::tempdir().unwrap();
    let workflow = example("workflow.json");
    // Register variants until two versions share their first hex digit (at most 17).
    let mut by_first_digit: std::collections::BTreeMap<char, String> = Default::default();
    let (a, b) = (0..17)
        .find_map(|n| {
            let out = register(tmp.path(), &variant(tmp.path(), n), &workflow);
            assert_exit(&out, 0);
            let version = stdout(&out).trim().to_owned();
            let first = hex_of(&version).chars().next().unwrap();
            by_first_digit
                .insert(first, version.clone())
                .map(|earlier| (earlier, version))
        })
        .expect("17 versions share a first digit");

    let show = |prefix: &str| {
        lwirc(
            tmp.path(),
            &["registry", "show", prefix, "--registry", REGISTRY],
        )
    };
    for prefix in [
        a.clone(),
        hex_of(&a).to_owned(),
        format!("sha256:{}", &hex_of(&a)[..12]),
        hex_of(&a)[..12].to_uppercase(),
    ] {
        let out = show(&prefix);
        assert_exit(&out, 0);
        let record: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(record["version"], a.as_str(), "{prefix}");
    }
    let lwir = lwirc(
        tmp.path(),
        &[
            "registry",
            "show",
            &hex_of(&a)[..12],
            "--lwir",
            "--registry",
            REGISTRY,
        ],
    );
    assert_exit(&lwir, 0);
    assert_eq!(lwir_spec::canon::sha256_of(&lwir.stdout), a);

    let ambiguous = show(&hex_of(&a)[..1]);
    assert_exit(&ambiguous, 1);
    let text = stderr(&ambiguous);
    assert!(text.contains("is ambiguous"), "{text}");
    assert!(text.contains(&a) && text.contains(&b), "{text}");

    let missing = show(&format!("sha256:{}", "f".repeat(64)));
    assert_exit(&missing, 1);
    assert!(stderr(&missing).contains("no registered version matches"));
    assert_exit(&show("not-hex"), 1);
    assert!(stderr(&show("not-hex")).contains("is not a version"));
}

#[test]
fn list_shows_name_version_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let list = |format: &str| {
        lwirc(
            tmp.path(),
            &[
                "registry",
                "list",
                "--format",
                format,
                "--registry",
                REGISTRY,
            ],
        )
    };
    // No registry yet: a usage error naming it, not an empty list.
    assert_exit(&list("human"), 2);
    assert!(stderr(&list("human")).contains(REGISTRY));
    let workflow = example("workflow.json");
    let v0 = stdout(&register(tmp.path(), &variant(tmp.path(), 0), &workflow));
    let v1 = stdout(&register(tmp.path(), &variant(tmp.path(), 1), &workflow));
    let text = stdout(&list("human"));
    assert_eq!(text.lines().count(), 2, "{text}");
    for line in text.lines() {
        assert!(line.starts_with("issue-triage  sha256:"), "{line}");
        assert!(line.ends_with('Z'), "{line}");
    }
    let rows: serde_json::Value = serde_json::from_str(&stdout(&list("json"))).unwrap();
    let listed: BTreeSet<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    assert_eq!(listed, BTreeSet::from([v0.trim(), v1.trim()]));
    assert_eq!(rows[0]["workflow"], "issue-triage");
    assert!(rows[0]["registered_at"].is_string());
}

#[test]
fn verify_finds_a_flipped_byte_in_any_stored_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = register(
        tmp.path(),
        &example("draft.json"),
        &example("workflow.json"),
    );
    let version = stdout(&out).trim().to_owned();
    let verify = || lwirc(tmp.path(), &["registry", "verify", "--registry", REGISTRY]);
    let clean = verify();
    assert_exit(&clean, 0);
    assert_eq!(
        stdout(&clean),
        "verified 1 version and 2 objects: ok\n",
        "{}",
        stdout(&clean)
    );

    let hex = hex_of(&version).to_owned();
    let record = names(&objects(tmp.path()))
        .into_iter()
        .find(|n| *n != hex)
        .unwrap();
    for (file, at) in [
        (objects(tmp.path()).join(&hex), 30),
        (objects(tmp.path()).join(&record), 40),
        (versions(tmp.path()).join(&hex), 20),
    ] {
        flip_byte(&file, at);
        let out = verify();
        assert_exit(&out, 1);
        let text = stdout(&out);
        assert!(
            text.contains("corrupt") || text.contains("missing"),
            "{text}"
        );
        assert!(text.ends_with("1 problem\n"), "{text}");
        // Reads re-verify what they read.
        let show = lwirc(
            tmp.path(),
            &["registry", "show", &hex, "--registry", REGISTRY],
        );
        assert_exit(&show, 1);
        assert!(stderr(&show).contains("corrupt") || stderr(&show).contains("missing"));
        flip_byte(&file, at);
        assert_exit(&verify(), 0);
    }
    let lwir_object = objects(tmp.path()).join(&hex);
    flip_byte(&lwir_object, 30);
    let text = stdout(&verify());
    assert!(
        text.contains(&format!(
            "corrupt     objects/sha256/{hex}: its bytes hash to sha256:"
        )),
        "{text}"
    );
}

#[test]
fn eight_concurrent_registrations_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let workflow = example("workflow.json");
    let distinct: Vec<String> = (0..4).map(|n| variant(tmp.path(), n)).collect();
    let same = example("draft.json");
    let drafts: Vec<&str> = distinct
        .iter()
        .map(String::as_str)
        .chain(std::iter::repeat_n(same.as_str(), 4))
        .collect();
    let children: Vec<_> = drafts
        .iter()
        .map(|draft| {
            command(
                tmp.path(),
                &["register", draft, "-d", &workflow, "--registry", REGISTRY],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    let mut registered = BTreeSet::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_exit(&out, 0);
        registered.insert(stdout(&out).trim().to_owned());
    }
    assert_eq!(registered.len(), 5);
    let rows = listed_json(tmp.path());
    let listed: BTreeSet<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, registered);
    let verify = lwirc(tmp.path(), &["registry", "verify", "--registry", REGISTRY]);
    assert_exit(&verify, 0);
    assert_eq!(
        stdout(&verify),
        "verified 5 versions and 10 objects: ok\n",
        "no orphans: a record that lost the race is withdrawn"
    );
}

#[test]
fn an_interrupted_write_never_leaves_an_object_that_verify_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    let workflow = example("workflow.json");
    let verify = || lwirc(tmp.path(), &["registry", "verify", "--registry", REGISTRY]);
    assert_exit(&register(tmp.path(), &variant(tmp.path(), 0), &workflow), 0);

    // Killed while writing its temporary files: they are reported, never read.
    let half = &b"{\"format\":\"lwir.registration/1\",\"vers"[..];
    fs::write(objects(tmp.path()).join(".tmp.4242.0"), half).unwrap();
    fs::write(versions(tmp.path()).join(".tmp.4242.1"), half).unwrap();
    let out = verify();
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.matches("temporary").count(), 2, "{text}");
    assert!(
        text.ends_with("verified 1 version and 2 objects: ok\n"),
        "{text}"
    );
    let list = lwirc(tmp.path(), &["registry", "list", "--registry", REGISTRY]);
    assert_exit(&list, 0);
    assert_eq!(stdout(&list).lines().count(), 1);

    // Killed after publishing the LWIR object, before the version: an orphan, which a
    // later registration of the same draft adopts.
    let draft = variant(tmp.path(), 1);
    let canonical = lwirc(tmp.path(), &["canon", &draft]).stdout;
    let version = lwir_spec::canon::sha256_of(&canonical);
    fs::write(objects(tmp.path()).join(hex_of(&version)), &canonical).unwrap();
    let out = verify();
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains(&format!("orphan      objects/sha256/{}", hex_of(&version))),
        "{}",
        stdout(&out)
    );
    let out = register(tmp.path(), &draft, &workflow);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), version);
    assert!(!stdout(&verify()).contains("orphan"));

    // A half-written object under its final name (what a writer without temporary files
    // could leave) is corrupt: verify fails and registration refuses to build on it.
    let draft = variant(tmp.path(), 2);
    let canonical = lwirc(tmp.path(), &["canon", &draft]).stdout;
    let version = lwir_spec::canon::sha256_of(&canonical);
    let target = objects(tmp.path()).join(hex_of(&version));
    fs::write(&target, &canonical[..canonical.len() / 2]).unwrap();
    let out = verify();
    assert_exit(&out, 1);
    assert_stdout_has(&out, "corrupt");
    let out = register(tmp.path(), &draft, &workflow);
    assert_exit(&out, 1);
    assert_stderr_has(&out, "corrupt");
    assert!(!versions(tmp.path()).join(hex_of(&version)).exists());
}

/// The example definition with the description of slot `deep` set to `text` (a change that
/// weakens nothing: drift warns with LW710) — each `text` is another snapshot.
fn reworded(dir: &Path, text: &str) -> String {
    let mut definition = example_definition();
    definition["models"]["deep"]["description"] = text.into();
    write_json(dir, &format!("workflow-{}.json", text.len()), &definition)
}

/// After drift, a draft that is still clean against today's definition can be registered
/// again with `--rebase`: the same version, a new record pinning today's snapshot that
/// names the one it supersedes, the old one kept; drift then compares with the new one.
#[test]
fn rebase_registers_the_same_version_against_a_new_snapshot_and_keeps_the_old() {
    let tmp = tempfile::tempdir().unwrap();
    let draft = example("draft.json");
    let first = register(tmp.path(), &draft, &example("workflow.json"));
    assert_exit(&first, 0);
    let version = stdout(&first).trim().to_owned();
    let today = example("today.json");
    let drift = |dir: &Path| {
        lwirc(
            dir,
            &["drift", &version, "-d", &today, "--registry", REGISTRY],
        )
    };
    assert_exit(&drift(tmp.path()), 3);

    // Without --rebase: refused, and the way forward is named.
    let refused = register(tmp.path(), &draft, &today);
    assert_exit(&refused, 1);
    assert_stderr_has(&refused, "--rebase");

    let first_record = lwirc(
        tmp.path(),
        &["registry", "show", &version, "--registry", REGISTRY],
    );
    let first_record: serde_json::Value = serde_json::from_slice(&first_record.stdout).unwrap();
    let stored_before = names(&objects(tmp.path()));
    let out = rebase(tmp.path(), &draft, &today);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), version, "the version does not change");
    assert_stderr_has(&out, "lost capability `tool_use`");
    // Everything stored before is still there; one record more.
    let stored_after = names(&objects(tmp.path()));
    assert!(stored_after.is_superset(&stored_before));
    assert_eq!(stored_after.len(), stored_before.len() + 1);
    assert!(
        versions(tmp.path())
            .join(format!("{}.1", hex_of(&version)))
            .is_file()
    );

    assert_exit(&drift(tmp.path()), 0);
    let show = lwirc(
        tmp.path(),
        &["registry", "show", &version, "--registry", REGISTRY],
    );
    let record: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    // The object holding the first record, which the new one names.
    let first_hex = stored_before
        .iter()
        .find(|hex| {
            let bytes = fs::read(objects(tmp.path()).join(hex)).unwrap();
            serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|v| v == first_record)
        })
        .unwrap();
    let first_digest = format!("sha256:{first_hex}");
    assert_eq!(record["supersedes"], first_digest.as_str());
    assert_ne!(
        record["capability_snapshot"],
        first_record["capability_snapshot"]
    );

    // Again against the same definition: idempotent, nothing written.
    let again = rebase(tmp.path(), &draft, &today);
    assert_exit(&again, 0);
    assert_stderr_has(&again, "already registered");
    assert_eq!(names(&objects(tmp.path())), stored_after);
    // Back against the first definition: refused without --rebase (the latest counts).
    assert_exit(&register(tmp.path(), &draft, &example("workflow.json")), 1);

    let verify = lwirc(tmp.path(), &["registry", "verify", "--registry", REGISTRY]);
    assert_exit(&verify, 0);
    assert_eq!(stdout(&verify), "verified 1 version and 3 objects: ok\n");
    let rows = listed_json(tmp.path());
    assert_eq!(
        rows.as_array().unwrap().len(),
        1,
        "one version, listed once"
    );
}

/// Concurrent rebases against different definitions all land, one after the other, each
/// superseding the one before.
#[test]
fn concurrent_rebases_all_land_in_one_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let draft = example("draft.json");
    assert_exit(&register(tmp.path(), &draft, &example("workflow.json")), 0);
    let definitions: Vec<String> = (1..=4)
        .map(|n| reworded(tmp.path(), &"slot description ".repeat(n)))
        .collect();
    let children: Vec<_> = definitions
        .iter()
        .map(|d| {
            command(
                tmp.path(),
                &[
                    "register",
                    &draft,
                    "-d",
                    d,
                    "--registry",
                    REGISTRY,
                    "--rebase",
                ],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        assert_exit(&child.wait_with_output().unwrap(), 0);
    }
    let version = hex_of("sha256:5c281a30701ece8463ea55bda73114d347b874931ef2b7cfd530b2c4cb6f9510")
        .to_owned();
    let refs = names(&versions(tmp.path()));
    let expected: BTreeSet<String> = std::iter::once(version.clone())
        .chain((1..=4).map(|n| format!("{version}.{n}")))
        .collect();
    assert_eq!(refs, expected);
    let verify = lwirc(tmp.path(), &["registry", "verify", "--registry", REGISTRY]);
    assert_exit(&verify, 0);
    assert_eq!(stdout(&verify), "verified 1 version and 6 objects: ok\n");
}

/// A version reference that names another version's (intact) record is what is wrong, and
/// is what verify blames — not the record object, which hashes to its name.
#[test]
fn a_reference_naming_another_versions_record_is_blamed() {
    let tmp = tempfile::tempdir().unwrap();
    let workflow = example("workflow.json");
    let a = stdout(&register(tmp.path(), &variant(tmp.path(), 1), &workflow));
    let b = stdout(&register(tmp.path(), &variant(tmp.path(), 2), &workflow));
    let (a, b) = (hex_of(&a).to_owned(), hex_of(&b).to_owned());
    let ref_of = |hex: &str| -> serde_json::Value {
        serde_json::from_slice(&fs::read(versions(tmp.path()).join(hex)).unwrap()).unwrap()
    };
    // Point A's reference at B's record, canonically written.
    let forged = serde_json::to_vec(&serde_json::json!({
        "record": ref_of(&b)["record"],
        "version": format!("sha256:{a}"),
    }))
    .unwrap();
    let path = versions(tmp.path()).join(&a);
    flip_byte(&path, 0);
    fs::write(&path, forged).unwrap();
    let verify = lwirc(tmp.path(), &["registry", "verify", "--registry", REGISTRY]);
    assert_exit(&verify, 1);
    let text = stdout(&verify) + &stderr(&verify);
    let blamed: Vec<&str> = text.lines().filter(|l| l.contains("corrupt")).collect();
    assert_eq!(blamed.len(), 1, "{text}");
    assert!(blamed[0].contains(&format!("versions/{a}")), "{text}");
    assert!(
        blamed[0].contains(&format!("the record of sha256:{b}")),
        "{text}"
    );
}
