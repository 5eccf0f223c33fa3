//! The protocol's base layer on a byte stream: frames of `Content-Length: N` headers, a
//! blank line and N bytes of JSON-RPC, read here rather than by `lsp-server` so that every
//! length is checked before anything is allocated for it. What is read becomes
//! `lsp_server` messages on a [`Connection`], as `Connection::stdio` would make them.
//!
//! A frame whose body is not a message (not JSON, not UTF-8, an array, a request whose id
//! is an object) gets its JSON-RPC error answer (−32700 or −32600) and reading goes on: its
//! length said where the next frame starts. Headers that cannot be read (no or a bad
//! `Content-Length`, a length over [`MAX_MESSAGE_BYTES`], a header line that does not end,
//! the input ending inside a frame) leave no way to find the next frame: reading stops and
//! [`Io::join`] says why.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Connection, ErrorCode, Message};
use serde_json::Value;

/// The largest frame body read: room for a document of the size the server reads from
/// disk (64 MiB) with the escapes a JSON string of it needs.
pub const MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// The most bytes a frame's header lines take together, their line ends included.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

/// Why a stream cannot be read on: its framing is lost, or the input failed.
#[derive(Debug, thiserror::Error)]
pub enum Broken {
    /// `Content-Length: abc`, `Content-Length: -1`, `Content-Length: ` (not digits).
    #[error("a message's Content-Length is not a number of bytes: {0}")]
    BadLength(String),
    /// `Content-Length: 100000000000000` (more than [`MAX_MESSAGE_BYTES`]).
    #[error(
        "a message's Content-Length is {0}, more than lwirc lsp reads ({MAX_MESSAGE_BYTES} bytes)"
    )]
    TooLarge(String),
    /// A frame whose headers end (a blank line) without a `Content-Length`.
    #[error("a message has no Content-Length header")]
    NoLength,
    /// A header line that is not `Name: value` in printable ASCII ended by CR LF
    /// (`Content-Length 10`, a line ended by LF alone, a NUL byte in it).
    #[error("a message header is not `Name: value` ended by CR LF: {0}")]
    BadHeader(String),
    /// Two `Content-Length` headers that differ.
    #[error("a message has two Content-Length headers that differ")]
    TwoLengths,
    /// A header section of more than [`MAX_HEADER_BYTES`] (a line with no end, say).
    #[error("a message's headers are longer than {MAX_HEADER_BYTES} bytes")]
    HeadersTooLong,
    /// The input ended after a frame started (`Content-Length: 10`, blank line, 2 bytes).
    #[error("the input ended inside a message ({0})")]
    Truncated(&'static str),
    /// Reading the input failed.
    #[error("cannot read the input: {0}")]
    Io(#[from] io::Error),
}

/// Reads one frame from `input`: its body, `Ok(None)` when the input ends where a frame
/// would start. The body is read as it arrives; nothing is allocated for what a header
/// only announces.
pub fn read_frame(input: &mut impl BufRead) -> Result<Option<Vec<u8>>, Broken> {
    let mut length: Option<usize> = None;
    let mut budget = MAX_HEADER_BYTES;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let read = input
            .by_ref()
            .take(budget as u64)
            .read_until(b'\n', &mut line)?;
        budget -= read;
        if read == 0 && first {
            return Ok(None);
        }
        first = false;
        if line.last() != Some(&b'\n') {
            return Err(if budget == 0 {
                Broken::HeadersTooLong
            } else {
                Broken::Truncated("in its headers")
            });
        }
        let Some(text) = line.strip_suffix(b"\r\n") else {
            return Err(Broken::BadHeader(quoted(&line)));
        };
        if text.is_empty() {
            break;
        }
        let header = std::str::from_utf8(text)
            .ok()
            .filter(|t| t.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
            .and_then(|t| t.split_once(':'))
            .filter(|(name, _)| !name.is_empty() && !name.contains([' ', '\t']));
        let Some((name, value)) = header else {
            return Err(Broken::BadHeader(quoted(text)));
        };
        if name.eq_ignore_ascii_case("Content-Length") {
            let value = value.trim_matches([' ', '\t']);
            let parsed = parse_length(value)?;
            if length.is_some_and(|l| l != parsed) {
                return Err(Broken::TwoLengths);
            }
            length = Some(parsed);
        }
    }
    let length = length.ok_or(Broken::NoLength)?;
    let mut body = Vec::with_capacity(length.min(64 * 1024));
    input.take(length as u64).read_to_end(&mut body)?;
    if body.len() < length {
        return Err(Broken::Truncated("in its body"));
    }
    Ok(Some(body))
}

/// A `Content-Length` value: decimal digits, at most [`MAX_MESSAGE_BYTES`].
fn parse_length(value: &str) -> Result<usize, Broken> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Broken::BadLength(quoted(value.as_bytes())));
    }
    match value.parse::<usize>() {
        Ok(n) if n <= MAX_MESSAGE_BYTES => Ok(n),
        // Digits only, so a failure is an overflow.
        _ => Err(Broken::TooLarge(quoted(value.as_bytes()))),
    }
}

/// Bytes from the input as they may be shown: at most 64 of them, lossily decoded, control
/// characters escaped, in backquotes.
fn quoted(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(64)];
    let more = if shown.len() < bytes.len() { "…" } else { "" };
    format!("`{}{more}`", String::from_utf8_lossy(shown).escape_debug())
}

/// What a frame's body holds.
#[derive(Debug)]
pub enum Incoming {
    /// A request, response or notification.
    Message(Message),
    /// Not one: the error response the client gets for it (JSON-RPC's `id` is the frame's
    /// when it has a usable one, else null).
    Invalid(Value),
}

/// The message in a frame's body, or the error answer for a body that is none.
pub fn decode(body: &[u8]) -> Incoming {
    let error = |id: Value, code: ErrorCode, message: String| {
        Incoming::Invalid(serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code as i32, "message": message },
        }))
    };
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => {
            return error(
                Value::Null,
                ErrorCode::ParseError,
                format!("the message is not JSON: {e}"),
            );
        }
    };
    // The id to answer with: the frame's when it could be one (a number or a string).
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    let has_id = value.get("id").is_some();
    let invalid = |why: &str| {
        error(
            id.clone(),
            ErrorCode::InvalidRequest,
            format!("the message is not a JSON-RPC request, response or notification: {why}"),
        )
    };
    if !value.is_object() {
        return invalid("it is not an object");
    }
    match serde_json::from_value::<Message>(value) {
        // A member `id` makes it a request or a response; read as a notification, its id
        // was not one lsp-server keeps (an object, a fraction, a number past 32 bits), and
        // the client would wait for an answer to it for ever.
        Ok(Message::Notification(_)) if has_id => invalid(
            "its `id` is not a string or an integer of at most 32 bits that lwirc lsp answers with",
        ),
        Ok(message) => Incoming::Message(message),
        Err(e) => invalid(&e.to_string()),
    }
}

/// Writes `value` to `output` as one frame.
fn write_frame(output: &mut dyn Write, value: &Value) -> io::Result<()> {
    let body = value.to_string();
    write!(output, "Content-Length: {}\r\n\r\n", body.len())?;
    output.write_all(body.as_bytes())?;
    output.flush()
}

/// The threads that read and write a connection's stream.
pub struct Io {
    writer: JoinHandle<io::Result<()>>,
    broken: Arc<Mutex<Option<Broken>>>,
}

impl Io {
    /// Waits until everything the server sent is written (drop the [`Connection`] first:
    /// the writer ends when its last sender goes), then says why reading stopped when the
    /// stream broke. A reader still waiting for input, because the server ended first, is
    /// left to the end of the process.
    pub fn join(self) -> Result<(), Broken> {
        // A failed write means the client stopped reading: it is gone, nothing to say.
        let _ = self.writer.join();
        let broken = self.broken.lock().unwrap_or_else(|e| e.into_inner()).take();
        broken.map_or(Ok(()), Err)
    }
}

/// A connection on standard input and output.
pub fn stdio() -> (Connection, Io) {
    transport(io::stdin(), io::stdout())
}

/// A connection that reads frames from `input` and writes them to `output`, each on its
/// own thread. Reading stops after the `exit` notification, at the end of the input, or
/// when the stream breaks.
pub fn transport(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> (Connection, Io) {
    let output: Arc<Mutex<dyn Write + Send>> = Arc::new(Mutex::new(output));
    // Rendezvous channels, as lsp-server's: nothing is read ahead of the server.
    let (to_server, from_reader) = crossbeam_channel::bounded::<Message>(0);
    let (to_writer, from_server) = crossbeam_channel::bounded::<Message>(0);
    let broken = Arc::new(Mutex::new(None));
    let reader_output = Arc::clone(&output);
    let reader_broken = Arc::clone(&broken);
    std::thread::Builder::new()
        .name("lwirc-lsp-reader".into())
        .spawn(move || {
            let mut input = BufReader::with_capacity(64 * 1024, input);
            if let Err(e) = read_all(&mut input, &to_server, &*reader_output) {
                // Set before `to_server` goes, so the server sees it once disconnected.
                *reader_broken.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
        })
        .expect("a thread can be started");
    let writer = std::thread::Builder::new()
        .name("lwirc-lsp-writer".into())
        .spawn(move || write_all(&from_server, &*output))
        .expect("a thread can be started");
    (
        Connection {
            sender: to_writer,
            receiver: from_reader,
        },
        Io { writer, broken },
    )
}

/// Reads frames until the input ends, `exit` is read or the server is gone; answers the
/// frames that are not messages.
fn read_all(
    input: &mut impl BufRead,
    to_server: &Sender<Message>,
    output: &Mutex<dyn Write + Send>,
) -> Result<(), Broken> {
    while let Some(body) = read_frame(input)? {
        match decode(&body) {
            Incoming::Message(message) => {
                let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                if to_server.send(message).is_err() || exit {
                    return Ok(());
                }
            }
            Incoming::Invalid(answer) => {
                let mut output = output.lock().unwrap_or_else(|e| e.into_inner());
                // A client that stopped reading is noticed when its input ends.
                let _ = write_frame(&mut *output, &answer);
            }
        }
    }
    Ok(())
}

/// Writes every message the server sends; after a failed write the rest are taken and
/// dropped, so that the server is never stuck sending.
fn write_all(from_server: &Receiver<Message>, output: &Mutex<dyn Write + Send>) -> io::Result<()> {
    let mut failed = None;
    for message in from_server {
        if failed.is_some() {
            continue;
        }
        let mut output = output.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = message.write(&mut &mut *output) {
            failed = Some(e);
        }
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> (Vec<Vec<u8>>, Option<Broken>) {
        let mut reader = input;
        let mut out = Vec::new();
        loop {
            match read_frame(&mut reader) {
                Ok(Some(body)) => out.push(body),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn frames_are_read_one_after_the_other() {
        let (read, broken) =
            frames(b"Content-Length: 2\r\n\r\n{}content-length:3\r\nContent-Type: x\r\n\r\n[1]");
        assert_eq!(read, vec![b"{}".to_vec(), b"[1]".to_vec()]);
        assert!(broken.is_none(), "{broken:?}");
    }

    #[test]
    fn a_length_is_checked_before_anything_is_allocated_for_it() {
        for (header, expected) in [
            ("100000000000000", "TooLarge"),
            ("18446744073709551615", "TooLarge"),
            ("99999999999999999999999", "TooLarge"),
            ("3000000000", "TooLarge"),
            ("abc", "BadLength"),
            ("-1", "BadLength"),
            ("", "BadLength"),
            ("1e3", "BadLength"),
        ] {
            let input = format!("Content-Length: {header}\r\n\r\n{{}}");
            let (read, broken) = frames(input.as_bytes());
            assert!(read.is_empty());
            let broken = broken.expect("the stream is broken");
            assert!(
                format!("{broken:?}").starts_with(expected),
                "{header}: {broken:?}"
            );
        }
    }

    #[test]
    fn headers_that_cannot_be_read_break_the_stream() {
        let long = format!("X-Pad: {}\r\n", "a".repeat(MAX_HEADER_BYTES));
        let endless = "a".repeat(MAX_HEADER_BYTES * 4);
        for (input, expected) in [
            ("\r\n{}", "NoLength"),
            ("Content-Type: x\r\n\r\n{}", "NoLength"),
            ("Content-Length: 2\n\n{}", "BadHeader"),
            ("Content-Length 2\r\n\r\n{}", "BadHeader"),
            ("Content-Length: 2\r\nX-A: \u{1b}[2J\r\n\r\n{}", "BadHeader"),
            (
                "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                "TwoLengths",
            ),
            (long.as_str(), "HeadersTooLong"),
            (endless.as_str(), "HeadersTooLong"),
            ("Content-Length: 2\r\n", "Truncated"),
            ("Content-Length: 10\r\n\r\n{}", "Truncated"),
        ] {
            let (_, broken) = frames(input.as_bytes());
            let broken = broken.expect("the stream is broken");
            assert!(
                format!("{broken:?}").starts_with(expected),
                "{input:?}: {broken:?}"
            );
            assert!(!broken.to_string().contains('\u{1b}'), "{broken}");
        }
    }

    #[test]
    fn a_body_that_is_no_message_gets_its_error_answer() {
        let code = |body: &[u8]| match decode(body) {
            Incoming::Invalid(answer) => (
                answer["error"]["code"].as_i64().unwrap(),
                answer["id"].clone(),
            ),
            Incoming::Message(m) => panic!("{m:?}"),
        };
        assert_eq!(code(b"{not json}"), (-32700, Value::Null));
        assert_eq!(code(b"\xff\xfe"), (-32700, Value::Null));
        assert_eq!(code(b"\"\xff\""), (-32700, Value::Null));
        assert_eq!(code(b"[]"), (-32600, Value::Null));
        assert_eq!(code(b"{}"), (-32600, Value::Null));
        assert_eq!(
            code(br#"{"id":{},"method":"shutdown"}"#),
            (-32600, Value::Null)
        );
        assert_eq!(
            code(br#"{"id":4294967296,"method":"shutdown"}"#),
            (-32600, serde_json::json!(4294967296u64))
        );
        assert_eq!(
            code(br#"{"id":"x","method":7}"#),
            (-32600, Value::String("x".into()))
        );
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#),
            Incoming::Message(Message::Request(_))
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"exit"}"#),
            Incoming::Message(Message::Notification(_))
        ));
    }
}
