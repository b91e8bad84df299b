"""The shape of the code and of the command line: no import cycle, methods as packages of their own,
one vocabulary of options, help written for users, a README for users."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import grimp
import pytest
import typer

from assay.cli import app
from assay.cli._click import is_group, is_option
from assay.registry import BUILTIN_METHODS

ROOT = Path(__file__).parents[2]
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def graph() -> Any:
    return grimp.build_graph("assay", cache_dir=None)


def test_no_import_cycle(graph: Any) -> None:
    modules = sorted(graph.modules)
    index = {m: i for i, m in enumerate(modules)}
    edges = {m: graph.find_modules_directly_imported_by(m) for m in modules}
    # Tarjan's strongly connected components, iteratively
    order: list[str] = []
    seen: set[str] = set()
    for start in modules:
        if start in seen:
            continue
        stack = [(start, iter(sorted(edges[start])))]
        seen.add(start)
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(sorted(edges[child]))))
                    break
            else:
                stack.pop()
                order.append(node)
    reverse: dict[str, set[str]] = {m: set() for m in modules}
    for m, targets in edges.items():
        for t in targets:
            reverse[t].add(m)
    assigned: set[str] = set()
    cycles = []
    for node in reversed(order):
        if node in assigned:
            continue
        component, todo = [], [node]
        assigned.add(node)
        while todo:
            current = todo.pop()
            component.append(current)
            for parent in reverse[current]:
                if parent not in assigned:
                    assigned.add(parent)
                    todo.append(parent)
        if len(component) > 1:
            cycles.append(sorted(component, key=index.get))
    assert not cycles, cycles


def test_no_module_outside_the_method_packages_imports_a_method(graph: Any) -> None:
    packages = set(BUILTIN_METHODS)
    offenders = []
    for module in graph.modules:
        if any(module == p or module.startswith(p + ".") for p in packages):
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            if any(imported == p or imported.startswith(p + ".") for p in packages):
                offenders.append(f"{module} -> {imported}")
    assert not offenders, offenders


def commands() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        out.append((" ".join(path), command))
        if is_group(command):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


def test_every_command_with_a_judge_has_the_engine_options() -> None:
    missing = {}
    for path, command in commands():
        flags = {o for p in command.params if is_option(p) for o in p.opts}
        if "--judge" in flags:
            lacking = {"--store", "--budget", "--timeout", "--concurrency", "--dry-run", "--progress"} - flags
            if path == "demo":  # the demo prints its own three-answer story, never a progress bar
                lacking -= {"--progress"}
            if lacking:
                missing[path] = sorted(lacking)
    assert not missing, missing


def test_one_flag_means_one_thing() -> None:
    for path, command in commands():
        for param in command.params:
            if not is_option(param):
                continue
            if "-o" in param.opts and not param.hidden:
                assert "--output" in param.opts, f"{path}: -o must be --output (a file the command writes)"
            if "--store" in param.opts:
                assert param.name in ("store", "store_path", "cache", "out"), (path, param.name)


HELP_SMELLS = re.compile(r"SPEC|issue \d|:(?:mod|func|class|meth|data|attr):|``|\.\./shared")


def test_help_is_written_for_users() -> None:
    for path, command in commands():
        texts = [command.help or "", *(getattr(p, "help", "") or "" for p in command.params)]
        for text in texts:
            assert not HELP_SMELLS.search(text), (path, text[:120])


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed")
def test_version_and_short_help() -> None:
    version = subprocess.run([str(ASSAY), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("assay ")
    short = subprocess.run([str(ASSAY), "-h"], capture_output=True, text=True, timeout=60,
                           env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    assert short.returncode == 0 and "Evaluate" in short.stdout
    assert max(len(line) for line in short.stdout.splitlines()) <= 80


def test_the_readme_and_docs_speak_to_users() -> None:
    readme = (ROOT / "README.md").read_text()
    first_code = readme.splitlines().index(next(line for line in readme.splitlines() if line.startswith("```")))
    assert first_code < 40
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        assert "../shared" not in text and "SPEC" not in text and not re.search(r"issue \d", text), page
