//! [`Storage`] on an OCI distribution registry (`oci://HOST[:PORT]/REPOSITORY`, or
//! `oci+http://` for a plain-HTTP registry on a trusted network).
//!
//! A thin blocking client of the distribution API on `ureq` (the HTTP client the model
//! harness uses; no async runtime): blob `HEAD`/`GET` and monolithic upload (`POST` then
//! `PUT ?digest=`), manifest `HEAD`/`GET`/`PUT`, tag listing, with Basic and Bearer-token
//! authentication.
//!
//! Each version is an ordinary OCI artifact:
//!
//! ```text
//! manifest  application/vnd.oci.image.manifest.v1+json
//!           artifactType application/vnd.lwir.workflow.v1+json
//!   config  application/vnd.lwir.registration.v1+json   the registration record
//!   layer   application/vnd.lwir.workflow.v1+json       the canonical LWIR: its digest is
//!                                                       the WorkflowVersion
//!   annotations  dev.lwir.workflow, dev.lwir.lwirc.version, org.opencontainers.image.created
//! ```
//!
//! tagged `sha256-<hex>` (its n-th later registration `sha256-<hex>.<n>`): the tag is how a
//! version is found, never what it is — every read takes the digests from the manifest and
//! re-hashes the blobs they name. A version is also tagged with its workflow's name (an
//! alias of its latest registration, which nothing here reads).
//!
//! Tags are mutable in the distribution API, so a tag is published write-once by checking
//! for it first. Two processes registering the *same* version at the same instant may both
//! publish (the later tag wins; both records stay as blobs, the version is the same);
//! different versions never meet. Blobs only become reachable through a manifest that names
//! them, and the manifest is put last, so a process killed mid-push leaves nothing that
//! reads as a version. Objects are never deleted here: a record that lost a publishing race
//! is an unreferenced blob, left to the registry's garbage collection.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Area, Digest, Listed, Put, Record, Storage, StorageError};

/// The artifact type of a version, and the media type of its LWIR layer.
pub const WORKFLOW_MEDIA_TYPE: &str = "application/vnd.lwir.workflow.v1+json";
/// The media type of a registration record (the manifest's config).
pub const RECORD_MEDIA_TYPE: &str = "application/vnd.lwir.registration.v1+json";
/// The OCI image manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The largest manifest read (the registry's own limit is 4 MiB).
const MAX_MANIFEST: u64 = 4 * 1024 * 1024;
/// The largest blob read: what the reader reads.
const MAX_BLOB: u64 = lwir_spec::document::MAX_BYTES as u64;
/// The largest other answer (a tag list page, an error, a token).
const MAX_OTHER: u64 = 16 * 1024 * 1024;
/// The most tags read from one repository (a version has one or two).
const MAX_TAGS: usize = 1_000_000;
/// How many times a request the registry could not serve (429, 5xx) is sent again.
const RETRIES: u32 = 5;

/// The longest a registry's `Retry-After` makes the client wait before one try.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long the registry may stay silent — connecting, before it starts to answer, between
/// two reads of an answer — unless `LWIR_REGISTRY_TIMEOUT` says otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// The environment variable that sets the wait, in seconds.
pub const WAIT_VARIABLE: &str = "LWIR_REGISTRY_TIMEOUT";
/// The longest one request may take in all, its answer included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The wait `LWIR_REGISTRY_TIMEOUT` sets (seconds, from 0.001 to 86400), else
/// [`DEFAULT_WAIT`].
pub fn wait_from_env() -> Result<Duration, String> {
    let Some(text) = std::env::var_os(WAIT_VARIABLE).filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_WAIT);
    };
    let text = text.to_string_lossy();
    match text.trim().parse::<f64>() {
        Ok(seconds) if (0.001..=86_400.0).contains(&seconds) => {
            Ok(Duration::from_secs_f64(seconds))
        }
        _ => Err(format!(
            "{WAIT_VARIABLE} is `{text}`: expected a number of seconds from 0.001 to 86400"
        )),
    }
}

/// Where a registry is: `oci://HOST[:PORT]/REPOSITORY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciUrl {
    /// `https` (`oci://`) or `http` (`oci+http://`).
    pub scheme: &'static str,
    /// `HOST[:PORT]`.
    pub host: String,
    /// The repository, `a/b/c`.
    pub repository: String,
}

impl OciUrl {
    /// Parses `oci://HOST[:PORT]/REPOSITORY` or `oci+http://…`; `None` when `text` is not
    /// an `oci` URL at all, `Some(Err)` when it is one but malformed.
    pub fn parse(text: &str) -> Option<Result<Self, String>> {
        let (scheme, rest) = if let Some(rest) = text.strip_prefix("oci://") {
            ("https", rest)
        } else if let Some(rest) = text.strip_prefix("oci+http://") {
            ("http", rest)
        } else {
            return None;
        };
        Some(Self::parse_rest(scheme, rest, text))
    }

    fn parse_rest(scheme: &'static str, rest: &str, text: &str) -> Result<Self, String> {
        let Some((host, repository)) = rest.split_once('/') else {
            return Err(format!(
                "`{}` names no repository: write oci://HOST[:PORT]/REPOSITORY",
                lwir_spec::redact::redact(text)
            ));
        };
        let host_ok = !host.is_empty()
            && host.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
            });
        if !host_ok {
            // `user:password@host` is not a host, and its password is not printed.
            let shown = match host.rsplit_once('@') {
                Some((_, host)) => format!("<credentials>@{host}"),
                None => host.to_owned(),
            };
            return Err(format!(
                "`{}` is not a registry host (HOST or HOST:PORT; credentials go in \
                 LWIR_REGISTRY_USER and LWIR_REGISTRY_PASSWORD)",
                lwir_spec::redact::redact(&shown)
            ));
        }
        let repository = repository.trim_end_matches('/');
        // The distribution spec's name grammar: lower-case components separated by `/`,
        // each alphanumerics joined by `.`, `_`, `__` or dashes.
        let component_ok = |c: &str| {
            !c.is_empty()
                && c.bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && c.bytes()
                    .last()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && c.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
                })
        };
        if repository.is_empty()
            || !repository.split('/').all(component_ok)
            || repository.len() > 255
        {
            return Err(format!(
                "`{repository}` is not a repository name (lower-case letters, digits, `.`, `_`, `-`, \
                 components separated by `/`)"
            ));
        }
        Ok(Self {
            scheme,
            host: host.to_owned(),
            repository: repository.to_owned(),
        })
    }

    /// As written: `oci://host/repo` (or `oci+http://`).
    pub fn display(&self) -> String {
        let scheme = if self.scheme == "https" {
            "oci"
        } else {
            "oci+http"
        };
        format!("{scheme}://{}/{}", self.host, self.repository)
    }
}

/// Credentials for a registry host.
#[derive(Clone)]
struct Credentials {
    user: String,
    password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never printed, not even in a debug dump.
        write!(
            f,
            "Credentials {{ user: {:?}, password: <hidden> }}",
            self.user
        )
    }
}

/// Credentials for `host`: `LWIR_REGISTRY_USER` and `LWIR_REGISTRY_PASSWORD`, else the
/// Docker configuration's `auths` entry for the host (`$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`).
fn credentials_for(host: &str) -> Option<Credentials> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let (Some(user), Some(password)) = (env("LWIR_REGISTRY_USER"), env("LWIR_REGISTRY_PASSWORD"))
    {
        return Some(Credentials { user, password });
    }
    let path = match env("DOCKER_CONFIG") {
        Some(dir) => std::path::PathBuf::from(dir).join("config.json"),
        None => std::path::PathBuf::from(env("HOME")?).join(".docker/config.json"),
    };
    let bytes = std::fs::read(path).ok()?;
    let config: Value = serde_json::from_slice(&bytes).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(key, v)| {
        let k = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        (k == host || k.split('/').next() == Some(host)).then_some(v)
    })?;
    let encoded = entry.get("auth")?.as_str()?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some(Credentials {
        user: user.to_owned(),
        password: password.to_owned(),
    })
}

impl Credentials {
    /// Registers them with [`lwir_spec::redact`]: no message, log entry or file lwirc
    /// writes carries the password or the `Authorization` value it is sent in, whatever a
    /// registry echoes.
    fn keep_secret(self) -> Self {
        lwir_spec::redact::register_credentials(&self.user, &self.password);
        self
    }
}

/// One request to the registry's API, as `Oci::send` was asked it.
struct Request<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(&'a str, &'a str)],
    body: Option<&'a [u8]>,
    /// The most bytes of answer read.
    limit: u64,
    /// What it is for, in messages.
    what: &'a str,
}

/// A response: status, the headers the client uses, the body.
struct Answer {
    status: u16,
    /// `Retry-After`.
    retry_after: Option<String>,
    location: Option<String>,
    link: Option<String>,
    /// `WWW-Authenticate`.
    challenge: Option<String>,
    content_length: Option<u64>,
    body: Vec<u8>,
}

/// A registry repository reached over the distribution API.
pub struct Oci {
    url: OciUrl,
    agent: ureq::Agent,
    credentials: Option<Credentials>,
    /// The bearer token the registry's token service gave, for the scope last asked.
    token: Mutex<Option<String>>,
    /// Sizes of blobs this process put or saw, for manifest descriptors.
    sizes: Mutex<HashMap<String, u64>>,
    /// Sizes that manifests read declare for their blobs: a blob is read up to its declared
    /// size and no further.
    declared: Mutex<HashMap<String, u64>>,
    /// How long the registry may stay silent.
    wait: Duration,
}

impl std::fmt::Debug for Oci {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oci")
            .field("url", &self.url.display())
            .finish()
    }
}

impl Oci {
    /// The registry at `url`, with credentials from the environment or Docker's
    /// configuration when there are some, that may stay silent for `wait` at a time:
    /// connecting, before it starts to answer, and between two reads of an answer (one
    /// request takes at most 300 s in all). Nothing is sent until the first operation.
    pub fn new(url: OciUrl, wait: Duration) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(wait))
            .timeout_recv_response(Some(wait))
            .timeout_per_read(Some(wait))
            .timeout_global(Some(REQUEST_TIMEOUT.max(wait)))
            .build()
            .into();
        let credentials = credentials_for(&url.host).map(Credentials::keep_secret);
        Self {
            url,
            agent,
            credentials,
            token: Mutex::new(None),
            sizes: Mutex::new(HashMap::new()),
            declared: Mutex::new(HashMap::new()),
            wait,
        }
    }

    /// Where it is, as written.
    pub fn url(&self) -> &OciUrl {
        &self.url
    }

    fn base(&self) -> String {
        format!(
            "{}://{}/v2/{}",
            self.url.scheme, self.url.host, self.url.repository
        )
    }

    fn error(&self, what: &str, detail: impl std::fmt::Display) -> StorageError {
        self.error_of(io::ErrorKind::Other, what, detail)
    }

    fn error_of(
        &self,
        kind: io::ErrorKind,
        what: &str,
        detail: impl std::fmt::Display,
    ) -> StorageError {
        // A detail may quote the registry (an address it named, a body it sent).
        let detail = lwir_spec::redact::redact(&detail.to_string()).into_owned();
        StorageError {
            context: format!("{what} at {}", self.url.display()),
            source: io::Error::new(kind, detail),
        }
    }

    /// A failed exchange, said in terms of what the registry did: a silence names the wait
    /// it outlasted and how to change it.
    fn transport(&self, what: &str, e: ureq::Error) -> StorageError {
        let wait = self.wait.as_secs_f64();
        let detail = match e {
            ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => format!(
                "the registry could not be reached: no connection within {wait} s \
                 ({WAIT_VARIABLE})"
            ),
            ureq::Error::Timeout(ureq::Timeout::RecvResponse) => format!(
                "the registry accepted the connection but did not answer within {wait} s \
                 ({WAIT_VARIABLE})"
            ),
            ureq::Error::Timeout(ureq::Timeout::PerRead) => format!(
                "the registry stopped sending for {wait} s in the middle of its answer \
                 ({WAIT_VARIABLE})"
            ),
            ureq::Error::Timeout(
                ureq::Timeout::SendRequest | ureq::Timeout::SendBody | ureq::Timeout::PerWrite,
            ) => {
                format!("the registry stopped taking the request for {wait} s ({WAIT_VARIABLE})")
            }
            ureq::Error::Timeout(_) => format!(
                "the registry did not finish answering within {} s",
                REQUEST_TIMEOUT.max(self.wait).as_secs_f64()
            ),
            // A plain-HTTP registry asked for TLS answers bytes that are no TLS record
            // (rustls: "received corrupt message of type InvalidContentType").
            e if self.url.scheme == "https"
                && (matches!(e, ureq::Error::Tls(_) | ureq::Error::Rustls(_))
                    || e.to_string().contains("corrupt message")) =>
            {
                format!(
                    "the registry could not be reached over TLS: {e}; a registry that speaks \
                     plain HTTP (a local `registry:2` or Debian's `docker-registry`, say) is \
                     addressed as `oci+http://{}/{}`",
                    self.url.host, self.url.repository
                )
            }
            other => format!("the registry could not be reached: {other}"),
        };
        self.error(what, detail)
    }

    /// Sends a request, authenticating when the registry asks (Basic with the credentials,
    /// or a Bearer token from the registry's token service), once.
    fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        limit: u64,
        what: &str,
    ) -> Result<Answer, StorageError> {
        let request = Request {
            method,
            url,
            headers,
            body,
            limit,
            what,
        };
        let mut authenticated = false;
        let mut backoff = lwir_spec::retry::Backoff::new(
            Duration::from_millis(50),
            Duration::from_secs(2),
            MAX_RETRY_AFTER,
            RETRIES,
        );
        loop {
            // Credentials go to the registry itself only: an upload location or a next page
            // on another host (which a hostile registry could name) gets none.
            let auth = if self.same_host(url) {
                self.authorization()
            } else {
                None
            };
            let answer = self.once(&request, auth.as_deref())?;
            if answer.status == 401 && !authenticated {
                authenticated = true;
                if self.authenticate(&answer, what)? {
                    continue;
                }
            }
            // A registry under load, or one whose storage is mid-write for another client
            // (Distribution answers 500 while a concurrent upload of the same blob links
            // it), is asked again, a few times, after the pause it asks for (`Retry-After`,
            // capped) or growing pauses.
            if let Some(pause) = backoff.next(answer.status, answer.retry_after.as_deref()) {
                std::thread::sleep(pause);
                continue;
            }
            return Ok(answer);
        }
    }

    fn authorization(&self) -> Option<String> {
        if let Some(token) = self.token.lock().ok().and_then(|t| t.clone()) {
            return Some(format!("Bearer {token}"));
        }
        self.basic()
    }

    /// The `Authorization` value of the credentials, when there are some.
    fn basic(&self) -> Option<String> {
        self.credentials.as_ref().map(|c| {
            let raw = format!("{}:{}", c.user, c.password);
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(raw)
            )
        })
    }

    /// Sends `request` once, with `auth` as its `Authorization`.
    fn once(&self, request: &Request<'_>, auth: Option<&str>) -> Result<Answer, StorageError> {
        let (method, limit, what) = (request.method, request.limit, request.what);
        let mut builder = ureq::http::Request::builder()
            .method(method)
            .uri(request.url);
        for (k, v) in request.headers {
            builder = builder.header(*k, *v);
        }
        if let Some(auth) = auth {
            builder = builder.header("Authorization", auth);
        }
        let sent = match request.body {
            Some(body) => builder.body(body.to_vec()).map(|r| self.agent.run(r)),
            None => builder.body(()).map(|r| self.agent.run(r)),
        };
        let mut response = sent
            .map_err(|e| self.error(what, format!("cannot make the request: {e}")))?
            .map_err(|e| self.transport(what, e))?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let location = header("location");
        let retry_after = header("retry-after");
        let link = header("link");
        let content_length = header("content-length").and_then(|v| v.trim().parse().ok());
        let www = header("www-authenticate");
        let status = response.status().as_u16();
        let too_large = || {
            self.error_of(
                io::ErrorKind::FileTooLarge,
                what,
                format!("the registry's answer is larger than {limit} bytes"),
            )
        };
        let body = if method == "HEAD" {
            Vec::new()
        } else if status == 200 && content_length.is_some_and(|n| n > limit) {
            // Refused before a byte of it is read.
            return Err(too_large());
        } else {
            match response.body_mut().with_config().limit(limit).read_to_vec() {
                Ok(body) => body,
                Err(ureq::Error::BodyExceedsLimit(_)) => return Err(too_large()),
                Err(e @ ureq::Error::Timeout(_)) => return Err(self.transport(what, e)),
                Err(e) => {
                    return Err(self.error(what, format!("the registry's answer was cut off: {e}")));
                }
            }
        };
        Ok(Answer {
            retry_after,
            status,
            location,
            link,
            challenge: www,
            content_length,
            body,
        })
    }

    /// Answers a 401's challenge; `true` when there is something new to try.
    fn authenticate(&self, answer: &Answer, what: &str) -> Result<bool, StorageError> {
        let challenge = answer.challenge.clone().unwrap_or_default();
        let lower = challenge.to_ascii_lowercase();
        if lower.starts_with("bearer") {
            let params = challenge_params(&challenge["bearer".len()..]);
            let Some(realm) = params.get("realm") else {
                return Err(self.error(
                    what,
                    "the registry asked for a token without saying where to get one",
                ));
            };
            let mut url = realm.clone();
            let mut query = Vec::new();
            if let Some(service) = params.get("service") {
                query.push(format!("service={}", encode(service)));
            }
            // Pull and push on this repository, whatever the challenge's scope.
            query.push(format!(
                "scope={}",
                encode(&format!("repository:{}:pull,push", self.url.repository))
            ));
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&query.join("&"));
            let basic = self.basic();
            let token_request = Request {
                method: "GET",
                url: &url,
                headers: &[],
                body: None,
                limit: MAX_OTHER,
                what,
            };
            let got = self.once(&token_request, basic.as_deref())?;
            if got.status != 200 {
                return Err(self.error(
                    what,
                    format!(
                        "the registry's token service refused ({}): {}",
                        got.status,
                        excerpt(&got.body)
                    ),
                ));
            }
            let parsed: Value = serde_json::from_slice(&got.body).map_err(|_| {
                self.error(
                    what,
                    "the registry's token service answered something other than JSON",
                )
            })?;
            let token = parsed
                .get("token")
                .or_else(|| parsed.get("access_token"))
                .and_then(Value::as_str)
                .ok_or_else(|| self.error(what, "the registry's token service gave no token"))?;
            lwir_spec::redact::register_token(token);
            if let Ok(mut slot) = self.token.lock() {
                *slot = Some(token.to_owned());
            }
            return Ok(true);
        }
        if self.credentials.is_none() {
            return Err(self.error(
                what,
                "the registry wants credentials: set LWIR_REGISTRY_USER and LWIR_REGISTRY_PASSWORD, \
                 or log in with `docker login`",
            ));
        }
        // Basic credentials were sent and refused.
        Ok(false)
    }

    fn refused(&self, what: &str, answer: &Answer) -> StorageError {
        let why = match answer.status {
            401 | 403 => "the registry refuses these credentials".to_owned(),
            _ => format!("the registry answered {}", answer.status),
        };
        self.error(what, format!("{why}: {}", excerpt(&answer.body)))
    }

    fn blob_url(&self, digest: &str) -> String {
        format!("{}/blobs/{digest}", self.base())
    }

    fn manifest_url(&self, reference: &str) -> String {
        format!("{}/manifests/{reference}", self.base())
    }

    /// The size of blob `digest` when it is there.
    fn blob_size(&self, digest: &str) -> Result<Option<u64>, StorageError> {
        if let Some(&size) = self.sizes.lock().ok().as_ref().and_then(|s| s.get(digest)) {
            return Ok(Some(size));
        }
        let what = format!("checking blob {digest}");
        let answer = self.send("HEAD", &self.blob_url(digest), &[], None, 0, &what)?;
        match answer.status {
            200 => {
                let size = answer
                    .content_length
                    .ok_or_else(|| self.error(&what, "the registry gave no size for the blob"))?;
                self.remember(digest, size);
                Ok(Some(size))
            }
            404 => Ok(None),
            _ => Err(self.refused(&what, &answer)),
        }
    }

    fn remember(&self, digest: &str, size: u64) {
        if let Ok(mut sizes) = self.sizes.lock() {
            sizes.insert(digest.to_owned(), size);
        }
    }

    /// Blob `digest`, read up to the size a manifest declared for it (else up to
    /// [`MAX_BLOB`]) and no further.
    fn blob(&self, digest: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let what = format!("reading blob {digest}");
        let declared = self
            .declared
            .lock()
            .ok()
            .and_then(|d| d.get(digest).copied());
        let limit = declared.unwrap_or(MAX_BLOB);
        let answer = self
            .send("GET", &self.blob_url(digest), &[], None, limit, &what)
            .map_err(|e| match declared {
                Some(size) if e.source.kind() == io::ErrorKind::FileTooLarge => self.error(
                    &what,
                    format!("the registry sends more than the {size} bytes its manifest declares"),
                ),
                _ => e,
            })?;
        match answer.status {
            200 => Ok(Some(answer.body)),
            404 => Ok(None),
            _ => Err(self.refused(&what, &answer)),
        }
    }

    /// The manifest tagged (or with digest) `reference`; `None` when there is none.
    fn manifest(&self, reference: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let what = format!("reading manifest {reference}");
        let answer = self.send(
            "GET",
            &self.manifest_url(reference),
            &[("Accept", MANIFEST_MEDIA_TYPE)],
            None,
            MAX_MANIFEST,
            &what,
        )?;
        match answer.status {
            200 => Ok(Some(answer.body)),
            404 => Ok(None),
            _ => Err(self.refused(&what, &answer)),
        }
    }

    fn has_manifest(&self, reference: &str) -> Result<bool, StorageError> {
        let what = format!("checking manifest {reference}");
        let answer = self.send(
            "HEAD",
            &self.manifest_url(reference),
            &[("Accept", MANIFEST_MEDIA_TYPE)],
            None,
            0,
            &what,
        )?;
        match answer.status {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(self.refused(&what, &answer)),
        }
    }

    fn put_manifest(&self, reference: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let what = format!("publishing manifest {reference}");
        let mut pause = Duration::from_millis(50);
        let mut tries = 0;
        loop {
            tries += 1;
            let answer = self.send(
                "PUT",
                &self.manifest_url(reference),
                &[("Content-Type", MANIFEST_MEDIA_TYPE)],
                Some(bytes),
                MAX_OTHER,
                &what,
            )?;
            match answer.status {
                200..=202 => return Ok(()),
                // The blobs were there when the manifest was made; a registry that cannot
                // find one now is in the middle of another writer's upload of the same
                // blob (distribution moves the upload into place while it commits it,
                // and a manifest checked meanwhile names an "unknown" blob). It settles.
                400 if tries < 6 && blob_race(&answer.body) => {
                    std::thread::sleep(pause);
                    pause *= 2;
                }
                _ => return Err(self.refused(&what, &answer)),
            }
        }
    }

    /// Starts an upload session; its URL.
    fn start_upload(&self, what: &str) -> Result<String, StorageError> {
        let answer = self.send(
            "POST",
            &format!("{}/blobs/uploads/", self.base()),
            &[],
            Some(&[]),
            MAX_OTHER,
            what,
        )?;
        if answer.status != 202 {
            return Err(self.refused(what, &answer));
        }
        let location = answer
            .location
            .ok_or_else(|| self.error(what, "the registry gave no upload location"))?;
        Ok(self.absolute(&location))
    }

    /// Whether `url` is on the registry's own scheme, host and port.
    fn same_host(&self, url: &str) -> bool {
        let own = format!("{}://{}/", self.url.scheme, self.url.host);
        url.starts_with(&own)
    }

    fn absolute(&self, location: &str) -> String {
        if location.starts_with("http://") || location.starts_with("https://") {
            location.to_owned()
        } else {
            format!("{}://{}{location}", self.url.scheme, self.url.host)
        }
    }

    /// Publishes the manifest of version `version` under `tag`, write-once: `Existed` when
    /// the tag is there.
    fn publish(&self, version: &Digest, tag: &str, reference: &[u8]) -> Result<Put, StorageError> {
        if self.has_manifest(tag)? {
            return Ok(Put::Existed);
        }
        let what = format!("publishing {version}");
        let parsed: Value = serde_json::from_slice(reference)
            .map_err(|e| self.error(&what, format!("not a version reference: {e}")))?;
        let record_digest = parsed["record"].as_str().unwrap_or_default().to_owned();
        let lwir_size = self
            .blob_size(&version.to_string())?
            .ok_or_else(|| self.error(&what, "its LWIR blob is not in the registry"))?;
        // The record is read for the annotations; its length is its size.
        let record_bytes = self
            .blob(&record_digest)?
            .ok_or_else(|| self.error(&what, "its record blob is not in the registry"))?;
        let record_size = record_bytes.len();
        let record: Option<Record> = serde_json::from_slice(&record_bytes).ok();
        let mut annotations = serde_json::Map::new();
        annotations.insert("dev.lwir.version".into(), json!(version.to_string()));
        if let Some(record) = &record {
            annotations.insert("dev.lwir.workflow".into(), json!(record.workflow));
            annotations.insert("dev.lwir.lwirc.version".into(), json!(record.lwirc_version));
            annotations.insert(
                "org.opencontainers.image.created".into(),
                json!(record.registered_at),
            );
        }
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "artifactType": WORKFLOW_MEDIA_TYPE,
            "config": { "mediaType": RECORD_MEDIA_TYPE, "digest": record_digest, "size": record_size },
            "layers": [{
                "mediaType": WORKFLOW_MEDIA_TYPE,
                "digest": version.to_string(),
                "size": lwir_size,
                "annotations": { "org.opencontainers.image.title": "workflow.lwir.json" },
            }],
            "annotations": annotations,
        });
        let bytes = serde_json::to_vec(&manifest).expect("a manifest serialises");
        self.put_manifest(tag, &bytes)?;
        // The alias: the workflow's name, for people and other tools (never read here).
        if let Some(alias) = record.as_ref().and_then(|r| alias_tag(&r.workflow)) {
            let _ = self.put_manifest(&alias, &bytes);
        }
        Ok(Put::Created)
    }

    /// The version reference a manifest stands for: `{"record", "version"}` from its config
    /// and its one layer, in canonical form (the registry checks it against the version
    /// asked for and re-hashes both blobs). A manifest that is not a version's is returned
    /// as it is, which reads as no reference at all.
    ///
    /// The sizes its descriptors declare are kept, to read each blob up to its size; a size
    /// no blob lwirc reads can have (over [`MAX_BLOB`], or not a whole number) is refused
    /// here, before its blob is asked for.
    fn reference_of(&self, tag: &str, manifest: Vec<u8>) -> Result<Vec<u8>, StorageError> {
        let Ok(parsed) = serde_json::from_slice::<Value>(&manifest) else {
            return Ok(manifest);
        };
        self.declare_sizes(tag, &parsed)?;
        let config = parsed["config"]["digest"].as_str();
        let layers = parsed["layers"].as_array();
        let is_version = parsed["config"]["mediaType"] == RECORD_MEDIA_TYPE
            && layers.is_some_and(|l| l.len() == 1 && l[0]["mediaType"] == WORKFLOW_MEDIA_TYPE);
        let layer = layers
            .and_then(|l| l.first())
            .and_then(|l| l["digest"].as_str());
        Ok(match (config, layer) {
            (Some(record), Some(version)) if is_version => serde_json::to_vec(&json!({
                "record": record,
                "version": version,
            }))
            .expect("two strings serialise"),
            _ => manifest,
        })
    }

    /// Keeps the sizes manifest `tag`'s descriptors declare, each blob to be read up to its
    /// size; refuses a size no blob lwirc reads can have (over [`MAX_BLOB`], or not a whole
    /// number), before the blob is asked for.
    fn declare_sizes(&self, tag: &str, manifest: &Value) -> Result<(), StorageError> {
        let descriptors = std::iter::once(&manifest["config"])
            .chain(manifest["layers"].as_array().into_iter().flatten());
        for descriptor in descriptors {
            let Some(digest) = descriptor["digest"].as_str() else {
                continue;
            };
            let Some(size) = descriptor["size"].as_u64().filter(|&n| n <= MAX_BLOB) else {
                return Err(self.error(
                    &format!("reading manifest {tag}"),
                    format!(
                        "it declares blob {} as {} bytes; lwirc reads blobs of up to {MAX_BLOB} \
                         bytes",
                        lwir_spec::redact::excerpt(digest.as_bytes(), 80),
                        lwir_spec::redact::excerpt(descriptor["size"].to_string().as_bytes(), 40),
                    ),
                ));
            };
            if let Ok(mut declared) = self.declared.lock() {
                declared.insert(digest.to_owned(), size);
            }
        }
        Ok(())
    }

    /// Every tag of the repository (empty when it does not exist yet).
    fn tags(&self) -> Result<Vec<String>, StorageError> {
        let what = "listing tags";
        let mut url = format!("{}/tags/list?n=1000", self.base());
        let mut tags = Vec::new();
        // Bounded: a registry that keeps sending the same page is not followed forever.
        for _ in 0..100_000 {
            let answer = self.send("GET", &url, &[], None, MAX_OTHER, what)?;
            match answer.status {
                200 => {}
                404 => return Ok(tags),
                _ => return Err(self.refused(what, &answer)),
            }
            let page: Value = serde_json::from_slice(&answer.body)
                .map_err(|_| self.error(what, "the registry answered something other than JSON"))?;
            let before = tags.len();
            if let Some(list) = page["tags"].as_array() {
                tags.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            if tags.len() > MAX_TAGS {
                return Err(self.error(
                    what,
                    format!("the repository has more than {MAX_TAGS} tags"),
                ));
            }
            match answer.link.as_deref().and_then(next_link) {
                Some(next) if tags.len() > before => url = self.absolute(&next),
                _ => return Ok(tags),
            }
        }
        Err(self.error(what, "the registry's tag list does not end"))
    }
}

/// The parameters of a `WWW-Authenticate` challenge (`realm="…",service="…"`).
fn challenge_params(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            }
        };
        out.insert(key, value.to_owned());
        rest = next.trim_start_matches(',').trim();
    }
    out
}

/// The URL of a `Link: <…>; rel="next"` header.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let part = part.trim();
        let (url, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The start of an answer, for an error message, redacted of secrets.
fn excerpt(body: &[u8]) -> String {
    lwir_spec::redact::excerpt(body, lwir_spec::redact::EXCERPT_CHARS)
}

/// The tag of registration `n` of `version`.
fn version_tag(version: &Digest, n: u32) -> String {
    match n {
        0 => format!("sha256-{}", version.hex()),
        n => format!("sha256-{}.{n}", version.hex()),
    }
}

/// A workflow name as a tag (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`), when it can be one and
/// cannot be taken for a version's tag.
fn alias_tag(workflow: &str) -> Option<String> {
    let tag: String = workflow
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(128)
        .collect();
    let first_ok = tag
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    (first_ok && !tag.starts_with("sha256-")).then_some(tag)
}

/// A version tag as a listing entry: `sha256-<hex>` or `sha256-<hex>.<n>`; `None` for any
/// other tag (an alias).
fn listed_tag(tag: &str) -> Option<Listed> {
    let rest = tag.strip_prefix("sha256-")?;
    let (hex, n) = match rest.split_once('.') {
        Some((hex, n)) => (hex, Some(n)),
        None => (rest, None),
    };
    let Some(digest) = Digest::from_hex(hex) else {
        return Some(Listed::Unexpected(tag.to_owned()));
    };
    match n {
        None => Some(Listed::Named(digest)),
        // `.<n>`, n ≥ 1, written without leading zeros.
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 && n.to_string() == text => Some(Listed::Registration(digest, n)),
            _ => Some(Listed::Unexpected(tag.to_owned())),
        },
    }
}

impl Storage for Oci {
    fn put_object(&self, digest: &Digest, bytes: &[u8]) -> Result<Put, StorageError> {
        let name = digest.to_string();
        if self.blob_size(&name)?.is_some() {
            return Ok(Put::Existed);
        }
        let what = format!("uploading blob {name}");
        let upload = self.start_upload(&what)?;
        let url = format!(
            "{upload}{}digest={}",
            if upload.contains('?') { '&' } else { '?' },
            encode(&name)
        );
        let answer = self.send(
            "PUT",
            &url,
            &[("Content-Type", "application/octet-stream")],
            Some(bytes),
            MAX_OTHER,
            &what,
        )?;
        match answer.status {
            201 | 204 => {
                self.remember(&name, bytes.len() as u64);
                Ok(Put::Created)
            }
            _ => Err(self.refused(&what, &answer)),
        }
    }

    fn object(&self, digest: &Digest) -> Result<Option<Vec<u8>>, StorageError> {
        self.blob(&digest.to_string())
    }

    fn remove_object(&self, _digest: &Digest) -> Result<(), StorageError> {
        // Left to the registry's garbage collection: nothing references it.
        Ok(())
    }

    fn put_registration(
        &self,
        version: &Digest,
        n: u32,
        bytes: &[u8],
    ) -> Result<Put, StorageError> {
        self.publish(version, &version_tag(version, n), bytes)
    }

    fn registration(&self, version: &Digest, n: u32) -> Result<Option<Vec<u8>>, StorageError> {
        let tag = version_tag(version, n);
        self.manifest(&tag)?
            .map(|m| self.reference_of(&tag, m))
            .transpose()
    }

    fn list(&self, area: Area) -> Result<Vec<Listed>, StorageError> {
        let versions: Vec<Listed> = self.tags()?.iter().filter_map(|t| listed_tag(t)).collect();
        match area {
            Area::Versions => Ok(versions),
            Area::Objects => {
                // The distribution API lists no blobs: the objects are those the versions'
                // manifests name.
                let mut objects = BTreeSet::new();
                for listed in versions {
                    let tag = match &listed {
                        Listed::Named(d) => version_tag(d, 0),
                        Listed::Registration(d, n) => version_tag(d, *n),
                        _ => continue,
                    };
                    let Some(manifest) = self.manifest(&tag)? else {
                        continue;
                    };
                    let Ok(parsed) = serde_json::from_slice::<Value>(&manifest) else {
                        continue;
                    };
                    self.declare_sizes(&tag, &parsed)?;
                    let digests = std::iter::once(&parsed["config"])
                        .chain(parsed["layers"].as_array().into_iter().flatten())
                        .filter_map(|d| d["digest"].as_str())
                        .filter_map(|d| d.strip_prefix("sha256:"))
                        .filter_map(Digest::from_hex);
                    objects.extend(digests);
                }
                Ok(objects.into_iter().map(Listed::Named).collect())
            }
        }
    }

    fn location(&self, area: Area, name: &str) -> String {
        match area {
            Area::Objects => format!("{}@sha256:{name}", self.url.display()),
            Area::Versions => format!("{}:sha256-{name}", self.url.display()),
        }
    }

    fn check_writable(&self) -> Result<(), String> {
        let what = "checking that versions can be pushed";
        let upload = self.start_upload(what).map_err(|e| format!("{e}"))?;
        // The session is abandoned at once; a registry that cannot cancel it expires it.
        let _ = self.send("DELETE", &upload, &[], None, MAX_OTHER, what);
        Ok(())
    }
}

/// Whether a registry's refusal of a manifest says a blob it names is unknown or does not
/// match its digest: what a concurrent upload of the same blob looks like from outside.
fn blob_race(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    // `MANIFEST_BLOB_UNKNOWN` (a manifest naming a blob) or `BLOB_UNKNOWN`.
    text.contains("BLOB_UNKNOWN")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let url = OciUrl::parse("oci://registry.example:5000/team/lwir")
            .unwrap()
            .unwrap();
        assert_eq!(url.scheme, "https");
        assert_eq!(url.host, "registry.example:5000");
        assert_eq!(url.repository, "team/lwir");
        assert_eq!(url.display(), "oci://registry.example:5000/team/lwir");
        let plain = OciUrl::parse("oci+http://127.0.0.1:5000/lwir")
            .unwrap()
            .unwrap();
        assert_eq!(plain.scheme, "http");
        assert!(OciUrl::parse("/some/dir").is_none());
        assert!(OciUrl::parse("oci://host").unwrap().is_err());
        assert!(OciUrl::parse("oci://host/Upper").unwrap().is_err());
        assert!(OciUrl::parse("oci://host/a//b").unwrap().is_err());
    }

    #[test]
    fn challenges_and_links() {
        let p = challenge_params(
            r#" realm="https://auth.example/token",service="registry.example",scope="repository:x:pull""#,
        );
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["service"], "registry.example");
        assert_eq!(
            next_link(r#"</v2/x/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/x/tags/list?n=2&last=b")
        );
    }

    #[test]
    fn tags() {
        let hex = "ab".repeat(32);
        assert_eq!(
            listed_tag(&format!("sha256-{hex}")),
            Some(Listed::Named(Digest::from_hex(&hex).unwrap()))
        );
        assert_eq!(
            listed_tag(&format!("sha256-{hex}.2")),
            Some(Listed::Registration(Digest::from_hex(&hex).unwrap(), 2))
        );
        assert!(matches!(
            listed_tag(&format!("sha256-{hex}.02")),
            Some(Listed::Unexpected(_))
        ));
        assert_eq!(listed_tag("issue-triage"), None);
        assert_eq!(alias_tag("issue triage"), Some("issue-triage".into()));
        assert_eq!(alias_tag("sha256-x"), None);
        assert_eq!(alias_tag("-x"), None);
    }
}
