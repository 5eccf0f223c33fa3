//! `lwirc sandbox check`: whether the sandbox for model-written commands works here.

use lwir_render::terminal::sanitize;
use lwir_sandbox::{Job, Sandbox, Unavailable};

use super::print;
use crate::exit;

/// The sandbox that runs model-written commands: the planner's `bash` tool and `code.run`.
///
/// Those commands run under bubblewrap (`bwrap`): no network, the system read-only and
/// only the directories they are given, an empty environment, a seccomp filter, and limits
/// on wall time, CPU time, memory, processes, file size and output. Where the sandbox cannot
/// run, nothing runs unconfined instead: the planner is not offered `bash`, and `code.run`
/// steps fail naming what is missing.
///
/// Examples:
///   lwirc sandbox check
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: SandboxCommand,
}

#[derive(clap::Subcommand)]
enum SandboxCommand {
    /// Say what of the sandbox works on this machine; exit 0 only if it runs commands.
    ///
    /// It looks for `bwrap` on PATH and runs `true` in a sandbox with every confinement
    /// and limit on, then prints, one per line:
    ///
    ///   bubblewrap    the program and its version (0.8.0 or newer is needed)
    ///   namespaces    whether it could make the sandbox's namespaces (user, pid,
    ///                 network, mount, IPC, UTS, cgroup)
    ///   processes     how a call's processes are bounded: a cgroup per call
    ///                 (pids.max) where lwirc may make cgroups, else RLIMIT_NPROC in the
    ///                 sandbox's user namespace (not as root: the kernel exempts uid 0)
    ///   memory        a memory cgroup per call, else RLIMIT_AS of each process
    ///   bash, python3, node
    ///                 the interpreters found inside, with their versions
    ///
    /// When it cannot run, it says which step failed, and on standard error what to
    /// install or allow: the package
    /// `bubblewrap` (Debian, Ubuntu: `apt-get install bubblewrap`); unprivileged user
    /// namespaces (`sysctl user.max_user_namespaces`; on Ubuntu 24.04,
    /// `kernel.apparmor_restrict_unprivileged_userns`); for root, cgroups it may make.
    ///
    /// Exit status: 0 the sandbox runs commands here, 1 it cannot, 2 usage error.
    ///
    /// Examples:
    ///   lwirc sandbox check
    ///   lwirc sandbox check && echo "the planner gets bash"
    #[command(verbatim_doc_comment)]
    Check,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        SandboxCommand::Check => check(),
    }
}

fn check() -> anyhow::Result<u8> {
    let sandbox = match Sandbox::probe() {
        Ok(sandbox) => sandbox,
        Err(unavailable) => {
            print(&format!("{}\n", failed_step(&unavailable)))?;
            eprintln!(
                "lwirc: the sandbox cannot run here, and nothing runs unconfined instead: {}",
                sanitize(&unavailable.to_string())
            );
            return Ok(exit::FINDINGS);
        }
    };
    let mut report = vec![
        line(
            "bubblewrap",
            &format!(
                "{}, bubblewrap {}",
                sandbox.bwrap().display(),
                sandbox.version()
            ),
        ),
        line(
            "namespaces",
            "user, pid, network, mount, IPC, UTS, cgroup: a sandboxed `true` ran",
        ),
        line("processes", &sandbox.process_limit().to_string()),
        line("memory", &sandbox.memory_limit().to_string()),
    ];
    report.extend(interpreters(&sandbox));
    report.push("The sandbox runs commands here.".to_owned());
    print(&(report.join("\n") + "\n"))?;
    Ok(exit::OK)
}

/// The report's line for the step of the probe that failed.
fn failed_step(unavailable: &Unavailable) -> String {
    match unavailable {
        Unavailable::Missing { .. } => line("bubblewrap", "not found on PATH"),
        Unavailable::Unrecognized { bwrap, .. } => line(
            "bubblewrap",
            &format!("{}: not bubblewrap", bwrap.display()),
        ),
        Unavailable::TooOld { bwrap, version } => line(
            "bubblewrap",
            &format!("{}, bubblewrap {version}: too old", bwrap.display()),
        ),
        Unavailable::Kernel(_) => line("kernel", "no pidfd_open (Linux 5.3 or newer needed)"),
        Unavailable::NoProcessLimit(_) => line("processes", "nothing here can bound them"),
        Unavailable::Namespaces { .. } => line("namespaces", "bubblewrap could not make them"),
        Unavailable::Architecture(_) => line("seccomp", "no filter for this processor"),
        Unavailable::MissingProgram { program, .. } => line(program, "not found"),
        _ => line("sandbox", "could not be started"),
    }
}

/// The interpreters as the sandbox sees them, run under the default limits.
fn interpreters(sandbox: &Sandbox) -> Vec<String> {
    const NAMES: [&str; 3] = ["bash", "python3", "node"];
    let script = "for p in bash python3 node; do \
                      if path=$(command -v $p); then \
                          version=$($p --version 2>&1 | head -n 1) \
                              && printf '%s\\t%s: %s\\n' $p \"$path\" \"$version\" \
                              || printf '%s\\t%s: does not run under the default limits\\n' $p \"$path\"; \
                      else printf '%s\\tnot found\\n' $p; fi; \
                  done";
    let mut job = Job::new(["/bin/sh", "-c", script]);
    job.env = vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())];
    match sandbox.run(&job) {
        Ok(outcome) if outcome.success() => outcome
            .stdout_text()
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(name, _)| NAMES.contains(name))
            .map(|(name, found)| line(name, found))
            .collect(),
        Ok(outcome) => vec![line(
            "interpreters",
            &format!("could not be listed: {}", outcome.stderr_text().trim()),
        )],
        Err(e) => vec![line("interpreters", &format!("could not be listed: {e}"))],
    }
}

/// `name` and `what`, aligned, with control characters escaped.
fn line(name: &str, what: &str) -> String {
    format!("{name:<13} {}", sanitize(what))
}
