"""lwirc from Python: the library's validation, fixes, canonical form and registry, in-process.

Documents (``draft``, ``definition``, ``value``) may be given as

- ``str``: JSON text (reported as ``<string>``);
- ``bytes``: JSON text (reported as ``<bytes>``);
- ``os.PathLike`` (``pathlib.Path``): a file, read and reported by its path, as the CLI does;
- ``dict`` (or ``list``): an already-parsed document, serialised with ``json.dumps``. Its
  findings then carry no ``span`` (there is no text of yours to point into), and a value that
  JSON cannot hold exactly (a float such as ``nan``) is refused by ``json.dumps``.

Errors are :class:`LwircError`, whose ``findings`` hold what the library found.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple, Union

from . import _lwirc

__all__ = [
    "Document",
    "Finding",
    "Fix",
    "LwircError",
    "Related",
    "Report",
    "Span",
    "canonicalize",
    "explain",
    "fix",
    "validate",
    "version_of",
]

__version__: str = _lwirc.__version__

Document = Union[str, bytes, "os.PathLike[str]", dict, list]


@dataclass(frozen=True)
class Span:
    """Where a finding is: byte offsets ``[start, end)`` and the 1-based line and column."""

    start: int
    end: int
    line: int
    column: int


@dataclass(frozen=True)
class Fix:
    """A fix a finding offers: how safe it is, and the RFC 6902 JSON Patch that applies it."""

    applicability: str
    patch: List[dict]


@dataclass(frozen=True)
class Related:
    """Another place a finding refers to."""

    pointer: str
    span: Optional[Span]
    message: str


@dataclass(frozen=True)
class Finding:
    """One finding: its code (``LW301``), severity, message, JSON Pointer, span, help, fix."""

    code: str
    severity: str
    message: str
    pointer: str
    span: Optional[Span]
    help: Optional[str] = None
    fix: Optional[Fix] = None
    related: List[Related] = field(default_factory=list)
    file: Optional[str] = None
    """The definition's name when the finding is in the definition, else ``None``."""

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


@dataclass(frozen=True)
class Report:
    """The findings of a validation, and the WorkflowVersion when the draft is clean."""

    file: str
    version: Optional[str]
    findings: List[Finding]
    errors: int
    warnings: int
    _json: str = field(repr=False, compare=False, default="")

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return self.errors == 0

    def to_json(self) -> str:
        """The JSON report, as ``lwirc validate --format json`` prints it (without the newline
        the command ends it with)."""
        return self._json

    def to_dict(self) -> dict:
        """The JSON report, parsed."""
        return json.loads(self._json)

    @classmethod
    def _from_json(cls, text: str, spans: bool = True) -> "Report":
        value = json.loads(text)
        summary = value.get("summary", {})
        findings = [_finding(f, spans) for f in value.get("findings", [])]
        return cls(
            file=value.get("file", ""),
            version=value.get("version"),
            findings=findings,
            errors=summary.get("errors", 0),
            warnings=summary.get("warnings", 0),
            _json=text,
        )


def _span(value: Optional[dict], spans: bool) -> Optional[Span]:
    if not spans or value is None:
        return None
    return Span(value["start"], value["end"], value["line"], value["column"])


def _finding(value: dict, spans: bool) -> Finding:
    fix = value.get("fix")
    return Finding(
        code=value["code"],
        severity=value["severity"],
        message=value["message"],
        pointer=value["pointer"],
        span=_span(value.get("span"), spans),
        help=value.get("help"),
        fix=Fix(fix["applicability"], fix["patch"]) if fix is not None else None,
        related=[
            Related(r["pointer"], _span(r.get("span"), spans), r["message"])
            for r in value.get("related", [])
        ],
        file=value.get("file"),
    )


class LwircError(Exception):
    """An error of lwirc: a message, and the findings behind it (possibly none)."""

    def __init__(self, message: str, report: Optional[Report] = None):
        super().__init__(message)
        self.message = message
        self.report = report

    @property
    def findings(self) -> List[Finding]:
        return self.report.findings if self.report is not None else []


def _error(e: "_lwirc.Error") -> LwircError:
    message, report = (list(e.args) + [None, None])[:2]
    return LwircError(str(message), Report._from_json(report) if report else None)


def _named(value: Document, what: str) -> Tuple[Tuple[str, bytes], bool]:
    """``value`` as (name, bytes) for the extension, and whether its spans mean anything."""
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        with open(path, "rb") as f:
            return (str(path), f.read()), True
    if isinstance(value, str):
        return ("<string>", value.encode("utf-8")), True
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("<bytes>", bytes(value)), True
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        return (f"<{what}>", text.encode("utf-8")), False
    raise TypeError(
        f"{what} must be str, bytes, os.PathLike or dict, not {type(value).__name__}"
    )


def validate(draft: Optional[Document], definition: Optional[Document] = None) -> Report:
    """Runs every validator on ``draft`` against ``definition`` (``lwirc validate``).

    Without ``definition``, the checks that need it are skipped (a warning says so); with
    ``draft=None``, the definition itself is validated. A draft with errors is not an
    exception: the report says so (``report.ok``, ``report.findings``)."""
    spans = True
    d = None
    w = None
    if draft is not None:
        d, spans = _named(draft, "draft")
    if definition is not None:
        w, definition_spans = _named(definition, "definition")
        spans = spans and definition_spans
    try:
        return Report._from_json(_lwirc.validate(d, w), spans)
    except _lwirc.Error as e:
        raise _error(e) from None


def fix(
    draft: Document, definition: Optional[Document] = None, *, unsafe_fixes: bool = False
) -> Tuple[str, Report]:
    """Applies the fixes the draft's findings offer (``lwirc fix``), as text edits: the fixed
    draft's text and the report of validating it. Only machine-applicable fixes unless
    ``unsafe_fixes``; a fix that adds errors is rolled back."""
    d, spans = _named(draft, "draft")
    w = None
    if definition is not None:
        w, definition_spans = _named(definition, "definition")
        spans = spans and definition_spans
    try:
        fixed, report = _lwirc.fix(d, w, unsafe_fixes)
    except _lwirc.Error as e:
        raise _error(e) from None
    return fixed.decode("utf-8"), Report._from_json(report, spans)


def canonicalize(value: Document) -> bytes:
    """The RFC 8785 (JCS) canonical bytes of a JSON document (``lwirc canon``). Raises
    :class:`LwircError` with the reader's findings when it is not strict I-JSON."""
    named, _ = _named(value, "value")
    try:
        return _lwirc.canonicalize(named)
    except _lwirc.Error as e:
        raise _error(e) from None


def version_of(value: Document) -> str:
    """``sha256:`` and the hex SHA-256 of the canonical bytes (``lwirc hash``): the content
    address of a document, the WorkflowVersion of a clean draft."""
    named, _ = _named(value, "value")
    try:
        return _lwirc.version_of(named)
    except _lwirc.Error as e:
        raise _error(e) from None


def explain(code: Optional[str] = None) -> str:
    """What a finding code means (``lwirc explain CODE``), as Markdown; without a code, the
    table of every stable code. Raises :class:`LwircError` for an unknown code."""
    try:
        return _lwirc.explain(code)
    except _lwirc.Error as e:
        raise _error(e) from None


def _json_any(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
