//! `lwirc compile`: registering exactly one version (or none), the event log, and resuming a
//! crashed session — reusing recorded answers, failing closed on drift, torn last lines.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const CLEAN_VERSION: &str =
    "sha256:5c281a30701ece8463ea55bda73114d347b874931ef2b7cfd530b2c4cb6f9510";

fn events(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect()
}

/// The events without what differs between two runs of the same session in two places:
/// times, durations, and the paths of the definition and the planner.
fn comparable(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut data = e["data"].clone();
            if let Some(d) = data.as_object_mut() {
                for varies in ["elapsed_ms", "definition", "planner"] {
                    d.remove(varies);
                }
            }
            json!({ "seq": e["seq"], "event": e["event"], "data": data })
        })
        .collect()
}

fn versions_in(registry: &Path) -> Vec<Value> {
    let out = lwirc(
        registry.parent().unwrap(),
        &[
            "registry",
            "list",
            "--registry",
            &registry.display().to_string(),
            "--format",
            "json",
        ],
    );
    assert_exit(&out, 0);
    serde_json::from_str(&stdout(&out)).unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
    definition: String,
    planner: String,
}

impl Setup {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn session(&self, name: &str) -> PathBuf {
        self.path().join("sessions").join(name)
    }

    fn registry(&self) -> PathBuf {
        self.path().join("registry")
    }

    fn compile(&self, session: &Path, extra: &[&str]) -> std::process::Command {
        self.compile_with(&self.planner, session, extra)
    }

    /// `lwirc compile` of the setup's definition with `planner`, into the setup's registry.
    fn compile_with(&self, planner: &str, session: &Path, extra: &[&str]) -> std::process::Command {
        let registry = self.registry().display().to_string();
        let session = session.display().to_string();
        let mut args = vec![
            "compile",
            &self.definition,
            "--planner",
            planner,
            "--registry",
            &registry,
            "--session",
            &session,
        ];
        args.extend_from_slice(extra);
        command(self.path(), &args)
    }
}

/// The shipped example: a first draft with three mistakes (two with safe fixes), then the
/// clean draft for repair attempt 1.
fn example_setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let definition = write_json(dir.path(), "workflow.json", &example_definition());
    let planner = scripted_planner(&example("planner"));
    Setup {
        dir,
        definition,
        planner,
    }
}

#[test]
fn compile_goes_from_findings_to_exactly_one_registered_version() {
    let s = example_setup();
    let session = s.session("one");
    let out = s
        .compile(&session, &["--input", &example("input.json")])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), format!("{CLEAN_VERSION}\n"));
    let err = stderr(&out);
    assert!(err.contains("LW301 /steps/0/tool"), "{err}");
    assert!(err.contains("safe fixes: applied 2"), "{err}");
    assert!(err.contains("planner call 2: repair attempt 1"), "{err}");

    let list = versions_in(&s.registry());
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["version"], CLEAN_VERSION);

    let log = events(&session);
    assert_eq!(
        kinds(&log),
        [
            "harness.session.started",
            "harness.model.called",
            "harness.model.responded",
            "validation.completed",
            "repair.applied",
            "validation.completed",
            "harness.model.called",
            "harness.model.responded",
            "validation.completed",
            "workflow.registered",
        ]
    );
    let started = &log[0]["data"];
    assert_eq!(started["input"], json!({ "repo": "acme/widgets" }));
    assert_eq!(started["manifest"]["plannerModelSlotId"], "deep");
    assert!(
        started["manifest"]["systemPromptHash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(log[3]["data"]["errors"], 3);
    assert_eq!(log[5]["data"]["errors"], 1);
    assert_eq!(log[8]["data"]["version"], CLEAN_VERSION);
    assert_eq!(log[9]["data"]["version"], CLEAN_VERSION);
    // The final draft is kept in the session directory.
    let kept: Value =
        serde_json::from_slice(&std::fs::read(session.join("draft.json")).unwrap()).unwrap();
    assert_eq!(kept, example_draft());
}

#[test]
fn a_failing_compile_registers_nothing() {
    let s = example_setup();
    let session = s.session("failing");
    let planner = root().join("examples/planners/attention.sh");
    let out = s
        .compile_with(&planner.display().to_string(), &session, &[])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(stdout(&out).is_empty());
    assert!(!s.registry().join("versions").exists() || versions_in(&s.registry()).is_empty());
    let log = events(&session);
    let last = log.last().unwrap();
    assert_eq!(last["event"], "session.failed");
    assert_eq!(last["data"]["report"]["stopped_by"], "attention");
}

#[test]
fn a_failing_proposal_keeps_its_last_draft_and_registers_nothing() {
    let s = example_setup();
    let session = s.session("exhausted");
    let out = s
        .compile_with(
            &first_draft_only(&s),
            &session,
            &["--max-planner-calls", "1"],
        )
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert_stderr_has(&out, "max_planner_calls reached");
    assert!(session.join("last-draft.json").exists());
    assert!(!s.registry().join("versions").exists() || versions_in(&s.registry()).is_empty());
}

/// A planner that records every call in `calls.txt` and, the first time it is asked for call
/// 2, hangs long enough to be killed in flight.
fn slow_second_call(s: &Setup) -> String {
    let calls = s.path().join("calls.txt");
    let once = s.path().join("slept");
    script(
        s.path(),
        "planner.sh",
        &format!(
            "echo \"$LWIRC_PLANNER_CALL\" >> '{calls}'\n\
             if [ \"$LWIRC_PLANNER_CALL\" = 2 ] && [ ! -e '{once}' ]; then\n\
               trap \"touch '{once}.terminated'; exit 143\" TERM\n\
               touch '{once}'; sleep 20 & wait; exit 1\n\
             fi\n\
             exec {scripted}",
            calls = calls.display(),
            once = once.display(),
            scripted = scripted_planner(&example("planner")),
        ),
    )
}

fn calls(s: &Setup) -> Vec<String> {
    std::fs::read_to_string(s.path().join("calls.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until the file at `path` contains `needle` (an empty needle: until it exists).
fn wait_for(path: &Path, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("`{needle}` never appeared in {}", path.display());
}

#[test]
fn a_killed_session_resumes_with_one_more_planner_call_and_the_same_result() {
    // The uninterrupted run, for comparison.
    let reference = example_setup();
    let ref_session = reference.session("s");
    let out = reference.compile(&ref_session, &[]).output().unwrap();
    assert_exit(&out, 0);

    let mut s = example_setup();
    s.planner = slow_second_call(&s);
    let session = s.session("s");
    let mut child = s.compile(&session, &[]).spawn().unwrap();
    // After the first answer, with the second call in flight (its planner is hanging).
    wait_for(&session.join("events.jsonl"), "harness.model.responded");
    wait_for(&session.join("events.jsonl"), "\"kind\":\"repair\"");
    wait_for(&s.path().join("slept"), "");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // On Linux the planner hears that lwirc died (it does not run on unattended).
    #[cfg(target_os = "linux")]
    wait_for(&s.path().join("slept.terminated"), "");
    let before = calls(&s);
    assert_eq!(before.first().map(String::as_str), Some("1"));
    assert!(
        !kinds(&events(&session)).contains(&"workflow.registered".to_owned()),
        "killed too late"
    );

    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), format!("{CLEAN_VERSION}\n"));
    let after = calls(&s);
    assert_eq!(
        &after[before.len()..],
        ["2"],
        "exactly one more planner call, the one in flight"
    );
    assert_stderr_has(&out, "(replayed) planner call 1");

    // The same log as the uninterrupted run, event for event (times and durations aside).
    assert_eq!(
        comparable(&events(&session)),
        comparable(&events(&ref_session))
    );
    assert_eq!(versions_in(&s.registry()).len(), 1);
}

/// A scripted planner with only the example's first draft recorded: it answers `attention`
/// to the repair request.
fn first_draft_only(s: &Setup) -> String {
    let answers_dir = s.path().join("answers");
    std::fs::create_dir_all(&answers_dir).unwrap();
    std::fs::copy(
        example("planner/call-1.json"),
        answers_dir.join("call-1.json"),
    )
    .unwrap();
    scripted_planner(&answers_dir.display().to_string())
}

/// A session that stopped half-way: the planner gave up after the first draft.
fn stopped_session(s: &Setup, name: &str) -> PathBuf {
    let session = s.session(name);
    let out = s
        .compile_with(&first_draft_only(s), &session, &[])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    session
}

#[test]
fn a_changed_system_prompt_fails_the_resume_closed() {
    let s = example_setup();
    let session = stopped_session(&s, "drift");
    let log_before = std::fs::read(session.join("events.jsonl")).unwrap();
    let mut definition = example_definition();
    definition["planner"]["system"] = json!("You are a different planner now.");
    write_json(s.path(), "workflow.json", &definition);

    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("CapabilityDriftError"), "{err}");
    assert!(err.contains("systemPromptHash"), "{err}");
    assert!(err.contains("workflowDefinitionHash"), "{err}");
    assert!(
        !err.contains("globalToolsHash"),
        "the tools did not change: {err}"
    );
    assert_eq!(
        std::fs::read(session.join("events.jsonl")).unwrap(),
        log_before,
        "nothing ran"
    );
}

#[test]
fn a_torn_last_line_is_ignored_and_other_damage_refused() {
    let s = example_setup();
    let session = s.session("torn");
    assert_exit(&s.compile(&session, &[]).output().unwrap(), 0);
    let log_path = session.join("events.jsonl");
    let complete = std::fs::read(&log_path).unwrap();

    // A crash in the middle of writing a line.
    let mut torn = complete.clone();
    torn.extend_from_slice(br#"{"seq":11,"time":"2026-"#);
    std::fs::write(&log_path, &torn).unwrap();
    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), format!("{CLEAN_VERSION}\n"));
    assert_eq!(
        std::fs::read(&log_path).unwrap(),
        complete,
        "torn line dropped"
    );

    // Damage anywhere else is an error, and the log is left as it is.
    let text = String::from_utf8(complete).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{ not an event";
    let damaged = lines.join("\n") + "\n";
    std::fs::write(&log_path, &damaged).unwrap();
    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 2);
    assert_stderr_has(&out, "damaged at line 4");
    assert_eq!(std::fs::read_to_string(&log_path).unwrap(), damaged);
}

#[test]
fn a_log_that_does_not_match_its_replay_is_refused() {
    let s = example_setup();
    let session = s.session("edited");
    assert_exit(&s.compile(&session, &[]).output().unwrap(), 0);
    let log_path = session.join("events.jsonl");
    let text = std::fs::read_to_string(&log_path).unwrap();
    let edited = text.replacen("\"errors\":3", "\"errors\":0", 1);
    assert_ne!(edited, text);
    std::fs::write(&log_path, &edited).unwrap();
    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 2);
    assert_stderr_has(&out, "does not match a replay of this session at event 4");
}

#[test]
fn a_session_directory_is_never_reused_without_resume() {
    let s = example_setup();
    let session = s.session("twice");
    assert_exit(&s.compile(&session, &[]).output().unwrap(), 0);
    let out = s.compile(&session, &[]).output().unwrap();
    assert_exit(&out, 2);
    assert_stderr_has(&out, "--resume");
}

/// A planner that records every call in `calls.txt`, and holds its first call until the file
/// `release` exists (at most 20 s), telling that it is waiting with the file `waiting`.
fn held_first_call(s: &Setup) -> String {
    let calls = s.path().join("calls.txt");
    let waiting = s.path().join("waiting");
    let release = s.path().join("release");
    script(
        s.path(),
        "planner.sh",
        &format!(
            "echo \"$LWIRC_PLANNER_CALL\" >> '{calls}'\n\
             if [ \"$LWIRC_PLANNER_CALL\" = 1 ]; then\n\
               touch '{waiting}'; i=0\n\
               while [ ! -e '{release}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n\
             fi\n\
             exec {scripted}",
            calls = calls.display(),
            waiting = waiting.display(),
            release = release.display(),
            scripted = scripted_planner(&example("planner")),
        ),
    )
}

#[test]
fn a_session_is_owned_by_one_process_at_a_time() {
    let mut s = example_setup();
    s.planner = held_first_call(&s);
    let session = s.session("owned");
    let first = s.compile(&session, &[]).spawn().unwrap();
    wait_for(&s.path().join("waiting"), "");
    let log_path = session.join("events.jsonl");
    let log_before = std::fs::read(&log_path).unwrap();

    // While the first process owns the session, a resume and a fresh compile of it are both
    // refused, without a planner call and without touching the log.
    for extra in [&["--resume"][..], &[]] {
        let out = s.compile(&session, extra).output().unwrap();
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("the session `{}` is in use", session.display()))
                && err.contains("another lwirc process owns it"),
            "{extra:?}: {err}"
        );
        assert_eq!(std::fs::read(&log_path).unwrap(), log_before, "{extra:?}");
        assert_eq!(calls(&s), ["1"], "{extra:?}: the planner was called");
    }

    // The owner finishes normally, with a log in order.
    std::fs::write(s.path().join("release"), "").unwrap();
    let out = first.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), format!("{CLEAN_VERSION}\n"));
    let log = events(&session);
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=log.len() as u64).collect::<Vec<_>>());
    assert_eq!(kinds(&log).last().unwrap(), "workflow.registered");
    assert_eq!(calls(&s), ["1", "2"]);

    // Once it is done, the session is free again: resuming a finished session replays it.
    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(calls(&s), ["1", "2"]);
}

/// A planner that records that it was called in `called`, then answers like the example.
fn recording_planner(s: &Setup) -> String {
    script(
        s.path(),
        "recording.sh",
        &format!(
            "touch '{}'; exec {}",
            s.path().join("called").display(),
            scripted_planner(&example("planner"))
        ),
    )
}

#[test]
fn an_unusable_registry_or_session_directory_fails_before_any_planner_call() {
    let s = example_setup();
    let planner = recording_planner(&s);
    let compile = |registry: &str, session: &Path| {
        let session = session.display().to_string();
        let args = [
            "compile",
            &s.definition,
            "--planner",
            &planner,
            "--registry",
            registry,
            "--session",
            &session,
        ];
        command(s.path(), &args).output().unwrap()
    };
    let file = s.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let file = file.display().to_string();
    let under_file = format!("{file}/registry");
    for registry in [&file, &under_file] {
        let session = s.session("registry");
        let out = compile(registry, &session);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("the registry `{registry}` cannot be used"))
                && err.contains("is not a directory")
                && err.contains("no planner was called"),
            "{err}"
        );
        assert!(!s.path().join("called").exists(), "the planner was called");
        assert!(!session.exists(), "a session was started");
    }

    // A read-only registry (meaningless when running as root, who may write anyway).
    use std::os::unix::fs::PermissionsExt;
    let read_only = s.path().join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(read_only.join("probe"), "").is_err() {
        let registry = read_only.display().to_string();
        let session = s.session("read-only");
        let out = compile(&registry, &session);
        assert_exit(&out, 2);
        assert_stderr_has(&out, "cannot write in");
        assert!(!s.path().join("called").exists(), "the planner was called");
    }

    // A session directory that cannot be created.
    let registry = s.registry().display().to_string();
    let out = compile(&registry, Path::new(&under_file));
    assert_exit(&out, 2);
    assert_stderr_has(&out, "session log");
    assert!(!s.path().join("called").exists(), "the planner was called");
}

/// A log written by an earlier lwirc (`tests/data/session-in-flight`, killed with its
/// second planner call in flight) still resumes: the same event names and fields, replayed
/// one for one, and only the call in flight is made again.
#[test]
fn a_log_written_by_an_earlier_lwirc_still_resumes() {
    let s = example_setup();
    let session = s.session("old");
    std::fs::create_dir_all(&session).unwrap();
    let old = root().join("crates/lwirc/tests/data/session-in-flight/events.jsonl");
    std::fs::copy(&old, session.join("events.jsonl")).unwrap();
    let out = s.compile(&session, &["--resume"]).output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), format!("{CLEAN_VERSION}\n"));
    let log = events(&session);
    let recorded = std::fs::read_to_string(&old).unwrap();
    // The old lines are kept as they were; the resumed run appends after them.
    let text = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    assert!(text.starts_with(&recorded));
    assert_eq!(
        kinds(&log)[7..],
        [
            "harness.model.responded",
            "validation.completed",
            "workflow.registered"
        ]
    );
    assert_eq!(log[7]["seq"], 8);
}
