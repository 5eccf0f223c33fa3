//! One conformance suite for every goal store: a directory, and PostgreSQL (which
//! `.ci/run` starts). Each test runs against each store through the `lwirc` binary.
//!
//! The PostgreSQL store is a database of its own per test, created on the server at
//! `LWIRC_TEST_POSTGRES` (`postgres://USER@127.0.0.1:PORT/postgres`). Without it the
//! PostgreSQL half says it is skipped, unless `LWIRC_REQUIRE_ENGINES` is set (CI sets it).

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// A goal store to test: how `--goals` names it.
struct Backend {
    label: &'static str,
    goals: String,
}

fn backends(dir: &Path, name: &str) -> Vec<Backend> {
    let mut out = vec![Backend {
        label: "directory",
        goals: dir.join("goals").display().to_string(),
    }];
    match std::env::var("LWIRC_TEST_POSTGRES")
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(admin) => {
            let database = format!(
                "lwirc_{name}_{}_{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos()
            );
            let mut client = postgres::Client::connect(&admin, postgres::NoTls)
                .expect("LWIRC_TEST_POSTGRES accepts connections");
            client
                .batch_execute(&format!("CREATE DATABASE {database}"))
                .unwrap();
            let base = admin.rsplit_once('/').unwrap().0;
            out.push(Backend {
                label: "postgres",
                goals: format!("{base}/{database}"),
            });
        }
        None => {
            assert!(
                std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
                "LWIRC_REQUIRE_ENGINES is set but LWIRC_TEST_POSTGRES names no server"
            );
            skip_note!(
                "skipped the PostgreSQL store: set LWIRC_TEST_POSTGRES=postgres://USER@127.0.0.1:PORT/postgres \
                 (see .ci/run)"
            );
        }
    }
    out
}

fn goal_cmd(d: &Path, b: &Backend, args: &[&str]) -> std::process::Command {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--goals", &b.goals]);
    command(d, &all)
}

fn run(d: &Path, b: &Backend, args: &[&str]) -> std::process::Output {
    goal_cmd(d, b, args).output().unwrap()
}

fn create(d: &Path, b: &Backend, file: &Value) -> String {
    let path = write_json(d, "goal.json", file);
    let out = run(d, b, &["goal", "create", &path]);
    assert_exit(&out, 0);
    stdout(&out).trim().to_owned()
}

fn example_goal() -> Value {
    serde_json::from_slice(&std::fs::read(root().join("examples/goals/goal.json")).unwrap())
        .unwrap()
}

fn show(d: &Path, b: &Backend, goal: &str) -> Value {
    let out = run(d, b, &["goal", "show", goal, "--format", "json"]);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The goal's events, read from the store the way a second client would.
fn event_seqs(b: &Backend, d: &Path, goal: &str) -> Vec<(u64, String)> {
    if b.label == "postgres" {
        let mut client = postgres::Client::connect(&b.goals, postgres::NoTls).unwrap();
        return client
            .query(
                "SELECT seq, line FROM lwir_goal_events WHERE goal = $1 ORDER BY seq",
                &[&goal],
            )
            .unwrap()
            .iter()
            .map(|r| {
                let line: String = r.get(1);
                let e: Value = serde_json::from_str(&line).unwrap();
                (
                    r.get::<_, i64>(0) as u64,
                    format!("{} {line}", e["event"].as_str().unwrap()),
                )
            })
            .collect();
    }
    let log = std::fs::read_to_string(Path::new(&b.goals).join(goal).join("events.jsonl")).unwrap();
    let _ = d;
    log.lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            (e["seq"].as_u64().unwrap(), {
                // The event as PostgreSQL keeps it: without the directory's chain hash.
                let event: lwir_repair::events::Event = serde_json::from_str(l).unwrap();
                format!(
                    "{} {}",
                    e["event"].as_str().unwrap(),
                    serde_json::to_string(&event).unwrap()
                )
            })
        })
        .collect()
}

fn assert_no_gaps(seqs: &[(u64, String)]) {
    for (i, (seq, _)) in seqs.iter().enumerate() {
        assert_eq!(
            *seq,
            i as u64 + 1,
            "the log has a gap or a duplicate: {seqs:?}"
        );
    }
}

#[test]
fn the_same_goal_file_twice_is_one_goal() {
    let dir = goal_registry();
    let d = dir.path();
    for b in backends(d, "idempotent") {
        let first = create(d, &b, &example_goal());
        let events = event_seqs(&b, d, &first).len();
        // The same file, its members in another order: the same goal, nothing written.
        let mut reordered = serde_json::Map::new();
        let file = example_goal();
        for (k, v) in file.as_object().unwrap().iter().rev() {
            reordered.insert(k.clone(), v.clone());
        }
        let again = create(d, &b, &Value::Object(reordered));
        assert_eq!(first, again, "{}", b.label);
        assert_eq!(event_seqs(&b, d, &first).len(), events, "{}", b.label);
        let list = run(d, &b, &["goal", "list", "--format", "json"]);
        assert_exit(&list, 0);
        let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{}: {listed}", b.label);
        // Found by a prefix of its id and by its name.
        let prefix = &first[..first.len() - 6];
        assert_eq!(show(d, &b, prefix)["goal"], first, "{}", b.label);
        assert_eq!(show(d, &b, "triage-acme-w49")["goal"], first, "{}", b.label);
    }
}

#[test]
fn eight_concurrent_reporters_serialize_without_gaps() {
    let dir = goal_registry();
    let d = dir.path();
    for b in backends(d, "reporters") {
        let goal = create(d, &b, &example_goal());
        // Eight processes report a failed attempt of the root at once; its ceiling is two
        // attempts, so two are recorded and the others refused — never more, never a gap.
        let children: Vec<_> = (0..8)
            .map(|n| {
                goal_cmd(
                    d,
                    &b,
                    &[
                        "goal",
                        "report",
                        &goal,
                        "triage",
                        "failed",
                        "--error",
                        &format!("e{n}"),
                    ],
                )
                .spawn()
                .unwrap()
            })
            .collect();
        let mut refused = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            match out.status.code() {
                Some(0) => {}
                Some(1) => refused += 1,
                other => panic!("{}: exit {other:?}: {}", b.label, stderr(&out)),
            }
        }
        assert_eq!(refused, 6, "{}", b.label);
        let seqs = event_seqs(&b, d, &goal);
        assert_no_gaps(&seqs);
        let p = show(d, &b, &goal);
        assert_eq!(p["attempts"]["used"], 2, "{}: {p}", b.label);
    }
}

#[test]
fn a_goal_file_or_event_changed_behind_lwircs_back_is_found() {
    let dir = goal_registry();
    let d = dir.path();
    for b in backends(d, "tamper") {
        let goal = create(d, &b, &example_goal());
        let changed = |b: &Backend| {
            let out = run(d, b, &["goal", "show", &goal]);
            assert_eq!(out.status.code(), Some(2), "{}: {}", b.label, stdout(&out));
            assert!(
                stderr(&out).contains("damaged"),
                "{}: {}",
                b.label,
                stderr(&out)
            );
            let verify = command(d, &["goals", "verify", "--goals", &b.goals])
                .output()
                .unwrap();
            assert_exit(&verify, 1);
        };
        if b.label == "postgres" {
            let mut client = postgres::Client::connect(&b.goals, postgres::NoTls).unwrap();
            client
                .execute(
                    "UPDATE lwir_goals SET file = convert_to(replace(convert_from(file, 'UTF8'), 'acme', 'acne'), 'UTF8') WHERE goal = $1",
                    &[&goal],
                )
                .unwrap();
            changed(&b);
            client
                .execute("UPDATE lwir_goals SET file = convert_to(replace(convert_from(file, 'UTF8'), 'acne', 'acme'), 'UTF8')", &[])
                .unwrap();
            assert_exit(&run(d, &b, &["goal", "show", &goal]), 0);
            // An event row rewritten (valid JSON, another value): the chain says so.
            client
                .execute(
                    "UPDATE lwir_goal_events SET line = replace(line, 'triage-acme', 'triage-acne') WHERE seq = 1",
                    &[],
                )
                .unwrap();
            changed(&b);
        } else {
            let file = Path::new(&b.goals).join(&goal).join("goal.json");
            make_writable(&file);
            let text = std::fs::read_to_string(&file).unwrap();
            std::fs::write(&file, text.replace("acme", "acne")).unwrap();
            changed(&b);
            std::fs::write(&file, text).unwrap();
            assert_exit(&run(d, &b, &["goal", "show", &goal]), 0);
            // An event line rewritten (valid JSON, another value): the chain says so.
            let log = Path::new(&b.goals).join(&goal).join("events.jsonl");
            let lines = std::fs::read_to_string(&log).unwrap();
            std::fs::write(&log, lines.replacen("triage-acme", "triage-acne", 1)).unwrap();
            changed(&b);
        }
    }
}

#[test]
fn a_driver_killed_mid_run_loses_nothing_and_lets_the_next_one_take_over() {
    let dir = goal_registry();
    let d = dir.path();
    for b in backends(d, "killed") {
        let goal = create(d, &b, &example_goal());
        let marker = d.join(format!("started-{}", b.label));
        let slow = script(
            d,
            &format!("slow-{}.sh", b.label),
            &format!(
                "cat >/dev/null; touch {}; sleep 30; echo '{{\"kind\":\"succeeded\",\"output\":{{\"summary\":\"s\"}}}}'",
                marker.display()
            ),
        );
        let mut driver = goal_cmd(d, &b, &["goal", "run", &goal, "--runner", &slow])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !marker.exists() {
            assert!(
                Instant::now() < deadline,
                "{}: the runner never started",
                b.label
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        driver.kill().unwrap(); // SIGKILL, mid-attempt
        driver.wait().unwrap();
        // The run lock went with the process: the next driver takes over at once, records
        // the attempt in flight as interrupted, and finishes the goal.
        let ok = script(
            d,
            &format!("ok-{}.sh", b.label),
            "cat >/dev/null; echo '{\"kind\":\"succeeded\",\"output\":{\"summary\":\"s\"}}'",
        );
        let out = run(d, &b, &["goal", "run", &goal, "--runner", &ok]);
        assert_exit(&out, 0);
        let seqs = event_seqs(&b, d, &goal);
        assert_no_gaps(&seqs);
        assert!(
            seqs.iter().any(|(_, e)| e.contains("interrupted")),
            "{}: {seqs:?}",
            b.label
        );
        assert_eq!(show(d, &b, &goal)["status"], "succeeded", "{}", b.label);
    }
}

/// A goal of four items in a chain (`t1` → `t2` → `t3` → `t4`, the root) and two
/// independent ones, at most two attempts running at once.
fn chain_goal() -> Value {
    let mut file = example_goal();
    let item = |key: &str, after: &[&str]| json!({ "key": key, "template": "triage", "input": { "repo": "${ goal.input.repo }" }, "after": after });
    file["work"] = json!([
        item("t1", &[]),
        item("t2", &["t1"]),
        item("t3", &["t2"]),
        item("a", &[]),
        item("b", &[]),
        item("t4", &["t3", "a", "b"]),
    ]);
    file["root"] = json!("t4");
    file["limits"]["max_parallel"] = json!(2);
    file["limits"]["max_total_attempts"] = json!(12);
    file
}

#[test]
fn two_servers_on_one_goal_run_every_item_exactly_once() {
    let dir = goal_registry();
    let d = dir.path();
    for b in backends(d, "servers") {
        let goal = create(d, &b, &chain_goal());
        let ran = d.join(format!("ran-{}.log", b.label));
        let runner = script(
            d,
            &format!("count-{}.sh", b.label),
            &format!(
                "cat >/dev/null; echo \"$LWIRC_WORK_KEY $PPID\" >> {}; sleep 0.2; echo '{{\"kind\":\"succeeded\",\"output\":{{\"summary\":\"s\"}}}}'",
                ran.display()
            ),
        );
        let serve = || {
            goal_cmd(
                d,
                &b,
                &["goal", "serve", "--runner", &runner, "--interval", "0.05"],
            )
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
        };
        let mut servers = [serve(), serve()];
        let deadline = Instant::now() + Duration::from_secs(60);
        while show(d, &b, &goal)["status"] != "succeeded" {
            assert!(
                Instant::now() < deadline,
                "{}: the goal did not finish",
                b.label
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        for server in &mut servers {
            // SAFETY: `kill` has no memory-safety preconditions; the pid is our child's.
            unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
            assert_eq!(server.wait().unwrap().code(), Some(0), "{}", b.label);
        }
        let log = std::fs::read_to_string(&ran).unwrap();
        let mut keys: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["a", "b", "t1", "t2", "t3", "t4"],
            "{}: {log}",
            b.label
        );
        let seqs = event_seqs(&b, d, &goal);
        assert_no_gaps(&seqs);
        let started = seqs
            .iter()
            .filter(|(_, e)| e.starts_with("work.started "))
            .count();
        assert_eq!(started, 6, "{}: {seqs:?}", b.label);
    }
}

#[test]
fn goals_copy_moves_whole_goals_between_stores() {
    let dir = goal_registry();
    let d = dir.path();
    let all = backends(d, "copy");
    let source = &all[0];
    let goal = create(d, source, &example_goal());
    for e in ["e1", "e2"] {
        assert_exit(
            &run(
                d,
                source,
                &["goal", "report", &goal, "triage", "failed", "--error", e],
            ),
            0,
        );
    }
    // A replan, so that there is a plan's log and files to copy.
    let planner = format!(
        "{} {}",
        root().join("examples/planners/scripted.sh").display(),
        root().join("examples/goals/planner").display()
    );
    assert_exit(
        &run(d, source, &["goal", "replan", &goal, "--planner", &planner]),
        0,
    );
    let before = show(d, source, &goal);
    for to in &all {
        let destination = if to.label == "directory" {
            format!("{}-copy", to.goals)
        } else {
            to.goals.clone()
        };
        let out = command(d, &["goals", "copy", &source.goals, &destination])
            .output()
            .unwrap();
        assert_exit(&out, 0);
        assert_stderr_has(&out, "1 copied, 0 already there, 0 problems");
        let again = command(d, &["goals", "copy", &source.goals, &destination])
            .output()
            .unwrap();
        assert_stderr_has(&again, "0 copied, 1 already there");
        let copied = Backend {
            label: to.label,
            goals: destination.clone(),
        };
        assert_eq!(show(d, &copied, &goal), before, "{}", to.label);
        assert_eq!(event_seqs(&copied, d, &goal), event_seqs(source, d, &goal));
        let verify = command(d, &["goals", "verify", "--goals", &destination])
            .output()
            .unwrap();
        assert_exit(&verify, 0);
        // The plan's files came along: approving it works there.
        assert_exit(&run(d, &copied, &["goal", "approve", &goal, "p1"]), 0);
    }
}

#[test]
fn a_goal_row_with_a_hostile_name_is_not_a_goal_and_never_printed() {
    let dir = goal_registry();
    let d = dir.path();
    for b in backends(d, "hostile") {
        if b.label != "postgres" {
            continue;
        }
        let goal = create(d, &b, &example_goal());
        // A row written behind lwirc's back, its name an escape sequence.
        let mut client = postgres::Client::connect(&b.goals, postgres::NoTls).unwrap();
        client
            .execute(
                "INSERT INTO lwir_goals (goal, file) VALUES ($1, $2)",
                &[&"\u{1b}[2J\u{1b}]0;owned\u{7}", &b"{}".as_slice()],
            )
            .unwrap();
        for (args, says) in [
            (&["goal", "list"][..], goal.as_str()),
            (&["goals", "verify"][..], "verified 1 goal"),
        ] {
            let out = goal_cmd(d, &b, args).output().unwrap();
            assert_exit(&out, 0);
            let all = format!("{}{}", stdout(&out), stderr(&out));
            assert!(!all.contains('\u{1b}'), "{args:?}: {all:?}");
            assert!(all.contains(says), "{args:?}: {all}");
        }
        let copy = command(
            d,
            &[
                "goals",
                "copy",
                &b.goals,
                &d.join("copy").display().to_string(),
            ],
        )
        .output()
        .unwrap();
        assert_exit(&copy, 0);
        assert_stderr_has(&copy, "1 copied");
    }
}

#[test]
fn a_database_that_accepts_and_never_answers_is_an_error_not_a_wait() {
    // A listener that takes the connection and says nothing, and keeps it open for as long
    // as the test runs: lwirc gives up after its connect timeout (10 s) instead of waiting
    // for ever (were it to wait, this test would never end).
    let port = silent_listener().port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://lwir@127.0.0.1:{port}/lwir");
    let out = command(dir.path(), &["goal", "list", "--goals", &url])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert_stderr_has(&out, "did not complete the handshake within 10 s");
}

/// A TCP proxy to `upstream` (`HOST:PORT`) that forwards both ways until `freeze` exists,
/// and from then on forwards nothing, every connection held open: a database stopped
/// (SIGSTOP) mid-run, as the client sees it. Its port.
fn freezing_proxy(upstream: String, freeze: std::path::PathBuf) -> u16 {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let pump = |mut from: TcpStream, mut to: TcpStream, freeze: std::path::PathBuf| {
        std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if freeze.exists() {
                    // Stopped: what was sent is never delivered, and nothing is closed.
                    std::thread::sleep(Duration::from_secs(600));
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Write);
        });
    };
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            pump(
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                freeze.clone(),
            );
            pump(server, client, freeze.clone());
        }
    });
    port
}

#[test]
fn a_database_stopped_mid_run_fails_the_statement_in_flight() {
    let dir = goal_registry();
    let d = dir.path();
    let Some(b) = backends(d, "stopped")
        .into_iter()
        .find(|b| b.label == "postgres")
    else {
        return;
    };
    let (base, database) = b.goals.rsplit_once('/').unwrap();
    let upstream = base.rsplit_once('@').unwrap().1.to_owned();
    let freeze = d.join("freeze");
    let port = freezing_proxy(upstream, freeze.clone());
    let proxied = Backend {
        label: "postgres",
        goals: format!("postgres://lwir@127.0.0.1:{port}/{database}?statement_timeout=1"),
    };
    let goal = create(d, &proxied, &example_goal());
    // The runner's attempt succeeds, and the database stops before the driver records it.
    let runner = script(
        d,
        "stopping.sh",
        &format!(
            "cat >/dev/null; touch {}; echo '{{\"kind\":\"succeeded\",\"output\":{{\"summary\":\"s\"}}}}'",
            freeze.display()
        ),
    );
    let started = Instant::now();
    let out = output_within(
        goal_cmd(d, &proxied, &["goal", "run", &goal, "--runner", &runner]),
        Duration::from_secs(60),
    );
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!("postgres://lwir@127.0.0.1:{port}/{database}"))
            && stderr(&out).contains(
                "the server did not answer within 2 s (a statement may take \
                 statement_timeout=1 s, set in the URL, and its answer 1 s more to arrive)"
            ),
        "{}",
        stderr(&out)
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_password_in_the_url_is_never_printed() {
    let port = unused_port();
    let dir = tempfile::tempdir().unwrap();
    for (url, shown) in [
        (
            format!("postgres://u@127.0.0.1:{port}/x?password=pw-marker-1&connect_timeout=2"),
            format!("postgres://u@127.0.0.1:{port}/x?password=<redacted>&connect_timeout=2:"),
        ),
        (
            format!("postgres://u:pw-marker-1@127.0.0.1:{port}/x"),
            format!("postgres://u:<redacted>@127.0.0.1:{port}/x:"),
        ),
        (
            format!("postgres://u@127.0.0.1:{port}/x?password=pw-marker-1&statement_timeout=0"),
            "statement_timeout is `0`".to_owned(),
        ),
    ] {
        let out = command(dir.path(), &["goal", "list", "--goals", &url])
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(&shown), "{}", stderr(&out));
        assert!(!stderr(&out).contains("pw-marker-1"), "{}", stderr(&out));
    }
}

/// A newcomer's PostgreSQL mistakes each name what is wrong: nothing listening, a
/// database that does not exist, a role the server does not know.
#[test]
fn a_failed_connection_names_the_address_the_database_or_the_role() {
    let port = unused_port();
    let dir = tempfile::tempdir().unwrap();
    let list = |url: &str| {
        let out = command(dir.path(), &["goal", "list", "--goals", url])
            .output()
            .unwrap();
        assert_exit(&out, 2);
        stderr(&out)
    };
    let err = list(&format!("postgres://lwir@127.0.0.1:{port}/lwir"));
    assert!(
        err.contains(&format!(
            "nothing accepted the connection at 127.0.0.1:{port}"
        )),
        "{err}"
    );
    let Some(admin) = std::env::var("LWIRC_TEST_POSTGRES")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        return;
    };
    let base = admin.rsplit_once('/').unwrap().0;
    let err = list(&format!("{base}/no_such_database_here"));
    assert!(
        err.contains("the database `no_such_database_here` does not exist")
            && err.contains("createdb"),
        "{err}"
    );
    let (scheme_user, host) = base.split_once('@').unwrap();
    let scheme = scheme_user.split_once("//").unwrap().0;
    let err = list(&format!("{scheme}//no_such_role@{host}/postgres"));
    assert!(err.contains("no_such_role"), "{err}");
}

/// The same goal file created in two stores, each with a history of its own: `goals copy`
/// says so (not "damaged"), copies nothing over it, and still copies the other goals.
#[test]
fn goals_copy_of_a_goal_with_a_history_of_its_own_there_says_so_and_copies_the_rest() {
    let dir = goal_registry();
    let d = dir.path();
    let here = Backend {
        label: "directory",
        goals: d.join("here").display().to_string(),
    };
    let there = Backend {
        label: "directory",
        goals: d.join("there").display().to_string(),
    };
    let goal = create(d, &here, &example_goal());
    assert_eq!(create(d, &there, &example_goal()), goal);
    // Only here: a second goal, which the copy must still bring over.
    let mut other = example_goal();
    other["goal"] = serde_json::json!("another-goal");
    let second = create(d, &here, &other);
    assert_exit(
        &run(
            d,
            &here,
            &[
                "goal", "report", &goal, "triage", "failed", "--error", "here",
            ],
        ),
        0,
    );
    assert_exit(
        &run(
            d,
            &there,
            &[
                "goal", "report", &goal, "triage", "failed", "--error", "there",
            ],
        ),
        0,
    );
    let out = command(d, &["goals", "copy", &here.goals, &there.goals])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("it has a history of its own"), "{err}");
    assert!(!err.contains("damaged"), "{err}");
    assert!(
        err.contains("1 copied, 0 already there, 1 problem"),
        "{err}"
    );
    show(d, &there, &second);
}
