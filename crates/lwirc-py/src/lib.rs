//! `lwirc._lwirc`, the extension module of the Python package (python/): the `lwirc` command
//! run in-process, and the library's functions on bytes and JSON text. The Python layer
//! (`python/lwirc/__init__.py`) turns paths, `str` and `dict` into bytes, and the JSON reports
//! returned here into `Report` objects; this module does no Python-side parsing of its own.
//!
//! Every function lets go of the GIL while the library works (`Python::detach`), and takes it
//! again only to call back into Python (a compile's planner).

use std::ffi::OsString;
use std::sync::Arc;

use lwir_render::{File, Report};
use lwir_spec::Code;
use lwir_spec::codes::Status;
use lwir_validators::pipeline::{self, Definition, Source};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

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
        let mut out = String::new();
        for &code in Code::ALL.iter().filter(|c| c.status() == Status::Stable) {
            out.push_str(&format!(
                "{}  {:<30} {:<10} {:<7} {}\n",
                code,
                code.name(),
                code.validator().as_str(),
                code.severity().as_str(),
                code.summary()
            ));
        }
        return Ok(out);
    };
    let Some(code) = Code::parse(text.trim()) else {
        return Err(Error::new_err((
            format!("unknown code `{text}`; `lwirc.explain()` lists them all"),
            (),
        )));
    };
    Ok(format!(
        "# {code}: {}\n\nValidator: {} · default severity: {}\n\n{}",
        code.name(),
        code.validator().as_str(),
        code.severity().as_str(),
        code.docs()
    ))
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
    Ok(())
}
