//! The planner protocol, `lwir-planner/1`: one JSON request on the planner's standard input,
//! one JSON answer on its standard output.
//!
//! The wire format is specified in `crates/lwir-spec/README.md` ("The planner protocol") with a JSON
//! Schema, `crates/lwir-spec/schema/planner-protocol-1.schema.json`, so that a planner can be
//! written in any language. Requests are built from these types; answers are read with the
//! strict I-JSON reader of [`lwir_spec::document`], so an answer with duplicate keys or lone
//! surrogates is never silently half-understood, and the draft inside an answer keeps its
//! exact bytes: findings on it point into what the planner wrote.

use lwir_spec::document::{self, Value};
use serde::Serialize;

use crate::harness::FailureKind;

/// The protocol name every request carries.
pub const PROTOCOL: &str = "lwir-planner/1";

/// The longest rationale kept from an `attention` answer, in characters.
pub const MAX_RATIONALE_CHARS: usize = 4096;

/// One request to the planner.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Request {
    /// Draft an LWIR document for the workflow.
    Plan {
        /// Always [`PROTOCOL`].
        protocol: &'static str,
        /// 1-based number of this planner call in the session.
        call: u32,
        /// The WorkflowDefinition, as given.
        workflow: serde_json::Value,
        /// The workflow input (`--input`), `null` when none was given.
        input: serde_json::Value,
        /// The PlannerManifest the session runs with.
        manifest: serde_json::Value,
    },
    /// Revise a draft so that it has no findings of severity error.
    Repair {
        /// Always [`PROTOCOL`].
        protocol: &'static str,
        /// 1-based number of this planner call in the session.
        call: u32,
        /// 1-based number of this repair attempt.
        attempt: u32,
        /// How many repair attempts the session allows in all.
        max_attempts: u32,
        /// The draft to revise: the JSON document, or its text as a JSON string when it is
        /// not readable JSON.
        draft: serde_json::Value,
        /// Its findings, each as in `lwirc validate --format json`.
        findings: serde_json::Value,
        /// The WorkflowDefinition, as given.
        workflow: serde_json::Value,
        /// The PlannerManifest the session runs with.
        manifest: serde_json::Value,
    },
}

impl Request {
    /// `plan` or `repair`.
    pub fn kind(&self) -> &'static str {
        match self {
            Request::Plan { .. } => "plan",
            Request::Repair { .. } => "repair",
        }
    }

    /// The call number.
    pub fn call(&self) -> u32 {
        match self {
            Request::Plan { call, .. } | Request::Repair { call, .. } => *call,
        }
    }

    /// The repair attempt, for a repair request.
    pub fn attempt(&self) -> Option<u32> {
        match self {
            Request::Plan { .. } => None,
            Request::Repair { attempt, .. } => Some(*attempt),
        }
    }

    /// The compact JSON bytes written to the planner's standard input (and hashed into the
    /// event log).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising plain JSON values into memory cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Environment variables set for the planner process besides the request itself, so that
    /// a simple planner (a shell script) need not parse JSON to know what is asked.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("LWIRC_PLANNER_PROTOCOL", PROTOCOL.to_owned()),
            ("LWIRC_PLANNER_KIND", self.kind().to_owned()),
            ("LWIRC_PLANNER_CALL", self.call().to_string()),
        ];
        if let Some(attempt) = self.attempt() {
            env.push(("LWIRC_PLANNER_ATTEMPT", attempt.to_string()));
        }
        env
    }
}

/// A planner's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A proposed draft.
    Draft {
        /// The exact bytes of the `lwir` object as the planner wrote them.
        lwir: Vec<u8>,
    },
    /// The planner gives up and asks for a person.
    Attention {
        /// Why, at most [`MAX_RATIONALE_CHARS`] characters (longer ones are cut, marked `…`).
        rationale: String,
    },
}

/// Why a planner's standard output is not an answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AnswerError {
    /// [`FailureKind::NotJson`] or [`FailureKind::Invalid`].
    pub kind: FailureKind,
    /// What is wrong, naming the place.
    pub message: String,
}

impl AnswerError {
    fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: FailureKind::Invalid,
            message: message.into(),
        }
    }
}

/// Reads a planner's standard output as an [`Answer`].
///
/// The output must be exactly one strict I-JSON value (surrounding whitespace allowed): an
/// object with `"kind": "draft"` and an object `lwir`, or `"kind": "attention"` and a string
/// `rationale`. Other members are ignored, so planners may add their own (a model name,
/// token counts). Reader problems inside `lwir` (a duplicate key in a step) do not reject
/// the answer: the draft's validation reports them with their place.
pub fn parse_answer(stdout: &[u8]) -> Result<Answer, AnswerError> {
    let read = document::read(stdout.to_vec());
    let Some(doc) = read.document else {
        // No document means a fatal reader finding, or nothing but whitespace.
        let why = match read.findings.first() {
            Some(f) if !stdout.iter().all(u8::is_ascii_whitespace) => {
                let line = 1 + lwir_spec::span::LineIndex::new(stdout).line_of(f.span.start());
                let fenced = stdout.trim_ascii_start().starts_with(b"```");
                format!(
                    "{} (line {line}, byte {}){}",
                    excerpt(&f.message),
                    f.span.start(),
                    if fenced {
                        "; the answer is fenced as Markdown: print the JSON object alone, \
                         without ``` around it"
                    } else {
                        ""
                    }
                )
            }
            _ => "the planner printed nothing on standard output".to_owned(),
        };
        return Err(AnswerError {
            kind: FailureKind::NotJson,
            message: format!("the planner's answer is not JSON: {why}"),
        });
    };
    let root = doc.root();
    let Value::Object(_) = &root.value else {
        return Err(AnswerError::invalid(format!(
            "the planner's answer is {}, not an object with `kind`",
            describe(root)
        )));
    };
    let kind = match root.get("kind") {
        Some(lwir_spec::Node {
            value: Value::String(kind),
            ..
        }) => kind.as_str(),
        Some(other) => {
            return Err(AnswerError::invalid(format!(
                "the answer's `kind` is {}, not \"draft\" or \"attention\"",
                describe(other)
            )));
        }
        None => {
            return Err(AnswerError::invalid(
                "the answer has no `kind` (\"draft\" or \"attention\")",
            ));
        }
    };
    // Reader findings outside `lwir` (a duplicate `kind`, say) make the answer ambiguous.
    let lwir_span = root.get("lwir").map(|n| n.span);
    if let Some(f) = read
        .findings
        .iter()
        .find(|f| lwir_span.is_none_or(|s| f.span.start() < s.start() || f.span.end() > s.end()))
    {
        return Err(AnswerError::invalid(format!(
            "the answer is ambiguous: {} at byte {}",
            excerpt(&f.message),
            f.span.start()
        )));
    }
    match kind {
        "draft" => match root.get("lwir") {
            Some(
                node @ lwir_spec::Node {
                    value: Value::Object(_),
                    ..
                },
            ) => Ok(Answer::Draft {
                lwir: stdout[node.span.range()].to_vec(),
            }),
            Some(other) => Err(AnswerError::invalid(format!(
                "the draft answer's `lwir` is {}, not an object (an LWIR document)",
                describe(other)
            ))),
            None => Err(AnswerError::invalid(
                "the draft answer has no `lwir` (the LWIR document)",
            )),
        },
        "attention" => match root.get("rationale") {
            Some(lwir_spec::Node {
                value: Value::String(rationale),
                ..
            }) => Ok(Answer::Attention {
                rationale: bounded(rationale),
            }),
            Some(other) => Err(AnswerError::invalid(format!(
                "the attention answer's `rationale` is {}, not a string",
                describe(other)
            ))),
            None => Err(AnswerError::invalid(
                "the attention answer has no `rationale` (why the planner gives up)",
            )),
        },
        other => Err(AnswerError::invalid(format!(
            "unknown answer kind `{}`; expected \"draft\" or \"attention\"",
            excerpt(other)
        ))),
    }
}

/// The most characters of a planner's text echoed in a message.
const MAX_EXCERPT_CHARS: usize = 200;

/// `text` when short; else its first [`MAX_EXCERPT_CHARS`] and its length: `xxxx… (4000
/// bytes)`, redacted of secrets ([`lwir_spec::redact::excerpt`]). A garbage answer is not
/// echoed back whole.
fn excerpt(text: &str) -> String {
    lwir_spec::redact::excerpt(text.as_bytes(), MAX_EXCERPT_CHARS)
}

fn bounded(rationale: &str) -> String {
    lwir_spec::text::ellipsis(rationale.trim(), MAX_RATIONALE_CHARS)
}

/// The type of `node` as a message names it (`a string`, `an object`:
/// [`lwir_spec::text::json_type`]). Only a refused answer is described, so the copy into
/// JSON is made only then.
fn describe(node: &lwir_spec::Node) -> &'static str {
    lwir_spec::text::json_type(&node.to_json())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid(out: &str) -> AnswerError {
        parse_answer(out.as_bytes()).unwrap_err()
    }

    #[test]
    fn a_draft_answer_keeps_the_exact_bytes_of_lwir() {
        let out = "{\"kind\": \"draft\", \"model\": \"x\",\n \"lwir\": {\"lwir\":  \"1\"}}\n";
        assert_eq!(
            parse_answer(out.as_bytes()).unwrap(),
            Answer::Draft {
                lwir: b"{\"lwir\":  \"1\"}".to_vec()
            }
        );
    }

    #[test]
    fn duplicates_inside_lwir_are_left_to_validation() {
        let out = r#"{"kind":"draft","lwir":{"a":1,"a":2}}"#;
        assert!(matches!(
            parse_answer(out.as_bytes()),
            Ok(Answer::Draft { .. })
        ));
        let e = invalid(r#"{"kind":"draft","kind":"attention","lwir":{}}"#);
        assert_eq!(e.kind, FailureKind::Invalid);
        assert!(e.message.contains("ambiguous"), "{e}");
    }

    #[test]
    fn attention_rationale_is_bounded() {
        let long = "x".repeat(MAX_RATIONALE_CHARS + 10);
        let out = json!({"kind": "attention", "rationale": long}).to_string();
        let Answer::Attention { rationale } = parse_answer(out.as_bytes()).unwrap() else {
            panic!("not attention")
        };
        assert_eq!(rationale.chars().count(), MAX_RATIONALE_CHARS + 1);
        assert!(rationale.ends_with('…'));
    }

    #[test]
    fn garbage_is_not_json_and_says_where() {
        let e = invalid("Sure! Here is the plan:\n{\"kind\":\"draft\"}");
        assert_eq!(e.kind, FailureKind::NotJson);
        assert!(e.message.contains("line 1, byte 0"), "{e}");
        let e = invalid("  \n");
        assert_eq!(e.kind, FailureKind::NotJson);
        assert!(e.message.contains("printed nothing"), "{e}");
    }

    #[test]
    fn protocol_violations_name_what_is_wrong() {
        for (out, needle) in [
            ("[1]", "an array, not an object"),
            ("{}", "no `kind`"),
            (r#"{"kind":3}"#, "`kind` is a number"),
            (r#"{"kind":"plan"}"#, "unknown answer kind `plan`"),
            (r#"{"kind":"draft"}"#, "no `lwir`"),
            (
                r#"{"kind":"draft","lwir":"{}"}"#,
                "`lwir` is a string, not an object",
            ),
            (r#"{"kind":"draft","lwir":[]}"#, "`lwir` is an array"),
            (r#"{"kind":"attention"}"#, "no `rationale`"),
            (
                r#"{"kind":"attention","rationale":null}"#,
                "`rationale` is null",
            ),
        ] {
            let e = invalid(out);
            assert_eq!(e.kind, FailureKind::Invalid, "{out}");
            assert!(e.message.contains(needle), "{out}: {e}");
        }
    }

    #[test]
    fn requests_are_tagged_by_kind_and_expose_env() {
        let r = Request::Repair {
            protocol: PROTOCOL,
            call: 3,
            attempt: 2,
            max_attempts: 3,
            draft: json!({"lwir": "1"}),
            findings: json!([]),
            workflow: json!({}),
            manifest: json!({}),
        };
        let v: serde_json::Value = serde_json::from_slice(&r.to_bytes()).unwrap();
        assert_eq!(v["kind"], "repair");
        assert_eq!(v["protocol"], PROTOCOL);
        assert_eq!(v["attempt"], 2);
        assert!(r.env().contains(&("LWIRC_PLANNER_ATTEMPT", "2".to_owned())));
        assert!(r.env().contains(&("LWIRC_PLANNER_CALL", "3".to_owned())));
    }
}
