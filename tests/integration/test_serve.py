"""``python -m assay.judge.serve`` against the stock llama-cpp-python server, both real, on 127.0.0.1,
same model (SmolLM2-135M): the same greedy JSON and the same logprobs, and assay's openai
backend reads them."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import get_backend

pytestmark = pytest.mark.integration

SCHEMA = {"type": "object", "required": ["verdicts"], "additionalProperties": False,
          "properties": {"verdicts": {"type": "array", "minItems": 3, "maxItems": 3, "items": {
              "type": "object", "required": ["n", "score"], "additionalProperties": False,
              "properties": {"n": {"type": "integer"}, "score": {"type": "integer", "enum": [0, 1]}}}}}}
PROMPT = "Three verdicts as JSON, 1 for true and 0 for false: 2+2=4; the sky is green; water is wet."


def _ask(base: str) -> dict:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0,
            "max_tokens": 60, "logprobs": True, "top_logprobs": 3, "repeat_penalty": 1.0,
            "response_format": {"type": "json_object", "schema": SCHEMA}}
    response = httpx.post(f"{base}/chat/completions", json=body, timeout=300)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]


def _logprobs(choice: dict) -> list[tuple[str, float, dict[str, float]]]:
    return [(t["token"], t["logprob"], {a["token"]: a["logprob"] for a in t["top_logprobs"]})
            for t in choice["logprobs"]["content"]]


def test_assay_serve_gives_the_stock_servers_output_and_logprobs(llama_server: str, assay_server: str) -> None:
    stock, ours = _ask(llama_server), _ask(assay_server)
    assert ours["message"]["content"] == stock["message"]["content"]
    assert '"verdicts"' in ours["message"]["content"]
    theirs, mine = _logprobs(stock), _logprobs(ours)
    assert len(mine) == len(theirs) > 10
    for (token_a, lp_a, top_a), (token_b, lp_b, top_b) in zip(theirs, mine, strict=True):
        assert token_a == token_b
        assert lp_b == pytest.approx(lp_a, abs=1e-3)
        assert top_b.keys() == top_a.keys()
        assert list(top_b.values()) == pytest.approx(list(top_a.values()), abs=1e-3)
    # assay's openai backend, with the llama.cpp server's repeat penalty turned off
    backend = get_backend(f"openai/smollm2@{assay_server}", schema_mode="json_object",
                          extra_body='{"repeat_penalty": 1.0}')

    async def once() -> Completion:
        try:
            return await backend.generate([Message(role="user", content=PROMPT)],
                                          GenerateConfig(max_tokens=60, json_schema=SCHEMA, logprobs=True,
                                                         top_logprobs=3))
        finally:
            await backend.aclose()

    completion = asyncio.run(once())
    # (not compared with the first answer token for token: this request re-uses the cached prompt
    # prefix, and llama.cpp's logits then differ in the last digits, enough to flip a space)
    assert len(json.loads(completion.text)["verdicts"]) == 3
    assert completion.logprobs is not None
    assert "".join(t.token for t in completion.logprobs) == completion.text


def test_a_completion_cut_by_max_tokens_keeps_its_last_tokens_logprob() -> None:
    from llama_cpp import Llama

    from assay.judge.cpu_build import usable_cpus
    from assay.judge.model import smollm_path
    from assay.judge.serve import fast_llama_class

    messages = [{"role": "user", "content": "Say hello in JSON."}]
    seen = []
    for cls in (Llama, fast_llama_class()):
        llama = cls(model_path=str(smollm_path()), n_ctx=512, logits_all=True, verbose=False,
                    n_threads=usable_cpus(), n_threads_batch=usable_cpus())
        choice = llama.create_chat_completion(messages=messages, max_tokens=5, temperature=0, logprobs=True,
                                              top_logprobs=2, repeat_penalty=1.0)["choices"][0]
        llama.close()
        assert choice["finish_reason"] == "length"
        seen.append([(t["token"], float(t["logprob"])) for t in choice["logprobs"]["content"]])
    stock, ours = seen
    assert len(ours) == len(stock) == 5
    assert [t for t, _ in ours] == [t for t, _ in stock]
    assert [lp for _, lp in ours] == pytest.approx([lp for _, lp in stock], abs=1e-3)
