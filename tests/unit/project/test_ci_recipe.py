"""The CI recipe of docs/ci.md works in a user's repository: the wheel it installs is built from a
checkout as the page says and carries what the workflow's commands need, and the workflow's steps
are the ones the page documents."""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[3]
PAGE = ROOT / "docs" / "ci.md"
INSTALL = 'pip install --no-cache-dir "$(ls wheels/assay-*-py3-none-any.whl)[embedded]"'
"""The install line the page gives in its steps (checked to be there, word for word)."""


def workflow() -> dict[str, Any]:
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    assert len(found) == 1, "docs/ci.md shows one workflow"
    return yaml.safe_load(found[0])


def run_lines() -> list[str]:
    steps = workflow()["jobs"]["eval"]["steps"]
    return [step["run"] for step in steps if "run" in step]


def test_the_workflow_parses_and_installs_with_the_documented_line() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert f"`{INSTALL}`" in text, "the page's steps name the install line"
    runs = run_lines()
    install = [line for line in runs if "pip install" in line]
    assert install == [f"{INSTALL} && assay model install"], runs
    steps = workflow()["jobs"]["eval"]["steps"]
    env = next(step.get("env", {}) for step in steps if step.get("run", "").startswith(INSTALL))
    assert "-DGGML_NATIVE=OFF" in env.get("CMAKE_ARGS", ""), "llama.cpp is compiled for any x86-64 CPU"
    assert "-e" not in shlex.split(INSTALL.replace("$(", "").replace(")", "")), "no editable install of a checkout"


def test_the_workflow_commands_exist() -> None:
    """Every assay command of the workflow is a command with those options; pytest's option is the
    plugin's."""
    import typer.main

    from assay.cli import build_app

    root = typer.main.get_command(build_app())
    plugin = (ROOT / "src" / "assay" / "exchange" / "pytest_plugin.py").read_text(encoding="utf-8")
    seen = 0
    for line in run_lines():
        for command in line.split("&&"):
            words = shlex.split(command.replace("$(", "").replace(")", ""))
            if words[0] == "pytest":
                assert all(f'"{w}"' in plugin for w in words if w.startswith("--")), words
                seen += 1
            if words[0] != "assay":
                continue
            node, rest = root, words[1:]
            while hasattr(node, "list_commands") and rest and not rest[0].startswith("-"):
                node, rest = node.get_command(node.context_class(node), rest[0]), rest[1:]
                assert node is not None, f"no such command: {command}"
            options = {o for param in node.params for o in param.opts + param.secondary_opts}
            unknown = [w for w in rest if w.startswith("-") and w.split("=")[0] not in options]
            assert not unknown, f"{command.strip()}: unknown options {unknown}"
            seen += 1
    assert seen >= 4, run_lines()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps . -w dist`` (the page's build step) on a copy of the checkout's
    package sources (so that the checkout gets no build directory)."""
    source = tmp_path_factory.mktemp("checkout")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src" / "assay", source / "src" / "assay",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = source / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--no-cache-dir", "-q", str(source), "-w", str(dist)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    built = list(dist.glob("*.whl"))
    assert len(built) == 1, built
    return built[0]


def test_the_wheel_installs_the_command_and_ships_what_it_needs(wheel: Path) -> None:
    assert fnmatch.fnmatch(wheel.name, "assay-*-py3-none-any.whl"), "the install line's pattern finds it"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert re.search(r"^\[console_scripts\]\nassay = assay\.cli:main$", entry_points, re.M), entry_points
    assert re.search(r"^\[pytest11\]\nassay = assay\.exchange\.pytest_plugin$", entry_points, re.M), entry_points
    assert "Provides-Extra: embedded" in metadata
    package = ROOT / "src" / "assay"
    needed = [path for path in package.rglob("*") if path.is_file() and (
        path.parent.name == "examples" or path.suffix == ".j2" or "prompts" in path.relative_to(package).parts)
        and path.suffix not in (".py", ".pyc")]
    assert any(p.parent.name == "examples" for p in needed) and any(p.suffix == ".j2" for p in needed)
    missing = [str(p.relative_to(package)) for p in needed if f"assay/{p.relative_to(package).as_posix()}" not in names]
    assert not missing, f"the wheel lacks files assay reads at run time: {missing}"
