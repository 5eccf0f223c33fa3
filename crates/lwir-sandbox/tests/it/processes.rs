//! Fork bombs: bounded by the process limit, gone with the call, and the host still forks.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use lwir_sandbox::{Job, Limit, Outcome, Sandbox};

use crate::support::{
    bash, cgroup_processes, marker, processes_with, python, run, sandbox_or_skip,
};

/// Runs `job` while watching from the host: how many processes carry `marker` at most
/// (less bubblewrap, its init and `timeout`, whose command lines hold the command's), and
/// whether the host could start processes meanwhile.
fn run_watched(sandbox: &Sandbox, job: &Job, marker: &str) -> (Outcome, usize) {
    let done = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    let outcome = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(processes_with(marker).len(), Ordering::Relaxed);
                // The host is not starved: it still starts a process.
                let host = std::process::Command::new("true").status();
                assert!(
                    host.is_ok_and(|s| s.success()),
                    "the host could not start `true`"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let outcome = run(sandbox, job);
        done.store(true, Ordering::Relaxed);
        outcome
    });
    assert_eq!(
        processes_with(marker),
        Vec::<u32>::new(),
        "processes of the call outlived it"
    );
    (outcome, most.load(Ordering::Relaxed).saturating_sub(3))
}

#[test]
fn a_fork_bomb_whose_shell_returns_at_once_ends_with_the_call() {
    let sandbox = sandbox_or_skip!();
    let marker = marker("bomb-returns");
    let job = bash(&format!(":(){{ :|:& }};: # {marker}"));
    let (outcome, most) = run_watched(sandbox, &job, &marker);
    // The shell returns at once, and the bomb it left running dies with the call rather
    // than at the wall time. Whether the shell itself succeeds is a race the command runs
    // (its own second fork against the bomb filling the limit); the report follows from
    // it: exit 0 and no limit, or the shell's failure and the limit it met — or, on a
    // loaded machine where the bomb fills the limit before the shell gets to return, the
    // call stopped by that limit, the shell killed with it.
    let met = cgroup_processes(sandbox).then_some(Limit::Processes);
    match (outcome.exit_status, outcome.limit) {
        (Some(0), None) => {}
        (Some(status), limit) if status != 0 && limit == met => {}
        (None, Some(Limit::Processes)) if met.is_some() && outcome.signal.is_some() => {}
        // Without cgroups (an ordinary user, rlimits): a shell whose fork fails retries it
        // (bash's "fork: retry"), so on a loaded machine it may still be retrying at the
        // wall time, which ends it and everything it started.
        (None, Some(Limit::Time)) if met.is_none() && outcome.signal.is_some() => {}
        _ => panic!("{outcome:?}"),
    }
    assert!(
        most <= job.limits.processes as usize,
        "{most} processes at once"
    );
}

#[test]
fn a_fork_bomb_whose_shell_waits_is_stopped_by_the_process_limit() {
    let sandbox = sandbox_or_skip!();
    let marker = marker("bomb-waits");
    let mut job = bash(&format!(":(){{ :|:& }};:; sleep 60 # {marker}"));
    job.limits.wall = Duration::from_secs(4);
    let (outcome, most) = run_watched(sandbox, &job, &marker);
    assert!(!outcome.success(), "{outcome:?}");
    assert!(
        most <= job.limits.processes as usize,
        "{most} processes at once"
    );
    if cgroup_processes(sandbox) {
        assert_eq!(outcome.limit, Some(Limit::Processes), "{outcome:?}");
    } else {
        // RLIMIT_NPROC leaves no count of refused forks: the wall time, or the shell
        // giving up on a fork, ends it.
        assert!(
            matches!(outcome.limit, Some(Limit::Time) | None),
            "{outcome:?}"
        );
    }
}

#[test]
fn a_python_fork_loop_is_stopped_by_the_process_limit() {
    let sandbox = sandbox_or_skip!();
    let marker = marker("fork-loop");
    let mut job = python(&format!(
        "import os, time  # {marker}\n\
         while True:\n    \
             try:\n        \
                 if os.fork() == 0:\n            \
                     time.sleep(60)\n    \
             except OSError:\n        \
                 time.sleep(0.01)\n"
    ));
    job.limits.wall = Duration::from_secs(3);
    let (outcome, most) = run_watched(sandbox, &job, &marker);
    assert!(
        most <= job.limits.processes as usize,
        "{most} processes at once"
    );
    assert!(most >= 2, "the loop never forked: {outcome:?}");
    let expected = if cgroup_processes(sandbox) {
        Limit::Processes
    } else {
        Limit::Time
    };
    assert_eq!(outcome.limit, Some(expected), "{outcome:?}");
    assert_eq!(outcome.signal_name().as_deref(), Some("SIGKILL"));
}

#[test]
fn the_next_probe_kills_what_a_dead_lwirc_left_in_its_cgroups() {
    let sandbox = sandbox_or_skip!();
    let lwir_sandbox::ProcessLimit::Cgroup { parent, .. } = sandbox.process_limit() else {
        return;
    };
    // A sandbox whose lwirc died while bubblewrap set it up (before its `--die-with-parent`
    // was armed) is left running in the call's cgroup, named after that lwirc's pid
    // namespace and pid. Here: a process in a cgroup named after a pid that is gone.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let namespace = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let namespace = namespace.to_string_lossy();
    let namespace = namespace.trim_start_matches("pid:[").trim_end_matches(']');
    let stale = parent.join(format!("lwir-sandbox-{namespace}-{}-0", gone.id()));
    std::fs::create_dir(&stale).unwrap();
    let marker = marker("left-behind");
    let mut left = std::process::Command::new("bash")
        .args(["-c", &format!("exec -a {marker} sleep 1e9")])
        .spawn()
        .unwrap();
    std::fs::write(stale.join("cgroup.procs"), left.id().to_string()).unwrap();

    Sandbox::probe().unwrap();
    let status = left.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert!(!stale.exists());
}
