//! What the sandbox's file system is made of, as bubblewrap arguments: the host system
//! read-only, a few synthesized files in `/etc`, its own `/proc` with the host-wide parts
//! covered, a minimal `/dev`, private `/tmp` and `/dev/shm`, and the caller's mounts.

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::job::Mount;

/// The uid and gid the command runs as inside the sandbox (named `sandbox` there). Outside
/// it is lwirc's own uid: what the command writes to a writable mount belongs to lwirc's
/// user on the host.
pub(crate) const SANDBOX_ID: u32 = 1000;

/// The files made for `/etc`, instead of the host's: `(path, content)`. No password
/// hashes, no host users, no host names.
pub(crate) const ETC_FILES: [(&str, &str); 4] = [
    (
        "/etc/passwd",
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    ),
    (
        "/etc/group",
        "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
    ),
    (
        "/etc/nsswitch.conf",
        "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
    ),
    (
        "/etc/hosts",
        "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    ),
];

/// The top-level directories of the system that are bound read-only (or recreated as the
/// links they are on merged-`/usr` systems), besides `/usr` itself.
const SYSTEM_ROOTS: [&str; 6] = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// The host files of `/etc` that programs need to start: the dynamic linker's cache and
/// Debian's alternatives (`/usr/bin/awk` → `/etc/alternatives/awk` → …), and the time zone.
const ETC_BOUND: [&str; 3] = ["ld.so.cache", "alternatives", "localtime"];

/// Parts of `/proc` bound read-only: in particular `/proc/sys`, whose files are writable by
/// uid 0 and global to the machine (`kernel.core_pattern`…), and uid 0 is what the
/// sandbox's uid is outside when lwirc runs as root. Bubblewrap leaves it writable then.
const PROC_READ_ONLY: [&str; 4] = ["sys", "fs", "bus", "irq"];

/// Files of `/proc` replaced by an empty one: host-wide kernel state (memory, keys, timers
/// of host processes) that uid 0 may read.
const PROC_HIDDEN_FILES: [&str; 11] = [
    "kcore",
    "keys",
    "key-users",
    "kpagecgroup",
    "kpagecount",
    "kpageflags",
    "latency_stats",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "sysrq-trigger",
];

/// Directories of `/proc` replaced by an empty read-only one (hardware).
const PROC_HIDDEN_DIRS: [&str; 3] = ["acpi", "asound", "scsi"];

/// How one host entry appears in the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    /// Recreated as a symbolic link with this target.
    Link(PathBuf),
    /// Bound read-only.
    Bind,
}

/// The host's system as the sandbox shows it, looked at once when the sandbox is probed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    roots: Vec<(PathBuf, Entry)>,
    etc: Vec<(PathBuf, Entry)>,
    proc_read_only: Vec<PathBuf>,
    proc_hidden_files: Vec<PathBuf>,
    proc_hidden_dirs: Vec<PathBuf>,
}

impl Layout {
    /// This host's layout: which of `/bin`, `/lib*`… exist and whether they are links, which
    /// of the `/etc` files exist, which of the covered `/proc` entries this kernel has.
    pub(crate) fn of_host() -> Layout {
        let entry = |path: &Path| match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(path).ok().map(Entry::Link),
            Ok(_) => Some(Entry::Bind),
            Err(_) => None,
        };
        let entries = |dir: &str, names: &[&str]| -> Vec<(PathBuf, Entry)> {
            names
                .iter()
                .map(|n| Path::new(dir).join(n))
                .filter_map(|p| entry(&p).map(|e| (p, e)))
                .collect()
        };
        let existing = |names: &[&str]| -> Vec<PathBuf> {
            names
                .iter()
                .map(|n| Path::new("/proc").join(n))
                .filter(|p| p.exists())
                .collect()
        };
        Layout {
            roots: entries("/", &SYSTEM_ROOTS),
            etc: entries("/etc", &ETC_BOUND),
            proc_read_only: existing(&PROC_READ_ONLY),
            proc_hidden_files: existing(&PROC_HIDDEN_FILES),
            proc_hidden_dirs: existing(&PROC_HIDDEN_DIRS),
        }
    }
}

/// Everything one call's bubblewrap arguments depend on besides the layout.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    /// The descriptors of the [`ETC_FILES`], in their order.
    pub(crate) etc_fds: &'a [RawFd],
    /// The caller's mounts, parents before what is nested in them, each with its open
    /// host path.
    pub(crate) mounts: &'a [(RawFd, &'a Mount)],
    /// Where bubblewrap writes its status (the pid of the sandbox's init).
    pub(crate) status_fd: RawFd,
    /// The seccomp filter's program.
    pub(crate) seccomp_fd: RawFd,
    /// The size of `/tmp` and of `/dev/shm`.
    pub(crate) tmp_size: u64,
    /// `prlimit` and the process limit to set with it inside the sandbox's user namespace,
    /// when that is how processes are limited.
    pub(crate) nproc: Option<(&'a Path, u32)>,
    /// `timeout` and how long the sandbox may live on its own.
    pub(crate) lifetime: (&'a Path, Duration),
    /// The working directory.
    pub(crate) cwd: &'a Path,
    /// The command.
    pub(crate) argv: &'a [OsString],
}

/// The options bubblewrap reads with `--args`, so that no host path shows in its command
/// line (which the sandbox can read as `/proc/1/cmdline`, and any user of the host with
/// `ps`). The command itself must follow on bubblewrap's own command line ([`command`]).
pub(crate) fn options(layout: &Layout, call: &Call<'_>) -> Vec<OsString> {
    let mut args = Args::default();
    // Every namespace: no network (only a loopback of its own), its own pids, and a user
    // namespace it cannot nest another in. No capabilities; a new session (no terminal
    // to inject into); killed when lwirc or bubblewrap dies.
    args.push([
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]);
    let id = SANDBOX_ID.to_string();
    args.push(["--uid", &id, "--gid", &id]);
    args.push(["--ro-bind", "/usr", "/usr"]);
    for (path, entry) in layout.roots.iter().chain(&layout.etc) {
        args.entry(path, entry);
    }
    for (fd, (path, _)) in call.etc_fds.iter().zip(ETC_FILES) {
        args.push(["--perms", "0444", "--ro-bind-data", &fd.to_string(), path]);
    }
    args.push(["--proc", "/proc"]);
    for path in &layout.proc_read_only {
        args.push(["--ro-bind"]).path(path).path(path);
    }
    for path in &layout.proc_hidden_files {
        args.push(["--ro-bind", "/dev/null"]).path(path);
    }
    for path in &layout.proc_hidden_dirs {
        args.push(["--perms", "0555", "--size", "4096", "--tmpfs"])
            .path(path)
            .push(["--remount-ro"])
            .path(path);
    }
    args.push(["--dev", "/dev"]);
    let size = call.tmp_size.to_string();
    for dir in ["/dev/shm", "/tmp"] {
        args.push(["--perms", "1777", "--size", &size, "--tmpfs", dir]);
    }
    for (fd, mount) in call.mounts {
        let bind = if mount.writable {
            "--bind-fd"
        } else {
            "--ro-bind-fd"
        };
        args.push([bind, &fd.to_string()]).path(&mount.inside);
    }
    // The root itself: nothing can be created beside the mounts.
    args.push(["--remount-ro", "/", "--chdir"]).path(call.cwd);
    args.push(["--seccomp", &call.seccomp_fd.to_string()]);
    args.push(["--json-status-fd", &call.status_fd.to_string()]);
    args.0
}

/// What follows `--args FD` on bubblewrap's command line: `--` and the command, behind
/// `prlimit` when that sets the process limit, and behind `timeout`.
///
/// `timeout -s KILL` is the sandbox's first process, so the sandbox ends on its own a
/// little after the wall time even if lwirc is not there to stop it: when `timeout` exits,
/// bubblewrap's init does, and the kernel kills the rest of the pid namespace. (lwirc dying
/// while bubblewrap sets the sandbox up, before the init has armed `--die-with-parent`,
/// left the command running otherwise.) It passes the command's status on, a signal as
/// that signal.
pub(crate) fn command(call: &Call<'_>) -> Vec<OsString> {
    let mut args = Args::default();
    args.push(["--"]);
    if let Some((prlimit, processes)) = call.nproc {
        let nproc = format!("--nproc={processes}:{processes}");
        args.path(prlimit).push([nproc.as_str(), "--"]);
    }
    let (timeout, lifetime) = call.lifetime;
    let seconds = format!("{:.3}s", lifetime.as_secs_f64());
    args.path(timeout).push(["-s", "KILL", "--", &seconds]);
    args.0.extend(call.argv.iter().cloned());
    args.0
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize>(&mut self, words: [&str; N]) -> &mut Self {
        self.0.extend(words.iter().map(OsString::from));
        self
    }

    fn path(&mut self, path: &Path) -> &mut Self {
        self.0.push(path.as_os_str().to_owned());
        self
    }

    fn entry(&mut self, path: &Path, entry: &Entry) {
        match entry {
            Entry::Link(target) => self.push(["--symlink"]).path(target).path(path),
            Entry::Bind => self.push(["--ro-bind"]).path(path).path(path),
        };
    }
}

/// `args` as bubblewrap's `--args` reads them: each followed by a NUL byte.
pub(crate) fn nul_separated(args: &[OsString]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for arg in args {
        bytes.extend_from_slice(OsStr::as_bytes(arg));
        bytes.push(0);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_etc_is_never_bound_whole_and_mounts_come_after_the_system() {
        let layout = Layout::of_host();
        let mount = Mount::read_only("/srv/x", "/mnt/x");
        let argv = [OsString::from("true")];
        let call = Call {
            etc_fds: &[10, 11, 12, 13],
            mounts: &[(14, &mount)],
            status_fd: 15,
            seccomp_fd: 16,
            tmp_size: 1 << 20,
            nproc: Some((Path::new("/usr/bin/prlimit"), 65)),
            lifetime: (Path::new("/usr/bin/timeout"), Duration::from_millis(31_500)),
            cwd: Path::new("/tmp"),
            argv: &argv,
        };
        let args = options(&layout, &call);
        let words: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        assert!(!words.windows(2).any(|w| w[1] == "/etc"), "{words:?}");
        let mount_at = words.iter().position(|w| *w == "/mnt/x").unwrap();
        let proc_at = words.iter().position(|w| *w == "/proc").unwrap();
        assert!(proc_at < mount_at);
        assert!(words.contains(&"/etc/passwd"));
        assert_eq!(
            command(&call),
            [
                "--",
                "/usr/bin/prlimit",
                "--nproc=65:65",
                "--",
                "/usr/bin/timeout",
                "-s",
                "KILL",
                "--",
                "31.500s",
                "true"
            ]
        );
    }
}
