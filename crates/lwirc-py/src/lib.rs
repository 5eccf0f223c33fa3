//! `lwirc._lwirc`, the extension module of the Python package (python/): the `lwirc` command
//! run in-process, and the library's functions on bytes and JSON text. The Python layer
//! (`python/lwirc/__init__.py`) turns paths, `str` and `dict` into bytes, and the JSON reports
//! returned here into `Report` objects; this module does no Python-side parsing of its own.
//!
//! Every function lets go of the GIL while the library works (`Python::detach`), and takes it
//! again only to call back into Python (a compile's planner).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lwir_registry::{AnyStorage, Registry};
use lwir_render::{File, Report};
use lwir_repair::harness::{FailureKind, Planner, PlannerFailure, Printed, Response};
use lwir_repair::process::Limits;
use lwir_repair::protocol::Request;
use lwir_session::{Compiled, End, SessionError, Settings};
use lwir_spec::Code;
use lwir_validators::pipeline::{self, Definition, Source};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::json;

create_exception!(
    _lwirc,
    Error,
    PyException,
    "An lwirc error: args are (message, JSON report of the findings, or None)."
);

/// A named document from Python: (name findings are reported against, bytes).
type Named = (String, Vec<u8>);

fn source((name, bytes): Named) -> Source {
    Source { name, bytes }
}

/// Runs the `lwirc` command line on `argv` (the program's name first) in this process and
/// returns its exit status.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| lwirc::main_with(argv))
}

/// Validates `draft` against `definition` (or `definition` alone when `draft` is None):
/// the JSON report, as `lwirc validate --format json` prints it (without its newline).
#[pyfunction]
#[pyo3(signature = (draft, definition=None))]
fn validate(py: Python<'_>, draft: Option<Named>, definition: Option<Named>) -> PyResult<String> {
    py.detach(|| {
        let validation = match (draft, definition) {
            (Some(draft), definition) => pipeline::validate(source(draft), definition.map(source)),
            (None, Some(definition)) => pipeline::validate_definition(source(definition)),
            (None, None) => return Err(Error::new_err(("give a draft or a definition", ()))),
        };
        Ok(lwir_render::json::render(&validation))
    })
}

/// The findings of reading `bytes` as strict I-JSON, as a JSON report (`None` when clean).
fn reader_report(name: &str, bytes: &[u8]) -> Option<String> {
    let (document, findings) = lwir_spec::document::read_document(bytes.to_vec());
    if findings.is_empty() {
        return None;
    }
    let kept;
    let (bytes, document) = match &document {
        Ok(document) => (bytes, Some(document)),
        Err(rest) => {
            kept = rest;
            (kept.as_slice(), None)
        }
    };
    let file = File {
        name,
        bytes,
        document,
    };
    Some(lwir_render::json::render(Report::of_file(&findings, file)))
}

fn not_ijson(name: &str, bytes: &[u8]) -> PyErr {
    Error::new_err((
        format!("`{name}` is not strict I-JSON"),
        reader_report(name, bytes),
    ))
}

/// The RFC 8785 canonical bytes of the JSON text `bytes` (`lwirc canon`).
#[pyfunction]
fn canonicalize<'py>(py: Python<'py>, value: Named) -> PyResult<Bound<'py, PyBytes>> {
    let (name, bytes) = value;
    let canonical = py
        .detach(|| lwir_spec::canon::canonicalize(&bytes))
        .ok_or_else(|| not_ijson(&name, &bytes))?;
    Ok(PyBytes::new(py, &canonical))
}

/// `sha256:` and the hex SHA-256 of the canonical bytes of `bytes` (`lwirc hash`): the
/// WorkflowVersion of a document.
#[pyfunction]
fn version_of(py: Python<'_>, value: Named) -> PyResult<String> {
    let (name, bytes) = value;
    py.detach(|| lwir_spec::canon::canonicalize(&bytes))
        .map(|canonical| lwir_spec::canon::sha256_of(&canonical))
        .ok_or_else(|| not_ijson(&name, &bytes))
}

/// What a finding code means (`lwirc explain CODE`); `None` lists every stable code.
#[pyfunction]
#[pyo3(signature = (code=None))]
fn explain(code: Option<&str>) -> PyResult<String> {
    let Some(text) = code else {
        return Ok(Code::index());
    };
    let Some(code) = Code::parse(text.trim()) else {
        return Err(Error::new_err((
            format!("unknown code `{text}`; `lwirc.explain()` lists them all"),
            (),
        )));
    };
    Ok(code.explanation())
}

/// Applies the fixes the draft's findings offer (`lwirc fix`): the fixed draft's bytes and
/// the JSON report of validating them.
#[pyfunction]
#[pyo3(signature = (draft, definition=None, unsafe_fixes=false))]
fn fix(
    py: Python<'_>,
    draft: Named,
    definition: Option<Named>,
    unsafe_fixes: bool,
) -> (Vec<u8>, String) {
    py.detach(|| {
        let (name, original) = draft;
        let definition = definition.map(|d| Arc::new(Definition::read(source(d))));
        let mut check = lwir_session::DraftCheck::new(definition, name);
        let outcome = lwir_repair::fixes::fix_draft(&mut check, original, unsafe_fixes);
        let validation = check.validation(&outcome.draft);
        (outcome.draft, lwir_render::json::render(&validation))
    })
}

/// A Python callable as the session's planner: called (with the GIL taken again) with the
/// request's JSON text, it returns the answer's JSON text (`python/lwirc/__init__.py` wraps
/// the user's function, which takes and returns a `dict`). Whatever it raises is a failed
/// call (LW802), recorded like a planner process that exits non-zero; an answer given after
/// the timeout is refused (LW803: a Python function cannot be interrupted), one larger than
/// the output limit too (LW804); then it is read as a process's standard output is.
struct PyPlanner {
    callable: Py<PyAny>,
    limits: Limits,
}

impl Planner for PyPlanner {
    fn call(&mut self, _request: &Request, bytes: &[u8]) -> Result<Response, PlannerFailure> {
        let started = Instant::now();
        let request = String::from_utf8_lossy(bytes);
        let answer = Python::attach(|py| {
            self.callable
                .call1(py, (request.as_ref(),))
                .and_then(|answer| answer.extract::<String>(py))
                .map_err(|e| {
                    let traceback = e
                        .traceback(py)
                        .and_then(|t| t.format().ok())
                        .unwrap_or_default();
                    (e.to_string(), traceback)
                })
        });
        let elapsed = started.elapsed();
        let failure = |kind, message: String, stderr_tail: String| PlannerFailure {
            kind,
            message,
            stderr_tail,
            elapsed,
        };
        let stdout = match answer {
            Ok(stdout) => stdout,
            Err((message, traceback)) => {
                let tail = tail(&format!("{traceback}{message}"), 4096);
                return Err(failure(
                    FailureKind::Failed,
                    format!("the planner raised {message}"),
                    tail,
                )
                .redacted());
            }
        };
        if elapsed > self.limits.timeout {
            return Err(failure(
                FailureKind::TimedOut,
                format!(
                    "the planner answered after {:.1} s; the limit is {:.1} s",
                    elapsed.as_secs_f64(),
                    self.limits.timeout.as_secs_f64()
                ),
                String::new(),
            ));
        }
        if stdout.len() > self.limits.max_output {
            return Err(failure(
                FailureKind::TooLarge,
                format!(
                    "the planner's answer is {} bytes; the limit is {}",
                    stdout.len(),
                    self.limits.max_output
                ),
                String::new(),
            ));
        }
        Printed {
            stdout,
            stderr_tail: String::new(),
            elapsed,
        }
        .answer()
    }
}

/// The last `max` bytes of `text` (at a character boundary).
fn tail(text: &str, max: usize) -> String {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

/// The JSON value of a document from Python, or the error carrying its reader's findings.
fn json_value((name, bytes): Named) -> PyResult<serde_json::Value> {
    let (document, findings) = lwir_spec::document::read_document(bytes.clone());
    match document {
        Ok(document) if findings.is_empty() => Ok(document.root().to_json()),
        _ => Err(not_ijson(&name, &bytes)),
    }
}

/// Runs a compile session (`lwirc compile`): the definition, the input, the planner
/// callable; registered in `registry`, logged in `session`. Returns the result as JSON text:
/// `end` (`registered`, `not_converged`, `refused`), `version`, `why`, `session`, `report`,
/// `reason`, `findings` (the last draft's), `draft` (its text).
#[pyfunction]
#[pyo3(signature = (definition, input, planner, planner_name, registry, session, resume, max_repair_attempts, max_planner_calls, timeout, max_output))]
#[allow(clippy::too_many_arguments)]
fn compile(
    py: Python<'_>,
    definition: Named,
    input: Option<Named>,
    planner: Py<PyAny>,
    planner_name: String,
    registry: String,
    session: Option<PathBuf>,
    resume: bool,
    max_repair_attempts: Option<u32>,
    max_planner_calls: Option<u32>,
    timeout: f64,
    max_output: usize,
) -> PyResult<String> {
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(Error::new_err((
            "timeout must be a positive number of seconds",
            (),
        )));
    }
    let limits = Limits {
        timeout: Duration::from_secs_f64(timeout),
        max_output,
    };
    let input = input.map(json_value).transpose()?;
    py.detach(|| {
        let name = definition.0.clone();
        let prepared = lwir_session::Prepared::new(source(definition)).map_err(|errors| {
            Error::new_err((
                format!("the definition `{name}` has errors; fix them before asking a planner"),
                lwir_render::json::render(&*errors),
            ))
        })?;
        let storage =
            AnyStorage::parse(&registry).map_err(|e| Error::new_err((e.to_string(), ())))?;
        let registry = Registry::new(storage);
        let settings = Settings {
            dir: session
                .unwrap_or_else(|| lwir_session::new_session_dir(Path::new(".lwir/sessions"))),
            resume,
            input,
            max_repair_attempts,
            max_planner_calls,
            planner: planner_name,
            limits,
        };
        let mut planner = PyPlanner {
            callable: planner,
            limits,
        };
        let compiled =
            lwir_session::compile(&prepared, &settings, &mut planner, &registry, &mut ()).map_err(
                |e| match e {
                    SessionError::Drift(drift) => {
                        let differences: Vec<String> =
                            drift.differences.iter().map(ToString::to_string).collect();
                        Error::new_err((
                            format!(
                                "CapabilityDriftError: {drift}; the session was not resumed ({})",
                                differences.join("; ")
                            ),
                            (),
                        ))
                    }
                    other => Error::new_err((other.to_string(), ())),
                },
            )?;
        let Compiled {
            dir,
            outcome,
            end,
            check: _,
        } = compiled;
        let (end, version, why) = match end {
            End::Registered(entry) => ("registered", Some(entry.version.to_string()), None),
            End::NotConverged => ("not_converged", None, None),
            End::Refused(why) => ("refused", None, Some(why)),
        };
        let findings = outcome
            .checked
            .as_ref()
            .map_or(json!([]), |c| c.findings_json.clone());
        let out = json!({
            "end": end,
            "version": version,
            "why": why,
            "session": dir.display().to_string(),
            "report": outcome.report,
            "reason": outcome.report.reason(),
            "findings": findings,
            "draft": outcome.draft.as_deref().map(String::from_utf8_lossy),
        });
        Ok(out.to_string())
    })
}

fn registry_error(e: impl std::fmt::Display) -> PyErr {
    Error::new_err((e.to_string(), ()))
}

fn entry_json(entry: &lwir_registry::Entry) -> serde_json::Value {
    json!({
        "version": entry.version.to_string(),
        "registration": entry.registration,
        "record": entry.record,
    })
}

/// A registry (a directory or `oci://`), as `lwirc register`, `registry` and `drift` use it.
/// Methods return JSON text; the Python class `lwirc.Registry` parses it.
#[pyclass(name = "Registry", module = "lwirc._lwirc", frozen)]
struct PyRegistry {
    registry: Registry<AnyStorage>,
    location: String,
}

impl PyRegistry {
    /// The version `version` names (a digest or a unique prefix of its hex) and its entry.
    fn entry(&self, version: &str) -> PyResult<(lwir_registry::Digest, lwir_registry::Entry)> {
        let digest = self.registry.resolve(version).map_err(registry_error)?;
        let entry = self
            .registry
            .entry(&digest)
            .map_err(registry_error)?
            .ok_or_else(|| registry_error(format!("no version `{version}` in the registry")))?;
        Ok((digest, entry))
    }
}

#[pymethods]
impl PyRegistry {
    #[new]
    fn new(location: String) -> PyResult<Self> {
        let storage = AnyStorage::parse(&location).map_err(registry_error)?;
        Ok(Self {
            registry: Registry::new(storage),
            location,
        })
    }

    /// Where it is, as given.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Registers a clean draft (`lwirc register`): `{"status": "new" | "already" |
    /// "rebased", "version", "registration", "record"}`.
    #[pyo3(signature = (draft, definition, rebase=false))]
    fn register(
        &self,
        py: Python<'_>,
        draft: Named,
        definition: Named,
        rebase: bool,
    ) -> PyResult<String> {
        py.detach(|| {
            let validation = pipeline::compile(source(draft), Some(source(definition)));
            let registration =
                lwir_registry::Registration::new(&validation, std::time::SystemTime::now())
                    .map_err(|why| {
                        Error::new_err((
                            format!("not registered: {why}"),
                            lwir_render::json::render(&validation),
                        ))
                    })?;
            let registered = self
                .registry
                .register(&registration, rebase)
                .map_err(registry_error)?;
            let (status, entry) = match &registered {
                lwir_registry::Registered::New(entry) => ("new", entry),
                lwir_registry::Registered::Already(entry) => ("already", entry),
                lwir_registry::Registered::Rebased { entry, .. } => ("rebased", entry),
            };
            let mut out = entry_json(entry);
            out["status"] = json!(status);
            Ok(out.to_string())
        })
    }

    /// A version (or a unique prefix of its hex): `{"version", "registration", "record",
    /// "lwir"}` (`lwir`: the registered document's text).
    fn show(&self, py: Python<'_>, version: String) -> PyResult<String> {
        py.detach(|| {
            let (digest, entry) = self.entry(&version)?;
            let lwir = self.registry.lwir(&digest).map_err(registry_error)?;
            let mut out = entry_json(&entry);
            out["lwir"] = json!(String::from_utf8_lossy(&lwir));
            Ok(out.to_string())
        })
    }

    /// Every version: `{"entries": [...], "problems": [message, ...]}`.
    fn list(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| {
            let (entries, problems) = self.registry.list().map_err(registry_error)?;
            let entries: Vec<_> = entries.iter().map(entry_json).collect();
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            Ok(json!({ "entries": entries, "problems": problems }).to_string())
        })
    }

    /// Hashes every object again (`lwirc registry verify`): `{"versions", "objects",
    /// "issues": [{"kind", "problem", "location", "detail"}], "ok"}`.
    fn verify(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| {
            let verification = self.registry.verify().map_err(registry_error)?;
            let issues: Vec<_> = verification
                .issues
                .iter()
                .map(|i| {
                    json!({
                        "kind": i.kind.as_str(),
                        "problem": i.kind.is_problem(),
                        "location": i.location,
                        "detail": i.detail,
                    })
                })
                .collect();
            Ok(json!({
                "versions": verification.versions,
                "objects": verification.objects,
                "issues": issues,
                "ok": !verification.has_problems(),
            })
            .to_string())
        })
    }

    /// The drift of a registered version against today's definition (`lwirc drift`): the
    /// JSON report, whose `version` is present when nothing it depends on changed.
    fn drift(&self, py: Python<'_>, version: String, definition: Named) -> PyResult<String> {
        py.detach(|| {
            let (digest, entry) = self.entry(&version)?;
            let (name, bytes) = definition;
            let (read, reader_findings) = lwir_spec::document::read_document(bytes.clone());
            let document = match read {
                Ok(document) if reader_findings.is_empty() => document,
                _ => return Err(not_ijson(&name, &bytes)),
            };
            let pinned = entry.record.snapshot();
            let version = digest.to_string();
            let findings = lwir_registry::drift::findings(&pinned, &version, &document);
            let drifted = findings.iter().any(|f| f.is_error());
            let lwir = self.registry.lwir(&digest).map_err(registry_error)?;
            let report = Report {
                findings: &findings,
                draft: Some(File {
                    name: &version,
                    bytes: &lwir,
                    document: None,
                }),
                definition: Some(File {
                    name: &name,
                    bytes: document.source(),
                    document: Some(&document),
                }),
                version: (!drifted).then_some(version.as_str()),
            };
            Ok(lwir_render::json::render(report))
        })
    }
}

/// The module.
#[pymodule]
fn _lwirc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(canonicalize, m)?)?;
    m.add_function(wrap_pyfunction!(version_of, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(fix, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_class::<PyRegistry>()?;
    Ok(())
}
