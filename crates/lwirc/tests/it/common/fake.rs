//! A fake HTTP server on the loopback, for the tests of lwirc's clients against servers that
//! misbehave: one that echoes credentials, never answers, stops mid-answer or never stops.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One request as the server read it.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// `GET`, `POST`, …
    pub(crate) method: String,
    /// The path and query, as sent.
    pub(crate) path: String,
    /// The headers, names in lower case.
    pub(crate) headers: Vec<(String, String)>,
    /// The body (by its `Content-Length`).
    pub(crate) body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (lower case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with a request.
pub(crate) enum Reply {
    /// Answers `status` with `headers` and `body`, then closes the connection.
    Answer(u16, Vec<(String, String)>, Vec<u8>),
    /// Answers 200 with `headers` (no length), then sends bytes until the client goes away
    /// or `cap` bytes are sent.
    Endless(Vec<(String, String)>, u64),
    /// Answers 200 with `headers` and a `Content-Length` of `length`, sends `sent` of those
    /// bytes, then nothing more, the connection held open.
    Stalled(Vec<(String, String)>, u64, u64),
    /// Says nothing, the connection held open.
    Silent,
}

/// A running fake server.
pub(crate) struct Fake {
    /// `127.0.0.1:PORT`.
    pub(crate) address: String,
    /// Body bytes sent so far by [`Reply::Endless`] and [`Reply::Stalled`].
    pub(crate) streamed: Arc<AtomicU64>,
}

/// Starts a server that answers every request with `reply`.
pub(crate) fn serve(reply: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let streamed = Arc::new(AtomicU64::new(0));
    let reply = Arc::new(reply);
    let counter = streamed.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (reply, counter) = (reply.clone(), counter.clone());
            std::thread::spawn(move || connection(stream, &*reply, &counter));
        }
    });
    Fake { address, streamed }
}

/// Reads one request from `reader`; `None` where the connection ends (or breaks) first.
pub(crate) fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn head(status: u16, headers: &[(String, String)]) -> String {
    let mut out = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out
}

fn connection(stream: TcpStream, reply: &dyn Fn(&Request) -> Reply, streamed: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let hold = |stream: TcpStream| {
        // Held open, unanswered, until the client goes away.
        let mut stream = stream;
        let mut sink = [0u8; 1024];
        let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
        while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    };
    match reply(&request) {
        Reply::Answer(status, headers, body) => {
            let mut out = head(status, &headers).into_bytes();
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            out.extend_from_slice(&body);
            let _ = stream.write_all(&out);
        }
        Reply::Endless(headers, cap) => {
            if stream
                .write_all(format!("{}\r\n", head(200, &headers)).as_bytes())
                .is_err()
            {
                return;
            }
            let chunk = vec![b'x'; 64 * 1024];
            while streamed.load(Ordering::Relaxed) < cap {
                if stream.write_all(&chunk).is_err() {
                    return;
                }
                streamed.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        }
        Reply::Stalled(headers, length, sent) => {
            let out = format!("{}Content-Length: {length}\r\n\r\n", head(200, &headers));
            if stream.write_all(out.as_bytes()).is_err() {
                return;
            }
            let _ = stream.write_all(&vec![b'x'; sent as usize]);
            streamed.fetch_add(sent, Ordering::Relaxed);
            hold(stream);
        }
        Reply::Silent => hold(stream),
    }
}
