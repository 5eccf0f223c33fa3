//! Secrets kept out of everything lwirc prints, logs and stores.
//!
//! Text from a server may carry a secret: a model server's 401 that quotes the API key, a
//! registry whose error echoes the `Authorization` header, a database that repeats a
//! password. So may a location a user wrote (`postgres://…?password=…`). Every excerpt of
//! a server's answer, every message and log entry that can carry server text, and every
//! location string goes through [`redact`] (an excerpt through [`excerpt`], which cuts after
//! redacting, so that no cut leaves half a secret). It replaces with [`REDACTED`]:
//!
//! - every secret this process was given, registered where it is read ([`register`],
//!   [`register_token`], [`register_credentials`]: an API key, a registry password and its
//!   `user:password` pair, a registry token, a database password) — as written,
//!   JSON-escaped, percent-encoded, and base64-encoded, whole and at each of the three
//!   alignments it can have inside a longer base64 text — and the `Authorization` value it
//!   is sent in (`Bearer …`, `Basic …`) in base64 too;
//! - whatever follows `Bearer` or `Basic`, and the value of an `Authorization`, `api-key`
//!   or `x-api-key` header or field;
//! - the value of `password=` or `password:` (and `passwd`, `pwd`, `api_key`,
//!   `access_token`, `client_secret`), quoted or not, as in a URL query, a connection string
//!   or a JSON object;
//! - the password in a URL's user part (`scheme://user:password@host`).
//!
//! Secrets shorter than [`MIN_SECRET`] characters are not registered: replacing every
//! `abc` in every message would make them unreadable and hide little.

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use base64::Engine as _;
use regex::{Captures, Regex};

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// The shortest secret [`register`] keeps.
pub const MIN_SECRET: usize = 4;

/// The most characters of a server's answer [`excerpt`] keeps by default.
pub const EXCERPT_CHARS: usize = 300;

/// The secrets registered, in every form they are looked for, and one matcher over all.
struct Known {
    forms: Vec<String>,
    matcher: Option<Regex>,
}

static KNOWN: RwLock<Known> = RwLock::new(Known {
    forms: Vec::new(),
    matcher: None,
});

/// Credential-shaped text whatever its value: a scheme's credentials, a header or field
/// that holds one, a URL's password.
static PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    let field =
        r#"(?:password|passwd|pwd|api[_-]?key|x-api-key|access[_-]?token|client[_-]?secret)"#;
    Regex::new(&format!(
        concat!(
            // 1, 2: `Authorization: …` up to the end of the line or a closing quote.
            r#"(?i)(?P<header>(?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?P<header_value>[^"'\r\n]+)"#,
            // 3, 4: a scheme and its credentials.
            r#"|(?P<scheme>\b(?:bearer|basic)\s+)(?P<credentials>[A-Za-z0-9\-._~+/]+=*)"#,
            // 5–8: `password=…`, `"password": "…"`, `password='…'`.
            r#"|(?P<field>\b{field}["']?\s*[:=]\s*)(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'&;,)}}\]]+))"#,
            // 9, 10: `scheme://user:password@`.
            r#"|(?P<userinfo>\b[a-z][a-z0-9+.\-]*://[^/\s:@]*):(?P<password>[^/\s@]*)@"#,
        ),
        field = field
    ))
    .expect("the credential patterns compile")
});

/// Registers `secret` (an API key, a password, a token): from now on [`redact`] replaces
/// it, and its encoded forms, wherever it appears. Secrets shorter than [`MIN_SECRET`]
/// characters are ignored.
pub fn register(secret: &str) {
    if secret.chars().count() < MIN_SECRET {
        return;
    }
    let mut forms = vec![secret.to_owned()];
    let json = serde_json::to_string(secret).expect("a string serialises");
    forms.push(json[1..json.len() - 1].to_owned());
    forms.push(percent_encoded(secret));
    forms.extend(base64_forms(secret.as_bytes()));
    add(forms);
}

/// Registers the base64 forms of an `Authorization` value alone: as written it holds a
/// registered secret already, which is replaced without the scheme word (`Bearer
/// <redacted>`).
fn register_encoded(value: &str) {
    add(base64_forms(value.as_bytes()));
}

/// Registers Basic credentials: the password, `user:password`, and the `Authorization`
/// value they are sent as (`Basic ` and the pair's base64), each in all its forms.
pub fn register_credentials(user: &str, password: &str) {
    register(password);
    if password.chars().count() >= MIN_SECRET {
        let pair = format!("{user}:{password}");
        register(&pair);
        register_encoded(&format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(&pair)
        ));
    }
}

/// Registers a bearer token (an API key, a registry's token): the token, and the
/// `Authorization` value it is sent as (`Bearer ` and the token), each in all its forms.
pub fn register_token(token: &str) {
    register(token);
    if token.chars().count() >= MIN_SECRET {
        register_encoded(&format!("Bearer {token}"));
    }
}

fn add(forms: Vec<String>) {
    let Ok(mut known) = KNOWN.write() else {
        return;
    };
    let before = known.forms.len();
    for form in forms {
        if form.chars().count() >= MIN_SECRET && !known.forms.contains(&form) {
            known.forms.push(form);
        }
    }
    if known.forms.len() == before {
        return;
    }
    // Longest first: where two forms overlap, the whole of the longer goes.
    known
        .forms
        .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    let alternatives: Vec<String> = known.forms.iter().map(|f| regex::escape(f)).collect();
    known.matcher = Regex::new(&alternatives.join("|")).ok();
}

/// `text` with every secret replaced by [`REDACTED`] (see the module's documentation);
/// borrowed when there is none.
pub fn redact(text: &str) -> Cow<'_, str> {
    let text = match KNOWN.read() {
        Ok(known) => match &known.matcher {
            Some(matcher) => matcher.replace_all(text, REDACTED),
            // Too many forms for one matcher: each is replaced in turn.
            None if !known.forms.is_empty() => {
                Cow::Owned(known.forms.iter().fold(text.to_owned(), |t, form| {
                    t.replace(form.as_str(), REDACTED)
                }))
            }
            None => Cow::Borrowed(text),
        },
        // A panic while registering left the lock poisoned: nothing is trusted to pass.
        Err(_) => return Cow::Owned(REDACTED.to_owned()),
    };
    if !PATTERNS.is_match(&text) {
        return text;
    }
    Cow::Owned(PATTERNS.replace_all(&text, replace_pattern).into_owned())
}

fn replace_pattern(c: &Captures<'_>) -> String {
    let value = [
        "header_value",
        "credentials",
        "dq",
        "sq",
        "bare",
        "password",
    ]
    .iter()
    .find_map(|name| c.name(name));
    if value.is_some_and(|v| v.as_str().starts_with(REDACTED)) {
        // Redacted already (a message quoting a redacted location): what follows stays.
        return c[0].to_owned();
    }
    let kept = ["header", "scheme", "userinfo"]
        .iter()
        .find_map(|name| c.name(name))
        .map(|m| m.as_str());
    if let Some(kept) = kept {
        let after = if c.name("userinfo").is_some() {
            ":"
        } else {
            ""
        };
        let at = if c.name("userinfo").is_some() {
            "@"
        } else {
            ""
        };
        return format!("{kept}{after}{REDACTED}{at}");
    }
    let field = c.name("field").map_or("", |m| m.as_str());
    if c.name("dq").is_some() {
        format!("{field}\"{REDACTED}\"")
    } else if c.name("sq").is_some() {
        format!("{field}'{REDACTED}'")
    } else {
        format!("{field}{REDACTED}")
    }
}

/// Every string of `value` (object keys too) [`redact`]ed, in place.
pub fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            if let Cow::Owned(clean) = redact(text) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(map) => {
            let needs_new_keys = map.keys().any(|k| matches!(redact(k), Cow::Owned(_)));
            if needs_new_keys {
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    redact_json(&mut v);
                    map.insert(redact(&k).into_owned(), v);
                }
            } else {
                map.values_mut().for_each(redact_json);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The start of a server's answer `body` for a message: read as UTF-8 (lossily),
/// [`redact`]ed, trimmed, and cut after `max_chars` characters with how long the answer was
/// (`… (4000 bytes)`); `(no details)` when nothing is left. Control characters stay, for
/// whoever shows the message to escape them where it is shown.
pub fn excerpt(body: &[u8], max_chars: usize) -> String {
    // Enough of the body for `max_chars` characters and any secret that starts among them,
    // so that the cut, made after redacting, never leaves part of one.
    let window = body
        .len()
        .min(max_chars.saturating_mul(4).saturating_add(16 * 1024));
    let text = String::from_utf8_lossy(&body[..window]);
    let text = redact(&text);
    let clean = text.trim();
    if clean.is_empty() {
        return "(no details)".to_owned();
    }
    match clean.char_indices().nth(max_chars) {
        None if window == body.len() => clean.to_owned(),
        None => format!("{clean}… ({} bytes)", body.len()),
        Some((cut, _)) => format!("{}… ({} bytes)", &clean[..cut], body.len()),
    }
}

/// `text` percent-encoded as a URL component: everything but `A–Z a–z 0–9 - . _ ~`.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The base64 text of `secret`, whole and inside any longer base64 text, in the standard
/// and the URL-safe alphabet: for each of the three offsets it can start at, the characters
/// that depend on its bytes alone (the first and last may share bits with its neighbours).
fn base64_forms(secret: &[u8]) -> Vec<String> {
    let standard = base64::engine::general_purpose::STANDARD.encode(secret);
    let url_safe = base64::engine::general_purpose::URL_SAFE.encode(secret);
    // Whole, its last characters too (an `Authorization: Basic` value is exactly this).
    let mut forms = vec![standard, url_safe];
    for offset in 0..3usize {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(secret);
        let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
        let first = (8 * offset).div_ceil(6);
        let end = (8 * (offset + secret.len())) / 6;
        if end > first && end <= encoded.len() {
            let middle = &encoded[first..end];
            // Short middles would match unrelated base64 by chance.
            if middle.len() >= 2 * MIN_SECRET {
                forms.push(middle.to_owned());
                forms.push(middle.replace('+', "-").replace('/', "_"));
            }
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_replaced_in_every_form() {
        register("sk-redact-test-0123456789");
        let key = "sk-redact-test-0123456789";
        for text in [
            format!("Incorrect API key provided: {key}."),
            format!("{{\"key\":\"{}\"}}", percent_encoded(key)),
            format!(
                "echo {}",
                base64::engine::general_purpose::STANDARD.encode(format!("x{key}"))
            ),
            format!(
                "echo {}",
                base64::engine::general_purpose::STANDARD.encode(format!("xy{key}yz"))
            ),
        ] {
            let clean = redact(&text);
            assert!(!clean.contains(key), "{clean}");
            assert!(clean.contains(REDACTED), "{clean}");
            for form in base64_forms(key.as_bytes()) {
                assert!(!clean.contains(&form), "{clean}");
            }
        }
        assert!(matches!(redact("nothing secret here"), Cow::Borrowed(_)));
    }

    #[test]
    fn authorization_values_keep_their_scheme_word() {
        register_token("tok-scheme-test-4242");
        register_credentials("dave", "pw-scheme-test");
        let basic = base64::engine::general_purpose::STANDARD.encode("dave:pw-scheme-test");
        assert_eq!(
            redact(&format!(
                "sent Bearer tok-scheme-test-4242 and Basic {basic}!"
            )),
            "sent Bearer <redacted> and Basic <redacted>!"
        );
    }

    #[test]
    fn basic_credentials_are_replaced_as_the_header_sends_them() {
        register_credentials("carol", "pa55-redact-test");
        let b64 = base64::engine::general_purpose::STANDARD;
        let header = b64.encode("carol:pa55-redact-test");
        let twice = b64.encode(format!("Basic {header}"));
        let echoed = format!("{{\"echo\":\"{header}\", \"again\":\"{twice}\"}}");
        let clean = redact(&echoed);
        assert!(
            !clean.contains(&header) && !clean.contains(&twice[4..twice.len() - 4]),
            "{clean}"
        );
        assert!(
            !redact("pa55-redact-test").contains("pa55"),
            "the password alone"
        );
    }

    #[test]
    fn credential_shaped_text_is_replaced_whatever_its_value() {
        let cases = [
            (
                "Authorization: Bearer abc.def-ghi",
                "Authorization: <redacted>",
            ),
            (
                r#"{"authorization":"Basic dXNlcjpwYXNz"}"#,
                r#"{"authorization":"<redacted>"}"#,
            ),
            ("got Bearer tok_123/=", "got Bearer <redacted>"),
            (
                "postgres://u@h:1/x?password=hunter2&a=b",
                "postgres://u@h:1/x?password=<redacted>&a=b",
            ),
            (
                "host=h password='a b c' user=u",
                "host=h password='<redacted>' user=u",
            ),
            (
                r#"{"password": "s3 cret"}"#,
                r#"{"password": "<redacted>"}"#,
            ),
            (
                "postgres://lwir:secret@db:5432/goals",
                "postgres://lwir:<redacted>@db:5432/goals",
            ),
            (
                "https://k:v@example/v1?api-key=zzz",
                "https://k:<redacted>@example/v1?api-key=<redacted>",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(redact(text), expected, "{text}");
            assert_eq!(redact(expected), expected, "idempotent: {expected}");
            let quoted = format!("cannot read {expected}: refused");
            assert_eq!(redact(&quoted), quoted, "what follows stays");
        }
        for plain in [
            "set LWIR_REGISTRY_USER and LWIR_REGISTRY_PASSWORD, or log in",
            "password authentication failed for user \"lwir\"",
            "oci+http://127.0.0.1:5000/lwir",
        ] {
            assert_eq!(redact(plain), plain);
        }
    }

    #[test]
    fn excerpts_are_redacted_before_they_are_cut() {
        register("sk-excerpt-test-abcdefghijklmnop");
        let body = format!("{}sk-excerpt-test-abcdefghijklmnop rest", "x".repeat(290));
        let cut = excerpt(body.as_bytes(), 300);
        assert!(!cut.contains("sk-excerpt"), "{cut}");
        assert!(cut.ends_with(&format!("… ({} bytes)", body.len())), "{cut}");
        assert_eq!(excerpt(b" \x1b[2J\n ", 300), "\u{1b}[2J");
        assert_eq!(excerpt(b"\n\t", 300), "(no details)");
        assert_eq!(excerpt(b"short", 300), "short");
        let huge = vec![b'a'; 1 << 20];
        assert!(excerpt(&huge, 10).starts_with("aaaaaaaaaa… (1048576 bytes)"));
    }

    #[test]
    fn json_strings_and_keys_are_redacted() {
        register("tok-json-test-9876");
        let mut value = serde_json::json!({
            "error": { "message": "bad token tok-json-test-9876" },
            "tok-json-test-9876": [1, "password=x"],
        });
        redact_json(&mut value);
        let text = value.to_string();
        assert!(!text.contains("tok-json-test-9876"), "{text}");
        assert!(text.contains("password=<redacted>"), "{text}");
    }
}
