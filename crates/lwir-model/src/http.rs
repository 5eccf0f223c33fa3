//! One chat-completions request to an OpenAI-compatible server, on a blocking client
//! (`ureq`, no async runtime): retried on 429 and 5xx with backoff, honouring
//! `Retry-After`, within the call's deadline. The key goes in the `Authorization` header and
//! nowhere else.

use std::time::{Duration, Instant};

use lwir_repair::harness::FailureKind;

/// The most bytes read from one server response (a larger one is refused, kind
/// `TooLarge`).
pub const MAX_RESPONSE: u64 = 16 * 1024 * 1024;

/// How many times a 429 or 5xx is tried again.
const RETRIES: u32 = 4;

/// How long connecting to the server may take (within the call's own timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A server that answered.
#[derive(Debug)]
pub struct Answered {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// How many tries it took.
    pub tries: u32,
    /// Where a redirect (3xx) points, which is not followed.
    pub location: Option<String>,
}

/// A request that got no usable answer.
#[derive(Debug)]
pub struct Unanswered {
    /// How it failed, as a planner call's failure is classified.
    pub kind: FailureKind,
    /// What happened, naming the server (never the key).
    pub message: String,
}

/// The client of one server.
pub struct Client {
    agent: ureq::Agent,
    url: String,
    /// `url` as messages show it.
    shown: String,
    key: Option<String>,
    /// The planner call's timeout, which every request of the call shares.
    timeout: Duration,
}

impl Client {
    /// A client posting to `base/chat/completions`, with `key` as a bearer token, for
    /// planner calls of at most `timeout` each. The key is registered with
    /// [`lwir_spec::redact`], so that no message, log entry or file lwirc writes can carry
    /// it, whatever a server echoes.
    pub fn new(base: &str, key: Option<String>, timeout: Duration) -> Self {
        if let Some(key) = &key {
            lwir_spec::redact::register_token(key);
        }
        // A redirect is answered, not followed: the key is not sent on to wherever it
        // points, and the request's body could not be sent again.
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .build()
            .into();
        let url = format!("{}/chat/completions", base.trim_end_matches('/'));
        Self {
            agent,
            shown: lwir_spec::redact::redact(&url).into_owned(),
            url,
            key,
            timeout,
        }
    }

    /// The endpoint, for messages: redacted of any credentials in it.
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// Posts `body`; a 2xx or 4xx answer (other than 429) is returned as it is, a 429 or
    /// 5xx is tried again after a pause (the server's `Retry-After` when it gives one)
    /// while `deadline` allows.
    pub fn post(&self, body: &[u8], deadline: Instant) -> Result<Answered, Unanswered> {
        let mut backoff = lwir_spec::retry::Backoff::new(
            Duration::from_millis(250),
            Duration::from_secs(8),
            // The call's deadline bounds it: a pause past it is not taken.
            Duration::MAX,
            RETRIES,
        );
        let mut tries = 0;
        loop {
            tries += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.too_slow());
            }
            let mut request = self
                .agent
                .post(&self.url)
                .config()
                .timeout_global(Some(left))
                .build()
                .header("Content-Type", "application/json");
            if let Some(key) = &self.key {
                request = request.header("Authorization", &format!("Bearer {key}"));
            }
            let mut response = match request.send(body) {
                Ok(response) => response,
                Err(e) => return Err(self.transport(e)),
            };
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let location = response
                .headers()
                .get("location")
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let body = match response
                .body_mut()
                .with_config()
                .limit(MAX_RESPONSE)
                .read_to_vec()
            {
                Ok(body) => body,
                Err(ureq::Error::BodyExceedsLimit(_)) => {
                    return Err(Unanswered {
                        kind: FailureKind::TooLarge,
                        message: format!(
                            "the model server's response is larger than {MAX_RESPONSE} bytes"
                        ),
                    });
                }
                Err(e) => return Err(self.transport(e)),
            };
            if let Some(wait) = backoff.next(status, retry_after.as_deref())
                && Instant::now()
                    .checked_add(wait)
                    .is_some_and(|t| t < deadline)
            {
                std::thread::sleep(wait);
                continue;
            }
            return Ok(Answered {
                status,
                body,
                tries,
                location,
            });
        }
    }

    fn too_slow(&self) -> Unanswered {
        Unanswered {
            kind: FailureKind::TimedOut,
            message: format!(
                "the model server `{}` did not answer within the planner call's {} s \
                 (--planner-timeout)",
                self.shown,
                self.timeout.as_secs_f64()
            ),
        }
    }

    fn transport(&self, e: ureq::Error) -> Unanswered {
        let url = &self.shown;
        let (kind, message) = match e {
            ureq::Error::Timeout(ureq::Timeout::Connect) => (
                FailureKind::NotStarted,
                format!(
                    "cannot reach the model server `{url}`: no connection within {} s",
                    CONNECT_TIMEOUT.as_secs()
                ),
            ),
            ureq::Error::Timeout(_) => return self.too_slow(),
            // Nothing was asked of the model: an environment failure, like a planner command
            // that cannot be started.
            ureq::Error::Io(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::BadUri(_) => (
                FailureKind::NotStarted,
                format!(
                    "cannot reach the model server `{url}`: {e}; is it running, and are the \
                     host and port of --planner-url right?"
                ),
            ),
            other => (
                FailureKind::Failed,
                format!("talking to the model server `{url}` failed: {other}"),
            ),
        };
        // A transport error may quote the URL it was asked for (a redirect's, say).
        let message = lwir_spec::redact::redact(&message).into_owned();
        Unanswered { kind, message }
    }
}
