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
from typing import Any, Callable, List, Optional, Tuple, Union

from . import _lwirc

__all__ = [
    "Document",
    "Finding",
    "Fix",
    "LwircError",
    "Registry",
    "Related",
    "Report",
    "Span",
    "Compiled",
    "canonicalize",
    "compile",
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


class Registry:
    """A registry of workflow versions: a directory, or ``oci://HOST[:PORT]/REPOSITORY``
    (``oci+http://`` for plain HTTP), as ``lwirc register``, ``lwirc registry`` and
    ``lwirc drift`` use it. Records are returned as ``dict`` (the stored record's JSON)."""

    def __init__(self, location: Union[str, "os.PathLike[str]"]):
        try:
            self._native = _lwirc.Registry(os.fspath(location))
        except _lwirc.Error as e:
            raise _error(e) from None

    @property
    def location(self) -> str:
        return self._native.location

    def __repr__(self) -> str:
        return f"lwirc.Registry({self.location!r})"

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return json.loads(getattr(self._native, method)(*args))
        except _lwirc.Error as e:
            raise _error(e) from None

    def register(self, draft: Document, definition: Document, *, rebase: bool = False) -> dict:
        """Registers a clean draft (``lwirc register``): ``{"status": "new" | "already" |
        "rebased", "version", "registration", "record"}``. A draft with errors raises
        :class:`LwircError` carrying its findings."""
        d, _ = _named(draft, "draft")
        w, _ = _named(definition, "definition")
        return self._call("register", d, w, rebase)

    def show(self, version: str) -> dict:
        """A version (or a unique prefix of its hex): ``{"version", "registration",
        "record", "lwir"}``, ``lwir`` being the registered document's text."""
        return self._call("show", version)

    def list(self) -> List[dict]:
        """Every version's latest registration: ``{"version", "registration", "record"}``.
        Raises :class:`LwircError` when a version cannot be read."""
        listed = self._call("list")
        if listed["problems"]:
            raise LwircError("; ".join(listed["problems"]))
        return listed["entries"]

    def verify(self) -> dict:
        """Hashes every object again (``lwirc registry verify``): ``{"ok", "versions",
        "objects", "issues": [{"kind", "problem", "location", "detail"}]}``."""
        return self._call("verify")

    def drift(self, version: str, definition: Document) -> Report:
        """What changed, of what ``version`` depends on, in today's ``definition`` (``lwirc
        drift``): a report whose ``version`` is set when nothing did."""
        w, spans = _named(definition, "definition")
        try:
            return Report._from_json(self._native.drift(version, w), spans)
        except _lwirc.Error as e:
            raise _error(e) from None


@dataclass(frozen=True)
class Compiled:
    """How a compile session ended."""

    end: str
    """``registered``, ``not_converged`` (the bounds were spent or the planner gave up) or
    ``refused`` (the registry refused the converged draft: ``why``)."""
    version: Optional[str]
    """The registered WorkflowVersion (``end == "registered"``)."""
    session: str
    """The session directory: its event log, ``draft.json`` or ``last-draft.json``."""
    report: dict
    """The attribution report, as ``lwirc compile --format json`` gives it."""
    reason: str
    findings: List[Finding]
    """The last draft's findings."""
    draft: Optional[str]
    """The last draft's text (``None`` when the planner never gave one)."""
    why: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.end == "registered"


def _planner_call(planner: Callable[[dict], Any]) -> Callable[[str], str]:
    """The user's planner (request ``dict`` in, answer ``dict`` out) as the extension calls
    it: JSON text in, JSON text out. An answer given as ``str`` or ``bytes`` is passed on
    as the planner's output unchanged; anything else goes through ``json.dumps`` (what it
    cannot serialise is a failed call)."""

    def call(request: str) -> str:
        answer = planner(json.loads(request))
        if isinstance(answer, str):
            return answer
        if isinstance(answer, (bytes, bytearray)):
            return bytes(answer).decode("utf-8", errors="replace")
        return json.dumps(answer, ensure_ascii=False, allow_nan=False)

    return call


def compile(
    definition: Document,
    input: Optional[Document],
    planner: Callable[[dict], Any],
    *,
    registry: Union[str, "os.PathLike[str]", None] = None,
    session_dir: Union[str, "os.PathLike[str]", None] = None,
    resume: bool = False,
    max_repair_attempts: Optional[int] = None,
    max_planner_calls: Optional[int] = None,
    timeout: float = 120.0,
    max_output: int = 1 << 20,
) -> Compiled:
    """Runs a compile session, as ``lwirc compile`` does, with a Python function as the
    planner: the definition → the planner's draft → validate → safe fixes and repair →
    register, every step recorded in the session's event log.

    ``planner`` is called with each ``lwir-planner/1`` request (a ``dict``) and returns the
    answer (a ``dict``: ``{"kind": "draft", "lwir": {...}}`` or ``{"kind": "attention",
    "rationale": "..."}``; ``delegate_to_default`` is for planner commands, not callables). Whatever it raises, or an answer that is not an answer, is a failed planner call
    (LW802, LW805, LW806), recorded and counted against the bounds, never an exception here.
    A Python function cannot be interrupted: an answer that comes after ``timeout`` seconds
    is refused (LW803), one larger than ``max_output`` bytes too (LW804).

    ``registry`` is a directory or ``oci://HOST[:PORT]/REPOSITORY`` (default: the
    ``LWIR_REGISTRY`` environment variable, else ``.lwir/registry``); ``session_dir`` the
    session's directory (default: a new one under ``.lwir/sessions``); with ``resume`` the
    session there goes on (failing with :class:`LwircError` when the definition's
    PlannerManifest changed since it started). ``max_repair_attempts`` and
    ``max_planner_calls`` override the definition's bounds.

    The GIL is released while the session works and taken again for each planner call.
    """
    d, _ = _named(definition, "definition")
    i = _named(input, "input")[0] if input is not None else None
    if registry is None:
        registry = os.environ.get("LWIR_REGISTRY") or ".lwir/registry"
    name = getattr(planner, "__qualname__", None) or type(planner).__name__
    module = getattr(planner, "__module__", None)
    planner_name = f"python:{module}.{name}" if module else f"python:{name}"
    try:
        out = _lwirc.compile(
            d,
            i,
            _planner_call(planner),
            planner_name,
            os.fspath(registry),
            os.fspath(session_dir) if session_dir is not None else None,
            resume,
            max_repair_attempts,
            max_planner_calls,
            float(timeout),
            int(max_output),
        )
    except _lwirc.Error as e:
        raise _error(e) from None
    value = json.loads(out)
    return Compiled(
        end=value["end"],
        version=value.get("version"),
        session=value["session"],
        report=value["report"],
        reason=value["reason"],
        findings=[_finding(f, True) for f in value.get("findings") or []],
        draft=value.get("draft"),
        why=value.get("why"),
    )
