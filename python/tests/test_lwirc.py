"""Tests of the lwirc Python package, run from the repository (`.ci/run`)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

import lwirc
from lwirc import _lwirc

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "issue-triage"
CASES = ROOT / "crates" / "lwir-corpus" / "cases"
EXAMPLE_VERSION = "sha256:5c281a30701ece8463ea55bda73114d347b874931ef2b7cfd530b2c4cb6f9510"
LWIRC = shutil.which("lwirc", path=os.path.dirname(sys.executable)) or "lwirc"


def cli(*args, cwd=None):
    return subprocess.run(
        [LWIRC, *args], cwd=cwd, capture_output=True, text=True, check=False
    )


# validate and Report


def test_validate_example_version():
    report = lwirc.validate(
        (EXAMPLE / "draft.json").read_text(), (EXAMPLE / "workflow.json").read_text()
    )
    assert report.version == EXAMPLE_VERSION
    assert report.ok and report.errors == 0


@pytest.mark.parametrize("kind", ["str", "bytes", "path", "dict"])
def test_validate_inputs(kind):
    draft = EXAMPLE / "draft-with-mistakes.json"
    definition = EXAMPLE / "workflow.json"
    convert = {
        "str": lambda p: p.read_text(),
        "bytes": lambda p: p.read_bytes(),
        "path": lambda p: p,
        "dict": lambda p: json.loads(p.read_text()),
    }[kind]
    report = lwirc.validate(convert(draft), convert(definition))
    assert report.errors == 10 and report.version is None
    first = report.findings[0]
    assert first.code == "LW301" and first.severity == "error" and first.is_error
    assert first.pointer == "/steps/0/tool"
    assert first.help and "github.list_issues" in first.help
    assert first.fix is not None and first.fix.applicability == "machine-applicable"
    assert first.fix.patch == [
        {"op": "replace", "path": "/steps/0/tool", "value": "github.list_issues"}
    ]
    if kind == "dict":
        assert first.span is None
    else:
        assert first.span is not None and first.span.line == 5


def test_validate_definition_alone_and_without_definition():
    assert lwirc.validate(None, EXAMPLE / "workflow.json").ok
    report = lwirc.validate(EXAMPLE / "draft.json")
    assert any(f.code == "LW901" for f in report.findings)


def test_validate_rejects_other_types():
    with pytest.raises(TypeError):
        lwirc.validate(42)


def corpus_cases():
    for path in sorted(CASES.glob("LW*/*.json")):
        if path.name == "workflow.json" or path.name.endswith(".workflow.json"):
            continue
        for definition in (
            path.with_name(path.stem + ".workflow.json"),
            path.with_name("workflow.json"),
            CASES / "workflow.json",
        ):
            if definition.exists():
                break
        if definition.read_text().strip() == "null":
            definition = None
        yield pytest.param(path, definition, id=str(path.relative_to(CASES)))


@pytest.mark.parametrize("draft,definition", list(corpus_cases()))
def test_to_json_equals_the_cli(draft, definition, capfd, monkeypatch):
    # Reports name files as given: relative to cases/, as the corpus's snapshots do.
    monkeypatch.chdir(CASES)
    draft = pathlib.Path(os.path.relpath(draft, CASES))
    args = [str(draft)]
    if definition is not None:
        definition = pathlib.Path(os.path.relpath(definition, CASES))
        args += ["-d", str(definition)]
    # The command in this process (the console script's code): its standard output is
    # file descriptor 1, which capfd reads. test_command_on_path runs the script itself.
    capfd.readouterr()
    status = _lwirc.main(["lwirc", "validate", *args, "--format", "json"])
    out, err = capfd.readouterr()
    assert status in (0, 1), err
    report = lwirc.validate(draft, definition)
    assert report.to_json() + "\n" == out
    assert report.ok == (status == 0)
    parsed = json.loads(out)
    assert [f.code for f in report.findings] == [f["code"] for f in parsed["findings"]]
    assert report.version == parsed.get("version")


# the command


def test_command_on_path():
    out = cli("--version")
    assert out.returncode == 0 and out.stdout.startswith("lwirc ")
    out = cli(
        "validate",
        str(EXAMPLE / "draft-with-mistakes.json"),
        "-d",
        str(EXAMPLE / "workflow.json"),
    )
    assert out.returncode == 1
    assert cli("no-such-command").returncode == 2


def test_goal_run_on_the_runtime_from_the_command(tmp_path):
    """`goal run --bindings` starts `lwirc runner` per attempt: this command, not Python."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    assert cli("register", "examples/issue-triage/draft.json", "-d",
               "examples/issue-triage/workflow.json", cwd=tmp_path).returncode == 0
    assert cli("goal", "create", "examples/issue-triage/goal.json", cwd=tmp_path).returncode == 0
    out = cli("goal", "run", "triage-runtime", "--bindings",
              "examples/issue-triage/bindings-mcp.json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "attempt 1 succeeded (run " in out.stderr
    shown = json.loads(cli("goal", "show", "triage-runtime", "--format", "json",
                           cwd=tmp_path).stdout)
    assert shown["status"] == "succeeded" and len(shown["work"][0]["runs"]) == 1


# canonicalize, version_of, explain


def test_canonicalize_and_version_of():
    assert lwirc.canonicalize('{"b": 1, "a": [1.0, "\\u00e9"]}') == '{"a":[1,"é"],"b":1}'.encode()
    assert lwirc.canonicalize({"b": 1, "a": 2}) == b'{"a":2,"b":1}'
    draft = EXAMPLE / "draft.json"
    assert lwirc.version_of(draft) == EXAMPLE_VERSION
    assert lwirc.version_of(json.loads(draft.read_text())) == EXAMPLE_VERSION
    assert cli("canon", str(draft)).stdout.encode() == lwirc.canonicalize(draft)


def test_canonicalize_refuses_duplicate_keys_with_findings():
    with pytest.raises(lwirc.LwircError) as error:
        lwirc.canonicalize('{"a": 1, "a": 2}')
    assert [f.code for f in error.value.findings] == ["LW002"]
    with pytest.raises(lwirc.LwircError):
        lwirc.version_of(b"{")


def test_explain():
    assert lwirc.explain("LW301").startswith("# LW301: unknown-tool")
    assert "LW301" in lwirc.explain()
    with pytest.raises(lwirc.LwircError):
        lwirc.explain("LW999")


# fix


def test_fix():
    draft = EXAMPLE / "draft-with-mistakes.json"
    before = lwirc.validate(draft, EXAMPLE / "workflow.json")
    fixed, report = lwirc.fix(draft, EXAMPLE / "workflow.json")
    assert report.errors < before.errors
    assert "github.list_issues" in fixed
    assert lwirc.validate(fixed, EXAMPLE / "workflow.json").errors == report.errors


# Registry


def test_registry(tmp_path):
    registry = lwirc.Registry(tmp_path / "registry")
    registered = registry.register(EXAMPLE / "draft.json", EXAMPLE / "workflow.json")
    assert registered["status"] == "new" and registered["version"] == EXAMPLE_VERSION
    again = registry.register(EXAMPLE / "draft.json", EXAMPLE / "workflow.json")
    assert again["status"] == "already"
    shown = registry.show(EXAMPLE_VERSION[len("sha256:") : len("sha256:") + 12])
    assert shown["version"] == EXAMPLE_VERSION
    assert shown["record"]["workflow"] == "issue-triage"
    assert lwirc.version_of(shown["lwir"]) == EXAMPLE_VERSION
    assert [e["version"] for e in registry.list()] == [EXAMPLE_VERSION]
    verified = registry.verify()
    assert verified["ok"] and verified["versions"] == 1
    assert registry.drift(EXAMPLE_VERSION, EXAMPLE / "workflow.json").version == EXAMPLE_VERSION
    definition = json.loads((EXAMPLE / "workflow.json").read_text())
    del definition["tools"]["github.list_issues"]
    drifted = registry.drift(EXAMPLE_VERSION, definition)
    assert drifted.version is None and drifted.errors > 0
    out = cli(
        "drift",
        EXAMPLE_VERSION,
        "--definition",
        str(EXAMPLE / "workflow.json"),
        "--registry",
        str(tmp_path / "registry"),
        "--format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    same = registry.drift(EXAMPLE_VERSION, EXAMPLE / "workflow.json")
    assert same.to_json() + "\n" == out.stdout


def test_registry_refuses_a_draft_with_errors(tmp_path):
    registry = lwirc.Registry(tmp_path / "registry")
    with pytest.raises(lwirc.LwircError) as error:
        registry.register(EXAMPLE / "draft-with-mistakes.json", EXAMPLE / "workflow.json")
    assert len([f for f in error.value.findings if f.is_error]) == 10
    with pytest.raises(lwirc.LwircError):
        registry.show("sha256:" + "0" * 64)


# compile


def scripted(request):
    """The example's recorded answers, by call number."""
    call = request["call"]
    path = EXAMPLE / "planner" / f"call-{call}.json"
    if not path.exists():
        return {"kind": "attention", "rationale": "no recorded answer"}
    return json.loads(path.read_text())


def test_compile_registers_the_example(tmp_path):
    result = lwirc.compile(
        EXAMPLE / "workflow.json",
        EXAMPLE / "input.json",
        scripted,
        registry=tmp_path / "registry",
        session_dir=tmp_path / "session",
    )
    assert result.end == "registered" and result.ok, result
    assert result.version == EXAMPLE_VERSION
    assert (tmp_path / "session" / "draft.json").exists()
    out = cli("registry", "list", "--registry", str(tmp_path / "registry"))
    assert EXAMPLE_VERSION in out.stdout + out.stderr


def failing_compile(tmp_path, planner, **bounds):
    return lwirc.compile(
        EXAMPLE / "workflow.json",
        EXAMPLE / "input.json",
        planner,
        registry=tmp_path / "registry",
        session_dir=tmp_path / "session",
        max_planner_calls=2,
        **bounds,
    )


def session_log(tmp_path):
    return "".join(p.read_text() for p in (tmp_path / "session").glob("*.jsonl"))


def test_compile_planner_that_raises(tmp_path):
    def planner(request):
        raise RuntimeError("the model server is down")

    result = failing_compile(tmp_path, planner)
    assert result.end == "not_converged" and result.version is None
    log = session_log(tmp_path)
    assert "LW802" in log and "the model server is down" in log


@pytest.mark.parametrize(
    "garbage,code",
    [
        ("this is not JSON", "LW805"),
        ({"kind": "poem", "text": "roses"}, "LW806"),
        ([1, 2, 3], "LW806"),
        (object(), "LW802"),
        (None, "LW806"),
    ],
)
def test_compile_planner_that_returns_garbage(tmp_path, garbage, code):
    result = failing_compile(tmp_path, lambda request: garbage)
    assert result.end == "not_converged"
    log = session_log(tmp_path)
    assert code in log


def test_compile_planner_past_the_timeout(tmp_path):
    def slow(request):
        time.sleep(0.3)
        return scripted(request)

    result = failing_compile(tmp_path, slow, timeout=0.1)
    assert result.end == "not_converged"
    log = session_log(tmp_path)
    assert "LW803" in log


def test_compile_definition_with_errors(tmp_path):
    with pytest.raises(lwirc.LwircError) as error:
        lwirc.compile({"not": "a definition"}, None, scripted, registry=tmp_path / "r")
    assert error.value.findings
