//! The confined sandbox that runs model-written commands: the planner's `bash` tool and
//! the bodies of `code.run` steps. One sandbox, built on bubblewrap (`bwrap`, the sandbox
//! Flatpak uses), for both.
//!
//! ```no_run
//! use lwir_sandbox::{Job, Mount, Sandbox};
//!
//! let sandbox = Sandbox::probe()?; // fails, naming what to install, where it cannot run
//! let mut job = Job::new(["bash", "-c", "ls; echo hi > out"]);
//! job.cwd = "/mnt/scratch/own".into();
//! job.mounts.push(Mount::read_write("/home/me/scratch", "/mnt/scratch/own"));
//! job.env.push(("PATH".into(), "/usr/bin:/bin".into()));
//! let outcome = sandbox.run(&job)?;
//! println!("{}", serde_json::to_string(&outcome).unwrap()); // the `bash` tool's answer
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it owns
//!
//! [`Sandbox::probe`] finds out whether the sandbox works on this machine and how it can
//! bound processes and memory here; [`Sandbox::run`] runs one [`Job`] and returns its
//! [`Outcome`] once every process of it is gone. Nothing else: which mounts a `bash` call
//! or a `code.run` body gets, and what becomes of the answer, is the caller's.
//!
//! # Threat model
//!
//! The command is hostile: written by a model that may have been steered by what it read.
//! It must not reach the network, read the host's secrets (files such as `/etc/shadow`,
//! lwirc's environment — API keys, registry passwords — or its session keyring), change
//! anything of the host but the writable mounts it was given, outlive its call, or starve
//! the machine (fork bombs, memory, disk, CPU, endless output). Bubblewrap and the kernel
//! are trusted; so are the caller's mounts (their host paths are the caller's choice).
//!
//! # What is confined, and how
//!
//! - **Namespaces** (`--unshare-all --unshare-user --disable-userns`): its own network
//!   (a loopback and nothing else: no host listener, no outside address), pids, IPC, UTS,
//!   cgroup and mount namespaces, in a user namespace where it has no capabilities and
//!   cannot make another. A new session (`--new-session`: no terminal to push input into);
//!   `--die-with-parent`.
//! - **Files**: `/usr` and the top-level `/bin`, `/sbin`, `/lib*` (as links on merged-`/usr`
//!   systems) read-only, which is what `bash`, `python3` and `node` need; of `/etc` only
//!   `ld.so.cache`, `alternatives` and `localtime`, plus a synthesized `passwd`, `group`
//!   (users `root`, `sandbox` (1000, the command's uid), `nobody`), `nsswitch.conf` and
//!   `hosts`: no `/etc/shadow`, no host user or name. Its own `/proc` (only its own
//!   processes) with `/proc/sys`, `fs`, `bus` and `irq` read-only and the host-wide
//!   entries (`kcore`, `keys`, `timer_list`, `kpage*`, …) hidden; bubblewrap's minimal
//!   `/dev`; private `/tmp` and `/dev/shm` (tmpfs, each at most the memory limit); the root
//!   read-only; and the caller's [`Mount`]s, each read-only or read-write, at the path the
//!   caller names. A mount's host path is opened without following symbolic links and that
//!   open file is what is bound, so a link planted in a writable mount by an earlier call
//!   cannot redirect a later mount.
//! - **System calls** (a seccomp filter): no file made setuid or setgid (with lwirc as
//!   root such a file in a writable mount would be a setuid-root program on the host), no
//!   `openat2` (its mode cannot be checked) and no io_uring (which would bypass the
//!   filter), no keyrings, `bpf`, `perf_event_open` or `userfaultfd`; a system call of
//!   another ABI (32-bit, x32) kills the process. Written for x86_64 and aarch64; elsewhere
//!   the probe fails.
//! - **Environment**: bubblewrap starts with exactly the job's variables and nothing else,
//!   so they are also all its pid 1 has (`/proc/1/environ`); its arguments are passed on a
//!   descriptor (`--args`), so its command line shows no host path. Every descriptor of
//!   lwirc but the three streams is closed; standard input is the caller's bytes.
//! - **Limits** ([`Limits`]): wall time (lwirc kills the sandbox's init, and the kernel
//!   every process of its pid namespace, daemons that called `setsid` included), CPU time
//!   (`RLIMIT_CPU`), memory and processes (a cgroup made for each call, or rlimits: see
//!   [`MemoryLimit`], [`ProcessLimit`]), file size (`RLIMIT_FSIZE`), no core files, and
//!   output (each stream captured up to a cap, the rest read and discarded, the call
//!   stopped past a total).
//!
//! The call ends when the command exits — whatever it left running is killed then — or
//! when it is stopped at a limit. Either way [`Sandbox::run`] returns only after the
//! kernel reports the sandbox's init gone, which it does only once every other process of
//! the namespace is, and (with a cgroup) the cgroup empty. It never waits on a pipe.
//!
//! The sandbox also ends without lwirc: bubblewrap is killed when lwirc dies (its parent
//! death signal is set before it starts), its init with it (`--die-with-parent`), and the
//! command runs under `timeout -s KILL` set a second past the wall time, so a sandbox whose
//! lwirc died while bubblewrap was still setting it up — before the init armed its own
//! parent death signal — still ends then. The next probe kills what is left in the cgroups
//! of an lwirc that is gone, and removes them.
//!
//! Which [`Limit`] the report names: `output` when lwirc stopped it for writing too much;
//! `cpu` or `file_size` when the command was ended by SIGXCPU or SIGXFSZ; otherwise, when
//! the call did not succeed (it was stopped, or exited non-zero or by a signal), `memory`
//! when the kernel killed one of its processes at the memory limit, `processes` when a
//! fork was refused at the process limit, and `time` when it was stopped at the wall
//! time. A call that exits 0 names no limit, even if a process of it met one. So a fork
//! bomb whose shell returns at once (`:(){ :|:& };:`) ends with that shell, its processes
//! killed then, and reports what the shell did: exit 0 and no limit, or — when the bomb
//! filled the process limit before the shell's own second fork, a race of the command's —
//! the shell's failure and `processes`. One whose shell waits, or a fork loop, reports
//! `processes` (where rlimits bound processes, which keep no count: `time`, or the
//! shell's failure and no limit).
//!
//! # Fail closed
//!
//! Where bubblewrap is missing or too old, the kernel refuses the namespaces, or nothing
//! can bound processes, [`Sandbox::probe`] returns [`Unavailable`] naming what to install
//! or allow, and since a [`Sandbox`] comes only from a successful probe (which ran a
//! command with every confinement on), nothing can run unconfined.
//!
//! # Measured facts it rests on (bubblewrap 0.8.0, Linux 6.18, cgroup v1, Debian 12)
//!
//! - Bubblewrap maps the sandbox's uid to the uid that started it: with lwirc as root,
//!   the command is uid 0 outside (`--uid 65534` changes only the inside number).
//!   `RLIMIT_NPROC` therefore does not bound it (a limit of 10 let 30 `sleep`s start), and
//!   under bubblewrap's `--proc` the files of `/proc/sys` were writable by it — a global
//!   sysctl was written from inside. Hence `/proc/sys` bound read-only and the host-wide
//!   `/proc` files hidden, and a `pids` cgroup for root.
//! - As root, the command could make a setuid file in a writable mount (`chmod 4755` and
//!   `open(O_CREAT, 04755)` both worked): on the host it was `-rwsr-xr-x root`.
//! - For an ordinary user, `RLIMIT_NPROC` set before bubblewrap counts every process of
//!   that user on the machine (limit 10: 6 forks allowed, other processes of the user
//!   counted); set inside the sandbox's user namespace (by `prlimit`), it counts the
//!   namespace's processes only (limit 10: 8 forks, beside the init and the command).
//! - Bubblewrap's pid 1 keeps the environment bubblewrap was started with (`--clearenv`
//!   does not clean `/proc/1/environ`), and shows bubblewrap's whole command line in
//!   `/proc/1/cmdline`.
//! - Bubblewrap exits as soon as the command exits; the init it leaves is killed through
//!   `--die-with-parent` and the kernel then kills the rest of the namespace. Right after
//!   bubblewrap exited, up to 66 processes of a fork bomb were still in its cgroup.
//! - A fork bomb (`:(){ :|:& };:`) whose shell returns at once reached a process limit of
//!   66 before the sandbox ended in 8 of 10 runs: whether it does is a race, which is why a
//!   call that exits 0 names no limit.
//! - Bubblewrap sets its parent death signal only after it has cloned the sandbox, and the
//!   sandbox's init only once the sandbox is set up: an lwirc killed in the first 0.2 s of a
//!   call left the sandbox running in 3 of 40 tries (with the signal set before bubblewrap
//!   starts, and `timeout` inside, such a sandbox ended at the wall time: none was left 6 s
//!   after a 4 s call).
//! - Bubblewrap passes every descriptor it inherits to the command (descriptors of the
//!   shell that ran it appeared inside), and a command killed by signal N as exit status
//!   128 + N.
//! - Under an `RLIMIT_AS` of 512 MiB, `node -e 'console.log(1)'` printed nothing (with
//!   1 GiB it did); under 128 MiB it hung. In a memory cgroup of 512 MiB it runs.
//! - In a memory cgroup (v1) a process that allocates past the limit is killed by the
//!   kernel (exit 137, `oom_kill 1` in `memory.oom_control`); `pids.events` counts the
//!   forks refused at `pids.max`.
//!
//! # What it does not do
//!
//! - Without a usable cgroup (an ordinary user whose cgroups are not delegated), memory is
//!   bounded per process by address space, not in total: files a call keeps in `/tmp` and
//!   `/dev/shm` are bounded by their size, but not what the kernel holds for it (pipes,
//!   sockets, anonymous memory files of up to the file size each), and a reached limit is
//!   not reported (the process sees a failed allocation or fork). lwirc does not move
//!   itself into a cgroup to get delegation.
//! - CPU time is bounded per process; the wall time bounds the sum of many.
//! - When bubblewrap itself cannot set the sandbox up for a call (a working directory that
//!   does not exist inside), the outcome is exit status 1 with bubblewrap's message
//!   (`bwrap: …`) on standard error, as if the command had failed.
//! - The command line (`argv`) follows bubblewrap's options on its own command line, so it
//!   shows in `ps` on the host and as the sandbox's `/proc/1/cmdline`, and one argument may
//!   be at most 128 KiB (the kernel's `MAX_ARG_STRLEN`): pass longer programs on standard
//!   input or in a mount.
//! - A writable mount holds what the command put there: symbolic links to anywhere, fifos,
//!   files up to the file size limit. The host must treat its content as hostile (not
//!   follow its links, not run its files).
//!
//! # Using it
//!
//! [`Sandbox::run`] blocks its thread until the call is over; bubblewrap dies with that
//! thread, so it must not end before `run` returns. The process must ignore SIGPIPE (Rust
//! programs do), since a command that closes its input early makes writing it fail.

mod cgroup;
mod job;
mod layout;
mod outcome;
mod probe;
mod run;
mod seccomp;
mod sys;

pub use job::{Job, Limits, Mount};
pub use outcome::{Limit, Outcome};
pub use probe::{MemoryLimit, ProcessLimit, Sandbox, Unavailable};
pub use run::Error;
