//! What the tests share: the probed sandbox (or the reason to skip), jobs with small limits,
//! and looking for a call's processes from the host.

use std::io::Write;
use std::sync::OnceLock;
use std::time::Duration;

use lwir_sandbox::{Job, Limits, MemoryLimit, Outcome, ProcessLimit, Sandbox};

/// The sandbox, or `None` after saying on the terminal why the tests that need it skip.
/// With `LWIRC_REQUIRE_ENGINES` set, a sandbox that cannot run fails the test instead.
pub(crate) fn sandbox() -> Option<&'static Sandbox> {
    static SANDBOX: OnceLock<Result<Sandbox, String>> = OnceLock::new();
    let probed = SANDBOX.get_or_init(|| Sandbox::probe().map_err(|e| e.to_string()));
    match probed {
        Ok(sandbox) => Some(sandbox),
        Err(why) => {
            assert!(
                std::env::var_os("LWIRC_REQUIRE_ENGINES").is_none(),
                "LWIRC_REQUIRE_ENGINES is set but the sandbox cannot run here: {why}"
            );
            static SAID: OnceLock<()> = OnceLock::new();
            SAID.get_or_init(|| {
                // Written past the test harness's capture, so that a passing run shows it.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "skipped the sandbox tests (install bubblewrap; see .ci/engines.sh): {why}"
                );
            });
            None
        }
    }
}

/// The sandbox, or returns from the test (see [`sandbox`]).
macro_rules! sandbox_or_skip {
    () => {
        match crate::support::sandbox() {
            Some(sandbox) => sandbox,
            None => return,
        }
    };
}
pub(crate) use sandbox_or_skip;

/// Limits small enough for tests that several run at once on two cores.
pub(crate) fn small_limits() -> Limits {
    Limits {
        wall: Duration::from_secs(10),
        cpu: Duration::from_secs(10),
        memory: 128 << 20,
        processes: 32,
        file_size: 16 << 20,
        output: 64 << 10,
        output_total: 8 << 20,
    }
}

/// `bash -c script` with a shell's usual variables and [`small_limits`].
pub(crate) fn bash(script: &str) -> Job {
    let mut job = Job::new(["bash", "-c", script]);
    job.env = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), "/tmp".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    job.limits = small_limits();
    job
}

/// `python3 -c program` as [`bash`] runs a script.
pub(crate) fn python(program: &str) -> Job {
    let mut job = bash("");
    job.argv = vec!["python3".into(), "-c".into(), program.into()];
    job
}

/// A string unique to this test process and `name`, to find a call's processes by.
pub(crate) fn marker(name: &str) -> String {
    format!("lwir-sandbox-marker-{name}-{}", std::process::id())
}

/// The host's processes whose command line contains `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .windows(marker.len())
                    .any(|w| w == marker.as_bytes())
            })
        })
        .collect()
}

/// Standard output and error of `outcome`, as text.
pub(crate) fn both(outcome: &Outcome) -> String {
    format!("{}{}", outcome.stdout_text(), outcome.stderr_text())
}

/// Whether processes are bounded by a cgroup here (else by rlimits, which report no
/// reached limit).
pub(crate) fn cgroup_processes(sandbox: &Sandbox) -> bool {
    matches!(sandbox.process_limit(), ProcessLimit::Cgroup { .. })
}

/// Whether memory is bounded by a cgroup here (else by `RLIMIT_AS`).
pub(crate) fn cgroup_memory(sandbox: &Sandbox) -> bool {
    matches!(sandbox.memory_limit(), MemoryLimit::Cgroup { .. })
}

/// Runs `job`, which must be accepted.
pub(crate) fn run(sandbox: &Sandbox, job: &Job) -> Outcome {
    sandbox.run(job).expect("the sandbox runs the job")
}
