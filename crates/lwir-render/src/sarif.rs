//! SARIF 2.1.0 output, for code-scanning services and editors.
//!
//! Written with small `Serialize` structs of our own rather than `serde-sarif`: the part of
//! SARIF we emit is small, and the generated crate brings a large type surface and extra
//! dependencies for it. The output is checked against the OASIS SARIF 2.1.0 schema in the
//! CLI tests.
//!
//! Columns are Unicode code points (`columnKind: unicodeCodePoints`), byte offsets are exact.
//! A fix whose patch replaces a value or renames a key is also given as an
//! `artifactChange` that editors can apply as text; every fix's JSON Patch is kept in the
//! result's `properties`.

use std::collections::BTreeMap;

use lwir_spec::{Code, Finding, Origin, PatchOp, Span, pointer};
use serde::Serialize;

use super::{File, Locators, Report};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool,
    artifacts: Vec<Artifact<'a>>,
    column_kind: &'static str,
    results: Vec<SarifResult<'a>>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    information_uri: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: &'static str,
    name: &'static str,
    short_description: Text,
    full_description: Text,
    help: Help,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    validator: &'static str,
}

#[derive(Serialize)]
struct Artifact<'a> {
    location: ArtifactLocation<'a>,
    length: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: Text,
    locations: Vec<Location<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<SarifFix<'a>>,
    properties: ResultProperties<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: PhysicalLocation<'a>,
    logical_locations: Vec<LogicalLocation<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation<'a> {
    artifact_location: ArtifactLocation<'a>,
    region: Region,
}

#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation<'a> {
    uri: &'a str,
    index: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
    byte_offset: usize,
    byte_length: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalLocation<'a> {
    fully_qualified_name: &'a str,
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix<'a> {
    description: Text,
    artifact_changes: Vec<ArtifactChange<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange<'a> {
    artifact_location: ArtifactLocation<'a>,
    replacements: Vec<Replacement>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    deleted_region: ByteRegion,
    inserted_content: InsertedContent,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ByteRegion {
    byte_offset: usize,
    byte_length: usize,
}

#[derive(Serialize)]
struct InsertedContent {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultProperties<'a> {
    name: &'static str,
    pointer: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    applicability: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<&'a [PatchOp]>,
}

/// The SARIF 2.1.0 log (of a [`Validation`](lwir_validators::pipeline::Validation), or any
/// [`Report`]), pretty-printed.
pub fn render<'a>(report: impl Into<Report<'a>>) -> String {
    let report = report.into();
    let mut locators = Locators::new(&report);
    let files: Vec<File<'_>> = report.draft.into_iter().chain(report.definition).collect();
    let uris: Vec<String> = files.iter().map(|f| uri_reference(f.name)).collect();
    let artifact = |origin: Origin| {
        let index = usize::from(origin == Origin::Definition && files.len() == 2);
        ArtifactLocation {
            uri: &uris[index],
            index,
        }
    };

    // Rules: the codes that occur, in code order.
    let mut rule_index: BTreeMap<Code, usize> = BTreeMap::new();
    for f in report.findings {
        rule_index.insert(f.code, 0);
    }
    for (i, index) in rule_index.values_mut().enumerate() {
        *index = i;
    }
    let rules = rule_index.keys().map(|&code| rule(code)).collect();

    let mut results = Vec::with_capacity(report.findings.len());
    for f in report.findings {
        let mut message = f.message.clone();
        if let Some(help) = &f.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        let locations = vec![located(
            &mut locators,
            artifact(f.origin),
            f.span,
            &f.pointer,
            None,
            None,
        )];
        let related_locations = f
            .related
            .iter()
            .enumerate()
            .map(|(i, r)| {
                located(
                    &mut locators,
                    artifact(r.origin),
                    r.span,
                    &r.pointer,
                    Some(i),
                    Some(&r.message),
                )
            })
            .collect();
        results.push(SarifResult {
            rule_id: f.code.as_str(),
            rule_index: rule_index[&f.code],
            // SARIF's levels `error` and `warning` are our severity names.
            level: f.severity.as_str(),
            message: Text { text: message },
            locations,
            related_locations,
            fixes: text_fix(report.file(f.origin), f, artifact(f.origin))
                .into_iter()
                .collect(),
            properties: ResultProperties {
                name: f.code.name(),
                pointer: &f.pointer,
                applicability: f.fix.as_ref().map(|x| x.applicability.as_str()),
                patch: f.fix.as_ref().map(|x| x.patch.as_slice()),
            },
        });
    }
    let artifacts = files
        .iter()
        .enumerate()
        .map(|(index, file)| Artifact {
            location: ArtifactLocation {
                uri: &uris[index],
                index,
            },
            length: file.bytes.len(),
        })
        .collect();
    let log = Log {
        schema: "https://json.schemastore.org/sarif-2.1.0.json",
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: "lwirc",
                    version: env!("CARGO_PKG_VERSION"),
                    information_uri: "https://example.invalid/lwirc",
                    rules,
                },
            },
            artifacts,
            column_kind: "unicodeCodePoints",
            results,
        }],
    };
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_string_pretty(&log).unwrap_or_default()
}

/// A file name as an RFC 3986 URI reference: each byte that is not unreserved (`A–Z a–z
/// 0–9 - . _ ~`) or a `/` is percent-encoded (UTF-8 for non-ASCII), so a space, `%`, `#`
/// or `?` stays part of the path. A relative path stays relative.
fn uri_reference(name: &str) -> String {
    const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    percent_encoding::utf8_percent_encode(name, KEPT).to_string()
}

fn located<'a>(
    locators: &mut Locators<'_>,
    artifact: ArtifactLocation<'a>,
    span: Span,
    at: &'a str,
    id: Option<usize>,
    message: Option<&str>,
) -> Location<'a> {
    let origin = if artifact.index == 0 {
        Origin::Draft
    } else {
        Origin::Definition
    };
    let start = locators.locate(origin, span.start());
    let end = locators.locate(origin, span.end());
    Location {
        id,
        physical_location: PhysicalLocation {
            artifact_location: artifact,
            region: Region {
                start_line: start.line,
                start_column: start.column,
                end_line: end.line,
                end_column: end.column,
                byte_offset: span.start(),
                byte_length: span.len(),
            },
        },
        logical_locations: vec![LogicalLocation {
            fully_qualified_name: if at.is_empty() { "/" } else { at },
            kind: "member",
        }],
        message: message.map(|m| Text { text: m.to_owned() }),
    }
}

fn rule(code: Code) -> Rule {
    let docs = code.docs();
    Rule {
        id: code.as_str(),
        name: code.name(),
        short_description: Text {
            text: code.summary().to_owned(),
        },
        full_description: Text {
            text: code.summary().to_owned(),
        },
        help: Help {
            text: format!("{docs}\nRun `lwirc explain {code}` for this text in a terminal."),
            markdown: docs,
        },
        default_configuration: Configuration {
            level: code.severity().as_str(),
        },
        properties: RuleProperties {
            validator: code.stage().as_str(),
        },
    }
}

/// The fix of `f` as a text edit, when its patch is one that maps to text: replacing a value,
/// or renaming a key within its object.
fn text_fix<'a>(file: File<'_>, f: &Finding, at: ArtifactLocation<'a>) -> Option<SarifFix<'a>> {
    let fix = f.fix.as_ref()?;
    let [op] = fix.patch.as_slice() else {
        return None;
    };
    let doc = file.document?;
    let (span, text) = match op {
        PatchOp::Replace { path, value } => {
            (doc.span_of(path)?, serde_json::to_string(value).ok()?)
        }
        PatchOp::Move { from, path } => {
            let (from_parent, _) = from.rsplit_once('/')?;
            let (to_parent, _) = path.rsplit_once('/')?;
            if from_parent != to_parent {
                return None;
            }
            let new_key = pointer::tokens(path)?.pop()?;
            (
                doc.key_span_of(from)?,
                serde_json::to_string(&new_key).ok()?,
            )
        }
        _ => return None,
    };
    Some(SarifFix {
        description: Text {
            text: format!(
                "{} ({})",
                f.help.as_deref().unwrap_or("apply the fix"),
                fix.applicability.as_str()
            ),
        },
        artifact_changes: vec![ArtifactChange {
            artifact_location: at,
            replacements: vec![Replacement {
                deleted_region: ByteRegion {
                    byte_offset: span.start(),
                    byte_length: span.len(),
                },
                inserted_content: InsertedContent { text },
            }],
        }],
    })
}
