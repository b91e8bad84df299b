"""Every command the README and the documentation show is run as written.

The rule: a ```bash block of README.md, docs/*.md or docs/methods/*.md holds commands a reader
can paste. Each page's commands run in order, in one fresh directory holding a copy of
``examples/`` and ``tests/data/`` (as in a checkout), through the real command-line entry point
(``assay.cli.main``: the same argument handling, messages and exit codes as the installed
``assay``). Each must exit 0 (``assay gate`` may also exit 1: its verdict depends on the
judge's scores). A command that cannot run fails this test, unless it matches
:data:`NOT_RUN` below, which says why it is left out (it installs or builds something, or needs
a server or a cluster).

Where a command needs a judge — the embedded model by default, or the one it names
(``--judge openai/...``) — every judge provider is replaced, in this process, by
:class:`SchemaJudge`: it answers each call with a small JSON value valid under the call's
schema, so the commands run offline in seconds. (The real embedded judge runs the same
commands in the integration tests.) ``assay ui`` is started as a real process and stopped once
it prints its address. The ```python blocks of the README and of every docs page are executed the
same way (those that cannot run offline are listed in :data:`PYTHON_NOT_RUN` with the reason).

Where a ```bash block is followed directly by a ```text block, the text is what the page says the
block prints: the block's standard output must equal it once what varies between runs (times,
run ids and hashes, the working directory; :data:`VARYING`) is written the same way on both sides.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.core.types import Completion, GenerateConfig, Message, TokenLogprob, Usage
from assay.judge.backends import JudgeBackend
from assay.judge.backends._base import Capabilities

ROOT = Path(__file__).parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "methods").glob("*.md"))]
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))

NOT_RUN: dict[str, str] = {
    r"^pip install\b": "installs packages",
    r"^export CMAKE_ARGS=": ("sets the flags pip compiles llama.cpp with "
                            "(tests/unit/judge/test_build_flags.py checks them)"),
    r"^make\b": "builds the development environment (make setup, make test, make demo)",
    r"^assay model install\b": "assembles the 1 GB embedded model (the integration tests use it)",
    r"^\. \.venv/bin/activate$": "changes the shell's environment only",
    r"^python -m assay\.judge\.serve\b": ("serves the embedded model over HTTP until stopped "
                                          "(tests/integration/test_serve.py)"),
    r"--executor ray\b": "starts a Ray cluster (tests/integration/test_ray.py)",
    r"\bphoenix serve$": "starts a Phoenix server until stopped (tests/integration/test_phoenix.py starts one)",
    r"^python examples/phoenix_rag\.py\b": "sends traces to a running Phoenix (tests/integration/test_phoenix.py)",
    r"--from-phoenix\b|--phoenix\b": "reads from or writes to a running Phoenix (tests/integration/test_phoenix.py)",
    r"--otel\b": ("sends to an OTLP receiver on port 4318 "
                  "(tests/unit/exchange/test_otel.py runs these against a real one)"),
}
"""Commands left out, by pattern, with the reason. Nothing else may be left out."""

MAY_EXIT_1 = ("assay gate", "assay rubric discover")
"""Commands whose exit status 1 is an answer, not an error: a gate that failed; a discovery whose
judge proposed no criterion that enough pairs support (this test's judge proposes one text for
every pair, so nothing passes; the rubric commands after it on the page use examples/rubric.yaml)."""


# --- the judge ------------------------------------------------------------------------------------
def instance(schema: dict[str, Any], defs: dict[str, Any], position: int | None = None) -> Any:
    """A small value valid under ``schema``: the const; of a numeric enum the highest value, or, for
    the n-th element of an array, the n-th of a numbering 1, 2, …; of a text enum the neutral
    label where it has one (``none``, a severity scale's "no issue"; ``Tie``, a comparison's), else
    the first; the largest number allowed (up to
    1); one element per array (or its minimum); every property of an object."""
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, position)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], defs, position)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        numbers = [v for v in schema["enum"] if isinstance(v, int | float) and not isinstance(v, bool)]
        if numbers and position is not None and numbers == list(range(1, len(numbers) + 1)):
            return numbers[min(position, len(numbers) - 1)]  # numbered items: 1, 2, … in order
        if numbers:
            return max(numbers)
        return next((label for label in ("none", "Tie") if label in schema["enum"]), schema["enum"][0])
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        return {name: instance(sub, defs, position) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        count = max(1, schema.get("minItems", 1))
        items = schema.get("prefixItems") or [schema.get("items", {})] * count
        return [instance(sub, defs, n) for n, sub in enumerate(items[:max(count, len(items))])]
    if kind in ("integer", "number"):
        high = schema.get("maximum", 1)
        low = schema.get("minimum", 0)
        value = max(low, min(high, 1))
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    text = "supported by the passage"
    return text[: schema.get("maxLength", len(text))] or "x"


class SchemaJudge(JudgeBackend):
    """Answers every call offline: a label call with its first label most likely, a call with a
    JSON schema with :func:`instance`, anything else with ``yes``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.capabilities = Capabilities(json_schema=True, grammar=False, logprobs=True, seed=True,
                                         label_probs=True, max_context=32768)
        self.max_concurrency = 4

    def identity(self) -> dict[str, Any]:
        return {"backend": "doc-test", "name": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        import json

        STAND_IN_CALLS.append(self.name)
        usage = Usage(prompt_tokens=sum(len(m.content) for m in messages) // 4, completion_tokens=8)
        if config.labels:
            probs = {label: (0.9 if n == 0 else 0.1 / (len(config.labels) - 1)) for n, label in
                     enumerate(config.labels)} if len(config.labels) > 1 else {config.labels[0]: 1.0}
            return Completion(text=config.labels[0], label_probs=probs, finish_reason="label", usage=usage,
                              backend="doc-test", model=self.name)
        if config.json_schema:
            schema = config.json_schema
            text = json.dumps(instance(schema, schema.get("$defs", schema.get("definitions", {}))))
        else:
            text = "yes"
        # one token per word or sign, each certain: a label's probability is read where it is written
        logprobs = ([TokenLogprob(token=piece, logprob=0.0, top={piece: 0.0})
                     for piece in re.findall(r"\w+|\s+|[^\w\s]", text)] if config.logprobs else None)
        return Completion(text=text, finish_reason="stop", usage=usage, backend="doc-test", model=self.name,
                          logprobs=logprobs)


RECORDINGS = ROOT / "docs" / "recordings"
"""The embedded judge's recorded answers, a file per page. ``DOCS_JUDGE=record pytest -p no:xdist
tests/unit/project/test_docs_commands.py`` runs every page's commands with the real judge
(``llamacpp/...``) and writes them anew; ``DOCS_JUDGE=extend`` asks the real judge only the calls
a recording lacks (after a prompt or an example changed). Otherwise they are replayed, so the
outputs shown are the real judge's, reproduced offline."""

RECORDING_PENDING: dict[str, str] = {}
"""Pages whose shown outputs still come from the stand-in judge, each saying so in its text, with
the reason they are not recorded. Every other page's shown outputs are the embedded judge's."""

STAND_IN_CALLS: list[str] = []
"""Calls answered by :class:`SchemaJudge` (a judge the pages name but this machine cannot reach)."""


@pytest.fixture
def judges(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``llamacpp/...`` answers from the page's recording of the real embedded judge (or, with
    ``DOCS_JUDGE=record``, is the real judge, recorded; a page with no recording yet gets
    :class:`SchemaJudge`); ``openai/...`` and ``litellm/...``, which need a server or a key, answer
    with :class:`SchemaJudge` — no output shown on a page may come from a stand-in (but for
    :data:`RECORDING_PENDING`). Yields the recording's path."""
    from assay.judge.backends import _registry
    from assay.judge.backends._recording import Recording, RecordingJudge, ReplayJudge

    page = request.node.callspec.params.get("page") if hasattr(request.node, "callspec") else None
    python = "python" in request.node.originalname
    path = RECORDINGS / f"{page.stem if page else 'README'}{'-python' if python else ''}.json"
    recording = Recording(path)
    mode = os.environ.get("DOCS_JUDGE", "replay")
    record = mode in ("record", "extend")
    if mode == "record":
        recording.calls.clear()
    _registry.providers()  # the built-ins are registered first, so these replace them
    real = _registry._PROVIDERS["llamacpp"]
    replays: list[ReplayJudge] = []

    def embedded(model: str, options: dict[str, Any]) -> JudgeBackend:
        if record:
            return RecordingJudge(real(model, options), recording, keep=True)  # a call asked twice is asked once
        if not path.exists():  # a page not recorded yet: its commands run, no output of theirs may be shown
            return SchemaJudge(f"llamacpp/{model}")
        replay = ReplayJudge(f"llamacpp/{model}", recording)
        replays.append(replay)
        return replay

    def stand_in(model: str, options: dict[str, Any], provider: str) -> JudgeBackend:
        return SchemaJudge(f"{provider}/{model}")

    monkeypatch.setitem(_registry._PROVIDERS, "llamacpp", embedded)
    for provider in ("openai", "litellm"):
        monkeypatch.setitem(_registry._PROVIDERS, provider,
                            lambda model, options, provider=provider: stand_in(model, options, provider))
    yield path
    if record and recording.calls:
        recording.save()
    missed = sorted({key for replay in replays for key in replay.misses})
    assert not missed, (f"{path.relative_to(ROOT)} has no answer for {len(missed)} judge calls: the prompts or the "
                        f"examples changed; record again: DOCS_JUDGE=record pytest -p no:xdist "
                        f"tests/unit/project/test_docs_commands.py")


# --- the pages --------------------------------------------------------------------------------------
def blocks(page: Path, language: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each fenced block of ``language`` in ``page``."""
    text = page.read_text(encoding="utf-8")
    for match in re.finditer(rf"^```{language}\n(.*?)^```", text, re.S | re.M):
        yield text[: match.start()].count("\n") + 2, match.group(1)


def commands(block: str) -> list[list[str]]:
    """The block's commands as argument lists: continuation lines joined, comments dropped,
    ``a && b`` as two commands."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in words:
            if word == "&&":
                out.append(current)
                current = []
            else:
                current.append(word)
        if current:
            out.append(current)
    return out


def skipped(words: list[str]) -> str | None:
    line = " ".join(words)
    return next((why for pattern, why in NOT_RUN.items() if re.search(pattern, line)), None)


def page_commands() -> list[tuple[Path, list[tuple[int, list[str]]]]]:
    found = []
    for page in PAGES:
        cmds = [(line, words) for line, block in blocks(page, "bash") for words in commands(block)]
        if cmds:
            found.append((page, cmds))
    return found


def shown_outputs(page: Path) -> dict[int, str]:
    """What the page says a ```bash block prints: a ```text block right after it (nothing but
    blank lines between), keyed by the bash block's line as :func:`blocks` gives it."""
    text = page.read_text(encoding="utf-8")
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```\n?", text, re.S | re.M))
    found = {}
    for first, second in itertools.pairwise(fences):
        if (first.group(1), second.group(1)) == ("bash", "text") and not text[first.end():second.start()].strip():
            found[text[: first.start()].count("\n") + 2] = second.group(2)
    return found


VARYING = [
    (r"\b\d+:\d\d:\d\d\b", "0:00:00"),                                      # a progress bar's elapsed time
    (r"\b\d+(\.\d+)? s\b", "0.0 s"),                                           # a duration in seconds
    (r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?", "<time>"),  # a timestamp
    (r"\b[0-9a-f]{16}\b|\b[0-9a-f]{64}\b", "<id>"),                              # a run id or a hash
    (r"[\u2800-\u28ff] ?", ""),                                                 # a spinner's frame
    (r"\b\d+ retries\b", "0 retries"),  # retries after a timeout: the machine's load when it was recorded
]
"""What differs from one run of a command to the next, and what it is written as before an output
shown on a page is compared with the command's: the rest must be the same, character for
character, but for trailing spaces and blank lines at the end."""


def normalised(output: str, cwd: Path) -> str:
    output = output.replace(str(cwd), "<dir>")
    for pattern, replacement in VARYING:
        output = re.sub(pattern, replacement, output)
    return "\n".join(line.rstrip() for line in output.splitlines()).strip("\n")


def update_shown(page: Path, printed: dict[int, str], cwd: Path) -> None:
    """``UPDATE_DOCS_OUTPUT=1 pytest tests/unit/project/test_docs_commands.py``: each output block shown
    on ``page`` becomes what its commands printed (the work directory written as a relative path),
    as snapshot tools update their snapshots. Review the diff before committing it."""
    text = page.read_text(encoding="utf-8")
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```\n?", text, re.S | re.M))
    for first, second in reversed(list(itertools.pairwise(fences))):
        line = text[: first.start()].count("\n") + 2
        if (first.group(1), second.group(1)) == ("bash", "text") and line in printed:
            body = "\n".join(x.rstrip() for x in printed[line].replace(f"{cwd}/", "").splitlines()).strip("\n")
            text = text[: second.start(2)] + body + "\n" + text[second.end(2):]
    page.write_text(text, encoding="utf-8")


def workdir(tmp_path: Path) -> Path:
    """A directory like a checkout's: examples/ and tests/data/."""
    shutil.copytree(ROOT / "src" / "assay" / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    return tmp_path


def run_in_process(words: list[str], cwd: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``assay ARGS`` through the installed command's entry point, in this process."""
    from assay.cli import main

    old_argv, old_cwd = sys.argv, Path.cwd()
    sys.argv = ["assay", *words[1:]]
    os.chdir(cwd)
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_ui(words: list[str], cwd: Path) -> tuple[int, str]:
    """``assay ui ...`` as a process: it must print its address; then it is stopped."""
    assert ASSAY is not None, "the assay console script is not installed"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen([ASSAY, *words[1:]], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
            if "assay ui on http://127.0.0.1:" in seen:
                return 0, seen
        return proc.poll() or 1, seen
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("page", "cmds"), page_commands(), ids=lambda v: v.name if isinstance(v, Path) else "")
def test_every_command_of_the_page_runs_as_written(page: Path, cmds: list[tuple[int, list[str]]], tmp_path: Path,
                                                   judges: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for name in [k for k in os.environ if k.startswith("ASSAY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "200")
    # rich's consoles read COLUMNS once, when made (perhaps by another test, under another width):
    # every console alive in this process prints 200 columns wide here, as the pages were written
    import gc

    from rich.console import Console

    for console in [obj for obj in gc.get_objects() if issubclass(type(obj), Console)]:
        monkeypatch.setattr(console, "_width", 200)
    cwd = workdir(tmp_path)
    shown = shown_outputs(page)
    printed: dict[int, str] = {}
    ran = 0
    for line, words in cmds:
        where = f"{page.relative_to(ROOT)}, block at line {line}: {shlex.join(words)}"
        if skipped(words):
            assert line not in shown, f"{where}: the page shows its output, but it is not run (NOT_RUN)"
            continue
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # NAME=value assay ...: that variable set
            name, _, value = words[0].partition("=")
            monkeypatch.setenv(name, value)
            words = words[1:]
        assert words[0] == "assay", f"{where}: not an assay command, and not in NOT_RUN with a reason"
        if words[1:2] == ["ui"]:
            assert line not in shown, f"{where}: the page shows an output of assay ui, which runs until stopped"
            code, out, err = (*run_ui(words, cwd), "")
        else:
            before = len(STAND_IN_CALLS)
            code, out, err = run_in_process(words, cwd, capsys)
            assert line not in shown or len(STAND_IN_CALLS) == before or page.name in RECORDING_PENDING, (
                f"{where}: the page shows this output, but a judge this test cannot reach answered it "
                f"(a stand-in): show only outputs of the embedded judge")
        allowed = (0, 1) if shlex.join(words).startswith(MAY_EXIT_1) else (0,)
        assert code in allowed, f"{where}\nexit {code}:\n{(out + err)[-3000:]}"
        printed[line] = printed.get(line, "") + out
        ran += 1
    if os.environ.get("UPDATE_DOCS_OUTPUT") == "1":  # rewrite the shown outputs with what was printed
        update_shown(page, {line: printed[line] for line in shown if line in printed}, cwd)
        shown = shown_outputs(page)
    for line, expected in shown.items():
        assert line in printed, f"{page.relative_to(ROOT)}: an output block follows the block at line {line}, not run"
        want, got = normalised(expected, cwd), normalised(printed[line], cwd)
        assert got == want, (f"{page.relative_to(ROOT)}: the output shown after the block at line {line} is not "
                             f"what its commands print (normalised):\n--- shown\n{want}\n--- printed\n{got}")
    assert ran or all(skipped(w) for _, w in cmds)


def test_every_shown_output_is_recorded_or_says_it_is_not() -> None:
    """A page that shows a command's output has the embedded judge's recording of it and does not
    call its output a stand-in's; a page still pending says that its output is a stand-in's."""
    for page in PAGES:
        if not shown_outputs(page):
            continue
        text = page.read_text(encoding="utf-8")
        if page.name in RECORDING_PENDING:
            assert "stand-in" in text, f"{page.name}: its output is a stand-in's; the page must say so"
        else:
            assert (RECORDINGS / f"{page.stem}.json").exists(), f"{page.name}: shows outputs with no recording"
            assert "stand-in judge" not in text, f"{page.name}: its outputs are the embedded judge's"


def test_the_collector_sees_the_readme_quick_start() -> None:
    """The test above would pass on pages it never read: it must find the README's commands."""
    found = dict(page_commands())
    readme = [shlex.join(w) for _, w in found[ROOT / "README.md"]]
    assert any(c.startswith("assay eval dece examples/answers.jsonl") for c in readme), readme
    assert commands("assay a \\\n  --b c   # note\nassay x && assay y") == [["assay", "a", "--b", "c"], ["assay", "x"],
                                                                          ["assay", "y"]]
    assert skipped(["pip", "install", "-e", "."]) and not skipped(["assay", "eval", "dece", "x.jsonl"])
    assert any(shown_outputs(ROOT / "docs" / "methods" / f"{name}.md") for name in ("dece", "baselines"))
    here = Path("/tmp/x")
    assert normalised("run 389b655b4ff59fc0 · 0:00:12  \n4.9 s in /tmp/x/run.db\n\n", here) == \
        "run <id> · 0:00:00\n0.0 s in <dir>/run.db"
    assert normalised("0.478", here) != normalised("0.480", here)


PYTHON_NOT_RUN: dict[str, str] = {
    r"^from inspect_ai\b": "another framework's scorer, for comparison: needs Inspect AI, which assay does not install",
    r"^from pydantic_evals\b": "another framework's evaluator, for comparison: needs pydantic_evals, which assay "
                               "does not install",
}
"""Python blocks left out, by a pattern of their text, with the reason. Nothing else may be left out."""

READERS_OWN = {
    "bot": lambda question: "Refunds are accepted within 30 days of purchase.",  # the reader's chatbot
}
"""Names a page's Python uses for the reader's own code, defined here (the chatbot answers with the
reference). ``call_my_model`` (the model behind a custom judge) is :class:`SchemaJudge`'s answer."""


def run_python(page: Path, cwd: Path) -> dict[str, Any]:
    """The page's ```python blocks, in order, in one namespace, in ``cwd``; a block that defines a
    pytest test using ``assay_eval`` has the test called. Returns the namespace."""
    from assay.exchange.pytest_plugin import AssayCheck

    async def call_my_model(texts: list[str], max_tokens: int | None = None) -> str:
        return "yes"

    namespace: dict[str, Any] = {**READERS_OWN, "call_my_model": call_my_model}
    for line, code in blocks(page, "python"):
        if any(re.search(pattern, code, re.M) for pattern in PYTHON_NOT_RUN):
            continue
        exec(compile(code, f"{page.relative_to(ROOT)} (python block at line {line})", "exec"), namespace)
        for name, value in list(namespace.items()):
            if name.startswith("test_") and callable(value):
                value(AssayCheck("llamacpp/default", cwd / ".assay" / "pytest.db"))
                del namespace[name]
    return namespace


PYTHON_PAGES = [page for page in PAGES if page.name != "README.md" and any(blocks(page, "python"))]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda v: v.name)
def test_the_python_of_the_page_runs(page: Path, tmp_path: Path, judges: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("ASSAY_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(workdir(tmp_path))
    run_python(page, tmp_path)


def test_the_readme_python_runs(tmp_path: Path, judges: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's Python blocks, in order, in one namespace (``bot`` is the reader's chatbot: here
    it answers with the reference)."""
    for name in [k for k in os.environ if k.startswith("ASSAY_")]:
        monkeypatch.delenv(name)
    cwd = workdir(tmp_path)
    monkeypatch.chdir(cwd)
    assert list(blocks(ROOT / "README.md", "python")), "the README shows Python"
    namespace = run_python(ROOT / "README.md", cwd)
    import assay

    assert isinstance(namespace.get("both"), assay.EvalResults)
    frame = namespace["both"].to_pandas()
    assert len(frame) == len(namespace["frame"]) and {"rougeL", "bleu"} <= set(frame.columns)
    assert {p.name for p in PYTHON_PAGES} >= {"quickstart.md", "judges.md", "extending.md"}
