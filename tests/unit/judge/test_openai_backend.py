"""The OpenAI backend against httpx.MockTransport (no server): request shape and error mapping.
The real round trip against a llama.cpp server is in tests/integration."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from assay.core.errors import BackendError, ConfigError, RateLimited, TransientBackendError
from assay.core.types import GenerateConfig, Message
from assay.judge.backends import get_backend
from assay.judge.backends._openai import OpenAIBackend

MSG = [Message(role="user", content="hi")]


def backend_with(handler, **kwargs) -> OpenAIBackend:  # type: ignore[no-untyped-def]
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", http_client=client, **kwargs)


def ok_body(text: str = '{"a": 1}') -> dict:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text},
                         "logprobs": {"content": [{"token": "A", "logprob": -0.1, "bytes": None,
                                                   "top_logprobs": [
                                                       {"token": "A", "logprob": -0.1, "bytes": None},
                                                       {"token": "B", "logprob": -2.3, "bytes": None}]}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


@pytest.mark.parametrize("mode, expected", [
    ("json_object", {"type": "json_object", "schema": {"type": "object"}}),
    ("json_schema", {"type": "json_schema", "json_schema": {"name": "judgement", "schema": {"type": "object"},
                                                            "strict": False}}),
])
def test_request_shape(mode: str, expected: dict) -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        return httpx.Response(200, json=ok_body())

    backend = backend_with(handler, schema_mode=mode)
    config = GenerateConfig(temperature=0.3, seed=5, max_tokens=7, json_schema={"type": "object"},
                            logprobs=True, top_logprobs=2)
    completion = asyncio.run(backend.generate(MSG, config))
    assert seen["response_format"] == expected
    assert (seen["seed"], seen["max_tokens"], seen["temperature"], seen["top_logprobs"]) == (5, 7, 0.3, 2)
    assert completion.text == '{"a": 1}' and completion.usage.total == 8
    assert completion.logprobs is not None and completion.logprobs[0].top == {"A": -0.1, "B": -2.3}


def test_429_carries_retry_after() -> None:
    backend = backend_with(lambda r: httpx.Response(429, headers={"retry-after": "2"},
                                                    json={"error": {"message": "slow down"}}))
    with pytest.raises(RateLimited) as info:
        asyncio.run(backend.generate(MSG, GenerateConfig()))
    assert info.value.retry_after == 2.0


@pytest.mark.parametrize("status, error", [(500, TransientBackendError), (503, TransientBackendError),
                                           (400, BackendError)])
def test_status_mapping(status: int, error: type) -> None:
    backend = backend_with(lambda r: httpx.Response(status, json={"error": {"message": "x"}}))
    with pytest.raises(error) as info:
        asyncio.run(backend.generate(MSG, GenerateConfig()))
    assert type(info.value) is error


def test_names_and_keys() -> None:
    backend = get_backend("openai/qwen@http://127.0.0.1:8080/v1", schema_mode="json_object")
    assert backend.identity() == {"backend": "openai", "model": "qwen", "base_url": "http://127.0.0.1:8080/v1",
                                  "schema_mode": "json_object"}
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get_backend("openai/gpt-4o-mini")
    with pytest.raises(ConfigError, match="provider/model"):
        get_backend("gpt-4o")
    with pytest.raises(ConfigError, match="unknown judge provider"):
        get_backend("nope/x")


def test_extra_body_is_sent_and_part_of_the_identity() -> None:
    seen: dict = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        body = ok_body()
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": 4}
        return httpx.Response(200, json=body)

    plain = backend_with(handler)
    backend = backend_with(handler, extra_body='{"repeat_penalty": 1.0}')  # a --judge-opt value is a string
    completion = asyncio.run(backend.generate(MSG, GenerateConfig(max_tokens=5)))
    assert seen["repeat_penalty"] == 1.0
    assert completion.usage.cached_prompt_tokens == 4  # OpenAI's prompt_tokens_details.cached_tokens
    assert backend.identity()["extra_body"] == {"repeat_penalty": 1.0}
    assert "extra_body" not in plain.identity()  # runs stored before the option keep their ids
    seen.clear()
    asyncio.run(plain.generate(MSG, GenerateConfig(max_tokens=5)))
    assert "repeat_penalty" not in seen
    with pytest.raises(ConfigError, match="extra_body is not JSON"):
        backend_with(handler, extra_body="repeat_penalty=1")
    with pytest.raises(ConfigError, match="extra_body must be a JSON object"):
        backend_with(handler, extra_body="[1]")
