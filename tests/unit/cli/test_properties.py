"""Generated input thrown at the boundaries (hypothesis): every numeric option of every command
answers one line (exit 2) or is accepted, never a traceback; the annotation API answers a 2xx or
a 4xx, never a 500, and what it stored can always be read back."""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

import assay
from assay.cli import app as cli_app
from assay.cli import main
from assay.cli._click import is_group, is_option
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.view.ui import create_app

TOKEN = "t0ken-for-properties"


def numeric_options() -> list[tuple[tuple[str, ...], str, str]]:
    """(command path, flag, kind) of every int or float option of every command that takes a
    required argument (so an accepted value still stops at the missing argument, doing nothing)."""
    found: list[tuple[tuple[str, ...], str, str]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if is_group(command):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
            return
        if not any(p.param_type_name == "argument" for p in command.params):
            return
        for param in command.params:
            if not is_option(param) or param.multiple:
                continue
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            text = str(annotation)
            kind = "float" if "float" in text else "int" if "int" in text and "Path" not in text else None
            long_flags = [o for o in param.opts if o.startswith("--")]
            if kind and long_flags:
                found.append((path, long_flags[0], kind))

    walk(typer.main.get_command(cli_app), ())
    return found


OPTIONS = numeric_options()


def invoke(args: list[str]) -> tuple[int, str]:
    """Run the CLI entry point in process, as the console script does."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["assay", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    return code, out.getvalue() + err.getvalue()


def test_every_command_with_numbers_is_covered() -> None:
    paths = {" ".join(p) for p, _, _ in OPTIONS}
    assert {"eval dece", "rubric audit", "rubric discover", "triage", "tournament", "meta"} <= paths


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-0", "", " ", "0x10", "1_000", "½"]),
    st.text(max_size=12),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(choice=st.sampled_from(OPTIONS), value=NUMBERS)
def test_a_numeric_option_answers_one_line_never_a_traceback(choice: tuple[tuple[str, ...], str, str],
                                                             value: str) -> None:
    path, flag, _kind = choice
    code, output = invoke([*path, f"{flag}={value}"])
    assert "Traceback" not in output, output
    assert code == 2, (path, flag, value, output)  # a bad value, or the missing argument after a good one
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    try:
        number = float(value)
    except ValueError:
        return
    if not math.isfinite(number):
        assert flag in errors[0], errors[0]  # NaN and infinities are refused at the option itself


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestClient, str]:
    folder = tmp_path_factory.mktemp("ui")
    grade = json.dumps({"reasoning": "r", "issues": [], "score": 3, "justification": "ok"})
    run = assay.evaluate([{"id": "a", "query": "Q?", "response": "R.", "reference": "R."}], "pointwise",
                         ScriptedBackend(rules=[{"match": ".", "responses": [grade], "repeat": True}]),
                         runner=RunnerConfig(progress=False), store=folder / "s.db")
    http = TestClient(create_app(folder / "s.db", TOKEN, allowed_hosts=("testserver",)))
    http.cookies.set("assay_token", TOKEN)
    return http, run.run_id


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**20, max_value=10**20) | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)
PATHS = st.one_of(st.sampled_from(["pointwise", "human.grade_correctness", "human.grade_relevance", "human.comment",
                                   "human.missing[0]", "human.split[0]", "human.merge[1]", "issues", "issues[0]",
                                   "human.", "human.x.y", "../etc", "pointwise[0]", "reasoning"]),
                  st.text(max_size=20))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=PATHS, value=JSON_VALUES, extra=st.dictionaries(st.sampled_from(["reason", "author", "x"]),
                                                            JSON_VALUES, max_size=2))
def test_the_annotation_api_answers_4xx_never_500(client: tuple[TestClient, str], path: str, value: Any,
                                                  extra: dict[str, Any]) -> None:
    http, run_id = client
    body = json.dumps({"path": path, "value": value, **extra})  # floats may be NaN/Infinity: not JSON
    response = http.post(f"/api/run/{run_id}/item/0/annotations", content=body,
                         headers={"content-type": "application/json", "x-assay-token": TOKEN})
    assert response.status_code in (201, 400, 404, 413), (response.status_code, response.text)
    listing = http.get(f"/api/run/{run_id}/annotations")
    assert listing.status_code == 200
    stored = json.loads(listing.text)  # strict: no NaN can come back
    for annotation in stored:
        assert json.dumps(annotation["value"], allow_nan=False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200))
def test_raw_bodies_are_4xx_never_500(client: tuple[TestClient, str], raw: bytes) -> None:
    http, run_id = client
    response = http.post(f"/api/run/{run_id}/item/0/annotations", content=raw,
                         headers={"content-type": "application/json", "x-assay-token": TOKEN})
    assert response.status_code in (201, 400, 404, 413), (response.status_code, response.text)


def test_deep_and_large_bodies_are_refused(client: tuple[TestClient, str]) -> None:
    http, run_id = client
    headers = {"content-type": "application/json", "x-assay-token": TOKEN}
    deep = b'{"path": "human.comment", "value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert http.post(f"/api/run/{run_id}/item/0/annotations", content=deep, headers=headers).status_code in (400, 413)
    big = json.dumps({"path": "human.comment", "value": "x" * (80 * 1024)})
    assert http.post(f"/api/run/{run_id}/item/0/annotations", content=big, headers=headers).status_code == 400


def test_files_with_generated_lines_are_one_line_errors(tmp_path: Path) -> None:
    """Readers of items, pairs and exported rows on lines of odd JSON: one error line or accepted."""
    lines = ['{"id": 1}', '[]', '"text"', "NaN", '{"id": "a", "query": NaN}', '{"id": "a", "query": "q", '
             '"response": "r", "contexts": [1, 2]}', "{" * 5000 + "}" * 5000, '{"a": {"response": 3}, "b": 4}']
    for n, line in enumerate(lines):
        (tmp_path / f"f{n}.jsonl").write_text(line + "\n")
        for args in (["eval", "rougeL", str(tmp_path / f"f{n}.jsonl"), "-o", str(tmp_path / "r.db")],
                     ["triage", str(tmp_path / f"f{n}.jsonl")],
                     ["rubric", "audit", str(tmp_path / "none.yaml"), "--pairs", str(tmp_path / f"f{n}.jsonl")]):
            code, output = invoke(args)
            assert "Traceback" not in output, (line[:40], args, output)
            assert code in (0, 2), (line[:40], args, output)
