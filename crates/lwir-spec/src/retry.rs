//! One retry policy for every HTTP client of lwirc (the OCI registry client, the model
//! client): which answers are asked again, how long to pause before each try — the
//! server's `Retry-After` when it gives one in seconds, else a pause that doubles — and
//! when to stop. What a server says is hostile input: a `Retry-After` is capped, so a
//! server cannot park a client for a day.

use std::time::Duration;

/// Whether an HTTP status is worth asking again: too many requests, or the server's
/// trouble (500, 502, 503, 504).
pub fn is_transient(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

/// A `Retry-After` header's delay: delta-seconds only (`120`); an HTTP date or anything
/// else is none, and the caller's own pause applies.
pub fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // More digits than a u64 holds is longer than any cap.
    Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)))
}

/// The pauses of one request's tries.
#[derive(Clone, Debug)]
pub struct Backoff {
    pause: Duration,
    max_pause: Duration,
    max_retry_after: Duration,
    retries: u32,
    tried_again: u32,
}

impl Backoff {
    /// At most `retries` tries after the first; pauses from `first`, doubling up to
    /// `max_pause`; a server's `Retry-After` honoured up to `max_retry_after`.
    pub fn new(
        first: Duration,
        max_pause: Duration,
        max_retry_after: Duration,
        retries: u32,
    ) -> Self {
        Self {
            pause: first,
            max_pause,
            max_retry_after,
            retries,
            tried_again: 0,
        }
    }

    /// After an answer with `status` (and its `Retry-After` header, if any): how long to
    /// wait before asking again, or `None` when the answer stands (not transient, or the
    /// tries are spent).
    pub fn next(&mut self, status: u16, retry_after_header: Option<&str>) -> Option<Duration> {
        if !is_transient(status) || self.tried_again >= self.retries {
            return None;
        }
        self.tried_again += 1;
        let ours = self.pause;
        self.pause = (self.pause * 2).min(self.max_pause);
        Some(match retry_after_header.and_then(retry_after) {
            Some(theirs) => theirs.min(self.max_retry_after),
            None => ours,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_honoured_capped_and_pauses_double() {
        let s = Duration::from_secs;
        let mut b = Backoff::new(Duration::from_millis(50), s(2), s(30), 3);
        assert_eq!(b.next(404, None), None, "a 404 stands");
        assert_eq!(b.next(503, None), Some(Duration::from_millis(50)));
        assert_eq!(b.next(429, Some("7")), Some(s(7)));
        assert_eq!(b.next(500, Some("99999999999999999999999")), Some(s(30)));
        assert_eq!(
            b.next(503, None),
            None,
            "three retries, then the answer stands"
        );
        let mut b = Backoff::new(s(1), s(2), s(30), 9);
        let pauses: Vec<_> = (0..4)
            .map(|_| b.next(502, Some("Wed, 21 Oct 2015 07:28:00 GMT")))
            .collect();
        assert_eq!(pauses, [Some(s(1)), Some(s(2)), Some(s(2)), Some(s(2))]);
        assert_eq!(retry_after(" 12 "), Some(s(12)));
        assert_eq!(retry_after("-1"), None);
        assert_eq!(retry_after("1.5"), None);
    }
}
