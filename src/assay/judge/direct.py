"""Direct verdicts: a label read from one forward pass over an isolated question.

A small judge asked for a list of verdicts in one generated JSON document copies a pattern; asked
one question at a time with the label as its very next token, the probability it gives the label
carries the signal (the reading G-Eval makes of its scores). The questions of one answer share
their prompt up to the question itself, so the judge's KV cache keeps the instructions and the
judged text, and each further question costs only its own tokens. See :func:`ask` and
:func:`point_to`.
"""

from __future__ import annotations

import string
from typing import Any

from assay.core.errors import BackendError, ScriptExhausted
from assay.core.types import CALL_FAILED, GenerateConfig, Message, Unscored
from assay.judge.runner import JudgeClient

LETTERS = string.ascii_uppercase[:25]
"""Sentence labels for evidence calls (A–Y): each one token for every judge."""
EVIDENCE_QUESTION = "Which lettered sentence shows this best? Letter only."
"""Kept short: the follow-up's tokens are all new in every evidence call (the verdict's prompt before
it is in the KV cache)."""


def lettered(sentences: list[str]) -> str:
    """The sentences as ``[A] ...`` lines (past the 25th, unlettered: they cannot be cited)."""
    return "\n".join(f"[{LETTERS[i]}] {s}" if i < len(LETTERS) else s for i, s in enumerate(sentences))


async def ask(client: JudgeClient, messages: list[Message], labels: tuple[str, ...] = ("yes", "no"),
              metric: str | None = None) -> tuple[dict[str, float] | None, str | None, Unscored | None]:
    """The judge's probability of each label as its next token: (probabilities, call key,
    None) or (None, key or None, why not)."""
    try:
        key, completion = await client.complete(messages, GenerateConfig(temperature=0.0, max_tokens=1,
                                                                         labels=list(labels)))
    except ScriptExhausted:
        raise
    except BackendError as exc:
        return None, None, Unscored(reason=f"{CALL_FAILED}: {exc}", metric=metric)
    if not completion.label_probs:
        return None, key, Unscored(reason="the judge returned no label probabilities", raw_output=completion.text,
                                   metric=metric)
    return dict(completion.label_probs), key, None


async def point_to(client: JudgeClient, messages: list[Message], answer: str, count: int,
                   metric: str | None = None) -> tuple[int | None, float | None, str | None]:
    """After a verdict (``messages`` ending with its question, ``answer`` the label it got), the
    sentence it rests on: one more forward pass over the lettered sentences (its prompt extends the
    verdict's, so only the follow-up is new). The most probable sentence is taken and its
    probability kept: a small judge asked whether any sentence applies answers "none" by habit, so
    grounding is left to the deterministic checks. Returns (1-based sentence or None, its
    probability, call key)."""
    labels = tuple(LETTERS[: min(count, len(LETTERS))])
    if len(labels) == 1:  # one sentence: nothing to choose
        return 1, 1.0, None
    follow_up = [*messages, Message(role="assistant", content=answer), Message(role="user", content=EVIDENCE_QUESTION)]
    probs, key, _problem = await ask(client, follow_up, labels, metric)
    if probs is None:
        return None, None, key
    best = max(probs, key=lambda k: probs[k])
    return LETTERS.index(best) + 1, probs[best], key


def record(p_yes: float, evidence: int | None, p_evidence: float | None, sentences: list[str],
           figures_missing: list[str] | None, policy: str, source_name: str) -> dict[str, Any]:
    """A direct verdict's record: the judge's probability, the sentence it rests on, and what the
    deterministic checks did to it (a positive verdict that cites nothing or asserts figures the
    text lacks counts 0 under the ``require`` policy; the record says which check decided)."""
    positive = p_yes >= 0.5
    problems = []
    if positive and evidence is None:
        problems.append(f"points to no sentence of the {source_name}")
    if positive and figures_missing:
        problems.append(f"states {', '.join(figures_missing)}, which the {source_name} does not contain")
    blocked = bool(problems) and policy == "require"
    return {"p_judge": p_yes, "judge_score": int(positive), "soft": 0.0 if blocked else p_yes,
            "evidence": [evidence] if evidence else [], "evidence_p": p_evidence,
            "quote": sentences[evidence - 1] if evidence else "", "quote_found": evidence is not None,
            "figures_missing": figures_missing, "downgraded": ("positive verdict that " + " and ".join(problems))
            if blocked else None, "decided_by": "deterministic check" if blocked else "judge"}
