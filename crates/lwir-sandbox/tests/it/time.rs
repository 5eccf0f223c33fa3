//! CPU and wall time, and processes that try to outlive their call.

use std::time::Duration;

use lwir_sandbox::Limit;

use crate::support::{bash, marker, processes_with, python, run, sandbox_or_skip};

#[test]
fn a_busy_loop_is_stopped_by_its_cpu_limit() {
    let sandbox = sandbox_or_skip!();
    for mut job in [bash("while true; do :; done"), python("while True: pass")] {
        job.limits.cpu = Duration::from_secs(1);
        // Room for a loaded machine to give it that second.
        job.limits.wall = Duration::from_secs(60);
        let outcome = run(sandbox, &job);
        assert_eq!(outcome.limit, Some(Limit::Cpu), "{job:?}: {outcome:?}");
        assert_eq!(outcome.signal_name().as_deref(), Some("SIGXCPU"));
        assert_eq!(outcome.exit_status, None);
    }
}

#[test]
fn sleeping_past_the_wall_time_is_stopped_and_leaves_nothing() {
    let sandbox = sandbox_or_skip!();
    let marker = marker("sleep");
    let mut job = bash(&format!("exec -a {marker} sleep 1e9"));
    job.limits.wall = Duration::from_secs(1);
    let outcome = run(sandbox, &job);
    assert_eq!(outcome.limit, Some(Limit::Time), "{outcome:?}");
    assert_eq!(outcome.signal_name().as_deref(), Some("SIGKILL"));
    assert_eq!(outcome.exit_status, None);
    assert!(outcome.elapsed >= Duration::from_secs(1));
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}

/// A daemon: a child that starts a new session and forks again (so no parent waits for
/// it), keeps standard output open and writes to it.
fn daemon(marker: &str) -> String {
    format!(
        "( setsid bash -c 'while :; do echo tick; sleep 0.05; done # {marker}' & ) ; \
         ( ( exec -a {marker} sleep 1e9 ) & ) ; echo started"
    )
}

#[test]
fn a_daemon_holding_standard_output_dies_with_the_command() {
    let sandbox = sandbox_or_skip!();
    let marker = marker("daemon");
    let outcome = run(sandbox, &bash(&daemon(&marker)));
    // The command returned; the call did not wait for the daemon's pipe, it killed it.
    assert_eq!(outcome.exit_status, Some(0), "{outcome:?}");
    assert_eq!(outcome.limit, None);
    assert!(outcome.stdout_text().contains("started\n"), "{outcome:?}");
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}

#[test]
fn a_daemon_beside_a_command_that_runs_to_the_wall_time_dies_at_it() {
    let sandbox = sandbox_or_skip!();
    let marker = marker("daemon-wall");
    let mut job = bash(&format!("{}; sleep 1e9", daemon(&marker)));
    job.limits.wall = Duration::from_secs(1);
    let outcome = run(sandbox, &job);
    assert_eq!(outcome.limit, Some(Limit::Time), "{outcome:?}");
    assert!(outcome.stdout_text().contains("tick"), "{outcome:?}");
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}

/// Set in the copy of this binary that [`when_the_caller_dies_the_sandbox_dies_with_it`]
/// starts and kills; its value is the marker of the command to run.
const CALLER: &str = "LWIR_SANDBOX_TEST_CALLER_MARKER";

#[test]
fn when_the_caller_dies_the_sandbox_dies_with_it() {
    if crate::support::sandbox().is_none() {
        return;
    }
    let marker = marker("caller-dies");
    let mut caller = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["time::a_caller_that_is_killed", "--exact", "--nocapture"])
        .env(CALLER, &marker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Once the command runs (its own name is the marker), then SIGKILL its caller.
    let running = (0..1000).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        processes_with(&marker).iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(marker.as_bytes()))
        })
    });
    caller.kill().unwrap();
    caller.wait().unwrap();
    assert!(running, "the sandboxed command never started");
    // Bubblewrap is killed when its parent dies, and its init with it (both
    // `--die-with-parent`), and with the init every process of its namespace.
    let gone = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        processes_with(&marker).is_empty()
    });
    assert!(gone, "{:?} outlived their caller", processes_with(&marker));
}

#[test]
fn a_caller_that_is_killed() {
    let Some(marker) = std::env::var_os(CALLER) else {
        return;
    };
    let sandbox = sandbox_or_skip!();
    let mut job = bash(&format!("exec -a {} sleep 1e9", marker.to_string_lossy()));
    job.limits.wall = Duration::from_secs(4);
    let _ = sandbox.run(&job);
}
