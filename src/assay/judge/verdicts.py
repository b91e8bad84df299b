"""Soft verdicts: the judge's probability of each label of a constrained JSON answer, read from
its logprobs (issue 17; the G-Eval weighting and DICE eq. 1 are two uses of the same reading).

A JSON answer generated under a schema holds its verdicts as values of known fields
(``"supported": "yes"``, ``"score": 1``, ``"verdict": "Tie"``). At the token where such a value
starts, the backend's top logprobs give the judge's distribution over what it could have written
there; :func:`field_label_probs` collects, for *every* occurrence of the field in order, the
probability mass of each allowed label and renormalises it over the label set.

Rules, so that a reader can check a number by hand:

* A candidate token counts for a label when, stripped of a leading space or quote (and of a
  closing quote, comma or brace merged into it), it is a non-empty prefix of the label or the
  label itself. Tokens that start no label (``"Yes"`` for ``yes``, ``"true"``) are not labels: the
  grammar would not have let the judge write them; their mass is dropped by the renormalisation.
* Multi-token labels: when a candidate starts several labels (``"in"`` for ``incorrect`` and
  ``irrelevant``), and it is the token the judge generated, the following generated tokens'
  top logprobs split its mass among those labels (recursively); a non-generated ambiguous
  candidate's mass is split evenly among the labels it starts and the occurrence says
  ``ambiguous``.
* A label absent from the top logprobs gets probability 0 and an upper bound in
  ``missing_bound``: the smallest listed candidate's probability, renormalised as if it were that
  label's.
* ``mass`` is the raw probability the listed candidates put on the labels before renormalising
  (how much of the judge's belief the label set holds at that position).
* An occurrence whose value token starts no label is skipped; callers match occurrences to their
  parsed verdicts and check that ``greedy`` agrees with what was parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from assay.core.types import Completion, TokenLogprob


@dataclass(frozen=True)
class LabelProbs:
    """The judge's distribution over ``labels`` at one occurrence of a field."""

    greedy: str
    """The label the judge generated there."""
    p: dict[str, float]
    """Probability of each label, renormalised over the label set (sums to 1)."""
    missing_bound: dict[str, float] = field(default_factory=dict)
    """Labels absent from the top logprobs: an upper bound of their probability."""
    mass: float = 1.0
    """Raw probability the top candidates put on the labels (before renormalising)."""
    ambiguous: bool = False
    """Some mass of a multi-token label prefix had to be split evenly."""


def _piece(token: str) -> str:
    return token.lstrip(' "').rstrip(' "},\n')


def _labels_started(token: str, labels: Sequence[str]) -> list[str]:
    """The labels ``token`` starts (a non-empty prefix of them, or the whole label)."""
    piece = _piece(token)
    if not piece:
        return []
    return [label for label in labels if label.startswith(piece) or piece == label]


def _split(tokens: Sequence[TokenLogprob], i: int, consumed: str,
           labels: Sequence[str]) -> tuple[dict[str, float], bool]:
    """Distribution among ``labels`` (which all start with ``consumed``) from generated token i on."""
    if len(labels) == 1:
        return {labels[0]: 1.0}, False
    if i >= len(tokens):
        return {label: 1.0 / len(labels) for label in labels}, True
    token = tokens[i]
    candidates = dict(token.top)
    candidates.setdefault(token.token, token.logprob)
    out = dict.fromkeys(labels, 0.0)
    ambiguous = False
    total = 0.0
    for candidate, logprob in candidates.items():
        rest = [label[len(consumed):] for label in labels]
        piece = candidate.rstrip(' "},\n')
        started = [labels[k] for k, r in enumerate(rest) if piece and (r.startswith(piece) or r == piece)]
        if not started:
            continue
        weight = math.exp(logprob)
        total += weight
        if len(started) == 1:
            out[started[0]] += weight
        elif candidate == token.token:
            sub, amb = _split(tokens, i + 1, consumed + piece, started)
            ambiguous |= amb
            for label, p in sub.items():
                out[label] += weight * p
        else:
            ambiguous = True
            for label in started:
                out[label] += weight / len(started)
    if total <= 0:
        return {label: 1.0 / len(labels) for label in labels}, True
    return {label: v / total for label, v in out.items()}, ambiguous


def _at(tokens: Sequence[TokenLogprob], i: int, labels: Sequence[str]) -> LabelProbs | None:
    token = tokens[i]
    candidates = dict(token.top)
    candidates.setdefault(token.token, token.logprob)
    mass = dict.fromkeys(labels, 0.0)
    ambiguous = False
    for candidate, logprob in candidates.items():
        started = _labels_started(candidate, labels)
        if not started:
            continue
        weight = math.exp(logprob)
        if len(started) == 1:
            mass[started[0]] += weight
        elif candidate == token.token:
            sub, amb = _split(tokens, i + 1, _piece(candidate), started)
            ambiguous |= amb
            for label, p in sub.items():
                mass[label] += weight * p
        else:
            ambiguous = True
            for label in started:
                mass[label] += weight / len(started)
    total = sum(mass.values())
    if total <= 0:
        return None
    # the label generated: the text from this token on, up to the value's end
    text = "".join(t.token for t in tokens[i:i + 8]).lstrip(' "')
    generated = [label for label in labels if text.startswith(label)
                 and not text[len(label):len(label) + 1].isalnum()]
    greedy = max(generated, key=len) if generated else max(labels, key=lambda label: mass[label])
    floor = math.exp(min(candidates.values()))
    bounds = {label: floor / (total + floor) for label in labels if mass[label] == 0.0}
    return LabelProbs(greedy=greedy, p={label: mass[label] / total for label in labels},
                      missing_bound=bounds, mass=min(1.0, total), ambiguous=ambiguous)


def field_label_probs(completion: Completion, field: str, labels: Sequence[str]) -> list[LabelProbs] | None:
    """Every occurrence of ``"field": <label>`` in a JSON completion, in generation order, with
    the judge's distribution over ``labels`` there; None when the completion has no logprobs."""
    if not completion.logprobs:
        return None
    tokens = completion.logprobs
    key = re.compile(rf'"{re.escape(field)}"\s*:\s*"?$')
    found: list[LabelProbs] = []
    text = ""
    for i, token in enumerate(tokens):
        lead = token.token[: len(token.token) - len(token.token.lstrip(' "'))]
        if _labels_started(token.token, labels) and key.search(text + lead):
            probs = _at(tokens, i, labels)
            if probs is not None:
                found.append(probs)
        text += token.token
    return found


def expected_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> float | None:
    """Σ numerator / Σ denominator (the soft counterpart of counting verdicts), None when the
    denominator sums to 0."""
    total = sum(denominator)
    return sum(numerator) / total if total > 0 else None
