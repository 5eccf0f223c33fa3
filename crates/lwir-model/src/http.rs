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

/// A server that answered.
#[derive(Debug)]
pub struct Answered {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// How many tries it took.
    pub tries: u32,
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
    key: Option<String>,
}

impl Client {
    /// A client posting to `base/chat/completions`, with `key` as a bearer token.
    pub fn new(base: &str, key: Option<String>) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .build()
            .into();
        Self {
            agent,
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            key,
        }
    }

    /// The endpoint, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts `body`; a 2xx or 4xx answer (other than 429) is returned as it is, a 429 or
    /// 5xx is tried again after a pause (the server's `Retry-After` when it gives one)
    /// while `deadline` allows.
    pub fn post(&self, body: &[u8], deadline: Instant) -> Result<Answered, Unanswered> {
        let mut pause = Duration::from_millis(250);
        let mut tries = 0;
        loop {
            tries += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Unanswered {
                    kind: FailureKind::TimedOut,
                    message: format!("the model server `{}` did not answer in time", self.url),
                });
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
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
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
            if (status == 429 || status >= 500) && tries <= RETRIES {
                let wait = retry_after.unwrap_or(pause);
                if Instant::now() + wait < deadline {
                    std::thread::sleep(wait);
                    pause = (pause * 2).min(Duration::from_secs(8));
                    continue;
                }
            }
            return Ok(Answered {
                status,
                body,
                tries,
            });
        }
    }

    fn transport(&self, e: ureq::Error) -> Unanswered {
        match e {
            ureq::Error::Timeout(_) => Unanswered {
                kind: FailureKind::TimedOut,
                message: format!("the model server `{}` did not answer in time", self.url),
            },
            ureq::Error::Io(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::BadUri(_) => Unanswered {
                // Nothing was asked of the model: an environment failure, like a planner
                // command that cannot be started.
                kind: FailureKind::NotStarted,
                message: format!("cannot reach the model server `{}`: {e}", self.url),
            },
            other => Unanswered {
                kind: FailureKind::Failed,
                message: format!("talking to the model server `{}` failed: {other}", self.url),
            },
        }
    }
}
