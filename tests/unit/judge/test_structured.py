from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from assay.core.types import GenerateConfig, Message
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import JudgeClient, RunnerConfig
from assay.judge.structured import OutputInvalid, extract_json, generate_structured, parse_output
from assay.store import Store


class Out(BaseModel):
    score: int


@pytest.mark.parametrize("text, expected", [
    ('{"score": 1}', {"score": 1}),
    ('```json\n{"score": 2}\n```', {"score": 2}),
    ('Sure! Here it is: {"score": 3} hope that helps', {"score": 3}),
])
def test_extract_json_accepts_common_wrappings(text: str, expected: dict) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize("text, fragment", [
    ("no json here", "no JSON object"),
    ('{"score": ', "invalid JSON"),
    ('{"score": "high"}', "does not match the schema: score"),
    ('{"points": 1}', "score: Field required"),
    ('{"score": true}', "score: a number is required, not true or false"),
    ('{"score": false}', "score: a number is required, not true or false"),
])
def test_parse_output_explains_the_failure(text: str, fragment: str) -> None:
    with pytest.raises(OutputInvalid, match=fragment):
        parse_output(text, Out)


def _client(responses: list) -> tuple[JudgeClient, ScriptedBackend]:
    backend = ScriptedBackend(responses)
    return JudgeClient(backend, Store(), RunnerConfig(progress=False, backoff_initial_s=0.0)), backend


MESSAGES = [Message(role="user", content="grade it")]


def test_reask_carries_the_validation_error_then_succeeds() -> None:
    client, backend = _client(["not json at all", '{"score": 4}'])
    outcome = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig()))
    assert outcome.value == Out(score=4)
    assert len(outcome.attempts) == 2
    second_call = backend.calls[1]
    assert second_call[-2].role == "assistant" and second_call[-2].content == "not json at all"
    assert "no JSON object" in second_call[-1].content


def test_fails_closed_with_reason_and_raw_output() -> None:
    client, _ = _client(["nope", "still nope", '{"score": "x"}'])
    outcome = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig(), max_reasks=2,
                                              metric="m"))
    assert outcome.value is None
    assert outcome.unscored is not None
    assert outcome.unscored.raw_output == '{"score": "x"}'
    assert "after 3 attempt(s)" in outcome.unscored.reason and outcome.unscored.metric == "m"


def test_truncated_output_is_reported_as_truncated() -> None:
    client, _ = _client([{"fault": "truncated", "text": '{"sco'}] * 2)
    outcome = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig(), max_reasks=1))
    assert outcome.unscored is not None and "truncated at the token limit" in outcome.unscored.reason


def test_check_hook_failure_is_fed_back() -> None:
    def check(out: Out) -> None:
        if out.score > 3:
            raise OutputInvalid("score must be at most 3")

    client, backend = _client(['{"score": 9}', '{"score": 2}'])
    outcome = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig(), check=check))
    assert outcome.value == Out(score=2)
    assert "at most 3" in backend.calls[1][-1].content


def test_backend_failure_after_retries_is_unscored_not_a_crash() -> None:
    backend = ScriptedBackend([{"fault": "bad_request"}])
    client = JudgeClient(backend, Store(), RunnerConfig(progress=False))
    outcome = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig()))
    assert outcome.unscored is not None and "HTTP 400" in outcome.unscored.reason


def test_a_boolean_is_never_read_as_a_score_at_any_depth() -> None:
    """pydantic's lax mode reads true as 1: a judge's `"score": true` was scored 1.0, `false` 0.0."""
    from typing import Literal

    class Verdict(BaseModel):
        n: int
        score: Literal[0, 1]
        evidence: list[int] = []
        met: bool = False

    class Verdicts(BaseModel):
        verdicts: list[Verdict]

    ok = parse_output('{"verdicts": [{"n": 1, "score": 1, "evidence": [2], "met": true}]}', Verdicts)
    assert ok.verdicts[0].met is True  # a yes/no field takes true
    for bad, where in (('{"verdicts": [{"n": 1, "score": 1}, {"n": 2, "score": false}]}', "verdicts.1.score"),
                       ('{"verdicts": [{"n": 1, "score": 1, "evidence": [true]}]}', "verdicts.0.evidence.0")):
        with pytest.raises(OutputInvalid, match=f"{where}: a number is required"):
            parse_output(bad, Verdicts)


def test_an_output_a_check_refuses_is_not_called_unparseable() -> None:
    """A case-aware score outside its band was 'unparseable judge output' though it parsed and fit its schema."""
    def check(out: Out) -> None:
        if out.score > 3:
            raise OutputInvalid("score 9 is outside its band")

    client, _ = _client(['{"score": 9}'] * 3)
    refused = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig(), check=check)).unscored
    assert refused is not None
    assert refused.reason == "judge output refused by its checks after 3 attempt(s): score 9 is outside its band"
    client, _ = _client(["nope"] * 3)
    unread = asyncio.run(generate_structured(client, MESSAGES, Out, GenerateConfig())).unscored
    assert unread is not None and unread.reason.startswith("unparseable judge output after 3 attempt(s): ")
