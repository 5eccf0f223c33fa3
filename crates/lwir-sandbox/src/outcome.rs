//! How a call ended, and its JSON form (the `bash` tool's answer).

use std::time::Duration;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Which limit stopped a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The wall time ran out; every process was killed.
    Time,
    /// The command was ended by its CPU time limit (SIGXCPU).
    Cpu,
    /// The memory limit was reached (the kernel killed a process for it) and the call did
    /// not succeed.
    Memory,
    /// The process limit was reached (a fork was refused) and the call did not succeed.
    Processes,
    /// The command was ended by the file size limit (SIGXFSZ).
    FileSize,
    /// A stream wrote more than [`Limits::output_total`](crate::Limits::output_total); the
    /// call was stopped.
    Output,
}

impl Limit {
    /// The name in the JSON answer: `time`, `cpu`, `memory`, `processes`, `file_size`,
    /// `output`.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Time => "time",
            Limit::Cpu => "cpu",
            Limit::Memory => "memory",
            Limit::Processes => "processes",
            Limit::FileSize => "file_size",
            Limit::Output => "output",
        }
    }
}

/// How a call ended.
///
/// Its [`Serialize`] form is exactly the `bash` tool's answer: `exit_status`, `signal`,
/// `limit`, `stdout`, `stderr`, `stdout_truncated`, `stderr_truncated` — the elapsed time
/// is left out, so that the same call answers the same JSON every time. `stdout` and
/// `stderr` are the captured bytes as UTF-8 text: each invalid sequence becomes U+FFFD
/// (`String::from_utf8_lossy`), except a character cut in two by the output cap, which is
/// dropped. Control characters (terminal escape sequences) are kept exactly, escaped only
/// as JSON requires (`\u001b`); the caller cleans them before showing them on a terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The command's exit status, when it exited. `None` when a signal ended it.
    ///
    /// Bubblewrap passes on a command ended by signal N as status 128 + N, as shells do;
    /// such a status (129–159) is reported as that signal, so a command that itself
    /// exits with, say, 137 reads as SIGKILL — the shell's own ambiguity.
    pub exit_status: Option<i32>,
    /// The signal that ended the command: SIGKILL when lwirc stopped the call at a limit,
    /// otherwise the one bubblewrap reported.
    pub signal: Option<i32>,
    /// The limit that stopped the call, if one did (see [`Limit`]).
    pub limit: Option<Limit>,
    /// The first [`Limits::output`](crate::Limits::output) bytes of standard output.
    pub stdout: Vec<u8>,
    /// The first [`Limits::output`](crate::Limits::output) bytes of standard error.
    pub stderr: Vec<u8>,
    /// Whether standard output was longer than what is kept.
    pub stdout_truncated: bool,
    /// Whether standard error was longer than what is kept.
    pub stderr_truncated: bool,
    /// From the start of bubblewrap to the moment every process of the call was gone.
    pub elapsed: Duration,
}

impl Outcome {
    /// Whether the command exited with status 0 and no limit stopped it.
    pub fn success(&self) -> bool {
        self.exit_status == Some(0) && self.limit.is_none()
    }

    /// The name of [`Outcome::signal`] (`SIGKILL`).
    pub fn signal_name(&self) -> Option<String> {
        self.signal.map(crate::sys::signal_name)
    }

    /// Standard output as the JSON answer renders it.
    pub fn stdout_text(&self) -> String {
        text(&self.stdout, self.stdout_truncated)
    }

    /// Standard error as the JSON answer renders it.
    pub fn stderr_text(&self) -> String {
        text(&self.stderr, self.stderr_truncated)
    }
}

/// `bytes` as text: invalid UTF-8 as U+FFFD, except an incomplete character at the end of
/// a truncated capture (the cap cut it), which is dropped.
fn text(bytes: &[u8], truncated: bool) -> String {
    let mut bytes = bytes;
    if truncated {
        // The last character starts at the last byte that is not a continuation byte.
        let from = bytes.len().saturating_sub(4);
        if let Some(start) = (from..bytes.len()).rev().find(|&i| bytes[i] & 0xc0 != 0x80)
            && let Err(error) = std::str::from_utf8(&bytes[start..])
            && error.error_len().is_none()
        {
            bytes = &bytes[..start];
        }
    }
    String::from_utf8_lossy(bytes).into_owned()
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut answer = serializer.serialize_struct("Outcome", 7)?;
        answer.serialize_field("exit_status", &self.exit_status)?;
        answer.serialize_field("signal", &self.signal_name())?;
        answer.serialize_field("limit", &self.limit.map(Limit::name))?;
        answer.serialize_field("stdout", &self.stdout_text())?;
        answer.serialize_field("stderr", &self.stderr_text())?;
        answer.serialize_field("stdout_truncated", &self.stdout_truncated)?;
        answer.serialize_field("stderr_truncated", &self.stderr_truncated)?;
        answer.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_the_cap_is_dropped_other_invalid_bytes_are_replaced() {
        let euro = "€".as_bytes();
        let mut cut = b"a\xffb".to_vec();
        cut.extend_from_slice(&euro[..2]);
        assert_eq!(text(&cut, true), "a\u{fffd}b");
        assert_eq!(text(&cut, false), "a\u{fffd}b\u{fffd}");
        assert_eq!(text("x€".as_bytes(), true), "x€");
        let mut two = "€".repeat(2).into_bytes();
        two.pop();
        assert_eq!(text(&two, true), "€");
        assert_eq!(text(b"\x1b[31m", false), "\x1b[31m");
    }
}
