//! The system calls the sandbox needs that `std` does not wrap, each behind a safe function.
//! Every `unsafe` block of the crate is in this module.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::time::Duration;

/// `keyctl(2)` operation: join a new anonymous session keyring (not in `libc`).
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn check_long(result: libc::c_long) -> io::Result<libc::c_long> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// A pipe whose ends are both close-on-exec: `(read, write)`.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both are open descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// An anonymous in-memory file (close-on-exec) holding `bytes`, positioned at its start,
/// so that a process reading it from its offset reads all of it.
pub(crate) fn memfd(name: &CStr, bytes: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a NUL-terminated string.
    let fd = check(unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file.into())
}

/// Puts `fd` in non-blocking mode.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor borrowed for the call; no memory is passed.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

/// A pidfd for process `pid` (Linux 5.3): readable once the process has exited, and a
/// handle to signal it that cannot reach another process that reuses its number.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: pidfd_open takes two integers.
    let fd = check_long(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })?;
    // SAFETY: the call returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Sends SIGKILL to the process of `pidfd`; a process that is already gone is not an error.
pub(crate) fn pidfd_kill(pidfd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: pidfd_send_signal with a null siginfo and no flags.
    let result = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    match check_long(result) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other.map(drop),
    }
}

/// Sends SIGKILL to process `pid` (for processes found by number in a cgroup, which the
/// kernel has just listed as members); a process that is already gone is not an error.
pub(crate) fn kill(pid: libc::pid_t) {
    // SAFETY: kill takes two integers.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Whether a process `pid` exists (it may be a zombie).
pub(crate) fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Waits until one of `fds` is ready or `timeout` passes (`None`: no limit). An
/// interruption by a signal counts as "nothing ready".
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<()> {
    let millis = timeout.map_or(-1, |t| {
        // Rounded up, so that a wait for a deadline does not wake up just before it.
        i32::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
    });
    // SAFETY: `fds` is a valid slice of pollfd for its length.
    let result = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
    match check(result) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        other => other.map(drop),
    }
}

/// Whether `fd` is readable (or hung up) within `timeout`.
pub(crate) fn readable_within(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut fds = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    poll(&mut fds, Some(timeout))?;
    Ok(fds[0].revents != 0)
}

/// Whether this process runs as root (real or effective uid 0): the uid the sandbox's
/// processes then have outside their user namespace.
pub(crate) fn is_root() -> bool {
    // SAFETY: getuid and geteuid cannot fail.
    unsafe { libc::getuid() == 0 || libc::geteuid() == 0 }
}

/// Opens `path` (absolute, with no `.` or `..`) as an `O_PATH` descriptor without following
/// a symbolic link at any component, so that what is opened is what the path names and
/// not what a link planted in a writable directory points to.
pub(crate) fn open_no_symlinks(path: &Path) -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated literal.
    let root = check(unsafe { libc::open(c"/".as_ptr(), flags | libc::O_DIRECTORY) })?;
    // SAFETY: open returned a new descriptor that nothing else owns.
    let mut current = unsafe { OwnedFd::from_raw_fd(root) };
    let mut walked = std::path::PathBuf::from("/");
    for component in path.components() {
        let name = match component {
            Component::RootDir => continue,
            Component::Normal(name) => name,
            _ => return Err(io::Error::other("the path has `.` or `..` in it")),
        };
        walked.push(name);
        let name = CString::new(name.as_bytes()).map_err(io::Error::other)?;
        // SAFETY: `current` is an open directory descriptor and `name` NUL-terminated.
        let fd = check(unsafe { libc::openat(current.as_raw_fd(), name.as_ptr(), flags) })?;
        // SAFETY: openat returned a new descriptor that nothing else owns.
        current = unsafe { OwnedFd::from_raw_fd(fd) };
        if is_symlink(current.as_fd())? {
            return Err(io::Error::other(format!(
                "`{}` is a symbolic link",
                walked.display()
            )));
        }
    }
    Ok(current)
}

fn is_symlink(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `stat` is valid for writes; `fd` is open for the call.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) })?;
    Ok(stat.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// One resource limit to set in the child: `(resource, soft, hard)`.
pub(crate) type Rlimit = (libc::__rlimit_resource_t, u64, u64);

/// What the child process does between `fork` and `exec` of bubblewrap. Everything is
/// prepared before the fork; [`ChildSetup::apply`] only makes system calls (no allocation,
/// no locks), as is required after `fork` in a threaded program.
#[derive(Debug, Default)]
pub(crate) struct ChildSetup {
    /// Open `cgroup.procs` files of the call's cgroups: the child joins each by writing `0`.
    pub(crate) cgroup_procs: Vec<RawFd>,
    /// Resource limits, inherited by bubblewrap and everything it starts.
    pub(crate) rlimits: Vec<Rlimit>,
    /// Descriptors bubblewrap must inherit (its arguments, data files, mount sources,
    /// status pipe); every other descriptor above 2 is closed on exec.
    pub(crate) keep: Vec<RawFd>,
    /// The process that forks: bubblewrap is killed when the forking thread ends.
    pub(crate) parent: libc::pid_t,
}

impl ChildSetup {
    /// Applies the setup in the forked child.
    pub(crate) fn apply(&self) -> io::Result<()> {
        // Killed when lwirc's forking thread ends, from before exec: bubblewrap arms its own
        // `--die-with-parent` only after it has cloned the sandbox, so a parent dying before
        // that left it running. Already orphaned (the parent died during the fork): stop.
        // SAFETY: prctl and getppid with integer arguments.
        check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
        // SAFETY: as above.
        if unsafe { libc::getppid() } != self.parent {
            return Err(io::Error::other("lwirc exited while starting the sandbox"));
        }
        // A new anonymous session keyring: the keys of lwirc's own session keyring are
        // out of the sandbox's reach. (No keyrings in the kernel: nothing to hide.)
        // SAFETY: keyctl with integer arguments.
        let joined =
            unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0usize) };
        if joined < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
            return Err(io::Error::last_os_error());
        }
        for &fd in &self.cgroup_procs {
            // SAFETY: writing two bytes from a static buffer to an open descriptor.
            let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
            if written != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        for &(resource, soft, hard) in &self.rlimits {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            // SAFETY: `limit` is a valid rlimit for the call.
            check(unsafe { libc::setrlimit(resource, &limit) })?;
        }
        // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets flags (Linux 5.11).
        let marked = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if marked < 0 {
            // An older kernel: mark them one by one, up to the descriptor limit.
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `limit` is valid for writes.
            check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) })?;
            let last = RawFd::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
            for fd in 3..last {
                // SAFETY: fcntl on a number that may or may not be open; EBADF is fine.
                unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
            }
        }
        for &fd in &self.keep {
            // SAFETY: clearing the close-on-exec flag of a descriptor we opened.
            check(unsafe { libc::fcntl(fd, libc::F_SETFD, 0) })?;
        }
        Ok(())
    }
}

/// The conventional name of signal `number` (`SIGKILL`), or `SIG` and the number for one
/// without a name here (real-time signals).
pub(crate) fn signal_name(number: i32) -> String {
    let name = match number {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_through_a_symlink_is_refused() {
        let dir = std::env::temp_dir().join(format!("lwir-sandbox-sys-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("real")).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(dir.join("real"), &link).unwrap();
        assert!(open_no_symlinks(&dir.join("real")).is_ok());
        let error = open_no_symlinks(&link).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        let error = open_no_symlinks(&link.join("x")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(libc::SIGXCPU), "SIGXCPU");
        assert_eq!(signal_name(40), "SIG40");
    }
}
