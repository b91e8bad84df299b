"""Every example file the documentation shows is read by the installed command: the peers' formats
are evaluated for real (judge-free metrics), the rest are estimated with --dry-run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
EXAMPLES = Path(__file__).parents[3] / "src" / "assay" / "examples"
pytestmark = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")


def run(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")} | {"COLUMNS": "200"}
    return subprocess.run([str(ASSAY), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=env, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("name", "fields"), [("ragas.json", "'user_input' as query"),
                                              ("deepeval.json", "'actual_output' as response"),
                                              ("answers.csv", "'answer' as response")])
def test_the_peers_formats_are_evaluated(tmp_path: Path, name: str, fields: str) -> None:
    proc = run("eval", "rougeL", EXAMPLES / name, "--store", "r.db", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fields in proc.stderr  # the user is told how the file was read
    export = run("export", "r.db", "--format", "jsonl", "-o", "rows.jsonl", cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert rows and all(0.0 <= r["rougeL"] <= 1.0 for r in rows)
    db = __import__("sqlite3").connect(tmp_path / "r.db")
    manifest = json.loads(db.execute("SELECT manifest FROM runs").fetchone()[0])
    assert any(fields in note for note in manifest["input_notes"])


@pytest.mark.parametrize("args", [
    ("eval", "dece", "dece_examples.jsonl"), ("eval", "dece", "ragas.json"), ("eval", "claims", "deepeval.json"),
    ("pairwise", "pairs.jsonl"), ("tournament", "systems.jsonl"), ("eval", "lemaj", "contract.jsonl"),
    ("eval", "caseaware", "caseaware_examples.jsonl"),
    ("rubric", "audit", "rubric.yaml", "--pairs", "preferences.jsonl", "--axes", "structure,fit"),
    ("rubric", "discover", "preferences.jsonl", "-o", "found.yaml"),
])
def test_every_example_is_read(tmp_path: Path, args: tuple[str, ...]) -> None:
    for name in os.listdir(EXAMPLES):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    proc = run(*args, "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dry run" in proc.stdout
    assert not list(tmp_path.glob("*.db"))  # a dry run writes nothing


def test_the_checkouts_examples_folder_is_a_real_copy_of_the_packaged_one() -> None:
    """`examples/` is a folder (a symlink copied with `cp -r` dangled), and it holds exactly the
    files the package ships as ``assay/examples`` (`assay demo` and the docs use those)."""
    top = Path(__file__).parents[3] / "examples"
    assert top.is_dir() and not top.is_symlink()
    ours = {p.name: p.read_bytes() for p in top.iterdir() if p.is_file()}
    shipped = {p.name: p.read_bytes() for p in EXAMPLES.iterdir() if p.is_file() and p.suffix != ".pyc"}
    assert ours.keys() == shipped.keys()
    assert [name for name in ours if ours[name] != shipped[name]] == []
