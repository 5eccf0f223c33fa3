//! Models on an OpenAI-compatible chat-completions server, through the harness's client
//! (`lwir_model::http`: blocking, retried on 429 and 5xx within the deadline, the key sent
//! as a bearer token and nowhere else). The answer is asked for with `response_format`
//! `json_schema` from the step's output schema; a server that refuses it (400) is asked
//! with `json_object`, then without, and the answer records which mode ran.

use std::time::{Duration, Instant};

use lwir_model::http::Client;
use lwir_spec::Code;
use serde_json::{Value, json};

use super::{EffectError, ModelAnswer, ModelCall};

/// Asks `client` one round of `call`, within `timeout`.
pub(crate) fn call_model(
    client: &Client,
    call: &ModelCall,
    timeout: Duration,
) -> Result<ModelAnswer, EffectError> {
    let deadline = Instant::now() + timeout;
    let fail = |message: String| EffectError::new(Code::ModelCallFailed, message);
    let mut body = call.request.clone();
    if let Value::Object(m) = &mut body {
        m.insert("model".into(), Value::String(call.model.clone()));
    }
    let mut mode = body
        .get("response_format")
        .map(|_| "json_schema")
        .unwrap_or("text");
    loop {
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let answered = client.post(&bytes, deadline).map_err(|u| fail(u.message))?;
        if answered.status == 400 && mode != "text" {
            // A server that does not take this response format: the next weaker one.
            if let Value::Object(m) = &mut body {
                if mode == "json_schema" {
                    m.insert("response_format".into(), json!({"type": "json_object"}));
                    mode = "json_object";
                } else {
                    m.remove("response_format");
                    mode = "text";
                }
            }
            continue;
        }
        if !(200..300).contains(&answered.status) {
            return Err(fail(format!(
                "the model server `{}` answered {}: {}",
                client.shown_url(),
                answered.status,
                excerpt(&answered.body)
            )));
        }
        let response: Value = serde_json::from_slice(&answered.body).map_err(|e| {
            fail(format!(
                "the model server `{}` answered something that is not JSON ({e}): {}",
                client.shown_url(),
                excerpt(&answered.body)
            ))
        })?;
        let message = &response["choices"][0]["message"];
        if !message.is_object() {
            return Err(fail(format!(
                "the model server `{}` answered without `choices[0].message`: {}",
                client.shown_url(),
                excerpt(&answered.body)
            )));
        }
        let mut with_usage = message.clone();
        if let Value::Object(m) = &mut with_usage {
            m.insert("usage".into(), response["usage"].clone());
        }
        let mut answer = super::command::assistant_message(&with_usage);
        answer.mode = Some(mode.to_owned());
        return Ok(answer);
    }
}

/// The start of a server's answer, for a message, redacted of secrets (a server may echo
/// what it was sent).
fn excerpt(body: &[u8]) -> String {
    lwir_spec::redact::excerpt(body, lwir_spec::redact::EXCERPT_CHARS)
}
