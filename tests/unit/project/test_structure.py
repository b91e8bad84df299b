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
from assay.core.registry import BUILTIN_METHODS

ROOT = Path(__file__).parents[3]
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def graph() -> Any:
    return grimp.build_graph("assay", cache_dir=None, exclude_type_checking_imports=True)


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


GENERIC = ("assay.core", "assay.store", "assay.judge", "assay.data", "assay.engine", "assay.analysis", "assay.exchange",
           "assay.view", "assay.cli")
"""The generic rooms: what they show or do for a method, they ask the method or the registry."""


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


LAYERS = ["methods", "cli", "view", "exchange", "analysis", "engine", "data", "judge", "store", "core"]
"""The packages of ``src/assay``, top first: each imports only the packages below it. Methods are
on top, shaped like plug-ins: they use everything, and nothing names them (the registry finds them)."""

UPWARD = {
    ("assay.engine.results", "assay.exchange.export"):
        "EvalResult.records() (and to_pandas()) reads the rows the export writes, when called",
    ("assay.engine.results", "assay.view.report"):
        "EvalResult.report() writes the HTML report, when called",
}
"""The imports that point up, each with its reason; nothing else may. (Both are conveniences of the
public result object, imported inside the method that uses them.)"""


def test_src_assay_shows_the_architecture() -> None:
    """``ls src/assay``: ten packages, the version, the entry point and the examples; nothing loose."""
    here = ROOT / "src" / "assay"
    # a folder left with only __pycache__ by a checkout from before a move is not an entry
    entries = {p.name for p in here.iterdir() if p.name != "__pycache__" and not (
        p.is_dir() and all(q.name == "__pycache__" for q in p.iterdir()))}
    assert entries == {*LAYERS, "__init__.py", "__main__.py", "_version.py", "_relocated.py", "py.typed",
                       "examples"}, sorted(entries)


def test_unit_tests_are_laid_out_by_package() -> None:
    """``tests/unit/`` has a folder per package (and ``project/`` for the project as a whole), and
    ``tests/unit/methods/`` a folder per built-in method: a room's tests sit beside it."""
    unit = ROOT / "tests" / "unit"

    def folders(path: Path) -> set[str]:
        return {p.name for p in path.iterdir() if p.is_dir() and p.name != "__pycache__"
                and any(q.suffix == ".py" for q in p.rglob("*.py"))}

    assert folders(unit) == {*LAYERS, "project"}, sorted(folders(unit) ^ {*LAYERS, "project"})
    methods = {p.name for p in (ROOT / "src" / "assay" / "methods").iterdir()
               if p.is_dir() and (p / "__init__.py").exists()}
    assert folders(unit / "methods") <= methods, sorted(folders(unit / "methods") - methods)


def test_packages_import_downward() -> None:
    """The layers hold over packages, at any depth and through any chain of imports (grimp, as
    import-linter's layers contract), type-checking imports aside."""
    graph = grimp.build_graph("assay", cache_dir=None, exclude_type_checking_imports=True)
    illegal = graph.find_illegal_dependencies_for_layers(layers=[f"assay.{name}" for name in LAYERS])
    found = {(head, tail) for dep in illegal for route in dep.routes
             for head in route.heads for tail in route.tails}
    assert found == set(UPWARD), sorted(found - set(UPWARD)) or f"no longer upward: {sorted(set(UPWARD) - found)}"


def test_import_assay_stays_light() -> None:
    """``import assay`` loads no model runtime, no dataframe or plotting library and no method."""
    heavy = ["llama_cpp", "torch", "sentence_transformers", "pandas", "matplotlib", "scipy", "sklearn", "litellm",
             "openai", "ray", "opentelemetry", "playwright"]
    code = ("import sys, assay\n"
            f"print([m for m in {heavy!r} if m in sys.modules])\n"
            "print(sorted(m for m in sys.modules if m.startswith('assay.methods.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "[]"], done.stdout


def test_old_import_paths_work_for_one_release_and_say_where_the_module_went() -> None:
    """``import assay.runner`` (an old path) gives the module at its new place — the very same
    object — with a DeprecationWarning naming it; so does ``assay.errors`` as an attribute."""
    code = ("import warnings, importlib\n"
            "warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    import assay.runner as old\n"
            "    from assay.backends._base import JudgeBackend as Old\n"
            "    import assay\n"
            "    errors = assay.errors\n"
            "import assay.judge.runner as new\n"
            "from assay.judge.backends._base import JudgeBackend as New\n"
            "assert old is new and Old is New and errors is importlib.import_module('assay.core.errors')\n"
            "print([str(w.message) for w in seen if w.category is DeprecationWarning])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout
    assert "assay.runner moved to assay.judge.runner" in said, said
    assert "assay.backends._base moved to assay.judge.backends._base" in said, said
    assert "assay.errors moved to assay.core.errors" in said, said


def test_the_generic_modules_import_no_method(graph: Any) -> None:
    """No module outside ``assay.methods`` imports a method's package (``assay.methods.<name>``,
    built in or not): the rest of assay reaches methods through the registry's hooks and views
    and the contract in ``assay.core.method``."""
    offenders = []
    for module in sorted(graph.modules):
        if not any(_within(module, g) for g in GENERIC):
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            parts = imported.split(".")
            if parts[:2] == ["assay", "methods"] and len(parts) > 2 and not parts[2].startswith("_"):
                offenders.append(f"{module} -> {imported}")
    assert not offenders, offenders


def test_methods_import_only_the_kit_of_the_command_line(graph: Any) -> None:
    """A method's package takes its options and helpers from ``assay.cli.kit`` and nothing else of
    the command line."""
    offenders = []
    for module in sorted(graph.modules):
        parts = module.split(".")
        if parts[:2] != ["assay", "methods"] or len(parts) < 3 or parts[2].startswith("_"):
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            if _within(imported, "assay.cli") and imported != "assay.cli.kit":
                offenders.append(f"{module} -> {imported}")
    assert not offenders, offenders


NAME_FREE = ("assay.view.ui", "assay.view.report", "assay.analysis.meta", "assay.cli", "assay.core._files",
             "assay.store.annotation_rules", "assay.core.registry", "assay.core.views")
"""Modules whose code names no method: ``assay.cli`` is the root of the command line only (a
command such as ``assay demo`` may run a method it asks the registry for by name)."""


def test_the_generic_modules_name_no_method() -> None:
    """No string in the code of the generic modules (docstrings aside) is the name of a method,
    and none in the command line's root is a command a method adds: ``if command == "dece"`` is
    how a method's knowledge leaks into a generic room."""
    import ast

    from assay.core.registry import methods, workflows

    names = set(methods()) | set(workflows())
    commands_of_methods = {"dece", "triage", "tournament", "rubric", "pairwise", "gate", "compare"}
    found = []
    for path in sorted((ROOT / "src" / "assay").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts).removesuffix(".__init__")
        if module == "assay.core.registry._core" or not any(
                module == g or (g != "assay.cli" and _within(module, g)) for g in NAME_FREE):
            continue  # the registry's table of built-in entry points names each package once, as pyproject would
        banned = names | commands_of_methods if module == "assay.cli" else names
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and node.value in banned:
                found.append(f"{module}:{node.lineno} {node.value!r}")
    assert not found, found


FRESH_IMPORTS = r"""
import importlib, json, sys, traceback

results = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == "assay" or m.startswith("assay.")]:
        del sys.modules[loaded]  # no module of assay is loaded when the next one is imported
    importlib.invalidate_caches()
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] != "assay":  # an optional extra that is not installed
            results[name] = "missing " + exc.name
        else:
            results[name] = "".join(traceback.format_exception_only(exc)).strip()
    except BaseException as exc:  # noqa: BLE001 - everything that stops an import is a failure
        results[name] = "".join(traceback.format_exception_only(exc)).strip()
    else:
        results[name] = "ok"
print(json.dumps(results))
"""


def assay_modules() -> list[str]:
    """Every module of assay, found on disk with pkgutil (without importing any of them)."""
    import pkgutil

    import assay

    found = ["assay"]

    def walk(path: list[str], prefix: str) -> None:
        for info in pkgutil.iter_modules(path, prefix):
            found.append(info.name)
            if info.ispkg:
                walk([str(Path(path[0]) / info.name.rsplit(".", 1)[1])], info.name + ".")

    walk(list(assay.__path__), "assay.")
    return sorted(found)


@pytest.fixture(scope="module")
def fresh_imports() -> dict[str, str]:
    """The outcome of importing each module of assay (every one :func:`assay_modules` finds on disk,
    and every one pkgutil.walk_packages finds, but ``assay.__main__``, which runs the command line
    when imported) in one child interpreter where, before each import, every ``assay`` module is
    dropped from sys.modules, with assay's DeprecationWarnings turned into errors: "ok", "missing
    <module>" for an optional third-party extra that is not installed, or the error."""
    import json
    import os
    import pkgutil

    import assay

    names = {m for m in assay_modules() if m != "assay.__main__"}
    names |= {m.name for m in pkgutil.walk_packages(assay.__path__, "assay.") if m.name != "assay.__main__"}
    source = str(Path(assay.__file__).parents[1])  # the child imports the assay this test imported
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning:assay", "-c", FRESH_IMPORTS,
                           json.dumps(sorted(names))], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(results) == names
    return results


def test_every_module_imports_on_its_own(fresh_imports: dict[str, str]) -> None:
    """Each module of assay imported first, in an interpreter where no module of assay is loaded
    (one child process; before each import every ``assay`` module is dropped from sys.modules):
    a module that works only when something else was imported before it, or that is part of a
    cycle that only an import at run time closes, fails here, and none imports an old path (a
    DeprecationWarning of assay is an error there). ``assay.__main__`` runs the command line when
    imported and is left out. Every module found on disk must import, an optional extra that is
    not installed allowed; every module pkgutil.walk_packages finds must import, a missing extra
    failing too. (Two tests before, one per list; on two xdist workers each started the ~15 s
    child run.)"""
    import pkgutil

    import assay

    names = [m for m in assay_modules() if m != "assay.__main__"]
    assert len(names) > 50 and "assay.methods.dece.cli" in names and "assay.cli.kit" in names
    assert set(names) <= set(fresh_imports), sorted(set(names) - set(fresh_imports))
    failed = {name: fresh_imports[name] for name in names
              if fresh_imports[name] != "ok" and not fresh_imports[name].startswith("missing ")}
    assert not failed, failed
    modules = [m.name for m in pkgutil.walk_packages(assay.__path__, "assay.")
               if ".examples" not in m.name and m.name != "assay.__main__"]
    assert len(modules) > 100
    assert set(modules) <= set(fresh_imports), sorted(set(modules) - set(fresh_imports))
    bad = {name: fresh_imports[name] for name in modules if fresh_imports[name] != "ok"}
    assert not bad, bad


def test_importing_the_command_line_builds_nothing() -> None:
    """``import assay.cli`` and ``import assay.cli.kit`` load no method (no plug-in either): the
    command tree is built when the command runs or ``assay.cli.app`` is first read."""
    code = ("import sys, assay.cli, assay.cli.kit, assay.cli.eval\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('assay.methods.') and m != 'assay.core.method')\n"
            "assert not loaded, loaded\n"
            "assert assay.cli.app.registered_groups and 'assay.methods.dece' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]


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


def test_the_entry_point_groups_the_docs_name_are_the_ones_read() -> None:
    # the package move once renamed them in the docs (assay.judge.backends): a plug-in registered as
    # the docs said was never loaded
    from assay.core.registry._core import KINDS

    read = {group for groups in KINDS.values() for group in groups}
    pattern = re.compile(r'`(assay\.[\w.]+)`[^`\n]{0,40}entry[ -]point|entry[ -]points?\."(assay\.[\w.]+)"'
                         r'|^\| \w+ \| [^|]+ \| `(assay\.[\w.]+)`', re.MULTILINE)
    named: list[tuple[str, str]] = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for match in pattern.finditer(page.read_text()):
            named.append((page.name, next(g for g in match.groups() if g)))
    assert len(named) >= 8, named  # the table of docs/extending.md, its pyproject example, the README, ...
    assert [n for n in named if n[1] not in read] == []
