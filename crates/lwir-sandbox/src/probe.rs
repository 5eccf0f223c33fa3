//! Finding out whether the sandbox works here: bubblewrap, its version, the kernel, how
//! processes and memory can be limited, and one command run in it.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cgroup::{self, Place, Version};
use crate::job::{Job, Limits};
use crate::layout::Layout;
use crate::outcome::Outcome;
use crate::run::{self, Error};
use crate::sys;

/// The oldest bubblewrap with every option the sandbox uses (`--disable-userns`, `--size`,
/// `--json-status-fd`, `--bind-fd`).
const OLDEST: (u32, u32, u32) = (0, 8, 0);

/// What the sandbox needs to install or allow, said once for every error that lacks it.
const INSTALL: &str =
    "install bubblewrap 0.8.0 or newer (Debian and Ubuntu: `apt-get install bubblewrap`)";

/// A sandbox that works on this machine: bubblewrap was found, and a command ran in it
/// with every confinement and limit on. The only way to get one is [`Sandbox::probe`],
/// so nothing can be run where the sandbox does not work.
#[derive(Clone, Debug)]
pub struct Sandbox {
    pub(crate) bwrap: PathBuf,
    version: String,
    pub(crate) processes: ProcessLimit,
    pub(crate) memory: MemoryLimit,
    pub(crate) layout: Layout,
    /// The seccomp filter's program (see `seccomp`).
    pub(crate) seccomp: Vec<u8>,
    /// `timeout` (coreutils), the sandbox's first process: it ends the sandbox at the wall
    /// time if lwirc is gone.
    pub(crate) timeout: PathBuf,
}

/// How the number of processes of a call is bounded here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessLimit {
    /// `pids.max` of a cgroup made for each call, under `parent` (the cgroup lwirc runs
    /// in). Counts exactly the call's processes and threads, whatever uid they have; the
    /// kernel's counter of refused forks tells the report that the limit was reached.
    Cgroup {
        /// The cgroup version (1 or 2).
        version: u8,
        /// The directory the per-call cgroups are made in.
        parent: PathBuf,
    },
    /// `RLIMIT_NPROC`, set by `prlimit` inside the sandbox's user namespace, where it counts
    /// the processes of that namespace only (set before bubblewrap, it would count every
    /// process of lwirc's user on the machine). Only where lwirc is not root: the kernel
    /// does not apply it to uid 0, and the sandbox's uid is lwirc's outside it. A reached
    /// limit is not reported as such (the kernel keeps no count of it).
    Rlimit {
        /// The `prlimit` program (util-linux), run inside the sandbox.
        prlimit: PathBuf,
    },
}

/// How the memory of a call is bounded here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// A memory cgroup made for each call under `parent`: everything the call's processes
    /// use, their files in `/tmp` and `/dev/shm` included, and no swap.
    Cgroup {
        /// The cgroup version (1 or 2).
        version: u8,
        /// The directory the per-call cgroups are made in.
        parent: PathBuf,
    },
    /// `RLIMIT_AS`, the address space of each process: allocations past it fail in the
    /// process (no report of a reached limit); `/tmp` and `/dev/shm` are bounded by
    /// their size. Programs that reserve much address space up front (V8, Go, Java) may not
    /// start under a small limit.
    AddressSpace,
}

impl fmt::Display for ProcessLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessLimit::Cgroup { version, parent } => {
                write!(
                    f,
                    "cgroup v{version} pids.max, per call under {}",
                    parent.display()
                )
            }
            ProcessLimit::Rlimit { prlimit } => write!(
                f,
                "RLIMIT_NPROC in the sandbox's user namespace (set by {})",
                prlimit.display()
            ),
        }
    }
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryLimit::Cgroup { version, parent } => {
                let file = if *version == 1 {
                    "memory.limit_in_bytes"
                } else {
                    "memory.max"
                };
                write!(
                    f,
                    "cgroup v{version} {file}, per call under {}",
                    parent.display()
                )
            }
            MemoryLimit::AddressSpace => write!(f, "RLIMIT_AS of each process"),
        }
    }
}

/// Why the sandbox cannot run here. Nothing runs instead: there is no fallback to running a
/// command unconfined.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unavailable {
    /// No `bwrap` on the search path (`PATH=/nowhere`).
    #[error("bubblewrap (`bwrap`) is not on PATH ({path}): {INSTALL}")]
    Missing {
        /// The search path that was looked through.
        path: String,
    },
    /// `bwrap --version` failed or printed something else (a `bwrap` that is not
    /// bubblewrap).
    #[error("`{bwrap} --version` did not say which bubblewrap it is ({detail}): {INSTALL}")]
    Unrecognized {
        /// The program found.
        bwrap: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// Bubblewrap older than 0.8.0 (Ubuntu 22.04 has 0.6.1).
    #[error("`{bwrap}` is bubblewrap {version}, older than 0.8.0: {INSTALL}")]
    TooOld {
        /// The program found.
        bwrap: PathBuf,
        /// Its version.
        version: String,
    },
    /// The kernel has no `pidfd_open` (Linux before 5.3), which the sandbox uses to know
    /// when its processes are gone.
    #[error("this kernel lacks pidfd_open ({0}): the sandbox needs Linux 5.3 or newer")]
    Kernel(std::io::Error),
    /// No way to bound the number of processes (root without a usable `pids` cgroup).
    #[error("nothing can bound the number of the sandbox's processes here: {0}")]
    NoProcessLimit(String),
    /// Bubblewrap could not make the sandbox: namespaces refused (user namespaces
    /// disabled, AppArmor, a container's seccomp profile), or a mount it needs failed.
    #[error(
        "bubblewrap could not make the sandbox ({detail}). It needs unprivileged user \
         namespaces: `sysctl user.max_user_namespaces` above 0, \
         `sysctl kernel.unprivileged_userns_clone=1` (Debian's older kernels); on Ubuntu \
         24.04 AppArmor restricts them (`sysctl kernel.apparmor_restrict_unprivileged_userns=0`, \
         or an AppArmor profile that allows `userns` for bwrap); in a container, a seccomp \
         profile that allows unshare and mount (or run lwirc outside it)"
    )]
    Namespaces {
        /// What bubblewrap said.
        detail: String,
    },
    /// The seccomp filter is not written for this processor (only x86_64 and aarch64).
    #[error("{0}")]
    Architecture(&'static str),
    /// A program the sandbox runs inside is not in `/usr/bin` or `/bin` (`timeout`, of
    /// coreutils, removed).
    #[error("`{program}` is in neither /usr/bin nor /bin: install {package}")]
    MissingProgram {
        /// The program.
        program: &'static str,
        /// The Debian and Ubuntu package that has it.
        package: &'static str,
    },
    /// Preparing the trial command on the host failed (a cgroup, a pipe).
    #[error("the sandbox's trial command could not be started: {0}")]
    Trial(#[source] Error),
}

impl Sandbox {
    /// Probes the sandbox, looking for `bwrap` on `PATH`.
    pub fn probe() -> Result<Sandbox, Unavailable> {
        Sandbox::probe_on(&std::env::var_os("PATH").unwrap_or_default())
    }

    /// Probes the sandbox, looking for `bwrap` in the directories of `search_path` (as
    /// `PATH` lists them): finds bubblewrap and its version, how processes and memory can
    /// be limited, and runs `true` in a sandbox with every confinement and limit on.
    pub fn probe_on(search_path: &OsStr) -> Result<Sandbox, Unavailable> {
        let bwrap = find_program(search_path, "bwrap").ok_or_else(|| Unavailable::Missing {
            path: search_path.to_string_lossy().into_owned(),
        })?;
        let version = version_of(&bwrap)?;
        let seccomp = crate::seccomp::program().map_err(Unavailable::Architecture)?;
        let timeout = system_program("timeout").ok_or(Unavailable::MissingProgram {
            program: "timeout",
            package: "coreutils",
        })?;
        sys::pidfd_open(std::process::id()).map_err(Unavailable::Kernel)?;
        let processes = match cgroup::place("pids") {
            Ok(place) => ProcessLimit::Cgroup {
                version: version_number(&place),
                parent: place.parent,
            },
            Err(why) if sys::is_root() => {
                return Err(Unavailable::NoProcessLimit(format!(
                    "lwirc runs as root, to whom RLIMIT_NPROC does not apply, and {why}; run \
                     lwirc as an ordinary user, or where it can make cgroups with the `pids` \
                     controller"
                )));
            }
            Err(_) => {
                let prlimit = system_program("prlimit").ok_or_else(|| {
                    Unavailable::NoProcessLimit(
                        "no `pids` cgroup can be made here and `prlimit` (Debian and \
                             Ubuntu package util-linux) is not in /usr/bin"
                            .to_owned(),
                    )
                })?;
                ProcessLimit::Rlimit { prlimit }
            }
        };
        let memory = match cgroup::place("memory") {
            Ok(place) => MemoryLimit::Cgroup {
                version: version_number(&place),
                parent: place.parent,
            },
            Err(_) => MemoryLimit::AddressSpace,
        };
        let sandbox = Sandbox {
            bwrap,
            version,
            processes,
            memory,
            layout: Layout::of_host(),
            seccomp,
            timeout,
        };
        let mut trial = Job::new(["true"]);
        trial.limits = Limits {
            wall: Duration::from_secs(10),
            ..Limits::default()
        };
        match sandbox.run(&trial) {
            Ok(outcome) if outcome.success() => Ok(sandbox),
            Ok(outcome) => Err(Unavailable::Namespaces {
                detail: trial_failure(&outcome),
            }),
            Err(e) => Err(Unavailable::Trial(e)),
        }
    }

    /// Runs `job` in a new sandbox and returns how it ended, once every process of it is
    /// gone. It blocks the calling thread for at most about the job's wall time (that
    /// thread must live until it returns: bubblewrap dies with it).
    ///
    /// An `Err` means the call could not be made as asked (an invalid job, a mount that
    /// cannot be opened, a failure on the host) and nothing ran, or that processes of the
    /// call could not be killed; everything the command itself does, including failing or
    /// being stopped at a limit, is an [`Outcome`].
    pub fn run(&self, job: &Job) -> Result<Outcome, Error> {
        run::run(self, job)
    }

    /// The `bwrap` program used.
    pub fn bwrap(&self) -> &Path {
        &self.bwrap
    }

    /// Bubblewrap's version (`0.8.0`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// How the number of processes is bounded here.
    pub fn process_limit(&self) -> &ProcessLimit {
        &self.processes
    }

    /// How memory is bounded here.
    pub fn memory_limit(&self) -> &MemoryLimit {
        &self.memory
    }
}

fn version_number(place: &Place) -> u8 {
    match place.version {
        Version::V1 => 1,
        Version::V2 => 2,
    }
}

/// The first executable `name` in the directories of `search_path`.
fn find_program(search_path: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(search_path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// `name` in `/usr/bin` or `/bin`, which the sandbox shows at the same paths.
fn system_program(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Bubblewrap's version, from `bwrap --version` (`bubblewrap 0.8.0`), if it is new enough.
fn version_of(bwrap: &Path) -> Result<String, Unavailable> {
    let unrecognized = |detail: String| Unavailable::Unrecognized {
        bwrap: bwrap.to_owned(),
        detail,
    };
    let output = Command::new(bwrap)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unrecognized(e.to_string()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .trim()
        .strip_prefix("bubblewrap ")
        .filter(|_| output.status.success())
        .ok_or_else(|| unrecognized(format!("it printed `{}`", text.trim())))?
        .to_owned();
    let mut numbers = version.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
    let found = (
        numbers.next().unwrap_or(0),
        numbers.next().unwrap_or(0),
        numbers.next().unwrap_or(0),
    );
    if found < OLDEST {
        return Err(Unavailable::TooOld {
            bwrap: bwrap.to_owned(),
            version,
        });
    }
    Ok(version)
}

/// What a failed trial says: bubblewrap's own message, else the status.
fn trial_failure(outcome: &Outcome) -> String {
    let stderr = outcome.stderr_text();
    let message = stderr.trim();
    if message.is_empty() {
        let status = outcome.exit_status.map(|s| s.to_string());
        format!(
            "`true` ended with {}",
            status
                .or_else(|| outcome.signal_name())
                .unwrap_or_else(|| "no status".to_owned())
        )
    } else {
        let lines: Vec<&str> = message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines.join("; ").chars().take(1000).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_without_bwrap_is_missing_and_names_the_package() {
        let error = Sandbox::probe_on(OsStr::new("/nonexistent:relative")).unwrap_err();
        assert!(matches!(error, Unavailable::Missing { .. }), "{error:?}");
        assert!(
            error.to_string().contains("apt-get install bubblewrap"),
            "{error}"
        );
    }
}
