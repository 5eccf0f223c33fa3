//! What a call runs: the command, its input, its mounts, its environment and its limits.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::run::Error;

/// One command to run in the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The program and its arguments, run without a shell (`["bash", "-c", "ls"]`). A
    /// program without a `/` is looked up on the `PATH` of [`Job::env`], else in
    /// `/bin:/usr/bin`.
    pub argv: Vec<OsString>,
    /// The bytes written to the command's standard input, which is then closed.
    pub stdin: Vec<u8>,
    /// The working directory, a path inside the sandbox (`/tmp` by default). It must
    /// exist there: `/`, `/tmp`, or a directory of a mount.
    pub cwd: PathBuf,
    /// The host directories or files the command sees, and nothing else of the host's
    /// own data.
    pub mounts: Vec<Mount>,
    /// The command's whole environment: nothing else reaches it, of lwirc's environment
    /// or anyone's. Empty by default — pass at least `PATH` and `HOME` for a shell.
    pub env: Vec<(OsString, OsString)>,
    /// The limits of the call.
    pub limits: Limits,
}

impl Job {
    /// A job that runs `argv` with no input, no mounts, an empty environment, `/tmp` as its
    /// working directory and the default [`Limits`].
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            stdin: Vec::new(),
            cwd: PathBuf::from("/tmp"),
            mounts: Vec::new(),
            env: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// Checks what bubblewrap cannot be trusted to refuse cleanly: an empty or NUL-holding
    /// command line, environment names that are not names, inside paths that are not
    /// plain absolute paths, and mounts over the sandbox's own system directories.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let invalid = |why: String| Err(Error::Job(why));
        if self.argv.is_empty() {
            return invalid("the command line is empty".to_owned());
        }
        if self.argv.iter().any(|a| a.as_bytes().contains(&0)) {
            return invalid("an argument of the command holds a NUL byte".to_owned());
        }
        for (name, value) in &self.env {
            let name_bytes = name.as_bytes();
            if name_bytes.is_empty() || name_bytes.contains(&b'=') || name_bytes.contains(&0) {
                return invalid(format!(
                    "`{}` is not an environment variable name",
                    name.to_string_lossy()
                ));
            }
            if value.as_bytes().contains(&0) {
                return invalid(format!(
                    "the value of `{}` holds a NUL byte",
                    name.to_string_lossy()
                ));
            }
        }
        plain_absolute(&self.cwd, "the working directory")?;
        for mount in &self.mounts {
            plain_absolute(&mount.host, "a mount's host path")?;
            plain_absolute(&mount.inside, "a mount's inside path")?;
            if mount.inside == Path::new("/") {
                return invalid("a mount cannot replace the sandbox's root `/`".to_owned());
            }
            if let Some(system) = RESERVED.iter().find(|r| mount.inside.starts_with(r)) {
                return invalid(format!(
                    "`{}` is inside `{system}`, which the sandbox provides itself",
                    mount.inside.display()
                ));
            }
        }
        self.limits.check()
    }
}

/// Inside paths a mount may not cover: the system the sandbox binds read-only and the
/// files and file systems it makes itself.
const RESERVED: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/dev",
];

fn plain_absolute(path: &Path, what: &str) -> Result<(), Error> {
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !path.as_os_str().as_bytes().contains(&0);
    if plain {
        Ok(())
    } else {
        Err(Error::Job(format!(
            "{what} `{}` must be an absolute path without `.` or `..`",
            path.display()
        )))
    }
}

/// A host directory or file made visible inside the sandbox.
///
/// The host path is opened component by component without following symbolic links, and
/// that open file is what is mounted: a link planted in a writable directory by an
/// earlier call cannot redirect a mount elsewhere on the host (such a mount is refused).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The path on the host: absolute, no `.` or `..`, no symbolic link in it.
    pub host: PathBuf,
    /// Where the command sees it: an absolute path outside the sandbox's system
    /// directories (`/usr`, `/bin`, `/lib*`, `/etc`, `/proc`, `/dev`). Mounts nested in
    /// other mounts are made after them, whatever their order here.
    pub inside: PathBuf,
    /// Whether the command may change it. A read-only mount refuses every write.
    pub writable: bool,
}

impl Mount {
    /// `host` at `inside`, read-only.
    pub fn read_only(host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Self {
        Self {
            host: host.into(),
            inside: inside.into(),
            writable: false,
        }
    }

    /// `host` at `inside`, read-write.
    pub fn read_write(host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Self {
        Self {
            host: host.into(),
            inside: inside.into(),
            writable: true,
        }
    }
}

/// The bounds of one call. Every one is always on; the defaults are those of the planner's
/// `bash` tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Real time from start to end (30 s). At the end every process of the call is
    /// killed: `limit` is `time`.
    pub wall: Duration,
    /// CPU time of each process (30 s, whole seconds, at least 1): at that point the
    /// kernel sends it SIGXCPU (`limit` is `cpu` when that ends the command), one second
    /// later SIGKILL. The wall time bounds the sum over many processes.
    pub cpu: Duration,
    /// Memory of the whole call in bytes (512 MiB): a cgroup's limit (what its processes
    /// use, the files they keep in `/tmp` and `/dev/shm` included), or, where there is no
    /// cgroup to use, each process's address space. `/tmp` and `/dev/shm` are each this
    /// large at most.
    pub memory: u64,
    /// Processes and threads the command may have at once, itself included (64).
    pub processes: u32,
    /// Size of a file any process may write, in bytes (64 MiB); a write past it fails and
    /// the writer gets SIGXFSZ (`limit` is `file_size` when that ends the command).
    pub file_size: u64,
    /// Bytes of each of standard output and standard error kept for the report (1 MiB);
    /// the rest is read and discarded, and the stream reported as truncated.
    pub output: usize,
    /// Bytes each stream may write in all, kept and discarded (64 MiB): past this the call
    /// is stopped (`limit` is `output`), so that `yes` does not run to the wall time.
    pub output_total: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            wall: Duration::from_secs(30),
            cpu: Duration::from_secs(30),
            memory: 512 << 20,
            processes: 64,
            file_size: 64 << 20,
            output: 1 << 20,
            output_total: 64 << 20,
        }
    }
}

impl Limits {
    fn check(&self) -> Result<(), Error> {
        let invalid = |what: &str| Err(Error::Job(format!("the limit on {what} is zero")));
        if self.wall.is_zero() {
            return invalid("wall time");
        }
        if self.memory == 0 {
            return invalid("memory");
        }
        if self.processes == 0 {
            return invalid("processes");
        }
        if self.file_size == 0 {
            return invalid("file size");
        }
        Ok(())
    }

    /// The CPU limit in whole seconds (rounded up, at least one): the resolution of
    /// `RLIMIT_CPU`.
    pub(crate) fn cpu_seconds(&self) -> u64 {
        self.cpu.as_nanos().div_ceil(1_000_000_000).max(1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(job: &Job) -> String {
        match job.check() {
            Err(Error::Job(why)) => why,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_jobs_are_refused_with_the_reason() {
        assert!(refused(&Job::new(Vec::<String>::new())).contains("empty"));
        assert!(refused(&Job::new(["a\0b"])).contains("NUL"));
        let mut job = Job::new(["true"]);
        job.env.push(("A=B".into(), "c".into()));
        assert!(refused(&job).contains("not an environment variable name"));
        let mut job = Job::new(["true"]);
        job.cwd = "tmp".into();
        assert!(refused(&job).contains("working directory"));
        let mut job = Job::new(["true"]);
        job.mounts.push(Mount::read_write("/tmp", "/usr/local"));
        assert!(refused(&job).contains("inside `/usr`"));
        let mut job = Job::new(["true"]);
        job.mounts.push(Mount::read_write("/tmp/../etc", "/mnt"));
        assert!(refused(&job).contains("without `.` or `..`"));
        let mut job = Job::new(["true"]);
        job.mounts.push(Mount::read_only("/tmp", "/"));
        assert!(refused(&job).contains("root"));
        let mut job = Job::new(["true"]);
        job.limits.processes = 0;
        assert!(refused(&job).contains("processes"));
    }

    #[test]
    fn cpu_seconds_round_up() {
        let mut limits = Limits {
            cpu: Duration::from_millis(1500),
            ..Limits::default()
        };
        assert_eq!(limits.cpu_seconds(), 2);
        limits.cpu = Duration::ZERO;
        assert_eq!(limits.cpu_seconds(), 1);
    }
}
