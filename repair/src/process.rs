//! The planner process runner: starts the planner command, writes one request to its
//! standard input, closes it, and collects standard output (the answer) and the tail of
//! standard error, with a timeout and an output size limit.
//!
//! The runner knows nothing about JSON; interpreting the answer is the caller's job.
//!
//! The planner runs in its own process group, so that on a timeout or an oversized answer
//! the whole group can be killed: a shell-script planner that started `sleep 100` would
//! otherwise leave a grandchild holding the output pipe open, and reading it would block
//! until the grandchild exits. Every pipe is served by its own thread (a planner that never
//! reads its input, or writes a lot of error output, cannot deadlock the runner), and those
//! threads are never waited for longer than a short grace period once the call is decided.

use std::io::{self, Read, Write};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
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

/// How long the reader threads are waited for once the call is decided (the child exited
/// or was killed). Past it they are abandoned.
const GRACE: Duration = Duration::from_secs(2);

/// The first and the longest pause between two checks of whether the child has exited.
const POLL_FIRST: Duration = Duration::from_millis(1);
const POLL_MAX: Duration = Duration::from_millis(20);

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

/// A planner command line that cannot be split into a program and arguments.
#[derive(Debug, thiserror::Error)]
pub enum CommandLineError {
    /// The line has no words at all.
    #[error("the planner command is empty")]
    Empty,
    /// A quote is opened and never closed.
    #[error("unbalanced quotes in the planner command `{line}`")]
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

/// Why a planner call produced no answer.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    /// The program could not be started (not found, not executable, ...).
    #[error(
        "cannot start the planner `{command}`: {source}; check the --planner command (it is \
         run without a shell; pass --planner-shell for pipes and variables)"
    )]
    NotStarted {
        /// The program that could not be started.
        command: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// The planner exited with a non-zero status or was killed by a signal.
    #[error("{}", exited_message(*code, *signal))]
    Exited {
        /// The exit status, when it exited by itself.
        code: Option<i32>,
        /// The signal number, when a signal killed it (Unix only).
        signal: Option<i32>,
        /// The last 4 KiB of its standard error, lossily decoded and trimmed.
        stderr_tail: String,
    },
    /// The call took longer than the timeout; the planner's process group was killed.
    #[error("the planner did not answer within {after:?} and was stopped")]
    TimedOut {
        /// The timeout that was exceeded.
        after: Duration,
        /// The last 4 KiB of its standard error, lossily decoded and trimmed.
        stderr_tail: String,
    },
    /// The planner wrote more than the limit to standard output; its process group was
    /// killed.
    #[error("the planner wrote more than {limit} bytes to standard output and was stopped")]
    TooLarge {
        /// The limit that was exceeded, in bytes.
        limit: usize,
        /// The last 4 KiB of its standard error, lossily decoded and trimmed.
        stderr_tail: String,
    },
    /// Talking to the planner failed for another reason (creating pipes or threads,
    /// reading its output, waiting for it).
    #[error("cannot talk to the planner: {source}")]
    Io {
        /// What the operating system said.
        source: io::Error,
    },
}

impl RunFailure {
    /// The last 4 KiB of the planner's standard error, lossily decoded and trimmed; `""`
    /// when there is none (the planner did not start, or an I/O failure).
    pub fn stderr_tail(&self) -> &str {
        match self {
            Self::Exited { stderr_tail, .. }
            | Self::TimedOut { stderr_tail, .. }
            | Self::TooLarge { stderr_tail, .. } => stderr_tail,
            Self::NotStarted { .. } | Self::Io { .. } => "",
        }
    }
}

fn exited_message(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("the planner exited with status {code}"),
        (None, Some(signal)) => format!("the planner was killed by signal {signal}"),
        (None, None) => "the planner failed without an exit status".to_owned(),
    }
}

/// Runs one planner call: starts `command` with `env` added to the inherited environment,
/// writes `request` to its standard input and closes it, collects standard output (at most
/// `limits.max_output` bytes) and the last 4 KiB of standard error (lossy UTF-8, trimmed),
/// and waits at most `limits.timeout` for all of it.
///
/// Exit status 0 gives [`Output`], whatever standard output holds. A planner that exits
/// without reading its input is not a failure by itself. A non-zero status or a signal
/// gives [`RunFailure::Exited`]; on a timeout or an oversized output the planner's whole
/// process group is killed ([`RunFailure::TimedOut`], [`RunFailure::TooLarge`]). Once the
/// call is decided, processes of the group still holding the output pipes open are killed.
pub fn run(
    command: &PlannerCommand,
    request: &[u8],
    env: &[(&str, String)],
    limits: &Limits,
) -> Result<Output, RunFailure> {
    let start = Instant::now();
    let deadline = start
        .checked_add(limits.timeout)
        .or_else(|| start.checked_add(Duration::from_secs(u64::from(u32::MAX))))
        .unwrap_or(start);

    let mut cmd = Command::new(&command.program);
    cmd.args(&command.args)
        .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // In its own process group the planner does not get the terminal's Ctrl-C; on Linux it
    // is told instead when lwirc dies (interrupted, killed), so that it does not run on
    // unattended.
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the forked child before exec and only calls `prctl`,
    // which is async-signal-safe; it allocates nothing and touches no locks.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|source| RunFailure::NotStarted {
        command: command.program.clone(),
        source,
    })?;

    let (events_tx, events) = mpsc::channel();
    let mut call = Call {
        child,
        events,
        _events_tx: events_tx.clone(),
        stderr: Arc::new(Mutex::new(Vec::new())),
        status: None,
        exited_at: None,
        stdout: None,
        stdout_at: None,
        stderr_done: false,
    };
    if let Err(source) = start_threads(&mut call, request, limits.max_output, events_tx) {
        call.stop();
        return Err(RunFailure::Io { source });
    }

    let mut poll = POLL_FIRST;
    loop {
        if call.status.is_none() {
            match call.child.try_wait() {
                Ok(Some(status)) => {
                    call.status = Some(status);
                    call.exited_at = Some(Instant::now());
                }
                Ok(None) => {}
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

        match call.stdout.take() {
            Some(StdoutEnd::TooLarge) => {
                call.stop();
                return Err(RunFailure::TooLarge {
                    limit: limits.max_output,
                    stderr_tail: call.stderr_tail_after_stop(),
                });
            }
            Some(StdoutEnd::Failed(source)) => {
                call.stop();
                return Err(RunFailure::Io { source });
            }
            other => call.stdout = other,
        }

        let mut wake = deadline;
        if let Some(status) = call.status {
            let exited_at = call.exited_at.unwrap_or(now);
            // When the call is decided: a failed planner once it exited; a successful one
            // once its output is complete. Then the readers get a grace period.
            let decided_at = if status.success() {
                call.stdout_at.map(|at| at.max(exited_at))
            } else {
                Some(exited_at)
            };
            if let Some(decided_at) = decided_at {
                let settle = decided_at
                    .checked_add(GRACE)
                    .unwrap_or(decided_at)
                    .min(deadline);
                if (call.stdout.is_some() && call.stderr_done) || now >= settle {
                    return call.finish(status, start);
                }
                wake = settle;
            }
        } else {
            wake = wake.min(now + poll);
            poll = (poll * 2).min(POLL_MAX);
        }

        if now >= deadline {
            call.stop();
            return Err(RunFailure::TimedOut {
                after: limits.timeout,
                stderr_tail: call.stderr_tail_after_stop(),
            });
        }
        call.wait_event(wake.saturating_duration_since(now));
    }
}

/// How reading standard output ended.
enum StdoutEnd {
    /// End of file within the limit.
    Complete(Vec<u8>),
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
    events: Receiver<Event>,
    /// Kept so that `events` never disconnects (waiting on it is the loop's sleep).
    _events_tx: Sender<Event>,
    /// The last [`STDERR_TAIL`] bytes of standard error so far, shared with its reader.
    stderr: Arc<Mutex<Vec<u8>>>,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    stdout: Option<StdoutEnd>,
    stdout_at: Option<Instant>,
    stderr_done: bool,
}

impl Call {
    fn apply(&mut self, event: Event) {
        match event {
            Event::Stdout(end) => {
                self.stdout = Some(end);
                self.stdout_at = Some(Instant::now());
            }
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

    /// Kills the planner's process group and the planner, and reaps it.
    fn stop(&mut self) {
        kill_group(&self.child);
        let _ = self.child.kill();
        if let Ok(status) = self.child.wait() {
            self.status.get_or_insert(status);
        }
    }

    /// Waits up to [`GRACE`] for the stderr reader to finish, then returns the tail.
    fn stderr_tail_after_stop(&mut self) -> String {
        let until = Instant::now() + GRACE;
        while !self.stderr_done {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.wait_event(left);
        }
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

    /// The result of a call whose planner exited by itself.
    fn finish(mut self, status: ExitStatus, start: Instant) -> Result<Output, RunFailure> {
        let complete = match self.stdout.take() {
            Some(StdoutEnd::Complete(bytes)) => Some(bytes),
            _ => None,
        };
        if complete.is_none() || !self.stderr_done {
            // Something still holds a pipe open past the grace period: a process the
            // planner left behind. Kill what is left of its group.
            kill_group(&self.child);
        }
        let stderr_tail = self.stderr_tail();
        match complete {
            Some(stdout) if status.success() => Ok(Output {
                stdout,
                stderr_tail,
                elapsed: start.elapsed(),
            }),
            _ => {
                let (code, signal) = code_and_signal(status);
                Err(RunFailure::Exited {
                    code,
                    signal,
                    stderr_tail,
                })
            }
        }
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

    let request = request.to_vec();
    thread::Builder::new()
        .name("planner-stdin".into())
        .spawn(move || write_stdin(stdin, &request))?;
    let stdout_events = events.clone();
    thread::Builder::new()
        .name("planner-stdout".into())
        .spawn(move || read_stdout(stdout, max_output, &stdout_events))?;
    let tail = Arc::clone(&call.stderr);
    thread::Builder::new()
        .name("planner-stderr".into())
        .spawn(move || read_stderr(stderr, &tail, &events))?;
    Ok(())
}

/// Writes the request and closes standard input. Write errors are ignored: a planner that
/// exits without reading (broken pipe) is judged by its exit status and output.
fn write_stdin(mut stdin: std::process::ChildStdin, request: &[u8]) {
    let _ = stdin.write_all(request);
    drop(stdin);
}

fn read_stdout(pipe: ChildStdout, max_output: usize, events: &Sender<Event>) {
    let cap = u64::try_from(max_output)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let mut limited = pipe.take(cap);
    let mut bytes = Vec::new();
    let end = match limited.read_to_end(&mut bytes) {
        Ok(_) if bytes.len() > max_output => StdoutEnd::TooLarge,
        Ok(_) => StdoutEnd::Complete(bytes),
        Err(error) => StdoutEnd::Failed(error),
    };
    let _ = events.send(Event::Stdout(end));
    // Only now close the pipe: a planner killed by SIGPIPE is then known to be too large.
    drop(limited);
}

fn read_stderr(mut pipe: ChildStderr, tail: &Mutex<Vec<u8>>, events: &Sender<Event>) {
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

    fn limits(timeout_ms: u64, max_output: usize) -> Limits {
        Limits {
            timeout: Duration::from_millis(timeout_ms),
            max_output,
        }
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

    #[test]
    fn a_grandchild_left_behind_holding_stdout_times_out() {
        // The planner exits 0, but a background process keeps its stdout open: the answer
        // is never complete.
        let started = Instant::now();
        let err = run_sh("sleep 30 & echo partial", b"", &limits(300, 1000)).unwrap_err();
        assert!(matches!(err, RunFailure::TimedOut { .. }), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
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
            assert_eq!(err.to_string(), "the planner command is empty");
        }
        let err = PlannerCommand::parse("planner 'open").unwrap_err();
        assert!(matches!(err, CommandLineError::UnbalancedQuotes { .. }));
        assert_eq!(
            err.to_string(),
            "unbalanced quotes in the planner command `planner 'open`"
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
