"""Every command's help reads on an 80-column terminal: at most 100 lines, no line wider than 80,
no option name cut, every option described, no paper-section citations, no type placeholders."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from assay.cli import app
from assay.cli._click import is_group

ENV = {"COLUMNS": "80", "TERM": "dumb", "NO_COLOR": "1", "TERMINAL_WIDTH": "80"}
CITATIONS = re.compile(r"\((?:[A-Z]\.\d+(?:\.\d+)*)[,)]|\bTable[- ]\d|\bFig\. ?\d|\bApp\. ?[A-Z]\.?\d|§\s?\d|"
                       r"\bSPEC\b|/work/shared|\bAlgorithm \d|\beqs?\. \d")


def _commands() -> Iterator[tuple[list[str], Any]]:
    def walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        if is_group(command):
            for name, sub in command.commands.items():
                if not getattr(sub, "hidden", False):
                    yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


COMMANDS = list(_commands())


def _help(path: list[str], flag: str = "--help") -> str:
    result = CliRunner().invoke(app, [*path, flag], env=ENV, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "assay" for p, _ in COMMANDS])
def test_help_fits_80_columns_and_100_lines(path: list[str], command: Any) -> None:
    text = _help(path)
    lines = text.splitlines()
    assert len(lines) <= 100, f"{len(lines)} lines"
    wide = [line for line in lines if len(line) > 80]
    assert not wide, wide
    assert not re.search(r"-[\w-]*…", text), "an option name is cut"
    assert "<bool>" not in text and "<str>" not in text and "<int>" not in text
    assert not CITATIONS.search(text), CITATIONS.search(text)
    assert "module docstring" not in text and "issue " not in text
    if "--help-all lists them" in text:  # a command that sends the user to --help-all must take it
        assert "Expert options" in _help(path, "--help-all")
    if is_group(command):
        return
    for param in command.params:
        if getattr(param, "hidden", False) and getattr(param, "rich_help_panel", None) is None:
            continue  # an old spelling kept for scripts
        assert (getattr(param, "help", None) or "").strip(), f"{' '.join(path)}: {param.name} has no help"
        for name in param.opts:
            if name.startswith("--") and not getattr(param, "hidden", False):
                assert name in text, f"{name} not shown whole"


@pytest.mark.parametrize("path", [["eval", "dece"], ["eval", "lemaj"], ["tournament"]])
def test_help_all_lists_the_expert_options(path: list[str]) -> None:
    short, full = _help(path), _help(path, "--help-all")
    assert "--help-all lists them" in short
    assert "Expert options" in full and len(full.splitlines()) > len(short.splitlines())
    assert not CITATIONS.search(full), CITATIONS.search(full)
    assert not re.search(r"-[\w-]*…", full)


def test_every_command_with_hidden_expert_options_takes_help_all_in_the_executable() -> None:
    """The installed command: a help that hides expert options sends the user to --help-all, and
    --help-all shows them (a method's own commands, e.g. `assay rubric audit`, declared --judge-opt,
    --timeout and --retries without it, and refused the flag)."""
    from assay.cli._help import EXPERT

    exe = Path(sys.executable).parent / "assay"
    checked = 0
    for path, command in COMMANDS:
        if is_group(command):
            continue
        hidden = [p for p in command.params if getattr(p, "rich_help_panel", None) == EXPERT and p.hidden]
        if not hidden or any(p.name == "help_all" for p in command.params):
            continue  # nothing hidden, or --help-all already declared (test_help_all_lists_the_expert_options)
        short = subprocess.run([str(exe), *path, "--help"], capture_output=True, text=True, timeout=120,
                               env={**os.environ, **ENV})
        full = subprocess.run([str(exe), *path, "--help-all"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, **ENV})
        assert short.returncode == 0 and full.returncode == 0, (path, short.stderr, full.stderr)
        assert f"assay {' '.join(path)} --help-all lists them" in " ".join(short.stdout.split()), path
        assert "Expert options" in full.stdout and "Expert options" not in short.stdout, path
        for param in hidden:
            assert max(param.opts, key=len) in full.stdout, (path, param.name)
        checked += 1
    assert checked >= 5  # demo, meta, injection, dece criteria extract, the rubric commands


def test_the_executable_help_fits_80_columns() -> None:
    proc = subprocess.run([sys.executable, "-m", "assay", "eval", "dece", "-h"], capture_output=True, text=True,
                          env={**os.environ, **ENV}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) <= 100 and max(map(len, lines)) <= 80
    for group in ("Judge", "Run", "Output"):
        assert f"─ {group} ─" in proc.stdout


def test_one_name_per_concept_and_old_spellings_still_work() -> None:
    texts = {" ".join(p): _help(p, "--help-all") for p in (["eval", "dece"], ["eval", "lemaj"],
                                                           ["eval", "caseaware"], ["tournament"])}
    for name, text in texts.items():
        assert "--max-reason-chars" in text or name == "tournament", name
        assert "--max-reasoning-chars" not in text and "--max-justification-chars" not in text, name
    assert "--elo-k" in texts["tournament"] and "--k " not in texts["tournament"]
    assert "--size" in _help(["rubric", "discover"])


def test_an_old_flag_spelling_is_still_read(tmp_path: Path) -> None:
    data = Path(__file__).parents[3] / "examples" / "dece_examples.jsonl"
    result = CliRunner().invoke(app, ["eval", "dece", str(data), "--limit", "1", "--dry-run",
                                      "--max-reasoning-chars", "80"], env=ENV)
    assert result.exit_code == 0, result.output
    assert "dry run" in result.output


def test_an_option_whose_meaning_differs_by_method_is_told_per_method() -> None:
    # one shared text once told DICE's and the case-aware judge's users about verdict modes they do not have
    def verdicts(path: list[str]) -> str:
        text = " ".join(_help(path).split())
        return text[text.index("--verdicts"):][:400]

    assert "analysis" in verdicts(["eval", "dice"]) and "hard:" not in verdicts(["eval", "dice"])
    assert "auto (the default)" in verdicts(["eval", "dece"])
    assert "band" in verdicts(["eval", "caseaware"]) and "0/1" not in verdicts(["eval", "caseaware"])
    assert "0-4 grade" in verdicts(["eval", "pointwise"])
    assert "take the majority" not in _help(["eval", "dice"])


def test_a_list_option_takes_comma_separated_text_or_json() -> None:
    from assay.cli.kit import coerce
    from assay.methods.tournament import Tournament

    assert coerce(Tournament, {"tiers": "high, medium,low"})["tiers"] == ["high", "medium", "low"]
    assert coerce(Tournament, {"tiers": '["a b", "c"]'})["tiers"] == ["a b", "c"]
    assert coerce(Tournament, {"mode": "swiss"})["mode"] == "swiss"  # text for a text field stays text


def test_the_tournament_explains_its_own_verdicts() -> None:
    """`assay tournament --help` explained --verdicts auto|analysis|direct with DeCE's hard and soft."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run([exe, "tournament", "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})
    text = " ".join(proc.stdout.replace("│", " ").split())
    assert "--verdicts auto|analysis|direct auto (the default): direct" in text, text
    assert "else analysis (written, then decided)" in text and "hard: the judge's 0/1 label" not in text
