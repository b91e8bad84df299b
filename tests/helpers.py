"""Test helpers: scripted DeCE judges and a fake content-aware judge."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from assay.core.types import Completion, GenerateConfig, Message, Usage
from assay.judge.backends import JudgeBackend

# An integration test that loads no model and starts no model server (Phoenix, Ray, Chromium, scripted
# judges): `make test` runs these beside the unit tests, one after another on one pytest-xdist worker
# (their own group), not in the part that keeps the cores for the models. A test that loads a
# model must not carry it: it would share the cores with the unit tests.
NO_MODEL = (pytest.mark.no_model, pytest.mark.xdist_group("no_model"))


def no_model(test: Any) -> Any:
    """Mark one test as :data:`NO_MODEL`."""
    for mark in NO_MODEL:
        test = mark(test)
    return test


ITEM = {
    "id": "q1",
    "query": "What is the limitation period for negligence in New York?",
    "response": "It is three years under CPLR 214(5). Municipal claims need notice within 90 days.",
    "reference": {"required": "Three years under CPLR 214(5). Notice of claim within 90 days for "
                              "municipalities.", "helpful": "Malpractice: 2.5 years."},
    "system": "s1",
}


def criteria_json(*criteria: str) -> str:
    return json.dumps({"criteria": list(criteria)})


def elements_json(*elements: str) -> str:
    return json.dumps({"elements": list(elements)})


def verdicts_json(field: str, scores: list[int], evidence: list[list[int]] | None = None) -> str:
    # By default each verdict cites sentence 1, so positive verdicts are grounded.
    cited = evidence or [[1]] * len(scores)
    return json.dumps({"verdicts": [{field: i, "evidence": e, "reasoning": f"because {i}", "score": s}
                                    for i, (s, e) in enumerate(zip(scores, cited, strict=True), 1)]})


def dece_rules(criteria: list[str], elements: list[str], sat: list[int], ver: list[int],
               repeat: bool = True) -> list[dict[str, Any]]:
    """Rules for the scripted backend answering each DeCE step, told apart by their delimiters."""
    return [
        {"match": r"<elements>", "responses": [verdicts_json("element", ver)], "repeat": repeat},
        {"match": r"<criteria>", "responses": [verdicts_json("criterion", sat)], "repeat": repeat},
        {"match": r"<query>.*<reference>", "responses": [criteria_json(*criteria)], "repeat": repeat},
        {"match": r"<query>.*<answer>", "responses": [elements_json(*elements)], "repeat": repeat},
    ]


class KeywordJudge(JudgeBackend):
    """A deterministic fake judge that reads the prompt: a criterion is satisfied when its first
    word occurs in the answer; an element is supported when its first word occurs in the
    reference. Order-independent, so results can be compared across runs."""

    name = "fake/keyword"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        self.calls += 1
        user = next(m.content for m in messages if m.role == "user")
        block = lambda tag: re.search(rf"<{tag}>\n(.*?)\n</{tag}>", user, re.S)  # noqa: E731
        if "<elements>" in user:
            reference = block("reference").group(1).lower()  # type: ignore[union-attr]
            elements = re.findall(r"^\d+\. (.*)$", block("elements").group(1), re.M)  # type: ignore[union-attr]
            text = verdicts_json("element", [int(e.split()[0].lower() in reference) for e in elements])
        elif "<criteria>" in user:
            answer = block("answer").group(1).lower()  # type: ignore[union-attr]
            criteria = re.findall(r"^\d+\. (.*)$", block("criteria").group(1), re.M)  # type: ignore[union-attr]
            text = verdicts_json("criterion", [int(c.split()[0].lower() in answer) for c in criteria])
        elif "<reference>" in user:
            required = block("reference").group(1).split("Helpful Information")[0]  # type: ignore[union-attr]
            words = [w for w in re.findall(r"[A-Za-z0-9()]+", required) if len(w) > 3][:4]
            text = criteria_json(*words)
        else:
            answer = block("answer").group(1)  # type: ignore[union-attr]
            text = elements_json(*[w for w in re.findall(r"[A-Za-z0-9()]+", answer) if len(w) > 3][:5])
        return Completion(text=text, usage=Usage(prompt_tokens=len(user) // 4, completion_tokens=len(text) // 4),
                          finish_reason="stop", backend="fake", model="keyword")


class WithLogprobs(JudgeBackend):
    """Wraps a judge and gives its JSON answers logprobs: at each value of a listed field, the
    next probability from ``p_first[field]`` goes to that field's first label, the rest to the
    second (``labels[field]``); every other piece of text is one certain token."""

    def __init__(self, inner: JudgeBackend, labels: dict[str, tuple[str, str]], p_first: dict[str, list[float]]):
        self.inner, self.labels, self.p_first = inner, labels, {k: list(v) for k, v in p_first.items()}
        self.name = inner.name
        self.max_concurrency = 1
        self.capabilities = inner.capabilities.model_copy(update={"logprobs": True})

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        import math

        from assay.core.types import TokenLogprob

        completion = await self.inner.generate(messages, config)
        if not config.logprobs:
            return completion
        text, tokens, cursor = completion.text, [], 0
        fields = "|".join(map(re.escape, self.labels))
        for m in re.finditer(rf'"({fields})":\s*"?([\w]+)', text):
            first, second = self.labels[m.group(1)]
            p = self.p_first[m.group(1)].pop(0)
            top = {first: math.log(p), second: math.log(1 - p)}
            tokens.append(TokenLogprob(token=text[cursor:m.start(2)], logprob=0.0))
            tokens.append(TokenLogprob(token=m.group(2), logprob=top[m.group(2)], top=top))
            cursor = m.end(2)
        tokens.append(TokenLogprob(token=text[cursor:], logprob=0.0))
        return completion.model_copy(update={"logprobs": tokens})
