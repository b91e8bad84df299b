"""Every benchmark script imports (through assay's public API) and its command line builds:
``--help`` prints its usage and exits 0, before any judge is loaded. The benchmarks themselves run
the embedded model and are run by hand."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted(p.stem for p in (Path(__file__).parents[3] / "benchmarks").glob("*.py") if not p.stem.startswith("_"))


def test_every_benchmark_is_listed() -> None:
    assert len(SCRIPTS) >= 20 and "call_order" in SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_imports_and_its_help_builds(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    for private in ("JudgeClient(", "LlamaCppBackend(", "assay.engine.evaluate", "._expert(", "_majority"):
        assert private not in source, f"{name} uses {private}"
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        module.main()
    assert stop.value.code == 0 and "usage:" in out.getvalue()
