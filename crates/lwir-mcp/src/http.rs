//! A server over streamable HTTP, on rmcp's reqwest client (rustls with the *ring*
//! provider, the system's roots). rmcp bounds what it buffers of an answer (its JSON body
//! and SSE event limits, set to [`ConnectOptions::max_message_bytes`]); per-call limits are
//! applied to what it parsed ([`Observed`]).
//!
//! [`ConnectOptions::max_message_bytes`]: crate::ConnectOptions::max_message_bytes

use std::collections::HashMap;
use std::sync::{Arc, Once};

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::worker::WorkerQuitReason;

use crate::HttpSpec;
use crate::text;
use crate::wire::{Observed, Wire};

type HttpError = StreamableHttpError<reqwest::Error>;

/// The transport's configuration for `spec`, or why there is none. A header's value is
/// never part of the reason.
pub(crate) fn config(spec: &HttpSpec) -> Result<StreamableHttpClientTransportConfig, String> {
    let url = spec.url.as_str();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "`{}` is not an http:// or https:// URL",
            shown_url(url)
        ));
    }
    let mut headers = HashMap::new();
    for (name, value) in &spec.headers {
        let header = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{}` is not an HTTP header name", text::show_message(name)))?;
        let mut value = http::HeaderValue::from_str(value.expose()).map_err(|_| {
            format!(
                "the value of header `{}` cannot be sent in a header",
                header.as_str()
            )
        })?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = headers;
    config.max_json_response_size = spec.options.max_message_bytes;
    config.max_sse_event_size = spec.options.max_message_bytes;
    // rmcp would otherwise hold a 16th parallel call back; the runtime's parallelism is
    // its own business.
    config.max_concurrent_requests = 64;
    Ok(config)
}

/// The transport (inside the runtime: it starts rmcp's worker task).
pub(crate) fn transport(
    config: StreamableHttpClientTransportConfig,
    wire: Arc<Wire>,
) -> Observed<StreamableHttpClientTransport<reqwest::Client>> {
    install_crypto();
    Observed {
        inner: StreamableHttpClientTransport::from_config(config),
        wire,
    }
}

/// rmcp's reqwest client is built with rustls and no crypto provider of its own: the
/// process default is *ring*, as for the rest of lwirc's TLS (ureq).
fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one first; that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `url` as messages show it: without credentials, query or fragment, cleaned.
pub(crate) fn shown_url(url: &str) -> String {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..cut];
    let shown = match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    };
    text::show_message(&shown)
}

/// What went wrong in a transport, as messages show it: the error and its sources (the
/// HTTP client's, the operating system's), without rmcp's transport type names.
pub(crate) fn transport_error(error: &rmcp::transport::DynamicTransportError) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(e) = current {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        // rmcp's wrappers of the HTTP client's error do not give it as their source.
        current = match e.downcast_ref::<HttpError>() {
            Some(StreamableHttpError::Client(inner)) => Some(inner),
            _ => match e.downcast_ref::<WorkerQuitReason<HttpError>>() {
                Some(WorkerQuitReason::Fatal { error, .. }) => Some(error),
                _ => e.source(),
            },
        };
    }
    show_error(&parts.join(": "))
}

/// An HTTP error as messages show it: URLs in it without credentials, query or fragment.
pub(crate) fn show_error(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let after = &rest[at..];
        let mut end = at
            + after
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '(' | ')' | '"' | '\'' | '<' | '>' | ',')
                })
                .unwrap_or(after.len());
        while end > at + 3 && rest[..end].ends_with([':', '.', ';']) {
            end -= 1;
        }
        out.push_str(&rest[..scheme_start]);
        out.push_str(&shown_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    text::show_message(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(
            shown_url("https://user:pw@example.com:8443/mcp?token=x#y"),
            "https://example.com:8443/mcp"
        );
        assert_eq!(
            show_error("error sending request for url (http://a:b@h/mcp?k=v): refused"),
            "error sending request for url (http://h/mcp): refused"
        );
        assert_eq!(show_error("at https://h/x. Then"), "at https://h/x. Then");
    }
}
