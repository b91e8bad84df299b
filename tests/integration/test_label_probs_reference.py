"""The label-probability primitive against a reference, whatever path the call takes.

Reference: a new ``Llama`` (every token's logits kept) evaluates the whole chat-templated prompt
once, from nothing; the next-token distribution is its last row. Every way assay reads P(label) —
KV snapshots on and off (``logits_all`` no longer changes how llama.cpp is loaded), a cold start
and a warm cache (prefix reuse and restored snapshots), the child process, an OpenAI-compatible
server (llama-cpp-python's, on 127.0.0.1, top 20 logprobs) and LiteLLM in front of that server —
must give the reference's probabilities within 1e-3. A server returns only its top 20 tokens: a
label variant outside them is missing from its mass, so the server paths are compared with the
reference cut to its own top 20 tokens (the server's logprobs equal the reference's to 1e-6 on the
tokens both list). The same for the logprobs of generated tokens (soft verdicts, G-Eval).

Why: with llama.cpp's ``logits_all`` on, its logits buffer holds one row per token of the last
batch, and a label call that read its first row read the wrong token's distribution (P(yes) 0.473
read as 0.012 on one criterion) — a number that looks right. (The server here is still started
with ``--logits_all true``, which now only allows logprobs.) SmolLM2-135M for speed; one prompt on
the embedded judge itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from assay.core.types import GenerateConfig, Message
from assay.judge.backends._llamacpp import LlamaCppBackend
from assay.judge.cpu_build import usable_cpus
from assay.judge.model import smollm_path

pytestmark = pytest.mark.integration

LABELS = ["yes", "no"]
CONTEXT = ("Clause 4.2: the supplier invoices monthly; payment is due within 45 days of the invoice date. "
           "Late payments carry interest of 2% per month. Clause 7: either party may terminate with 90 days of "
           "written notice. ")
PROMPTS = [
    [Message(role="system", content="You check statements against a contract. Answer yes or no."),
     Message(role="user", content=f"{CONTEXT}\nQuestion: is payment due within 45 days? Statement: {s}")]
    for s in ("The buyer pays within 45 days.", "The buyer pays within 30 days.", "Notice is 90 days.",
              "Interest on late payments is 5%.")
]
TOL = 1e-3


def reference_probs(path: str, backend: LlamaCppBackend, messages: list[Message],
                    labels: list[str], top: int | None = None,
                    after: list[Message] | None = None) -> dict[str, float]:
    """A fresh Llama, all logits kept, the whole prompt evaluated once: the last row. ``top``: only
    the ``top`` most likely tokens count, as a server that returns its top 20 logprobs sees them.
    ``after``: evaluate that prompt first and keep what it shares with this one, then the rest (a warm
    cache's two steps)."""
    from llama_cpp import Llama

    fresh = Llama(model_path=path, n_ctx=2048, logits_all=True, verbose=False, n_threads=usable_cpus(),
                  n_threads_batch=usable_cpus())
    try:
        prompt = backend._chat_prompt(fresh, messages)
        tokens = fresh.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        if after is not None:
            first = fresh.tokenize(backend._chat_prompt(fresh, after).encode("utf-8"), add_bos=False, special=True)
            fresh.eval(first)
            shared = next((i for i, (a, b) in enumerate(zip(first, tokens, strict=False)) if a != b),
                          min(len(first), len(tokens)))
            fresh.n_tokens = min(shared, len(tokens) - 1)
            fresh.eval(tokens[fresh.n_tokens:])
        else:
            fresh.eval(tokens)
        row = np.asarray(fresh.scores[len(tokens) - 1], dtype=np.float64)
        ids = backend.label_token_ids(fresh, labels)
    finally:
        fresh.close()
    weights = np.exp(row - row.max())
    if top is not None:
        kept = set(int(t) for t in np.argsort(-row)[:top])
        ids = {label: found & kept for label, found in ids.items()}
    mass = {label: float(sum(weights[t] for t in found)) for label, found in ids.items()}
    total = sum(mass.values())
    return {label: m / total for label, m in mass.items()}


def probs_by(backend: Any, prompts: list[list[Message]], labels: list[str] = LABELS) -> list[dict[str, float]]:
    async def run() -> list[dict[str, float]]:
        out = []
        for messages in prompts:
            done = await backend.generate(messages, GenerateConfig(labels=labels, max_tokens=1))
            assert done.label_probs is not None
            out.append(done.label_probs)
        return out

    return asyncio.run(run())


@pytest.fixture(scope="module")
def references() -> list[dict[str, float]]:
    helper = LlamaCppBackend("smollm2", process="inline")
    return [reference_probs(str(smollm_path()), helper, m, LABELS) for m in PROMPTS]


@pytest.fixture(scope="module")
def top20_references() -> list[dict[str, float]]:
    """What a server that returns 20 logprobs a token can know: label variants outside the top 20
    (here " no", "NO", ...) are missing from its mass, so its P(label) differs from the full one (by
    0.007 on the first prompt) and is compared with the reference cut the same way."""
    helper = LlamaCppBackend("smollm2", process="inline")
    return [reference_probs(str(smollm_path()), helper, m, LABELS, top=20) for m in PROMPTS]


def close(got: dict[str, float], want: dict[str, float]) -> bool:
    return all(abs(got[k] - want[k]) <= TOL for k in want)


@pytest.mark.parametrize("options", [
    {"state_slots": 0},
    {"state_slots": 6},
], ids=["plain", "snapshots"])
def test_label_probs_equal_a_fresh_evaluation_cold_and_warm(references: list[dict[str, float]],
                                                           options: dict[str, Any]) -> None:
    """(With and without ``logits_all`` before; the option no longer changes how llama.cpp is
    loaded — test_generated_token_logprobs_equal_a_fresh_evaluation checks that — so both ran the
    same code.)"""
    backend = LlamaCppBackend("smollm2", n_ctx=2048, process="inline", **options)
    # twice over: the first pass starts cold, the second reuses prefixes and (with slots) snapshots
    got = probs_by(backend, PROMPTS + PROMPTS)
    asyncio.run(backend.aclose())
    for i, probs in enumerate(got):
        want = references[i % len(PROMPTS)]
        assert close(probs, want), (options, i, probs, want)


def test_label_probs_in_the_child_process(references: list[dict[str, float]]) -> None:
    backend = LlamaCppBackend("smollm2", n_ctx=2048, logits_all=True)  # the default: a child process
    got = probs_by(backend, PROMPTS)
    asyncio.run(backend.aclose())
    for probs, want in zip(got, references, strict=True):
        assert close(probs, want), (probs, want)


def test_label_probs_over_an_openai_compatible_server_and_litellm(top20_references: list[dict[str, float]],
                                                                   llama_server: str) -> None:
    from assay.judge.backends import get_backend

    server = get_backend(f"openai/smollm2@{llama_server}", schema_mode="json_object")
    for probs, want in zip(probs_by(server, PROMPTS), top20_references, strict=True):
        assert close(probs, want), ("openai", probs, want)
    via_litellm = get_backend("litellm/openai/smollm2", api_base=llama_server, api_key="none")
    for probs, want in zip(probs_by(via_litellm, PROMPTS), top20_references, strict=True):
        assert close(probs, want), ("litellm", probs, want)


def test_generated_token_logprobs_equal_a_fresh_evaluation() -> None:
    """The soft-verdict and G-Eval readings: each generated token's logprob, cold and warm."""
    from llama_cpp import Llama

    backend = LlamaCppBackend("smollm2", n_ctx=2048, logits_all=True, process="inline")
    config = GenerateConfig(max_tokens=6, temperature=0.0, logprobs=True, top_logprobs=5)

    async def generate(messages: list[Message]) -> Any:
        return await backend.generate(messages, config)

    outputs = [asyncio.run(generate(m)) for m in PROMPTS[:2] + PROMPTS[:2]]
    llama = backend.load()
    # llama.cpp's own logits_all is never on (it would compute every prompt token's logits): the
    # logprobs below come from each step's last output
    assert llama._logits_all is False
    asyncio.run(backend.aclose())
    fresh = Llama(model_path=str(smollm_path()), n_ctx=2048, logits_all=True, verbose=False,
                  n_threads=usable_cpus(), n_threads_batch=usable_cpus())
    try:
        for messages, done in zip(PROMPTS[:2] + PROMPTS[:2], outputs, strict=True):
            assert done.logprobs, done
            prompt = backend._chat_prompt(fresh, messages)
            tokens = fresh.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            generated = [fresh.tokenize(t.token.encode("utf-8"), add_bos=False, special=True) for t in done.logprobs]
            # the generated text re-tokenised token by token: each piece is one token
            if any(len(g) != 1 for g in generated):
                continue
            ids = tokens + [g[0] for g in generated]
            fresh.reset()
            fresh.eval(tokens)  # the prompt at once, then one token at a time, as generation does: a
            for token in ids[len(tokens):]:  # batch of several tokens runs other kernels (~0.02 in logprob)
                fresh.eval([token])
            for k, entry in enumerate(done.logprobs):
                row = np.asarray(fresh.scores[len(tokens) - 1 + k], dtype=np.float64)
                norm = row.max() + np.log(np.exp(row - row.max()).sum())
                want = float(row[ids[len(tokens) + k]] - norm)
                assert abs(np.exp(entry.logprob) - np.exp(want)) <= TOL, (k, entry.logprob, want)
                # and the most likely alternative is the fresh evaluation's (read from the same step)
                assert abs(np.exp(max(entry.top.values())) - np.exp(float(row.max() - norm))) <= TOL, (k, entry.top)
    finally:
        fresh.close()
    del llama


def test_the_embedded_judge_agrees_with_its_reference() -> None:
    """Two prompts on Qwen2.5-Coder-1.5B itself: the first from a cold start equals a fresh
    evaluation; the second, which reuses the first's prefix, equals a fresh evaluation in the same
    two steps. On this 4-bit model, reading a prompt in two batches instead of one moves P(yes) by
    about 0.01 (0.384 vs 0.371 here: llama.cpp's kernels differ with the batch size) — a property of
    prefix reuse, not of which logits are read; it is bounded here. (With and without logits_all
    before: the option no longer changes how llama.cpp is loaded, so the second backend ran the
    same code.)"""
    from assay.judge.model import resolve_model

    path = str(resolve_model().path)
    helper = LlamaCppBackend("default", process="inline")
    cold = reference_probs(path, helper, PROMPTS[0], LABELS)
    warm = reference_probs(path, helper, PROMPTS[1], LABELS, after=PROMPTS[0])
    whole = reference_probs(path, helper, PROMPTS[1], LABELS)
    assert abs(warm["yes"] - whole["yes"]) < 0.05, (warm, whole)
    backend = LlamaCppBackend("default", n_ctx=2048, process="inline")
    first, second = probs_by(backend, [PROMPTS[0], PROMPTS[1]])
    asyncio.run(backend.aclose())
    assert close(first, cold), (first, cold)
    assert close(second, warm), (second, warm)
