"""A Pydantic model of the JSON report (the wire contract of `lwirc validate --format json`,
crates/lwir-render/src/json.rs) parses `Report.to_json()` of every corpus case, strictly:
a member the model does not know, or one missing, fails."""

import pytest

pydantic = pytest.importorskip("pydantic")

from typing import List, Literal, Optional  # noqa: E402

from pydantic import BaseModel, ConfigDict  # noqa: E402

import lwirc  # noqa: E402

from test_lwirc import corpus_cases  # noqa: E402


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Span(Strict):
    start: int
    end: int
    line: int
    column: int


class Related(Strict):
    pointer: str
    span: Span
    message: str


class Fix(Strict):
    applicability: Literal["machine-applicable", "maybe-incorrect"]
    patch: List[dict]


class Finding(Strict):
    code: str
    severity: Literal["error", "warning"]
    message: str
    file: Optional[str] = None
    pointer: str
    span: Span
    help: Optional[str] = None
    related: List[Related]
    fix: Optional[Fix] = None


class Summary(Strict):
    errors: int
    warnings: int


class ReportModel(Strict):
    file: str
    version: Optional[str] = None
    findings: List[Finding]
    summary: Summary


@pytest.mark.parametrize("draft,definition", list(corpus_cases()))
def test_the_model_parses_every_report(draft, definition):
    report = lwirc.validate(draft, definition)
    parsed = ReportModel.model_validate_json(report.to_json())
    assert [f.code for f in parsed.findings] == [f.code for f in report.findings]
    assert parsed.summary.errors == report.errors
    assert (parsed.version is None) == (report.errors > 0)
