"""Every value from outside is parsed once where it enters (issue 37): judge options against each
backend's options model, files through one loader, servers' answers through one model, options
that depend on each other before anything is touched, and the UI's URL only once it listens.
Generated input (hypothesis) at each boundary: success, or one line (exit 2) / a typed failure of
that call — never a traceback, a NaN or a wrong number."""

from __future__ import annotations

import asyncio
import http.client
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assay
from assay.core.errors import AssayError, BackendError, ConfigError, InputError, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message, TokenLogprob, Usage
from assay.judge.backends import BackendOptions, get_backend, options_model, parse_judge_options, register_backend
from assay.judge.backends._answer import check_completion, parse_answer
from assay.judge.backends._openai import OpenAIBackend
from assay.judge.backends._options import BUILTIN_OPTIONS
from assay.judge.runner import RunnerConfig
from tests.helpers import ITEM, criteria_json, elements_json

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
needs_cli = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
GRADE = json.dumps({"reasoning": "stages", "issues": [], "score": 3, "justification": "ok"})
MSG = [Message(role="user", content="hi")]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])


def run(*args: object, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["COLUMNS"] = "200"
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert "Traceback" not in output, output
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text, text
    return text


def items(n: int) -> list[dict[str, Any]]:
    return [{**ITEM, "id": f"q{i}", "query": f"Question number {i}: {ITEM['query']}"} for i in range(n)]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def chat(text: str = GRADE, **usage: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, **usage}}


@contextmanager
def raw_server(answer: Any) -> Iterator[dict[str, Any]]:
    """A chat-completions server on 127.0.0.1 answering ``answer`` (bytes, or a callable of the
    request's JSON giving bytes) with status 200."""
    state: dict[str, Any] = {"answer": answer, "requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            state["requests"] += 1
            payload = state["answer"](body) if callable(state["answer"]) else state["answer"]
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


# --- 1. judge options, typed ---------------------------------------------------------------------
OPENAI = "openai/m@http://127.0.0.1:9/v1"


def test_an_unknown_judge_option_is_one_line_listing_the_keys() -> None:
    with pytest.raises(ConfigError) as info:
        get_backend(OPENAI, bogus_option="1")
    text = one_line(info.value)
    assert "bogus_option" in text and "max_concurrency" in text and "schema_mode" in text


def test_option_text_converts_to_the_declared_type() -> None:
    backend = get_backend(OPENAI, max_concurrency="4", timeout_s="30", extra_body='{"repeat_penalty": 1.0}')
    assert backend.max_concurrency == 4 and isinstance(backend, OpenAIBackend)
    assert backend.extra_body == {"repeat_penalty": 1.0}
    for key, value, says in [("max_concurrency", "four", "whole number"), ("max_concurrency", "0", "1 or more"),
                             ("timeout_s", "nan", "finite number"), ("schema_mode", "xml", "one of"),
                             ("extra_body", "[1]", "JSON object")]:
        with pytest.raises(ConfigError) as info:
            get_backend(OPENAI, **{key: value})
        assert f"--judge-opt {key} " in one_line(info.value) and says in str(info.value)
    llama = parse_judge_options("llamacpp/default", {"n_ctx": "2048", "logits_all": "yes"})
    assert llama == {"n_ctx": 2048, "logits_all": True}
    assert parse_judge_options("litellm/openai/m", {"max_concurrency": "3"}) == {"max_concurrency": 3}


def test_a_jury_checks_its_options_against_every_member() -> None:
    with pytest.raises(ConfigError, match="not an option of the llamacpp judge"):
        parse_judge_options(f"jury/{OPENAI}+llamacpp/default", {"max_concurrency": "2"})
    assert parse_judge_options(f"jury/{OPENAI}+openai/n@http://127.0.0.1:8/v1", {"max_concurrency": "2"})


def test_the_option_models_hold_the_constructors_defaults() -> None:
    from assay.judge.backends._litellm import LiteLLMBackend
    from assay.judge.backends._llamacpp import LlamaCppBackend
    from assay.judge.backends._scripted import ScriptedBackend

    for provider, cls in [("openai", OpenAIBackend), ("litellm", LiteLLMBackend), ("llamacpp", LlamaCppBackend),
                          ("scripted", ScriptedBackend)]:
        fields = BUILTIN_OPTIONS[provider].model_fields
        for name, param in inspect.signature(cls.__init__).parameters.items():
            if name in fields and param.default is not inspect.Parameter.empty and name != "name":
                assert fields[name].default == param.default, (provider, name)


def test_a_plugin_declares_its_options_and_receives_them_typed() -> None:
    class ToyOptions(BackendOptions):
        level: int = 1

    seen: dict[str, Any] = {}

    def factory(model: str, options: dict[str, Any]) -> Any:
        seen.update(options)
        return assay.judge.backends.ScriptedBackend(["x"])

    register_backend("toy-boundaries", options=ToyOptions)(factory)
    get_backend("toy-boundaries/x", level="3")
    assert seen == {"level": 3} and options_model("toy-boundaries") is ToyOptions
    with pytest.raises(ConfigError, match="it takes: level"):
        get_backend("toy-boundaries/x", lvl="3")


OPTION_KEYS = sorted({k for m in BUILTIN_OPTIONS.values() for k in m.model_fields if k != "http_client"}
                     | {"bogus", "n_ctx ", ""})
VALUES = st.one_of(st.text(max_size=12), st.integers().map(str), st.floats().map(str),
                   st.sampled_from(["nan", "inf", "-1", "0", "true", "no", "{}", "[]", '{"a": NaN}', "1e999",
                                    str(2**70), "check-first", "json_object"]))


@FAST
@given(provider=st.sampled_from(["openai", "litellm", "llamacpp", "scripted"]),
       options=st.dictionaries(st.sampled_from(OPTION_KEYS), VALUES, max_size=3))
def test_generated_judge_options_parse_or_are_one_line(provider: str, options: dict[str, str]) -> None:
    name = {"openai": OPENAI, "litellm": "litellm/openai/m", "llamacpp": "llamacpp/default",
            "scripted": "scripted/x"}[provider]
    try:
        parsed = parse_judge_options(name, options)
    except ConfigError as exc:
        assert one_line(exc).startswith("--judge-opt ")
        return
    model = BUILTIN_OPTIONS[provider]
    typed = model.model_validate(parsed)  # what got through is what the model declares, in range
    for key, value in parsed.items():
        assert getattr(typed, key) == value
        assert not (isinstance(value, float) and value != value)


@needs_cli
def test_judge_opts_on_the_command_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(2))
    bad = run("eval", "pointwise", "items.jsonl", "--judge", OPENAI, "--judge-opt", "bogus_option=1",
              "--store", "r.db", cwd=tmp_path)
    assert "bogus_option" in one_line_error(bad) and not (tmp_path / "r.db").exists()
    with raw_server(json.dumps(chat()).encode()) as server:
        good = run("eval", "pointwise", "items.jsonl", "--judge", f"openai/m@{server['url']}", "--judge-opt",
                   "max_concurrency=4", "--no-progress", "--store", "r.db", cwd=tmp_path)
        assert good.returncode == 0, good.stdout + good.stderr
        assert server["requests"] == 2
    listing = run("judges", "--json", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    options = {row["option"]: row for row in json.loads(listing.stdout)["openai"]["options"]}
    assert options["max_concurrency"]["type"] == "whole number" and options["max_concurrency"]["default"] == "8"
    assert "max_concurrency" in run("judges", cwd=tmp_path).stdout


@needs_cli
def test_the_judge_option_name_is_the_scripted_judges_name_or_one_line(tmp_path: Path) -> None:
    """``name`` is an option of the scripted judge (``assay judges``): it names the judge; an empty
    name, or ``name`` for a judge without it, is one line before any store (was a TypeError:
    get_backend() got multiple values for argument 'name')."""
    write_jsonl(tmp_path / "items.jsonl", items(2))
    (tmp_path / "s.json").write_text(json.dumps({"rules": [{"match": ".", "responses": [GRADE], "repeat": True}]}))
    judge = "scripted/s.json"
    for args in (("eval", "pointwise", "items.jsonl", "--store", "r.db"),
                 ("injection", "items.jsonl", "--method", "pointwise", "-o", "r.json")):
        line = one_line_error(run(*args, "--judge", judge, "--judge-opt", "name=", "--no-progress", cwd=tmp_path))
        assert "--judge-opt name" in line, line
        assert not list(tmp_path.glob("r.*")), args
    line = one_line_error(run("eval", "pointwise", "items.jsonl", "--judge", OPENAI, "--judge-opt", "name=x",
                              "--store", "r.db", cwd=tmp_path))
    assert "name" in line and "not an option of the openai judge" in line and not (tmp_path / "r.db").exists()
    named = run("eval", "pointwise", "items.jsonl", "--judge", judge, "--judge-opt", "name=my-judge",
                "--no-progress", "--store", "r.db", cwd=tmp_path)
    assert named.returncode == 0, named.stdout + named.stderr
    assert "Traceback" not in named.stderr
    from assay.store import Store

    assert Store(tmp_path / "r.db", create=False).list_runs()[0].manifest["judge"] == "my-judge"


# --- 2. one loader for every file ----------------------------------------------------------------
def _readers(tmp: Path) -> list[tuple[str, Any]]:
    from assay.cli import load_config
    from assay.data.datasets import read_items
    from assay.judge.backends._scripted import factory as scripted
    from assay.methods.caseaware import resolve_weights
    from assay.methods.dece import load_criteria_file
    from assay.methods.premise.files import load_rubric, read_preference_pairs
    from assay.view.report import read_meta_json

    return [("items.jsonl", read_items), ("items.json", read_items), ("items.csv", read_items),
            ("criteria.jsonl", load_criteria_file), ("rubric.yaml", load_rubric), ("rubric.json", load_rubric),
            ("pairs.jsonl", read_preference_pairs), ("pairs.tsv", read_preference_pairs),
            ("weights.toml", resolve_weights), ("assay.toml", load_config), ("meta.json", read_meta_json),
            ("script.json", lambda p: scripted(str(p), {}))]


SEEDS = [b'{"id": "a", "query": "q", "response": "r"}\n', b'[{"id": 1}]', b"weights = 3\n", b"[eval]\nx = nan\n",
         b'criteria:\n  - id: a\n    description: b\n', b"id,query\n1,2\n", b'{"responses": ["x"], "latency": -1}',
         b'{"id": "q", "criteria": ["c"]}\n', b"\xff\xfe", b"\x00", b"[[[[[[[[[[[[[[[[", b"null", b"1e999",
         b'{"a": NaN}', b"\xef\xbb\xbf{}", b"accuracy = inf\n"]


@FAST
@given(data=st.one_of(st.sampled_from(SEEDS), st.binary(max_size=60),
                      st.sampled_from(SEEDS).flatmap(lambda s: st.binary(max_size=8).map(lambda b: s + b)),
                      st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass"))),
       index=st.integers(0, 11))
def test_generated_file_bytes_load_or_are_one_line(tmp_path: Path, data: bytes, index: int) -> None:
    name, reader = _readers(tmp_path)[index]
    path = tmp_path / name
    path.write_bytes(data)
    try:
        reader(path)
    except AssayError as exc:  # InputError / ConfigError: the CLI prints it as one line, exit 2
        one_line(exc)


@pytest.mark.parametrize("content, says", [
    (b"\xff weights", "line 1: not UTF-8"),
    (b"a = 1\nb = \n", "line 2: not valid TOML"),
    (b"weights = 3\n", "field 'weights' must be a table"),
    (b"[weights]\naccuracy = nan\n", "not a number assay accepts"),
])
def test_a_weights_file_is_one_line(tmp_path: Path, content: bytes, says: str) -> None:
    from assay.methods.caseaware import resolve_weights

    (tmp_path / "w.toml").write_bytes(content)
    with pytest.raises(AssayError) as info:
        resolve_weights(tmp_path / "w.toml")
    assert says in one_line(info.value) and "w.toml" in str(info.value)


def test_a_criteria_record_of_the_wrong_shape_names_line_and_field(tmp_path: Path) -> None:
    from assay.methods.dece import load_criteria_file

    (tmp_path / "c.jsonl").write_text('{"id": "q", "criteria": ["one"]}\n{"id": "r", "criteria": 5}\n')
    with pytest.raises(InputError) as info:
        load_criteria_file(tmp_path / "c.jsonl")
    assert "c.jsonl, line 2, field 'criteria'" in one_line(info.value)
    (tmp_path / "c.jsonl").write_text("[1, 2]\n")
    with pytest.raises(InputError, match="line 1: a criteria record: expected an object"):
        load_criteria_file(tmp_path / "c.jsonl")


# --- 3. server answers, validated as received ----------------------------------------------------
def _backend(body: bytes) -> OpenAIBackend:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200, content=body)))
    return OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", http_client=client)


@pytest.mark.parametrize("body, says", [
    (json.dumps(chat(prompt_tokens=2**64)).encode(), "usage.prompt_tokens"),
    (json.dumps(chat(completion_tokens=-1)).encode(), "usage.completion_tokens"),
    (json.dumps(chat(completion_tokens=2.5)).encode(), "usage.completion_tokens"),
    (json.dumps(chat(prompt_tokens_details={"cached_tokens": 2**63})).encode(), "cached_tokens"),
    (json.dumps(chat(cache_read_input_tokens=-3)).encode(), "cache_read_input_tokens"),
    (json.dumps(chat(text=5)).encode(), "content"),  # type: ignore[arg-type]
    (json.dumps(chat()).replace('"stop"', json.dumps("x" * 500)).encode(), "finish_reason"),
])
def test_an_out_of_range_field_is_a_typed_failure_of_that_call(body: bytes, says: str) -> None:
    with pytest.raises(BackendError) as info:
        asyncio.run(_backend(body).generate(MSG, GenerateConfig()))
    assert says in one_line(info.value) and not isinstance(info.value, TransientBackendError)


@pytest.mark.parametrize("logprob", ["NaN", "Infinity", "-Infinity", "5.0", "1e999"])
def test_a_bad_logprob_is_a_typed_failure(logprob: str) -> None:
    body = json.dumps(chat())[:-1] + ', "x": 0}'
    choice = ('"logprobs": {"content": [{"token": "A", "logprob": ' + logprob + ', "top_logprobs": '
              '[{"token": "A", "logprob": -0.1}]}]}, "index"')
    body = body.replace('"index"', choice, 1)
    with pytest.raises(BackendError):
        asyncio.run(_backend(body.encode()).generate(MSG, GenerateConfig(logprobs=True, top_logprobs=1)))


def test_a_body_that_is_no_completion_is_transient() -> None:
    for body in (b"<html>down</html>", b"{}", b'{"choices": []}', b"[]", b"\xff\xfe"):
        with pytest.raises(TransientBackendError):
            asyncio.run(_backend(body).generate(MSG, GenerateConfig()))


def test_an_absurd_token_count_makes_that_item_unscored_not_a_crash(tmp_path: Path) -> None:
    answers = iter([json.dumps(chat()), json.dumps(chat(prompt_tokens=2**64))])
    client = httpx.AsyncClient(transport=httpx.MockTransport(
        lambda r: httpx.Response(200, content=next(answers).encode())))
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", http_client=client, max_concurrency=1)
    result = assay.evaluate(items(2), "pointwise", backend, store=tmp_path / "r.db",
                            runner=RunnerConfig(progress=False, max_retries=0, concurrency=1))
    scores = [r.scores.get("pointwise") for r in result.store.results(result.run_id)]
    assert sorted(scores, key=lambda s: s is None) == [3.0, None], scores
    reasons = [u["reason"] for r in result.store.results(result.run_id) for u in r.unscored]
    assert any("prompt_tokens" in reason for reason in reasons), reasons


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=3), max_leaves=8)
COUNT = st.one_of(st.integers(min_value=-5, max_value=2**70), st.floats(), st.text(max_size=4), st.none())
LOGPROB = st.one_of(st.floats(), st.integers(), st.text(max_size=3), st.none())
ANSWERS = st.fixed_dictionaries({
    "choices": st.one_of(st.lists(st.fixed_dictionaries({
        "message": st.one_of(st.fixed_dictionaries({"content": st.one_of(st.text(max_size=20), JSON_VALUES)}),
                             JSON_VALUES),
        "finish_reason": st.one_of(st.sampled_from(["stop", "length", None]), st.text(max_size=80), JSON_VALUES),
        "logprobs": st.one_of(st.none(), st.fixed_dictionaries({"content": st.lists(st.fixed_dictionaries({
            "token": st.text(max_size=3), "logprob": LOGPROB,
            "top_logprobs": st.lists(st.fixed_dictionaries({"token": st.text(max_size=3), "logprob": LOGPROB}),
                                     max_size=3)}), max_size=2)}), JSON_VALUES)}), max_size=2), JSON_VALUES),
    "usage": st.one_of(st.none(), st.fixed_dictionaries({"prompt_tokens": COUNT, "completion_tokens": COUNT}),
                       # a provider's prompt cache: OpenAI's details (absent, null, empty or with the
                       # count) and Anthropic's cache_read_input_tokens (as LiteLLM passes it through)
                       st.fixed_dictionaries({"prompt_tokens": COUNT, "completion_tokens": COUNT}, optional={
                           "prompt_tokens_details": st.one_of(
                               st.none(), st.just({}), st.fixed_dictionaries({"cached_tokens": COUNT}), JSON_VALUES),
                           "cache_read_input_tokens": COUNT}),
                       JSON_VALUES),
    "model": st.one_of(st.text(max_size=5), JSON_VALUES)})


def _body(answer: Any) -> bytes:
    return json.dumps(answer, allow_nan=True).encode()  # NaN and Infinity go on the wire too


@FAST
@given(answer=ANSWERS)
def test_generated_server_answers_give_a_checked_completion_or_a_typed_failure(answer: Any) -> None:
    try:
        completion = parse_answer(_body(answer), "openai/m").completion("openai", "m", 0.0)
    except BackendError as exc:  # TransientBackendError included
        one_line(exc)
        return
    usage = answer["usage"]
    if isinstance(usage, dict):  # the cached prompt tokens: OpenAI's count first, else Anthropic's
        details = usage.get("prompt_tokens_details")
        said = details.get("cached_tokens") if isinstance(details, dict) else None
        said = usage.get("cache_read_input_tokens") if said is None else said
        assert completion.usage.cached_prompt_tokens == (said or 0)
    else:
        assert completion.usage.cached_prompt_tokens == 0
    try:
        checked = check_completion(completion, "openai/m")  # in range: counts fit SQLite, logprobs finite, <= 0
    except BackendError as exc:  # only a cache count above the prompt's is refused after parsing
        assert completion.usage.cached_prompt_tokens > completion.usage.prompt_tokens, one_line(exc)
        return
    assert checked.usage.cached_prompt_tokens <= checked.usage.prompt_tokens
    assert all(lp.logprob <= 0 and all(v <= 0 for v in lp.top.values()) for lp in completion.logprobs or [])


@settings(max_examples=15, deadline=None)
@given(answer=ANSWERS)
def test_generated_answers_from_a_real_server_on_127_0_0_1(answer: Any) -> None:
    with raw_server(_body(answer)) as server:
        backend = OpenAIBackend("m", base_url=server["url"])
        try:
            completion = asyncio.run(backend.generate(MSG, GenerateConfig()))
        except BackendError as exc:
            one_line(exc)
            return
        try:
            check_completion(completion, backend.name)
        except BackendError as exc:  # a cache count above the prompt's
            assert completion.usage.cached_prompt_tokens > completion.usage.prompt_tokens, one_line(exc)


@pytest.mark.parametrize("usage, cached", [
    ({}, 0), ({"prompt_tokens_details": None}, 0), ({"prompt_tokens_details": {}}, 0),
    ({"prompt_tokens_details": {"cached_tokens": None}}, 0), ({"prompt_tokens_details": {"cached_tokens": 4}}, 4),
    ({"cache_read_input_tokens": 6}, 6),  # Anthropic's name, as LiteLLM passes it through
    ({"prompt_tokens_details": {"cached_tokens": 6}, "cache_read_input_tokens": 6}, 6),  # LiteLLM: both
    ({"prompt_tokens_details": {"cached_tokens": None}, "cache_read_input_tokens": 3}, 3),
])
def test_the_cached_prompt_tokens_of_a_server_answer(usage: dict[str, Any], cached: int) -> None:
    completion = asyncio.run(_backend(json.dumps(chat(**usage)).encode()).generate(MSG, GenerateConfig()))
    assert completion.usage.cached_prompt_tokens == cached and completion.usage.prompt_tokens == 10
    assert check_completion(completion, "openai/m").usage.cached_prompt_tokens == cached


def test_more_cached_than_prompt_tokens_fails_that_call() -> None:
    body = json.dumps(chat(prompt_tokens_details={"cached_tokens": 11})).encode()
    completion = asyncio.run(_backend(body).generate(MSG, GenerateConfig()))
    with pytest.raises(BackendError, match="11 cached prompt tokens of a prompt of 10 tokens"):
        check_completion(completion, "openai/m")


def test_label_probabilities_out_of_range_fail_that_call() -> None:
    bad = Completion(text="yes", label_probs={"yes": 1.5, "no": -0.5})
    with pytest.raises(BackendError, match="must lie in"):
        check_completion(bad, "scripted/x")
    with pytest.raises(BackendError, match="not a token count"):
        check_completion(Completion(text="", usage=Usage(prompt_tokens=2**64)), "x")
    with pytest.raises(BackendError, match="log-probability"):
        check_completion(Completion(text="", logprobs=[TokenLogprob(token="a", logprob=float("nan"))]), "x")


def test_label_probabilities_are_for_the_labels_asked_and_sum_to_one() -> None:
    """{"yes": 0, "no": 0} was scored 0; {"maybe": 1} or {"Yes": ...} ended in a KeyError traceback."""
    labels = ["yes", "no"]
    for probs, fragment in (({"yes": 0.0, "no": 0.0}, "summing to 0, not 1"), ({"maybe": 1.0}, "'maybe'"),
                            ({"Yes": 0.5, " no": 0.5}, "'Yes', ' no', which are not among the labels asked"),
                            ({"yes": 0.5, "no": 0.2}, "summing to 0.7")):
        with pytest.raises(BackendError, match=fragment):
            check_completion(Completion(text="yes", label_probs=probs), "scripted/x", labels)
    filled = check_completion(Completion(text="no", label_probs={"no": 1.0}), "scripted/x", labels)
    assert filled.label_probs == {"yes": 0.0, "no": 1.0}  # a label left out has probability 0


def test_label_probabilities_a_judge_gets_wrong_make_the_answer_unscored(tmp_path: Path) -> None:
    """Through the executable: the call fails typed, the answer is Unscored with the reason, no traceback."""
    write_jsonl(tmp_path / "items.jsonl", [ITEM])
    for probs in ({"yes": 0, "no": 0}, {"maybe": 1}):
        rules = [{"match": r"<query>.*<reference>", "responses": [criteria_json("three years")], "repeat": True},
                 {"match": r"<query>.*<answer>", "responses": [elements_json("three years")], "repeat": True},
                 {"match": ".", "responses": [{"label_probs": probs}], "repeat": True}]
        (tmp_path / "s.json").write_text(json.dumps({"rules": rules}))
        store = tmp_path / f"r{len(probs)}.db"
        proc = run("eval", "dece", "items.jsonl", "--judge", f"scripted/{tmp_path / 's.json'}", "--verdicts", "direct",
                   "--store", store.name, "--no-progress", cwd=tmp_path)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode in (0, 4), proc.stdout + proc.stderr
        exported = run("export", store.name, "--format", "jsonl", "-o", "rows.jsonl", "--force", cwd=tmp_path)
        assert exported.returncode == 0, exported.stderr
        rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
        assert rows[0]["precision"] is None and rows[0]["recall"] is None, rows[0]
        assert "label" in rows[0]["unscored_reason"], rows[0]["unscored_reason"]


def test_a_derived_number_out_of_range_makes_the_item_unscored(tmp_path: Path, monkeypatch: Any) -> None:
    from assay.core.registry import methods

    cls = methods()["pointwise"]
    original = cls.evaluate

    async def evaluate(self: Any, item: Any, client: Any) -> Any:
        if item.id == "q1":
            raise ValueError("precision must lie in [0, 1], got 1.4")
        return await original(self, item, client)

    monkeypatch.setattr(cls, "evaluate", evaluate)
    judge = assay.judge.backends.ScriptedBackend(rules=[{"match": ".", "responses": [GRADE], "repeat": True}])
    result = assay.evaluate(items(2), "pointwise", judge, store=tmp_path / "r.db",
                            runner=RunnerConfig(progress=False))
    rows = {r.key: r for r in result.store.results(result.run_id)}
    assert [r.scores["pointwise"] for r in rows.values()].count(None) == 1
    reasons = [u["reason"] for r in rows.values() for u in r.unscored]
    assert any("out of range" in reason and "1.4" in reason for reason in reasons)


# --- 4. options that depend on each other, before anything is touched ---------------------------
def test_a_minimum_above_its_maximum_is_refused() -> None:
    from assay.methods.dece import DeCEConfig
    from assay.methods.premise.discover import DiscoveryConfig

    with pytest.raises(ValueError, match="min_text_chars=200 is above max_text_chars=160"):
        DeCEConfig(min_text_chars=200)
    with pytest.raises(ValueError, match="minimum is above the maximum"):
        DiscoveryConfig(per_pair=(6, 2))


@needs_cli
def test_dependent_options_are_refused_before_any_store_is_opened(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "items.jsonl", items(2))
    before = (tmp_path / "items.jsonl").read_bytes()
    line = one_line_error(run("eval", "pointwise", "items.jsonl", "--judge", "scripted/x.json", "--store",
                              "items.jsonl", cwd=tmp_path))
    assert "--store items.jsonl" in line and (tmp_path / "items.jsonl").read_bytes() == before
    assert "--max-drop" in one_line_error(run("gate", "missing.db", "--baseline", "other.db", cwd=tmp_path))
    assert "--baseline" in one_line_error(run("gate", "missing.db", "--max-drop", "0.1", cwd=tmp_path))
    assert "min_text_chars" in one_line_error(run("eval", "dece", "items.jsonl", "--min-text-chars", "500",
                                                  "--judge", "scripted/x.json", "--store", "d.db", cwd=tmp_path))
    assert not (tmp_path / "d.db").exists()
    # a baseline run of another method
    judge = assay.judge.backends.ScriptedBackend(rules=[{"match": ".", "responses": [GRADE], "repeat": True}])
    assay.evaluate(items(2), "pointwise", judge, store=tmp_path / "a.db", runner=RunnerConfig(progress=False))
    assay.evaluate(items(2), "rougeL", "none/none", store=tmp_path / "b.db", runner=RunnerConfig(progress=False))
    line = one_line_error(run("gate", "a.db", "--baseline", "b.db", "--max-drop", "0.1", cwd=tmp_path))
    assert "same method" in line


# --- 5. the UI announces itself only when it listens --------------------------------------------
@needs_cli
def test_the_ui_url_is_printed_only_once_it_accepts_connections(tmp_path: Path) -> None:
    judge = assay.judge.backends.ScriptedBackend(rules=[{"match": ".", "responses": [GRADE], "repeat": True}])
    assay.evaluate(items(1), "pointwise", judge, store=tmp_path / "s.db", runner=RunnerConfig(progress=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    for _ in range(4):
        assert ASSAY is not None
        proc = subprocess.Popen([ASSAY, "ui", "s.db", "--stop-after", "20"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert "http://127.0.0.1:" in line, line + (proc.stderr.read() if proc.stderr else "")
            url = line[line.index("http://"):].split()[0]
            host, port = url.split("/")[2].split(":")
            socket.create_connection((host, int(port)), timeout=2).close()  # refused before the fix
            connection = http.client.HTTPConnection(host, int(port), timeout=10)
            connection.request("GET", url.split(port, 1)[1])
            assert connection.getresponse().status < 400  # served (a redirect that sets the cookie)
            connection.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
