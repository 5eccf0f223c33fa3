//! Starting one child with its three pipes, in a process group of its own and, on Linux,
//! told `SIGTERM` when the thread that started it ends.
//!
//! On Linux the child is made with `clone(CLONE_VM | CLONE_VFORK)`, as glibc's
//! `posix_spawn` makes one: it runs on a stack of its own in lwirc's memory until it execs,
//! so nothing of lwirc's memory is copied. `std::process::Command` forks instead as soon as
//! a step before exec is asked for (the parent-death signal is one, and `posix_spawn` has no
//! attribute for it); a fork copies the page tables of lwirc's whole heap and makes every
//! page of it copy-on-write, which for a driver starting thousands of runners cost more
//! than the runners themselves. What happens between the clone and the exec is what `std`
//! does (pipes on 0, 1 and 2, the process group, no blocked signals, `SIGPIPE` at its
//! default), plus the parent-death signal.
//!
//! Elsewhere the child is started by `std::process::Command`, in a process group of its own.

use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;

/// lwirc's end of the child's standard input.
#[cfg(target_os = "linux")]
pub(super) type Stdin = std::fs::File;
/// lwirc's end of the child's standard output or error.
#[cfg(target_os = "linux")]
pub(super) type Stdout = std::fs::File;
#[cfg(not(target_os = "linux"))]
pub(super) type Stdin = std::process::ChildStdin;
#[cfg(not(target_os = "linux"))]
pub(super) type Stdout = std::process::ChildStdout;

/// What to start: the program (looked up in the child's `PATH` when it holds no `/`), its
/// arguments, and its whole environment.
pub(super) struct Spec<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: Vec<(OsString, OsString)>,
}

/// A started child and lwirc's ends of its pipes.
pub(super) struct Child {
    pub stdin: Option<Stdin>,
    pub stdout: Option<Stdout>,
    pub stderr: Option<Stdout>,
    inner: Inner,
}

impl Child {
    /// The child's pid (also its process group's id).
    pub(super) fn id(&self) -> u32 {
        self.inner.id()
    }

    /// Reaps the child, waiting for it to exit.
    pub(super) fn wait(&mut self) -> io::Result<ExitStatus> {
        self.inner.wait()
    }

    /// Whether the child exited (then reaped).
    #[cfg(not(target_os = "linux"))]
    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.inner.try_wait()
    }

    /// SIGKILLs the child unless it was reaped already (its pid may be another's then).
    pub(super) fn kill(&mut self) -> io::Result<()> {
        self.inner.kill()
    }
}

#[cfg(target_os = "linux")]
pub(super) use linux::{spawn, write_now};

#[cfg(target_os = "linux")]
type Inner = linux::Process;

#[cfg(target_os = "linux")]
mod linux {
    use super::{Child, Spec};
    use std::ffi::{CString, OsStr, OsString};
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;
    use std::sync::atomic::{AtomicI32, Ordering};

    /// The child's stack until it execs (glibc's `posix_spawn` uses 32 KiB plus the
    /// arguments; nothing here is deeper than a few system-call wrappers).
    const STACK: usize = 64 * 1024;

    pub(in super::super) struct Process {
        pid: libc::pid_t,
        reaped: Option<ExitStatus>,
    }

    impl Process {
        pub(super) fn id(&self) -> u32 {
            u32::try_from(self.pid).unwrap_or(0)
        }

        pub(super) fn wait(&mut self) -> io::Result<ExitStatus> {
            if let Some(status) = self.reaped {
                return Ok(status);
            }
            let status = reap(self.pid)?;
            self.reaped = Some(status);
            Ok(status)
        }

        pub(super) fn kill(&mut self) -> io::Result<()> {
            if self.reaped.is_some() {
                return Ok(());
            }
            // SAFETY: `kill` has no memory-safety preconditions; the child is not reaped,
            // so its pid is still its own.
            if unsafe { libc::kill(self.pid, libc::SIGKILL) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
    }

    fn reap(pid: libc::pid_t) -> io::Result<ExitStatus> {
        let mut status = 0;
        loop {
            // SAFETY: `status` is a valid, writable int.
            if unsafe { libc::waitpid(pid, &raw mut status, 0) } == pid {
                return Ok(ExitStatus::from_raw(status));
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }

    /// Everything the child reads, made before the clone: between the clone and the exec
    /// the child shares lwirc's memory, so it must not allocate, lock or unwind.
    struct Prepared {
        /// The paths to try in order (one, or one per `PATH` entry).
        candidates: Vec<CString>,
        argv: Vec<*const libc::c_char>,
        envp: Vec<*const libc::c_char>,
        /// The child's ends of its pipes, each above 2.
        stdio: [RawFd; 3],
        /// The error that stopped the child before its exec (0: none).
        error: AtomicI32,
    }

    /// A pipe with both ends close-on-exec, as (read, write).
    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just made and are owned by nobody else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    /// `fd`, moved above 2 when it is 0, 1 or 2 (lwirc may have been started with one of
    /// them closed), so that putting the child's pipes on 0, 1 and 2 overwrites none.
    fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        // SAFETY: `fd` is open; F_DUPFD_CLOEXEC returns a new descriptor or -1.
        let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if moved < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just returned to us, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(moved) })
    }

    fn c_string(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            )
        })
    }

    /// Where to look for `program`: itself when it names a path, else each entry of the
    /// child's `PATH` (an empty entry is the working directory; no `PATH`: `/bin:/usr/bin`,
    /// as `execvp` does).
    fn candidates(program: &str, env: &[(OsString, OsString)]) -> io::Result<Vec<CString>> {
        if program.contains('/') {
            return Ok(vec![c_string(program.as_bytes())?]);
        }
        if program.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let path = env
            .iter()
            .rev()
            .find(|(key, _)| key == "PATH")
            .map_or(OsStr::new("/bin:/usr/bin"), |(_, value)| value.as_os_str());
        path.as_bytes()
            .split(|&byte| byte == b':')
            .map(|dir| {
                let dir = if dir.is_empty() { b".".as_slice() } else { dir };
                let mut full = dir.to_vec();
                full.push(b'/');
                full.extend_from_slice(program.as_bytes());
                c_string(&full)
            })
            .collect()
    }

    pub(in super::super) fn spawn(spec: &Spec<'_>) -> io::Result<Child> {
        let candidates = candidates(spec.program, &spec.env)?;
        let args: Vec<CString> = std::iter::once(spec.program)
            .chain(spec.args.iter().map(String::as_str))
            .map(|arg| c_string(arg.as_bytes()))
            .collect::<io::Result<_>>()?;
        let env: Vec<CString> = spec
            .env
            .iter()
            .map(|(key, value)| {
                let mut pair = key.as_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(value.as_bytes());
                c_string(&pair)
            })
            .collect::<io::Result<_>>()?;
        let (stdin_r, stdin_w) = pipe()?;
        let (stdout_r, stdout_w) = pipe()?;
        let (stderr_r, stderr_w) = pipe()?;
        let (stdin_r, stdout_w, stderr_w) = (
            above_stdio(stdin_r)?,
            above_stdio(stdout_w)?,
            above_stdio(stderr_w)?,
        );
        let prepared = Prepared {
            candidates,
            argv: args
                .iter()
                .map(|arg| arg.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect(),
            envp: env
                .iter()
                .map(|pair| pair.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect(),
            stdio: [
                stdin_r.as_raw_fd(),
                stdout_w.as_raw_fd(),
                stderr_w.as_raw_fd(),
            ],
            error: AtomicI32::new(0),
        };
        let mut stack = vec![0u8; STACK];
        // SAFETY: the stack grows down on every architecture Linux runs Rust on here; its
        // top, rounded down to 16 bytes, lies inside `stack`.
        let top = unsafe { stack.as_mut_ptr().add(STACK) };
        let top = (top as usize & !15) as *mut libc::c_void;

        // Every signal is blocked while the child shares our memory: a handler of ours must
        // not run on its stack. The child resets them before it unblocks any.
        // SAFETY: an all-zero sigset_t is valid; sigfillset and pthread_sigmask write into
        // the sets given.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigfillset(&raw mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        }
        // SAFETY: `child` only reads `prepared` (alive until after the clone returns, which
        // with CLONE_VFORK is after the child exec'd or exited) and makes async-signal-safe
        // system calls; `top` is the top of a stack of STACK bytes that outlives the child's
        // use of it.
        let pid = unsafe {
            libc::clone(
                child,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_ref(&prepared).cast_mut().cast(),
            )
        };
        let clone_error = io::Error::last_os_error();
        // SAFETY: `old` is the mask saved above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut());
        }
        drop(stack);
        if pid < 0 {
            return Err(clone_error);
        }
        let error = prepared.error.load(Ordering::SeqCst);
        if error != 0 {
            // The child exited without its exec: reap it, and say why.
            let _ = reap(pid);
            return Err(io::Error::from_raw_os_error(error));
        }
        drop((stdin_r, stdout_w, stderr_w));
        Ok(Child {
            stdin: Some(File::from(stdin_w)),
            stdout: Some(File::from(stdout_r)),
            stderr: Some(File::from(stderr_r)),
            inner: Process { pid, reaped: None },
        })
    }

    /// Writes what of `bytes` the pipe takes without waiting; how many bytes that was (all
    /// of a small request into a fresh pipe: no thread is needed to write it).
    pub(in super::super) fn write_now(stdin: &File, bytes: &[u8]) -> usize {
        let fd = stdin.as_raw_fd();
        // SAFETY: `fd` is open; F_GETFL and F_SETFL only change its status flags.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return 0;
        }
        let mut written = 0;
        while written < bytes.len() {
            let rest = &bytes[written..];
            // SAFETY: `rest` is valid for `rest.len()` bytes.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            match usize::try_from(n) {
                Ok(n) if n > 0 => written += n,
                _ if errno() == libc::EINTR => {}
                // Full (EAGAIN), or the child closed its end: the rest, if any, is for a
                // writer thread, which reports nothing either.
                _ => break,
            }
        }
        // SAFETY: as above: the flags it had.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
        written
    }

    /// The calling thread's errno (the child's, between the clone and the exec).
    fn errno() -> libc::c_int {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL)
    }

    /// Ends the child before its exec, leaving `error` for `spawn`.
    fn fail(prepared: &Prepared, error: libc::c_int) -> ! {
        prepared.error.store(error.max(1), Ordering::SeqCst);
        // SAFETY: `_exit` ends the child without running anything of the parent's.
        unsafe { libc::_exit(127) }
    }

    /// The child, from the clone to the exec. Only system calls: it shares lwirc's memory
    /// (and its calling thread's errno, which that thread, suspended, does not read).
    extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Prepared` of `spawn`, alive while this runs.
        let prepared = unsafe { &*arg.cast::<Prepared>() };
        // SAFETY: each call is an async-signal-safe system call on valid arguments: the
        // descriptors are open, the signal sets are local, and the strings and pointer
        // arrays of `prepared` are nul-terminated.
        unsafe {
            for (fd, target) in prepared.stdio.iter().zip(0..) {
                if libc::dup2(*fd, target) < 0 {
                    fail(prepared, errno());
                }
            }
            if libc::setpgid(0, 0) != 0 {
                fail(prepared, errno());
            }
            // In its own process group the child does not get the terminal's Ctrl-C; it is
            // told instead when the thread that started it ends (lwirc interrupted,
            // killed), so that it does not run on unattended.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                fail(prepared, errno());
            }
            // Handlers become the default action (they are lwirc's code); `SIGPIPE`, which
            // the Rust runtime ignores, too. Other ignored signals stay ignored, as `std`
            // leaves them.
            for signal in 1..=libc::SIGRTMAX() {
                let mut action: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &raw mut action) != 0 {
                    continue;
                }
                if signal == libc::SIGPIPE || action.sa_sigaction != libc::SIG_IGN {
                    action.sa_sigaction = libc::SIG_DFL;
                    action.sa_flags = 0;
                    libc::sigaction(signal, &raw const action, std::ptr::null_mut());
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
            // As `execvp`: the first candidate that is not missing; a candidate found but
            // not executable is reported if no later one runs.
            let mut error = libc::ENOENT;
            for candidate in &prepared.candidates {
                libc::execve(
                    candidate.as_ptr(),
                    prepared.argv.as_ptr(),
                    prepared.envp.as_ptr(),
                );
                match errno() {
                    libc::EACCES => error = libc::EACCES,
                    libc::ENOENT
                    | libc::ENOTDIR
                    | libc::ESTALE
                    | libc::ENODEV
                    | libc::ETIMEDOUT => {}
                    other => fail(prepared, other),
                }
            }
            fail(prepared, error)
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) use portable::spawn;

#[cfg(not(target_os = "linux"))]
type Inner = portable::Process;

#[cfg(not(target_os = "linux"))]
mod portable {
    use super::{Child, Spec};
    use std::io;
    use std::process::{Command, ExitStatus, Stdio};

    pub(in super::super) struct Process(std::process::Child);

    impl Process {
        pub(super) fn id(&self) -> u32 {
            self.0.id()
        }

        pub(super) fn wait(&mut self) -> io::Result<ExitStatus> {
            self.0.wait()
        }

        pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
            self.0.try_wait()
        }

        pub(super) fn kill(&mut self) -> io::Result<()> {
            self.0.kill()
        }
    }

    pub(in super::super) fn spawn(spec: &Spec<'_>) -> io::Result<Child> {
        let mut cmd = Command::new(spec.program);
        cmd.env_clear()
            .envs(spec.env.iter().map(|(key, value)| (key, value)))
            .args(spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn()?;
        Ok(Child {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            inner: Process(child),
        })
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{Spec, spawn};
    use std::ffi::OsString;
    use std::io::{Read, Write};
    use std::os::unix::process::ExitStatusExt;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).into(), (*value).into()))
            .collect()
    }

    /// All the child writes to its standard output.
    fn stdout(child: &mut super::Child) -> String {
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn the_child_gets_exactly_its_environment_arguments_and_pipes() {
        let args = [
            "-c".to_owned(),
            "/usr/bin/env; echo \"$0|$1\"; read line; echo \"in:$line\"; exit 3".to_owned(),
            "x".to_owned(),
            "y z".to_owned(),
        ];
        let mut child = spawn(&Spec {
            program: "/bin/sh",
            args: &args,
            env: env(&[("A", "1"), ("B", "two words")]),
        })
        .unwrap();
        child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
        let out = stdout(&mut child);
        let env_lines: Vec<&str> = out.lines().filter(|l| l.contains('=')).collect();
        // sh exports what it was given and may add PWD (dash does); nothing of ours.
        assert_eq!(
            env_lines
                .iter()
                .filter(|l| !l.starts_with("PWD="))
                .collect::<Vec<_>>(),
            [&"A=1", &"B=two words"],
            "{out}"
        );
        assert!(out.ends_with("\nx|y z\nin:hello\n"), "{out}");
        assert_eq!(child.wait().unwrap().code(), Some(3));
    }

    #[test]
    fn the_child_leads_its_own_group_with_no_signal_blocked_and_sigpipe_at_its_default() {
        // cat itself, the child, tells (a shell would block signals of its own meanwhile).
        let args = ["/proc/self/stat".to_owned(), "/proc/self/status".to_owned()];
        let mut child = spawn(&Spec {
            program: "/bin/cat",
            args: &args,
            env: Vec::new(),
        })
        .unwrap();
        let out = stdout(&mut child);
        assert!(child.wait().unwrap().success());
        // `pid (cat) state ppid pgrp …`
        let stat: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(stat[0], stat[4], "not its own group's leader: {out}");
        assert_eq!(stat[0], child.id().to_string());
        let mask = |name: &str| {
            let line = out.lines().find(|l| l.starts_with(name)).unwrap();
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        assert_eq!(mask("SigBlk:"), 0, "{out}");
        assert_eq!(mask("SigIgn:") & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
    }

    #[test]
    fn a_program_is_looked_up_in_the_childs_path() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("only-here");
        std::fs::write(&tool, "#!/bin/sh\necho found\n").unwrap();
        let denied = dir.path().join("not-executable");
        std::fs::write(&denied, "#!/bin/sh\necho never\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/no/such/dir:{}", dir.path().display());
        let run = |program: &str| {
            spawn(&Spec {
                program,
                args: &[],
                env: env(&[("PATH", &path)]),
            })
        };
        let mut child = run("only-here").unwrap();
        let out = stdout(&mut child);
        assert_eq!(out, "found\n");
        assert!(child.wait().unwrap().success());
        let missing = run("nowhere").err().unwrap();
        assert_eq!(missing.raw_os_error(), Some(libc::ENOENT), "{missing}");
        let denied = run("not-executable").err().unwrap();
        assert_eq!(denied.raw_os_error(), Some(libc::EACCES), "{denied}");
        let empty = run("").err().unwrap();
        assert_eq!(empty.raw_os_error(), Some(libc::ENOENT), "{empty}");
    }

    #[test]
    fn the_child_is_told_sigterm_when_the_thread_that_started_it_ends() {
        let args = ["30".to_owned()];
        let mut child = std::thread::spawn(move || {
            spawn(&Spec {
                program: "/bin/sleep",
                args: &args,
                env: Vec::new(),
            })
            .unwrap()
        })
        .join()
        .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    }
}
