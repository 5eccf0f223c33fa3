//! One call: start bubblewrap, feed standard input, capture output, enforce the wall time
//! and the output budget, and make sure every process of the call is gone before
//! returning.
//!
//! Everything is served by one `poll` loop on non-blocking pipes and pidfds: no thread,
//! nothing that waits on a pipe a leftover process could hold open. The call ends when
//! bubblewrap exits — as soon as the command exits, bubblewrap's init in the sandbox's pid
//! namespace is killed, and with it, by the kernel, every process left in that namespace —
//! or when lwirc stops it at a limit by killing that init. Bubblewrap itself does not wait
//! for the namespace to empty, so the call then waits on the init's pidfd: the kernel
//! reports an init gone only after every other process of its namespace is.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cgroup::{Group, Place, Version};
use crate::job::{Job, Limits, Mount};
use crate::layout::{self, Call};
use crate::outcome::{Limit, Outcome};
use crate::probe::{MemoryLimit, ProcessLimit, Sandbox};
use crate::sys::{self, ChildSetup};

/// How long processes of a call may take to die once killed before the call gives up on
/// them (a process stuck in the kernel).
const DEATH: Duration = Duration::from_secs(5);

/// Processes the sandbox adds to a call: bubblewrap, outside; its init and `timeout`,
/// inside.
const ADDED_PROCESSES: u32 = 3;

/// How long past the wall time the sandbox ends on its own (`timeout`), when lwirc has not
/// stopped it: time for lwirc's own stop to come first.
const LIFETIME_MARGIN: Duration = Duration::from_secs(1);

/// Bytes read from a pipe per wake-up at most, so that a stream that never pauses cannot
/// keep the loop from its deadline.
const READ_BURST: usize = 16 * 64 * 1024;

/// Why a call could not be made, or could not be ended cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The job cannot be run as given, and nothing was started: an empty command line, a
    /// NUL byte in an argument, a relative or `..` path, a mount over `/usr`, a mount whose
    /// host path does not exist or passes through a symbolic link.
    #[error("{0}")]
    Job(String),
    /// Preparing the call on the host failed and nothing ran: making its cgroup (the
    /// cgroup file system became read-only), a pipe, or starting `bwrap` (it was removed
    /// since the probe).
    #[error("cannot {what}: {source}")]
    Host {
        /// What was being done.
        what: &'static str,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// Processes of the call were still alive after they were killed and waited for (a
    /// process stuck in an uninterruptible wait in the kernel).
    #[error("processes of the sandbox were still alive {DEATH:?} after they were killed")]
    Survivors,
}

fn host(what: &'static str) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Host { what, source }
}

/// Runs `job` in `sandbox` (see [`Sandbox::run`]).
pub(crate) fn run(sandbox: &Sandbox, job: &Job) -> Result<Outcome, Error> {
    job.check()?;
    let limits = job.limits;
    let mut mounts: Vec<&Mount> = job.mounts.iter().collect();
    mounts.sort_by_key(|m| m.inside.components().count());
    let mount_fds = mounts
        .iter()
        .map(|m| {
            sys::open_no_symlinks(&m.host)
                .map_err(|e| Error::Job(format!("cannot mount `{}`: {e}", m.host.display())))
        })
        .collect::<Result<Vec<OwnedFd>, Error>>()?;
    let group = cgroup_of(sandbox, &limits).map_err(host("make the call's cgroup"))?;
    let etc = layout::ETC_FILES
        .iter()
        .map(|(_, content)| sys::memfd(c"lwir-sandbox-etc", content.as_bytes()))
        .collect::<io::Result<Vec<OwnedFd>>>()
        .map_err(host("make the sandbox's /etc files"))?;
    let (status_read, status_write) = sys::pipe().map_err(host("make a pipe"))?;
    let seccomp = sys::memfd(c"lwir-sandbox-seccomp", &sandbox.seccomp)
        .map_err(host("pass bubblewrap the seccomp filter"))?;

    let etc_fds: Vec<RawFd> = etc.iter().map(AsRawFd::as_raw_fd).collect();
    let bound: Vec<(RawFd, &Mount)> = mount_fds
        .iter()
        .map(AsRawFd::as_raw_fd)
        .zip(mounts.iter().copied())
        .collect();
    let nproc = match &sandbox.processes {
        // Counted in the sandbox's user namespace: the init and `timeout` besides the command.
        ProcessLimit::Rlimit { prlimit } => Some((
            prlimit.as_path(),
            limits.processes.saturating_add(ADDED_PROCESSES - 1),
        )),
        ProcessLimit::Cgroup { .. } => None,
    };
    let call = Call {
        etc_fds: &etc_fds,
        mounts: &bound,
        status_fd: status_write.as_raw_fd(),
        seccomp_fd: seccomp.as_raw_fd(),
        tmp_size: limits.memory,
        nproc,
        lifetime: (&sandbox.timeout, limits.wall + LIFETIME_MARGIN),
        cwd: &job.cwd,
        argv: &job.argv,
    };
    let options = layout::nul_separated(&layout::options(&sandbox.layout, &call));
    let args_fd = sys::memfd(c"lwir-sandbox-args", &options)
        .map_err(host("pass bubblewrap its arguments"))?;

    let mut keep = vec![
        args_fd.as_raw_fd(),
        status_write.as_raw_fd(),
        seccomp.as_raw_fd(),
    ];
    keep.extend(&etc_fds);
    keep.extend(bound.iter().map(|(fd, _)| *fd));
    let setup = ChildSetup {
        cgroup_procs: group.as_ref().map(Group::procs_fds).unwrap_or_default(),
        rlimits: rlimits(sandbox, &limits),
        keep,
        parent: libc::pid_t::try_from(std::process::id()).unwrap_or(0),
    };
    let mut command = Command::new(&sandbox.bwrap);
    command
        .arg("--args")
        .arg(args_fd.as_raw_fd().to_string())
        .args(layout::command(&call))
        .env_clear()
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: `apply` only makes system calls on values prepared before the fork.
    unsafe { command.pre_exec(move || setup.apply()) };
    let start = Instant::now();
    let child = command.spawn().map_err(host("start bubblewrap"))?;
    // The child has its copies; ours would keep the status pipe from ever closing.
    drop((args_fd, status_write, seccomp, etc, mount_fds));
    let call = Supervised::new(child, status_read, &job.stdin, limits, start)?;
    call.finish(group.as_ref())
}

/// The call's cgroup, where processes or memory are limited by one.
fn cgroup_of(sandbox: &Sandbox, limits: &Limits) -> io::Result<Option<Group>> {
    let place = |version: u8, parent: &std::path::Path| Place {
        version: if version == 1 {
            Version::V1
        } else {
            Version::V2
        },
        parent: parent.to_owned(),
    };
    let pids = match &sandbox.processes {
        ProcessLimit::Cgroup { version, parent } => Some(place(*version, parent)),
        ProcessLimit::Rlimit { .. } => None,
    };
    let memory = match &sandbox.memory {
        MemoryLimit::Cgroup { version, parent } => Some(place(*version, parent)),
        MemoryLimit::AddressSpace => None,
    };
    if pids.is_none() && memory.is_none() {
        return Ok(None);
    }
    let tasks = u64::from(limits.processes) + u64::from(ADDED_PROCESSES);
    Group::create(
        pids.as_ref().map(|p| (p, tasks)),
        memory.as_ref().map(|p| (p, limits.memory)),
    )
    .map(Some)
}

/// The resource limits bubblewrap and everything it starts inherit.
fn rlimits(sandbox: &Sandbox, limits: &Limits) -> Vec<sys::Rlimit> {
    let cpu = limits.cpu_seconds();
    let mut set = vec![
        // SIGXCPU at the limit, SIGKILL a second later for a process that ignores it.
        (libc::RLIMIT_CPU, cpu, cpu + 1),
        (libc::RLIMIT_FSIZE, limits.file_size, limits.file_size),
        // No core files: not in a writable mount, not to a host crash handler.
        (libc::RLIMIT_CORE, 0, 0),
    ];
    if sandbox.memory == MemoryLimit::AddressSpace {
        set.push((libc::RLIMIT_AS, limits.memory, limits.memory));
    }
    set
}

/// A stream the command writes: what is kept, and how much was written in all.
struct Capture {
    pipe: Option<File>,
    kept: Vec<u8>,
    cap: usize,
    total: u64,
}

impl Capture {
    fn new(pipe: impl Into<OwnedFd>, cap: usize) -> io::Result<Capture> {
        let fd: OwnedFd = pipe.into();
        sys::set_nonblocking(fd.as_fd())?;
        Ok(Capture {
            pipe: Some(File::from(fd)),
            kept: Vec::new(),
            cap,
            total: 0,
        })
    }

    /// Reads what is there, up to `burst` bytes (`usize::MAX`: until the pipe is empty).
    fn read(&mut self, burst: usize) {
        let mut buffer = [0u8; 64 * 1024];
        let mut read = 0;
        while read < burst {
            let Some(pipe) = &mut self.pipe else { return };
            match pipe.read(&mut buffer) {
                Ok(0) => self.pipe = None,
                Ok(n) => {
                    let room = self.cap.saturating_sub(self.kept.len()).min(n);
                    self.kept.extend_from_slice(&buffer[..room]);
                    self.total += n as u64;
                    read += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.pipe = None,
            }
        }
    }

    fn truncated(&self) -> bool {
        self.total > self.kept.len() as u64
    }
}

/// Standard input: the caller's bytes, written as the command reads them, then closed.
struct Input<'a> {
    pipe: Option<File>,
    rest: &'a [u8],
}

impl Input<'_> {
    fn write(&mut self) {
        while let Some(pipe) = &mut self.pipe {
            if self.rest.is_empty() {
                self.pipe = None;
                return;
            }
            match pipe.write(self.rest) {
                Ok(n) => self.rest = &self.rest[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The command closed its input (EPIPE): the rest is not wanted.
                Err(_) => self.pipe = None,
            }
        }
    }
}

/// Bubblewrap's status stream: its first line names the sandbox's init (its pid here and
/// its pid namespace).
struct Status {
    pipe: Option<File>,
    text: Vec<u8>,
    /// The init's pidfd, once known and checked to be that process.
    init: Option<OwnedFd>,
    /// Whether the init's line was read (the init may already be gone).
    known: bool,
}

impl Status {
    fn read(&mut self) {
        let mut buffer = [0u8; 4096];
        while let Some(pipe) = &mut self.pipe {
            match pipe.read(&mut buffer) {
                Ok(0) => self.pipe = None,
                Ok(n) if self.text.len() < 64 * 1024 => {
                    self.text.extend_from_slice(&buffer[..n]);
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if !self.known
            && let Some(end) = self.text.iter().position(|&b| b == b'\n')
        {
            let line = String::from_utf8_lossy(&self.text[..end]).into_owned();
            self.known = true;
            self.init = init_of(&line);
        }
    }
}

/// The pidfd of the init a status line names, if that process still exists and is in the
/// namespace the line names (so not another process that got its number).
fn init_of(line: &str) -> Option<OwnedFd> {
    let pid = json_number(line, "child-pid")?;
    let namespace = json_number(line, "pid-namespace")?;
    let pidfd = sys::pidfd_open(u32::try_from(pid).ok()?).ok()?;
    let link = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    (link.as_os_str() == format!("pid:[{namespace}]").as_str()).then_some(pidfd)
}

/// The integer after `"key":` in one of bubblewrap's status lines.
fn json_number(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = line[at..].trim_start().strip_prefix(':')?.trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

/// A running call.
struct Supervised<'a> {
    child: Child,
    bwrap: OwnedFd,
    status: Status,
    stdin: Input<'a>,
    stdout: Capture,
    stderr: Capture,
    limits: Limits,
    start: Instant,
    /// Why lwirc stopped the call, and when it did.
    stopped: Option<(Limit, Instant)>,
}

impl<'a> Supervised<'a> {
    fn new(
        mut child: Child,
        status: OwnedFd,
        stdin: &'a [u8],
        limits: Limits,
        start: Instant,
    ) -> Result<Self, Error> {
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(input), Some(stdout), Some(stderr)) = pipes else {
            unreachable!("the three streams were asked to be pipes")
        };
        // Should any of this fail, bubblewrap is killed: nothing runs unwatched.
        let watch = (|| {
            let bwrap = sys::pidfd_open(child.id())?;
            let input: OwnedFd = input.into();
            sys::set_nonblocking(input.as_fd())?;
            sys::set_nonblocking(status.as_fd())?;
            let stdout = Capture::new(stdout, limits.output)?;
            let stderr = Capture::new(stderr, limits.output)?;
            Ok::<_, io::Error>((bwrap, input, stdout, stderr))
        })();
        let (bwrap, input, stdout, stderr) = match watch {
            Ok(watch) => watch,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Host {
                    what: "watch bubblewrap",
                    source: e,
                });
            }
        };
        Ok(Supervised {
            child,
            bwrap,
            status: Status {
                pipe: Some(File::from(status)),
                text: Vec::new(),
                init: None,
                known: false,
            },
            stdin: Input {
                pipe: Some(File::from(input)),
                rest: stdin,
            },
            stdout,
            stderr,
            limits,
            start,
            stopped: None,
        })
    }

    /// Serves the call until bubblewrap exits, then makes sure nothing of it is left.
    fn finish(mut self, group: Option<&Group>) -> Result<Outcome, Error> {
        self.stdin.write();
        self.serve()?;
        let status = self.child.wait().map_err(host("wait for bubblewrap"))?;
        self.status.read();
        if !self.every_process_gone(group) {
            return Err(Error::Survivors);
        }
        // Every writer is gone: what the pipes hold is all there is.
        self.stdout.read(usize::MAX);
        self.stderr.read(usize::MAX);

        let stopped = self.stopped.map(|(limit, _)| limit);
        let (exit_status, signal) = if stopped.is_some() {
            (None, Some(libc::SIGKILL))
        } else if let Some(signal) = status.signal() {
            (None, Some(signal))
        } else {
            match status.code() {
                Some(code @ 129..=159) => (None, Some(code - 128)),
                code => (code, None),
            }
        };
        let succeeded = stopped.is_none() && exit_status == Some(0);
        let reached = |check: fn(&Group) -> bool| !succeeded && group.is_some_and(check);
        let limit = match stopped {
            Some(Limit::Output) => Some(Limit::Output),
            None if signal == Some(libc::SIGXCPU) => Some(Limit::Cpu),
            None if signal == Some(libc::SIGXFSZ) => Some(Limit::FileSize),
            _ if reached(Group::memory_limit_reached) => Some(Limit::Memory),
            _ if reached(Group::process_limit_reached) => Some(Limit::Processes),
            // `timeout` inside came first (lwirc was held up past the wall time).
            None if signal == Some(libc::SIGKILL) && self.start.elapsed() >= self.limits.wall => {
                Some(Limit::Time)
            }
            other => other,
        };
        Ok(Outcome {
            exit_status,
            signal,
            limit,
            stdout_truncated: self.stdout.truncated(),
            stderr_truncated: self.stderr.truncated(),
            stdout: std::mem::take(&mut self.stdout.kept),
            stderr: std::mem::take(&mut self.stderr.kept),
            elapsed: self.start.elapsed(),
        })
    }

    /// The poll loop, until bubblewrap has exited.
    fn serve(&mut self) -> Result<(), Error> {
        let deadline = self.start + self.limits.wall;
        let mut escalated = false;
        loop {
            let wake = match self.stopped {
                None => deadline,
                Some((_, at)) if !escalated => at + DEATH,
                Some((_, at)) => at + 2 * DEATH,
            };
            let mut fds = vec![poll_in(self.bwrap.as_raw_fd())];
            let mut watch = |pipe: Option<&File>, events| {
                if let Some(pipe) = pipe {
                    fds.push(libc::pollfd {
                        fd: pipe.as_raw_fd(),
                        events,
                        revents: 0,
                    });
                }
            };
            watch(self.stdout.pipe.as_ref(), libc::POLLIN);
            watch(self.stderr.pipe.as_ref(), libc::POLLIN);
            watch(self.status.pipe.as_ref(), libc::POLLIN);
            watch(self.stdin.pipe.as_ref(), libc::POLLOUT);
            let timeout = wake.saturating_duration_since(Instant::now());
            sys::poll(&mut fds, Some(timeout)).map_err(host("watch the sandbox"))?;
            let exited = fds[0].revents != 0;

            self.stdout.read(READ_BURST);
            self.stderr.read(READ_BURST);
            self.status.read();
            self.stdin.write();
            if exited {
                return Ok(());
            }
            let budget = self.limits.output_total;
            if self.stdout.total > budget || self.stderr.total > budget {
                self.stop(Limit::Output);
            }
            let now = Instant::now();
            match self.stopped {
                None if now >= deadline => self.stop(Limit::Time),
                Some(_) if now >= wake && escalated => return Err(Error::Survivors),
                // Its init did not die (or is not known yet): bubblewrap itself, whose
                // death kills the init it made (`--die-with-parent`).
                Some(_) if now >= wake => {
                    escalated = true;
                    let _ = sys::pidfd_kill(self.bwrap.as_fd());
                }
                _ => {}
            }
        }
    }

    /// Stops the call at `limit`: kills the sandbox's init, which takes every process of
    /// its namespace with it, and bubblewrap.
    fn stop(&mut self, limit: Limit) {
        if self.stopped.is_some() {
            return;
        }
        self.stopped = Some((limit, Instant::now()));
        if let Some(init) = &self.status.init {
            let _ = sys::pidfd_kill(init.as_fd());
        }
        let _ = sys::pidfd_kill(self.bwrap.as_fd());
    }

    /// Waits until the sandbox's init has exited — which the kernel allows only once every
    /// other process of its pid namespace is gone — and the call's cgroup is empty.
    fn every_process_gone(&mut self, group: Option<&Group>) -> bool {
        if let Some(init) = &self.status.init {
            // Bubblewrap is gone, so the init is being killed (`--die-with-parent`);
            // killing it again changes nothing but makes sure.
            let gone = |wait| sys::readable_within(init.as_fd(), wait).unwrap_or(false);
            if !gone(Duration::from_millis(100)) {
                let _ = sys::pidfd_kill(init.as_fd());
                if !gone(DEATH) {
                    return false;
                }
            }
        }
        group.is_none_or(|g| g.empty(DEATH))
    }
}

fn poll_in(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_read_for_their_numbers() {
        let line = r#"{ "child-pid": 31698, "cgroup-namespace": 4026532183, "pid-namespace": 4026532182 }"#;
        assert_eq!(json_number(line, "child-pid"), Some(31698));
        assert_eq!(json_number(line, "pid-namespace"), Some(4026532182));
        assert_eq!(json_number(line, "exit-code"), None);
    }
}
