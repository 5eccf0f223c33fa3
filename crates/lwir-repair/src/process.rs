//! The planner process runner: starts the planner command, writes one request to its
//! standard input, closes it, and collects standard output (the answer) and the tail of
//! standard error, with a timeout and an output size limit.
//!
//! The runner knows nothing about JSON; interpreting the answer is the caller's job.
//!
//! The answer is what the planner wrote before it exited. The planner runs in its own
//! process group, and on Linux every process it starts inherits a mark unique to the call
//! (the environment variable [`TOKEN_VAR`]). When the call ends — the planner exited, or was
//! stopped on a timeout or an oversized answer — whatever it left behind is killed: its
//! process group, and every process of ours carrying the call's mark (which finds children
//! that left the group with `setsid`). A background child holding the output pipe open
//! therefore neither delays the answer past a short grace period nor outlives the call.
//! Every pipe is served by its own thread (a planner that never reads its input, or writes
//! a lot of error output, cannot deadlock the runner), and those threads are never waited
//! for longer than a short grace period once the call is decided.

mod spawn;

use spawn::Child;
use std::io::{self, Read, Write};
use std::process::ExitStatus;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// The default limit on how long one planner call may take (5 minutes).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The default limit on the size of a planner's standard output (16 MiB).
pub const DEFAULT_MAX_OUTPUT: usize = 16 * 1024 * 1024;

/// How many bytes of the end of standard error are kept.
const STDERR_TAIL: usize = 4096;

/// How long the reader threads are waited for once what the planner left behind was killed.
/// Past it they are abandoned (what standard output held by then is the answer).
const GRACE: Duration = Duration::from_secs(2);

/// How long the pipes may stay open after the planner exited before what holds them (a
/// process the planner left behind) is killed.
const PIPE_GRACE: Duration = Duration::from_millis(250);

/// The environment variable that marks every process of one planner call (Linux), so that
/// what the planner leaves behind can be found and killed when the call ends, even outside
/// its process group. Its value is unique to the call.
pub const TOKEN_VAR: &str = "LWIRC_PLANNER_TOKEN";

/// The stack of each pipe thread: they only copy bytes. (A default 2 MiB stack may be
/// backed by a huge page that is zeroed at its first touch: three per call.)
const PIPE_THREAD_STACK: usize = 128 * 1024;

/// The first and the longest pause between two checks of whether the child has exited.
const POLL_FIRST: Duration = Duration::from_millis(1);
const POLL_MAX: Duration = Duration::from_millis(20);
/// The first pause once both pipes are closed and the child has not exited yet.
const POLL_EXITING: Duration = Duration::from_micros(100);

/// How to start the planner: a program and its arguments, run without a shell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannerCommand {
    program: String,
    args: Vec<String>,
}

impl PlannerCommand {
    /// Splits `line` by POSIX shell quoting rules, WITHOUT running a shell: no globbing, no
    /// variables, no pipes. The first word is the program, the rest its arguments.
    ///
    /// Fails when `line` has no words or its quoting is unbalanced.
    pub fn parse(line: &str) -> Result<Self, CommandLineError> {
        let mut words = shell_words::split(line)
            .map_err(|_| CommandLineError::UnbalancedQuotes {
                line: line.to_owned(),
            })?
            .into_iter();
        let program = words.next().ok_or(CommandLineError::Empty)?;
        Ok(Self {
            program,
            args: words.collect(),
        })
    }

    /// The command of `words`: the first is the program, the rest its arguments (a
    /// binding's `command` list); `None` when there are no words.
    pub fn from_words(words: &[String]) -> Option<Self> {
        let (program, args) = words.split_first()?;
        Some(Self {
            program: program.clone(),
            args: args.to_vec(),
        })
    }

    /// Runs `line` through `sh -c` (for when the user asked for a shell explicitly: pipes,
    /// variables, redirections).
    pub fn shell(line: &str) -> Self {
        Self {
            program: "sh".to_owned(),
            args: vec!["-c".to_owned(), line.to_owned()],
        }
    }

    /// The program to run (looked up in `PATH` when it has no `/`).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The arguments passed to the program.
    pub fn args(&self) -> &[String] {
        &self.args
    }
}

/// The shell-quoted form of the command, for messages and logs; [`PlannerCommand::parse`]
/// reads it back to the same command.
impl std::fmt::Display for PlannerCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words = std::iter::once(&self.program).chain(&self.args);
        f.write_str(&shell_words::join(words))
    }
}

/// A command line that cannot be split into a program and arguments (callers say whose:
/// `--runner: the command is empty`).
#[derive(Debug, thiserror::Error)]
pub enum CommandLineError {
    /// The line has no words at all.
    #[error("the command is empty")]
    Empty,
    /// A quote is opened and never closed.
    #[error("unbalanced quotes in the command `{line}`")]
    UnbalancedQuotes {
        /// The line as given.
        line: String,
    },
}

/// Limits of one planner call.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How long the whole call may take, from starting the planner to having its complete
    /// answer. Past it the planner's process group is killed.
    pub timeout: Duration,
    /// The most bytes the planner may write to standard output. Past it the planner's
    /// process group is killed.
    pub max_output: usize,
}

impl Default for Limits {
    /// [`DEFAULT_TIMEOUT`] and [`DEFAULT_MAX_OUTPUT`].
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

/// What a finished call produced (the planner exited with status 0).
#[derive(Clone, Debug)]
pub struct Output {
    /// Everything the planner wrote to standard output (possibly empty, possibly not JSON).
    pub stdout: Vec<u8>,
    /// The last 4 KiB of standard error, decoded lossily as UTF-8 and trimmed.
    pub stderr_tail: String,
    /// How long the call took.
    pub elapsed: Duration,
}

/// Who a child process is, for what its failures say: the planner of a session or goal,
/// a goal's reviewer, a goal's runner. The process rules are the same for each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// A planner (`--planner`).
    #[default]
    Planner,
    /// A reviewer of proposals (`--reviewer`).
    Reviewer,
    /// A goal's runner (`--runner`).
    Runner,
}

impl Role {
    /// `planner`, `reviewer` or `runner`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Planner => "planner",
            Role::Reviewer => "reviewer",
            Role::Runner => "runner",
        }
    }

    /// The option that names its command: `--planner`, `--reviewer`, `--runner`.
    pub fn option(self) -> &'static str {
        match self {
            Role::Planner => "--planner",
            Role::Reviewer => "--reviewer",
            Role::Runner => "--runner",
        }
    }
}

/// Why a call of a child process (a planner, a reviewer, a runner) produced no answer. Its
/// `Display` says it of a planner; [`RunFailure::message`] of any [`Role`].
#[derive(Debug)]
pub enum RunFailure {
    /// The program could not be started (not found, not executable, ...).
    NotStarted {
        /// The program that could not be started.
        command: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// It exited with a non-zero status or was killed by a signal.
    Exited {
        /// The exit status, when it exited by itself.
        code: Option<i32>,
        /// The signal number, when a signal killed it (Unix only).
        signal: Option<i32>,
        /// The last 4 KiB of its standard error, lossily decoded and trimmed.
        stderr_tail: String,
    },
    /// The call took longer than the timeout; its process group was killed.
    TimedOut {
        /// The timeout that was exceeded.
        after: Duration,
        /// The last 4 KiB of its standard error, lossily decoded and trimmed.
        stderr_tail: String,
    },
    /// It wrote more than the limit to standard output; its process group was killed.
    TooLarge {
        /// The limit that was exceeded, in bytes.
        limit: usize,
        /// The last 4 KiB of its standard error, lossily decoded and trimmed.
        stderr_tail: String,
    },
    /// Talking to it failed for another reason (creating pipes or threads, reading its
    /// output, waiting for it).
    Io {
        /// What the operating system said.
        source: io::Error,
    },
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(Role::Planner))
    }
}

impl std::error::Error for RunFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NotStarted { source, .. } | Self::Io { source } => Some(source),
            _ => None,
        }
    }
}

impl RunFailure {
    /// What happened, said of a `role` process: `cannot start the runner `x`: …; check
    /// the --runner command …`, `the reviewer exited with status 3`.
    pub fn message(&self, role: Role) -> String {
        let who = role.name();
        match self {
            Self::NotStarted { command, source } => {
                let shell = match role {
                    Role::Planner => "; pass --planner-shell for pipes and variables",
                    Role::Runner => "; pass --runner-shell for pipes and variables",
                    Role::Reviewer => "; pass --planner-shell for pipes and variables",
                };
                format!(
                    "cannot start the {who} `{command}`: {source}; check the {} command (it is \
                     run without a shell{shell})",
                    role.option()
                )
            }
            Self::Exited { code, signal, .. } => match (code, signal) {
                (Some(code), _) => format!("the {who} exited with status {code}"),
                (None, Some(signal)) => format!("the {who} was killed by signal {signal}"),
                (None, None) => format!("the {who} failed without an exit status"),
            },
            Self::TimedOut { after, .. } => {
                format!("the {who} did not answer within {after:?} and was stopped")
            }
            Self::TooLarge { limit, .. } => format!(
                "the {who} wrote more than {limit} bytes to standard output and was stopped"
            ),
            Self::Io { source } => format!("cannot talk to the {who}: {source}"),
        }
    }

    /// [`RunFailure::message`], then `; its standard error ends: LINE` (its last line that
    /// is not blank, at most 500 characters) when it wrote to standard error — redacted:
    /// a child may print a secret it inherited. What callers record and show.
    pub fn report(&self, role: Role) -> String {
        let mut message = self.message(role);
        if let Some(line) = self
            .stderr_tail()
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
        {
            message.push_str("; its standard error ends: ");
            message.extend(line.chars().take(500));
        }
        lwir_spec::redact::redact(&message).into_owned()
    }

    /// Its kind, as a planner's failure is classified (LW801–LW804).
    pub fn kind(&self) -> crate::harness::FailureKind {
        use crate::harness::FailureKind;
        match self {
            Self::NotStarted { .. } => FailureKind::NotStarted,
            Self::Exited { .. } | Self::Io { .. } => FailureKind::Failed,
            Self::TimedOut { .. } => FailureKind::TimedOut,
            Self::TooLarge { .. } => FailureKind::TooLarge,
        }
    }

    /// The last 4 KiB of the child's standard error, lossily decoded and trimmed; `""`
    /// when there is none (it did not start, or an I/O failure).
    pub fn stderr_tail(&self) -> &str {
        match self {
            Self::Exited { stderr_tail, .. }
            | Self::TimedOut { stderr_tail, .. }
            | Self::TooLarge { stderr_tail, .. } => stderr_tail,
            Self::NotStarted { .. } | Self::Io { .. } => "",
        }
    }
}

/// Runs one planner call: starts `command` with `env` added to the inherited environment,
/// writes `request` to its standard input and closes it, collects standard output (at most
/// `limits.max_output` bytes) and the last 4 KiB of standard error (lossy UTF-8, trimmed),
/// and waits at most `limits.timeout` for the planner to exit.
///
/// Exit status 0 gives [`Output`], whatever standard output holds: everything the planner
/// wrote before it exited (processes it left behind get a short grace period to close the
/// pipes, then are killed). A planner that exits without reading its input is not a failure
/// by itself. A non-zero status or a signal gives [`RunFailure::Exited`]; on a timeout or an
/// oversized output the planner is stopped ([`RunFailure::TimedOut`],
/// [`RunFailure::TooLarge`]). However the call ends, nothing it started is left running: see
/// the module documentation.
pub fn run(
    command: &PlannerCommand,
    request: &[u8],
    env: &[(&str, String)],
    limits: &Limits,
) -> Result<Output, RunFailure> {
    run_in(command, request, env, limits, true)
}

/// [`run`], with an environment of exactly `env` (and the call's mark, [`TOKEN_VAR`]):
/// nothing of lwirc's own environment is passed on. For commands that must not see lwirc's
/// secrets (a workflow's command tools and models get `PATH`, `HOME`, `LANG` and the
/// variables their binding names).
pub fn run_clean(
    command: &PlannerCommand,
    request: &[u8],
    env: &[(&str, String)],
    limits: &Limits,
) -> Result<Output, RunFailure> {
    run_in(command, request, env, limits, false)
}

fn run_in(
    command: &PlannerCommand,
    request: &[u8],
    env: &[(&str, String)],
    limits: &Limits,
    inherit: bool,
) -> Result<Output, RunFailure> {
    let start = Instant::now();
    let deadline = start
        .checked_add(limits.timeout)
        .or_else(|| start.checked_add(Duration::from_secs(u64::from(u32::MAX))))
        .unwrap_or(start);
    let token = call_token();

    // The child's whole environment: lwirc's own (unless `inherit` is off), then `env`,
    // then the call's mark, each later one replacing an earlier one of the same name.
    let mut vars: std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString> = if inherit {
        std::env::vars_os().collect()
    } else {
        Default::default()
    };
    vars.extend(env.iter().map(|(key, value)| (key.into(), value.into())));
    vars.insert(TOKEN_VAR.into(), token.clone().into());
    let spec = spawn::Spec {
        program: &command.program,
        args: &command.args,
        env: vars.into_iter().collect(),
    };
    let child = spawn::spawn(&spec).map_err(|source| RunFailure::NotStarted {
        command: command.program.clone(),
        source,
    })?;

    let (events_tx, events) = mpsc::channel();
    let mut call = Call {
        child,
        started: start,
        token,
        events,
        _events_tx: events_tx.clone(),
        stdout_bytes: Arc::new(Mutex::new(Vec::new())),
        stderr: Arc::new(Mutex::new(Vec::new())),
        status: None,
        exited_at: None,
        stdout: None,
        stderr_done: false,
    };
    if let Err(source) = start_threads(&mut call, request, limits.max_output, events_tx) {
        call.stop();
        return Err(RunFailure::Io { source });
    }

    let mut poll = POLL_FIRST;
    let mut pipes_closed = false;
    loop {
        if call.exited_at.is_none() {
            match call.exited() {
                Ok(true) => call.exited_at = Some(Instant::now()),
                Ok(false) => {}
                Err(source) => {
                    call.stop();
                    return Err(RunFailure::Io { source });
                }
            }
        }
        // Events sent before the child exited are seen here: the stdout reader reports an
        // oversized output before it closes the pipe (which may kill the child by SIGPIPE).
        call.drain();
        let now = Instant::now();
        if let Some(failure) = call.stdout_failure(limits) {
            return Err(failure);
        }

        let wake = match call.exited_at {
            // The planner is done: its answer is what it wrote. Whatever still holds the
            // pipes open past a short grace is something it left behind.
            Some(exited_at) => {
                let settle = exited_at.checked_add(PIPE_GRACE).unwrap_or(exited_at);
                if (call.stdout.is_some() && call.stderr_done) || now >= settle {
                    return call.finish(limits, start);
                }
                settle
            }
            None => {
                if now >= deadline {
                    call.stop();
                    return Err(RunFailure::TimedOut {
                        after: limits.timeout,
                        stderr_tail: call.stderr_tail_after_stop(),
                    });
                }
                // Both pipes closed while the child has not exited yet: it is most likely
                // exiting (its descriptors close before it becomes waitable), so it is looked
                // at again soon rather than after the pause the call has grown to.
                if !pipes_closed && call.stdout.is_some() && call.stderr_done {
                    pipes_closed = true;
                    poll = POLL_EXITING;
                }
                let wake = deadline.min(now + poll);
                poll = (poll * 2).min(POLL_MAX);
                wake
            }
        };
        call.wait_event(wake.saturating_duration_since(now));
    }
}

/// A mark unique to one call: this process, a counter, and the time.
fn call_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    )
}

/// How reading standard output ended.
enum StdoutEnd {
    /// End of file within the limit (the bytes are in [`Call::stdout_bytes`]).
    Complete,
    /// More than the limit arrived; reading stopped.
    TooLarge,
    /// Reading failed.
    Failed(io::Error),
}

/// What the pipe threads report.
enum Event {
    Stdout(StdoutEnd),
    StderrDone,
}

/// The state of one call in progress.
struct Call {
    child: Child,
    /// When the call began, before its child was started.
    started: Instant,
    /// The value of [`TOKEN_VAR`] in the planner's environment.
    token: String,
    events: Receiver<Event>,
    /// Kept so that `events` never disconnects (waiting on it is the loop's sleep).
    _events_tx: Sender<Event>,
    /// Standard output so far, shared with its reader.
    stdout_bytes: Arc<Mutex<Vec<u8>>>,
    /// The last [`STDERR_TAIL`] bytes of standard error so far, shared with its reader.
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The exit status, once the child was reaped.
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    stdout: Option<StdoutEnd>,
    stderr_done: bool,
}

impl Call {
    fn apply(&mut self, event: Event) {
        match event {
            Event::Stdout(end) => self.stdout = Some(end),
            Event::StderrDone => self.stderr_done = true,
        }
    }

    fn drain(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.apply(event);
        }
    }

    fn wait_event(&mut self, timeout: Duration) {
        if let Ok(event) = self.events.recv_timeout(timeout) {
            self.apply(event);
        }
        self.drain();
    }

    /// Whether the planner has exited. On Linux it is not reaped yet: while it is a zombie
    /// its pid (the id of its process group) cannot be reused, so the group can be killed
    /// safely.
    #[cfg(target_os = "linux")]
    fn exited(&mut self) -> io::Result<bool> {
        let pid: libc::id_t = self.child.id();
        loop {
            // SAFETY: an all-zero `siginfo_t` is a valid value; `waitid` writes into it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is a valid, writable `siginfo_t`; WNOWAIT leaves the child
            // waitable, so `Child::wait` still reaps it.
            let done = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid,
                    &raw mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            if done != 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            // SAFETY: `waitid` filled `info` in (with si_pid 0 when the child still runs).
            return Ok(unsafe { info.si_pid() } != 0);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn exited(&mut self) -> io::Result<bool> {
        if let Some(status) = self.child.try_wait()? {
            self.status = Some(status);
        }
        Ok(self.status.is_some())
    }

    /// The exit status, reaping the child.
    fn reap(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = self.child.wait()?;
        self.status = Some(status);
        Ok(status)
    }

    /// A failure reported by the stdout reader (too large, unreadable), after stopping the
    /// planner.
    fn stdout_failure(&mut self, limits: &Limits) -> Option<RunFailure> {
        match self.stdout.take() {
            Some(StdoutEnd::TooLarge) => {
                self.stop();
                Some(RunFailure::TooLarge {
                    limit: limits.max_output,
                    stderr_tail: self.stderr_tail_after_stop(),
                })
            }
            Some(StdoutEnd::Failed(source)) => {
                self.stop();
                Some(RunFailure::Io { source })
            }
            other => {
                self.stdout = other;
                None
            }
        }
    }

    /// Kills the planner, everything it started, and reaps it.
    fn stop(&mut self) {
        kill_leftovers(&self.child, &self.token, self.started);
        let _ = self.child.kill();
        let _ = self.reap();
    }

    /// Waits up to [`GRACE`] for the readers to finish (both, or only stderr's).
    fn settle_readers(&mut self, stdout_too: bool) {
        let until = Instant::now() + GRACE;
        while !self.stderr_done || (stdout_too && self.stdout.is_none()) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.wait_event(left);
        }
    }

    /// Waits up to [`GRACE`] for the stderr reader to finish, then returns the tail.
    fn stderr_tail_after_stop(&mut self) -> String {
        self.settle_readers(false);
        self.stderr_tail()
    }

    fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        // The cut may fall inside a UTF-8 sequence: skip its continuation bytes.
        let skip = tail
            .iter()
            .take(3)
            .take_while(|&&byte| byte & 0b1100_0000 == 0b1000_0000)
            .count();
        let skip = if tail.len() == STDERR_TAIL { skip } else { 0 };
        String::from_utf8_lossy(&tail[skip..]).trim().to_owned()
    }

    /// The result of a call whose planner exited by itself: what it left behind is killed,
    /// and its answer is what standard output held.
    fn finish(mut self, limits: &Limits, start: Instant) -> Result<Output, RunFailure> {
        kill_leftovers(&self.child, &self.token, self.started);
        self.settle_readers(true);
        if let Some(failure) = self.stdout_failure(limits) {
            return Err(failure);
        }
        let status = self.reap().map_err(|source| RunFailure::Io { source })?;
        let stderr_tail = self.stderr_tail();
        if status.success() {
            let stdout = std::mem::take(
                &mut *self
                    .stdout_bytes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            return Ok(Output {
                stdout,
                stderr_tail,
                elapsed: start.elapsed(),
            });
        }
        let (code, signal) = code_and_signal(status);
        Err(RunFailure::Exited {
            code,
            signal,
            stderr_tail,
        })
    }
}

/// Starts the stdin writer and the stdout and stderr readers.
fn start_threads(
    call: &mut Call,
    request: &[u8],
    max_output: usize,
    events: Sender<Event>,
) -> io::Result<()> {
    let missing = || io::Error::other("the planner's pipes were not created");
    let stdin = call.child.stdin.take().ok_or_else(missing)?;
    let stdout = call.child.stdout.take().ok_or_else(missing)?;
    let stderr = call.child.stderr.take().ok_or_else(missing)?;

    // What the pipe takes at once is written now; a thread writes the rest, if any.
    #[cfg(target_os = "linux")]
    let request = &request[spawn::write_now(&stdin, request)..];
    if request.is_empty() {
        drop(stdin);
    } else {
        let request = request.to_vec();
        thread::Builder::new()
            .name("planner-stdin".into())
            .stack_size(PIPE_THREAD_STACK)
            .spawn(move || write_stdin(stdin, &request))?;
    }
    let stdout_events = events.clone();
    let stdout_bytes = Arc::clone(&call.stdout_bytes);
    thread::Builder::new()
        .name("planner-stdout".into())
        .stack_size(PIPE_THREAD_STACK)
        .spawn(move || read_stdout(stdout, max_output, &stdout_bytes, &stdout_events))?;
    let tail = Arc::clone(&call.stderr);
    thread::Builder::new()
        .name("planner-stderr".into())
        .stack_size(PIPE_THREAD_STACK)
        .spawn(move || read_stderr(stderr, &tail, &events))?;
    Ok(())
}

/// Writes the request and closes standard input. Write errors are ignored: a planner that
/// exits without reading (broken pipe) is judged by its exit status and output.
fn write_stdin(mut stdin: impl Write, request: &[u8]) {
    let _ = stdin.write_all(request);
    drop(stdin);
}

/// Reads standard output into `bytes` as it arrives (so that what the planner wrote is
/// there even when something it left behind keeps the pipe open), at most one byte past
/// `max_output`.
fn read_stdout(
    mut pipe: impl Read,
    max_output: usize,
    bytes: &Mutex<Vec<u8>>,
    events: &Sender<Event>,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut total = 0usize;
    let end = loop {
        let want = chunk.len().min(max_output.saturating_add(1) - total);
        match pipe.read(&mut chunk[..want]) {
            Ok(0) => break StdoutEnd::Complete,
            Ok(n) => {
                total += n;
                if total > max_output {
                    break StdoutEnd::TooLarge;
                }
                bytes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(&chunk[..n]);
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => break StdoutEnd::Failed(error),
        }
    };
    let _ = events.send(Event::Stdout(end));
    // Only now close the pipe: a planner killed by SIGPIPE is then known to be too large.
    drop(pipe);
}

fn read_stderr(mut pipe: impl Read, tail: &Mutex<Vec<u8>>, events: &Sender<Event>) {
    let mut chunk = [0u8; 8192];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > STDERR_TAIL {
                    let cut = tail.len() - STDERR_TAIL;
                    tail.drain(..cut);
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = events.send(Event::StderrDone);
}

/// Kills what the planner left behind: its process group, and (on Linux) every process of
/// ours marked with the call's `token`, round after round until none is found (a process
/// that forks while being killed leaves marked children).
fn kill_leftovers(child: &Child, token: &str, started: Instant) {
    kill_group(child);
    #[cfg(target_os = "linux")]
    {
        let mark = format!("{TOKEN_VAR}={token}");
        // What the child started has a pid allocated after the child's.
        let among = libc::pid_t::try_from(child.id()).map_or(marked::Among::All, |pid| {
            marked::Among::After { pid, started }
        });
        for _ in 0..64 {
            if marked::kill(mark.as_bytes(), among) == 0 {
                break;
            }
            kill_group(child);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (token, started);
}

/// SIGKILLs every process of this user whose environment (as it was started) holds
/// `name=value` exactly — what a call whose lwirc was killed left running, found by a mark
/// the caller put in its environment (`env` of [`run`]). Linux only (elsewhere nothing is
/// found); never this process. Returns how many were signalled.
pub fn kill_marked(name: &str, value: &str) -> usize {
    #[cfg(target_os = "linux")]
    {
        let mark = format!("{name}={value}");
        let mut killed = 0;
        for _ in 0..64 {
            let round = marked::kill(mark.as_bytes(), marked::Among::All);
            if round == 0 {
                break;
            }
            killed += round;
        }
        killed
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (name, value);
        0
    }
}

/// Kills the process group the child leads (it was started with `process_group(0)`).
#[cfg(unix)]
fn kill_group(child: &Child) {
    if let Ok(pgid) = libc::pid_t::try_from(child.id())
        && pgid > 0
    {
        // SAFETY: `kill` has no memory-safety preconditions. A negative pid addresses the
        // process group whose id is the child's pid, which the child leads.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_child: &Child) {}

/// Finding and killing the processes of one call by the mark in their environment.
#[cfg(target_os = "linux")]
mod marked {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;

    /// Where a mark's processes can be: anywhere, or, for the processes of a call whose
    /// child has `pid` and started at `started`, at the pids allocated after it.
    #[derive(Clone, Copy)]
    pub(super) enum Among {
        All,
        After {
            pid: libc::pid_t,
            started: std::time::Instant,
        },
    }

    /// At most how many processes a machine starts per second, for [`since`]'s bound: far
    /// above what one sustains (a fork and an exit take tens of microseconds).
    const FORKS_PER_SECOND: u128 = 100_000;

    /// The pids a process started after the one with `pid` can have, allocated since
    /// `started`: those after it, in the kernel's cyclic order of allocation, up to the last
    /// one allocated — unless the numbers may have come round since (too long ago for the
    /// machine's `pid_max`), or this process's pid namespace is not the one `/proc` shows.
    fn since(pid: libc::pid_t, started: std::time::Instant) -> Option<Pids> {
        let number =
            |path: &str| -> Option<i64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
        static SAME_NAMESPACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let same = *SAME_NAMESPACE.get_or_init(|| {
            std::fs::read_link("/proc/self")
                .is_ok_and(|own| own.to_str() == Some(&std::process::id().to_string()))
        });
        let pid_max = number("/proc/sys/kernel/pid_max")?;
        let last = number("/proc/sys/kernel/ns_last_pid")?;
        let allocations = started.elapsed().as_millis() * FORKS_PER_SECOND / 1000 + 1;
        if !same || allocations >= u128::try_from(pid_max / 2).ok()? {
            return None;
        }
        let pid = i64::from(pid);
        // Pids run from 1 to pid_max - 1 and then come round.
        let count = if last >= pid {
            last - pid
        } else {
            (pid_max - 1 - pid) + last
        };
        Some(Pids {
            after: pid,
            count,
            pid_max,
        })
    }

    /// The `count` pids allocated after `after`, in the kernel's order of allocation: up to
    /// `pid_max - 1`, then from 1 again (`count` 0: no process was started since).
    #[derive(Clone, Copy)]
    struct Pids {
        after: i64,
        count: i64,
        pid_max: i64,
    }

    impl Pids {
        /// How far after `after` `pid` comes (1 for the next one).
        fn distance(self, pid: i64) -> i64 {
            if pid > self.after {
                pid - self.after
            } else {
                (self.pid_max - 1 - self.after) + pid
            }
        }

        fn contains(self, pid: i64) -> bool {
            (1..=self.count).contains(&self.distance(pid))
        }

        fn iter(self) -> impl Iterator<Item = i64> {
            (1..=self.count).map(move |step| {
                let pid = self.after + step;
                if pid >= self.pid_max {
                    pid - (self.pid_max - 1)
                } else {
                    pid
                }
            })
        }
    }

    /// SIGKILLs every process of our effective uid, `among` those that can carry it, whose
    /// initial environment holds `mark` (`NAME=value`) exactly; returns how many were
    /// signalled. Never this process.
    pub(super) fn kill(mark: &[u8], among: Among) -> usize {
        const PROBED: i64 = 4096;
        let range = match among {
            Among::All => None,
            Among::After { pid, started } => since(pid, started),
        };
        let mut scan = Scan {
            mark,
            // SAFETY: `geteuid` has no preconditions.
            uid: unsafe { libc::geteuid() },
            me: std::process::id(),
            buffer: Vec::with_capacity(64 * 1024),
            killed: 0,
        };
        match range {
            // A short range is probed pid by pid (a missing one costs a failed open); else
            // the processes `/proc` lists.
            Some(pids) if pids.count <= PROBED => {
                for pid in pids.iter() {
                    if let Ok(pid) = libc::pid_t::try_from(pid) {
                        scan.look(pid, std::path::Path::new(&format!("/proc/{pid}")));
                    }
                }
            }
            _ => {
                let Ok(entries) = std::fs::read_dir("/proc") else {
                    return 0;
                };
                for entry in entries.flatten() {
                    let Some(pid) = entry
                        .file_name()
                        .to_str()
                        .and_then(|name| name.parse::<libc::pid_t>().ok())
                    else {
                        continue;
                    };
                    if range.is_none_or(|pids| pids.contains(i64::from(pid))) {
                        scan.look(pid, &entry.path());
                    }
                }
            }
        }
        scan.killed
    }

    /// One pass over processes, looking for one mark.
    struct Scan<'m> {
        mark: &'m [u8],
        uid: libc::uid_t,
        me: u32,
        buffer: Vec<u8>,
        killed: usize,
    }

    impl Scan<'_> {
        /// Kills process `pid` (its `/proc` directory `dir`) if it carries the mark.
        fn look(&mut self, pid: libc::pid_t, dir: &std::path::Path) {
            if pid <= 1 || u32::try_from(pid).is_ok_and(|pid| pid == self.me) {
                return;
            }
            // Most processes do not carry the mark: their environment is the one thing read
            // of them. One that does is then held by a pidfd and read again: if it exited
            // and its pid was reused meanwhile, the second read sees the stranger (who does
            // not carry the mark) or the pidfd refers to the exited process, and the signal
            // goes nowhere instead of to a stranger.
            if !carries(dir, self.mark, &mut self.buffer) {
                return;
            }
            let pidfd = match pidfd_open(pid) {
                Ok(fd) => Some(fd),
                // A thread's id (`/proc` opens those too, though it lists only processes):
                // its process is looked at by its own pid.
                Err(libc::EINVAL) => return,
                Err(_) => None,
            };
            let ours = std::fs::metadata(dir).is_ok_and(|m| m.uid() == self.uid);
            if !ours || !carries(dir, self.mark, &mut self.buffer) {
                return;
            }
            let sent = match &pidfd {
                // SAFETY: a valid pidfd, a valid signal, no siginfo, no flags.
                Some(fd) => unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    ) == 0
                },
                // Kernels without pidfds (before 5.3).
                // SAFETY: `kill` has no memory-safety preconditions.
                None => unsafe { libc::kill(pid, libc::SIGKILL) == 0 },
            };
            if sent {
                self.killed += 1;
            }
        }
    }

    /// Whether the process at `/proc/<pid>` (`dir`) was started with `mark` in its
    /// environment.
    ///
    /// A process in the middle of an exec has no environment for a moment (procfs reads
    /// nothing): it is read again, a few times, before it is taken for one without the mark
    /// — else a leftover caught exec'ing would be missed, and the scan, finding nothing,
    /// would stop.
    fn carries(dir: &std::path::Path, mark: &[u8], buffer: &mut Vec<u8>) -> bool {
        use std::io::Read;
        let path = dir.join("environ");
        for _ in 0..20 {
            buffer.clear();
            // One open, one read (the environment is read whole when it fits), one close:
            // not `fs::read`, which also asks for a size procfs does not know.
            if std::fs::File::open(&path)
                .and_then(|mut file| file.read_to_end(buffer))
                .is_err()
            {
                return false;
            }
            if !buffer.is_empty() {
                return buffer.split(|&byte| byte == 0).any(|var| var == mark);
            }
            std::thread::sleep(std::time::Duration::from_micros(250));
        }
        false
    }

    /// A pidfd of process `pid`, or the errno that refused one.
    fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd, libc::c_int> {
        // SAFETY: `pidfd_open` takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let Some(fd) = i32::try_from(fd).ok().filter(|&fd| fd >= 0) else {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOSYS));
        };
        // SAFETY: `fd` is a descriptor just returned to us, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    #[cfg(test)]
    mod tests {
        use super::Pids;

        #[test]
        fn pids_come_round_after_pid_max_minus_one() {
            let pids = |after, count| Pids {
                after,
                count,
                pid_max: 100,
            };
            assert_eq!(pids(10, 3).iter().collect::<Vec<_>>(), [11, 12, 13]);
            assert_eq!(pids(98, 4).iter().collect::<Vec<_>>(), [99, 1, 2, 3]);
            assert_eq!(pids(99, 2).iter().collect::<Vec<_>>(), [1, 2]);
            assert_eq!(pids(10, 0).iter().count(), 0);
            let wrapped = pids(98, 4);
            assert!(wrapped.contains(99) && wrapped.contains(1) && wrapped.contains(3));
            assert!(!wrapped.contains(98) && !wrapped.contains(4) && !wrapped.contains(50));
            assert!(!pids(10, 0).contains(10) && !pids(10, 0).contains(11));
        }
    }
}

fn code_and_signal(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        (status.code(), status.signal())
    }
    #[cfg(not(unix))]
    {
        (status.code(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    fn limits(timeout_ms: u64, max_output: usize) -> Limits {
        Limits {
            timeout: Duration::from_millis(timeout_ms),
            max_output,
        }
    }

    /// Every way a call can fail, said of a reviewer or a runner, names that role and its
    /// option, never the planner; said of a planner, as it always was.
    #[test]
    fn failures_name_the_role_of_the_child() {
        let limits = |ms| Limits {
            timeout: Duration::from_millis(ms),
            max_output: 10,
        };
        let not_started = run(
            &PlannerCommand::parse("/no/such/child").unwrap(),
            b"{}",
            &[],
            &limits(5_000),
        )
        .unwrap_err();
        let exited = run(
            &sh("echo 'it broke' >&2; exit 3"),
            b"{}",
            &[],
            &limits(5_000),
        )
        .unwrap_err();
        let timed_out = run(&sh("sleep 5"), b"{}", &[], &limits(100)).unwrap_err();
        let too_large = run(&sh("yes"), b"{}", &[], &limits(5_000)).unwrap_err();
        for failure in [&not_started, &exited, &timed_out, &too_large] {
            for role in [Role::Reviewer, Role::Runner] {
                let message = failure.report(role);
                assert!(message.contains(role.name()), "{message}");
                assert!(
                    !message.contains("planner `") && !message.contains("the planner"),
                    "{message}"
                );
            }
            assert!(failure.to_string().contains("the planner"), "{failure}");
        }
        assert_eq!(
            exited.report(Role::Runner),
            "the runner exited with status 3; its standard error ends: it broke"
        );
        let message = not_started.report(Role::Runner);
        assert!(
            message.contains("check the --runner command") && message.contains("--runner-shell"),
            "{message}"
        );
        assert!(
            not_started
                .report(Role::Reviewer)
                .contains("check the --reviewer command")
        );
    }

    fn sh(script: &str) -> PlannerCommand {
        PlannerCommand::shell(script)
    }

    fn run_sh(script: &str, request: &[u8], limits: &Limits) -> Result<Output, RunFailure> {
        run(&sh(script), request, &[], limits)
    }

    fn mib_request() -> Vec<u8> {
        (0..1024 * 1024).map(|i| b'a' + (i % 26) as u8).collect()
    }

    #[test]
    fn cat_echoes_the_request() {
        let out = run_sh("cat", b"{\"hello\":1}", &Limits::default()).unwrap();
        assert_eq!(out.stdout, b"{\"hello\":1}");
        assert_eq!(out.stderr_tail, "");
    }

    #[test]
    fn cat_echoes_a_request_bigger_than_a_pipe_buffer() {
        let request = mib_request();
        let out = run_sh("cat", &request, &Limits::default()).unwrap();
        assert_eq!(out.stdout.len(), request.len());
        assert!(out.stdout == request);
    }

    #[test]
    fn a_planner_that_never_reads_its_input_is_fine() {
        let out = run_sh("printf '{}'", &mib_request(), &Limits::default()).unwrap();
        assert_eq!(out.stdout, b"{}");
    }

    #[test]
    fn empty_output_with_status_0_is_ok() {
        let out = run_sh("true", b"x", &Limits::default()).unwrap();
        assert!(out.stdout.is_empty());
    }

    #[test]
    fn a_non_zero_exit_keeps_code_and_stderr() {
        let err = run_sh("echo boom >&2; exit 3", b"", &Limits::default()).unwrap_err();
        assert!(
            matches!(
                &err,
                RunFailure::Exited {
                    code: Some(3),
                    signal: None,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.stderr_tail().contains("boom"), "{err:?}");
        assert_eq!(err.to_string(), "the planner exited with status 3");
    }

    #[test]
    fn death_by_signal_is_reported() {
        let err = run_sh("kill -9 $$", b"", &Limits::default()).unwrap_err();
        assert!(
            matches!(
                err,
                RunFailure::Exited {
                    code: None,
                    signal: Some(9),
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "the planner was killed by signal 9");
    }

    fn assert_times_out(command: &PlannerCommand) {
        let started = Instant::now();
        let err = run(command, b"{}", &[], &limits(300, 1000)).unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(err, RunFailure::TimedOut { after, .. } if after == Duration::from_millis(300)),
            "{err:?}"
        );
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(
            took < Duration::from_secs(10),
            "the group was not killed: {took:?}"
        );
    }

    #[test]
    fn a_slow_planner_times_out() {
        assert_times_out(&PlannerCommand::parse("sleep 30").unwrap());
    }

    #[test]
    fn a_grandchild_holding_stdout_is_killed_on_timeout() {
        assert_times_out(&sh("sleep 30; echo"));
        assert_times_out(
            &PlannerCommand::parse("sh -c 'echo waiting >&2; sleep 30; echo'").unwrap(),
        );
    }

    #[test]
    fn stderr_tail_survives_a_timeout() {
        let err = run_sh(
            "echo still thinking >&2; sleep 30; echo",
            b"",
            &limits(300, 10),
        )
        .unwrap_err();
        assert!(matches!(err, RunFailure::TimedOut { .. }), "{err:?}");
        assert_eq!(err.stderr_tail(), "still thinking");
    }

    /// Whether process `pid` still runs (a zombie, killed and waiting to be reaped by its
    /// parent, does not).
    #[cfg(target_os = "linux")]
    fn running(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !matches!(
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next()),
                Some('Z' | 'X')
            ),
            Err(_) => false,
        }
    }

    /// Waits (bounded) until `pid` no longer runs; whether it stopped.
    #[cfg(target_os = "linux")]
    fn stops(pid: u32) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while running(pid) {
            if Instant::now() > until {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Runs `script` (which writes the pid of what it leaves behind to `$PIDFILE`) with a
    /// timeout far longer than the cleanup takes; returns the result and that pid.
    #[cfg(target_os = "linux")]
    fn run_leaving_behind(script: &str) -> (Result<Output, RunFailure>, u32) {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("PIDFILE='{}'\n{script}", pidfile.display());
        let result = run_sh(&script, b"{}", &limits(20_000, 1000));
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        (result, pid)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_answer_is_taken_when_the_planner_exits_though_a_background_child_holds_stdout() {
        // The planner answers and exits 0, but a background process keeps its standard
        // output open: the answer is what the planner wrote, and the process is killed.
        let (result, pid) =
            run_leaving_behind("echo '{\"kind\":1}'; sleep 30 & echo $! > \"$PIDFILE\"");
        let out = result.unwrap();
        assert_eq!(out.stdout, b"{\"kind\":1}\n");
        assert!(stops(pid), "the background process {pid} still runs");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_that_left_the_process_group_with_setsid_is_killed_too() {
        let (result, pid) =
            run_leaving_behind("printf answer; setsid sleep 30 & echo $! > \"$PIDFILE\"");
        assert_eq!(result.unwrap().stdout, b"answer");
        assert!(stops(pid), "the setsid process {pid} still runs");

        // Also when it closed the pipes (nothing holds the call up, it would just run on).
        let (result, pid) = run_leaving_behind(
            "printf answer; setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $! > \"$PIDFILE\"",
        );
        assert_eq!(result.unwrap().stdout, b"answer");
        assert!(stops(pid), "the setsid process {pid} still runs");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_or_timed_out_planner_leaves_nothing_behind_either() {
        let (result, pid) =
            run_leaving_behind("setsid sleep 30 & echo $! > \"$PIDFILE\"; echo bad >&2; exit 5");
        assert!(
            matches!(result, Err(RunFailure::Exited { code: Some(5), .. })),
            "{result:?}"
        );
        assert!(stops(pid), "{pid} still runs");

        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $! > '{}'; sleep 30",
            pidfile.display()
        );
        let result = run_sh(&script, b"", &limits(500, 1000));
        assert!(
            matches!(result, Err(RunFailure::TimedOut { .. })),
            "{result:?}"
        );
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(stops(pid), "{pid} still runs");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cleaning_up_after_a_call_spares_processes_of_other_calls() {
        // A process marked as another call's, and one not marked at all, both of our uid.
        let mut others: Vec<Child> = [Some("some-other-call"), None]
            .into_iter()
            .map(|token| {
                let mut command = Command::new("sleep");
                command.arg("30");
                match token {
                    Some(token) => command.env(TOKEN_VAR, token),
                    None => command.env_remove(TOKEN_VAR),
                };
                command.spawn().unwrap()
            })
            .collect();
        let (result, pid) =
            run_leaving_behind("printf ok; setsid sleep 30 & echo $! > \"$PIDFILE\"");
        assert_eq!(result.unwrap().stdout, b"ok");
        assert!(stops(pid));
        for other in &mut others {
            assert!(running(other.id()), "another call's process was killed");
            other.kill().unwrap();
            other.wait().unwrap();
        }
    }

    #[test]
    fn output_a_background_child_writes_after_the_planner_exits_is_not_waited_for() {
        // The planner exits at once; its background child would write later.
        let out = run_sh(
            "(sleep 30; echo late) & echo partial",
            b"",
            &limits(20_000, 1000),
        )
        .unwrap();
        assert_eq!(out.stdout, b"partial\n");
    }

    #[test]
    fn a_failed_planner_is_not_held_up_by_what_it_left_behind() {
        // The planner fails while a background process keeps its pipes open: the failure
        // is reported after the grace period, long before the timeout.
        let started = Instant::now();
        let err = run_sh(
            "echo bad >&2; sleep 30 & exit 4",
            b"",
            &limits(60_000, 1000),
        )
        .unwrap_err();
        assert!(
            matches!(err, RunFailure::Exited { code: Some(4), .. }),
            "{err:?}"
        );
        assert_eq!(err.stderr_tail(), "bad");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_over_the_limit_is_too_large() {
        let err = run_sh("head -c 5000 /dev/zero", b"", &limits(10_000, 1000)).unwrap_err();
        assert!(
            matches!(err, RunFailure::TooLarge { limit: 1000, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn an_endless_writer_is_stopped_as_too_large() {
        let started = Instant::now();
        let err = run_sh(
            "echo flood >&2; while :; do echo yyyyyyyyyyyyyyyyyyyy; done",
            b"",
            &limits(20_000, 100_000),
        )
        .unwrap_err();
        assert!(
            matches!(err, RunFailure::TooLarge { limit: 100_000, .. }),
            "{err:?}"
        );
        assert_eq!(err.stderr_tail(), "flood");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_at_the_limit_is_fine() {
        let out = run_sh("head -c 1000 /dev/zero", b"", &limits(10_000, 1000)).unwrap();
        assert_eq!(out.stdout.len(), 1000);
    }

    #[test]
    fn a_missing_program_is_not_started() {
        let command = PlannerCommand::parse("lwirc-no-such-planner-xyz --flag").unwrap();
        let err = run(&command, b"{}", &[], &Limits::default()).unwrap_err();
        assert!(matches!(err, RunFailure::NotStarted { .. }), "{err:?}");
        let message = err.to_string();
        assert!(
            message.starts_with("cannot start the planner `lwirc-no-such-planner-xyz`: "),
            "{message}"
        );
        assert!(message.contains("--planner-shell"), "{message}");
        assert_eq!(err.stderr_tail(), "");
    }

    #[test]
    fn env_is_passed_on_top_of_the_inherited_one() {
        let command =
            PlannerCommand::parse(r#"sh -c 'printf %s "$LWIRC_PLANNER_CALL:${PATH:+path}"'"#)
                .unwrap();
        let env = [("LWIRC_PLANNER_CALL", "7".to_owned())];
        let out = run(&command, b"", &env, &Limits::default()).unwrap();
        assert_eq!(out.stdout, b"7:path");
    }

    #[test]
    fn stderr_keeps_only_its_last_4096_bytes() {
        let out = run_sh(
            "head -c 10000 /dev/zero | tr '\\000' a >&2; printf END >&2; printf ok",
            b"",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(out.stdout, b"ok");
        assert_eq!(out.stderr_tail.len(), 4096);
        assert!(out.stderr_tail.ends_with("aaaEND"));
    }

    #[test]
    fn stderr_tail_is_trimmed_and_lossy() {
        let err = run_sh(
            "printf '\\n  bad \\377 bytes  \\n\\n' >&2; exit 1",
            b"",
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(err.stderr_tail(), "bad \u{fffd} bytes");
    }

    #[test]
    fn parse_splits_by_shell_quoting_without_a_shell() {
        let command = PlannerCommand::parse("scripted.sh 'dir with space' --x").unwrap();
        assert_eq!(command.program(), "scripted.sh");
        assert_eq!(command.args(), ["dir with space", "--x"]);

        let command = PlannerCommand::parse(r#"planner "$HOME" *.json a\ b"#).unwrap();
        assert_eq!(command.args(), ["$HOME", "*.json", "a b"]);
    }

    #[test]
    fn parse_rejects_empty_and_unbalanced_lines() {
        for line in ["", "   ", "\t\n"] {
            let err = PlannerCommand::parse(line).unwrap_err();
            assert!(matches!(err, CommandLineError::Empty), "{line:?}");
            assert_eq!(err.to_string(), "the command is empty");
        }
        let err = PlannerCommand::parse("planner 'open").unwrap_err();
        assert!(matches!(err, CommandLineError::UnbalancedQuotes { .. }));
        assert_eq!(
            err.to_string(),
            "unbalanced quotes in the command `planner 'open`"
        );
        assert!(PlannerCommand::parse("planner \"open").is_err());
    }

    #[test]
    fn display_round_trips_through_parse() {
        for command in [
            PlannerCommand::parse("scripted.sh 'dir with space' --x").unwrap(),
            PlannerCommand::parse(r#"p "it's" '' 'a"b' $x"#).unwrap(),
            PlannerCommand::shell("cat | jq . > out; echo \"$X\""),
        ] {
            let shown = command.to_string();
            assert_eq!(PlannerCommand::parse(&shown).unwrap(), command, "{shown}");
        }
        assert_eq!(
            PlannerCommand::parse("scripted.sh 'dir with space' --x")
                .unwrap()
                .to_string(),
            "scripted.sh 'dir with space' --x"
        );
        let shell = PlannerCommand::shell("a | b");
        assert_eq!(shell.program(), "sh");
        assert_eq!(shell.args(), ["-c", "a | b"]);
    }

    #[test]
    fn default_limits() {
        let limits = Limits::default();
        assert_eq!(limits.timeout, Duration::from_secs(300));
        assert_eq!(limits.max_output, 16 * 1024 * 1024);
    }
}
