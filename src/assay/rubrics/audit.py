"""PReMISE audit of any rubric set (``premise.txt`` §4, App. B.1, F.9, F.10). Axes built:

* ``structure`` — structural adequacy (F.9): each criterion against the five design properties
  (no conflicting requirements, unambiguous scope, response-observable, atomic,
  operationalizable), one PASS/FAIL call per (criterion, property) per judge; with a jury backend
  (``jury/A+B+C``, the paper's three judges) the majority decides (a tie fails). A criterion
  scores the number of properties it passes, out of 5; the set scores the mean.
* ``fit`` — rubric-conditioned preference accuracy (F.10): the judge sees the rubric as a
  numbered list of dimensions ("consider where relevant") and picks the better of two answers;
  the baseline is the same prompt with no dimensions. Each pair is shown in a seeded random
  order; ``votes`` > 1 samples the verdict that many times at ``temperature`` (the paper: 5 at
  0.7) and takes the majority (an even split counts as wrong: no preference stated), ``votes`` = 1
  is one greedy verdict. Reported: both accuracies, their difference with a pair-bootstrap 95% CI,
  the share of pairs whose verdict the rubric changed.

Reliability (alpha across judges, flip rate, paraphrase stability), the rest of preference fit
(applicability, ΔApp, EffDim, BT weights) and the adversarial axis have their computations in
:mod:`.metrics` but no judge protocol yet: asking for them is an error that says so.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay.prompts import defuse, load_prompt
from assay.rubrics.files import PreferencePair, RubricSet
from assay.runner import JudgeClient
from assay.stats import paired_bootstrap
from assay.structured import generate_structured
from assay.types import GenerateConfig

AXES = ("structure", "fit")
NOT_BUILT = ("reliability", "adversarial")
PROPERTIES = {
    "no_conflicts": ("No conflicting requirements",
                     "nothing the criterion asks for makes another of its requirements impossible to meet."),
    "unambiguous": ("Unambiguous scope",
                    "different judges would apply it the same way: where adherence ends and violation begins "
                    "is clear."),
    "observable": ("Response-observable",
                   "it can be judged from the request and the answer alone, without outside knowledge, fact "
                   "checking or ground truth."),
    "atomic": ("Atomic", "it measures one behaviour, not several qualities joined together (\"clear and concise\" "
                         "is two)."),
    "operational": ("Operationalizable", "it can be turned into a concrete yes/no or scaled question without "
                                         "further interpretation."),
}


class AuditConfig(BaseModel):
    votes: int = Field(default=5, ge=1, le=15)
    temperature: float = Field(default=0.7, gt=0, le=2)
    seed: int = 0
    max_reasks: int = Field(default=2, ge=0)
    max_reasoning_chars: int = Field(default=300, ge=40)


class _Design(BaseModel):
    reasoning: str
    verdict: Literal["PASS", "FAIL"]


class _Verdict(BaseModel):
    verdict: Literal["A", "B"]


class Audit:
    def __init__(self, config: AuditConfig | None = None) -> None:
        self.config = config or AuditConfig()
        self.prompts = {"structure": load_prompt("premise/structure"), "fit": load_prompt("premise/fit")}

    # structure ------------------------------------------------------------------------------------
    async def structure(self, rubric: RubricSet, client: JudgeClient) -> dict[str, Any]:
        members = getattr(client.backend, "members", None)
        judges = [client.member(k) for k in range(len(members))] if members is not None else [client]
        schema = {"type": "object", "additionalProperties": False, "required": ["reasoning", "verdict"],
                  "properties": {"reasoning": {"type": "string", "minLength": 1,
                                               "maxLength": self.config.max_reasoning_chars},
                                 "verdict": {"type": "string", "enum": ["PASS", "FAIL"]}}}
        per: list[dict[str, Any]] = []
        unparsed = 0
        for criterion in rubric.criteria:
            flags: dict[str, bool] = {}
            votes: dict[str, list[str]] = {}
            for key, (name, text) in PROPERTIES.items():
                messages = self.prompts["structure"].render(id=criterion.id, description=defuse(criterion.description),
                                                            property=name, property_description=text)
                said = []
                for judge in judges:
                    out = await generate_structured(
                        judge, messages, _Design,
                        GenerateConfig(temperature=0.0, max_tokens=40 + self.config.max_reasoning_chars // 3,
                                       seed=self.config.seed, json_schema=schema), max_reasks=self.config.max_reasks)
                    if out.value is None:
                        unparsed += 1
                        said.append("unparsed")
                    else:
                        said.append(out.value.verdict)
                votes[key] = said
                flags[key] = said.count("PASS") * 2 > len(judges)
            per.append({"id": criterion.id, "structure": sum(flags.values()), "flags": flags, "votes": votes})
        mean = sum(p["structure"] for p in per) / len(per) if per else None
        return {"criteria": per, "mean": mean, "judges": len(judges), "unparsed_calls": unparsed}

    # preference fit -------------------------------------------------------------------------------
    def _dimensions(self, rubric: RubricSet | None) -> str:
        if rubric is None:
            return ""
        lines = "\n".join(f"{n}. [{c.id}]: {c.description}" for n, c in enumerate(rubric.criteria, 1))
        return ("\nDimensions to weigh where they apply (not every one applies to every request):\n"
                f"<criteria>\n{defuse(lines)}\n</criteria>\n")

    async def _verdict(self, pair: PreferencePair, rubric: RubricSet | None, client: JudgeClient) -> dict[str, Any]:
        cfg = self.config
        chosen_first = random.Random(f"{cfg.seed}:{pair.id}").random() < 0.5
        a, b = (pair.chosen, pair.rejected) if chosen_first else (pair.rejected, pair.chosen)
        messages = self.prompts["fit"].render(dimensions=self._dimensions(rubric), prompt=defuse(pair.prompt.strip()),
                                              answer_a=defuse(a.strip()), answer_b=defuse(b.strip()))
        schema = {"type": "object", "additionalProperties": False, "required": ["verdict"],
                  "properties": {"verdict": {"type": "string", "enum": ["A", "B"]}}}
        said: list[str] = []
        for n in range(cfg.votes):
            greedy = cfg.votes == 1
            out = await generate_structured(client, messages, _Verdict,
                                            GenerateConfig(temperature=0.0 if greedy else cfg.temperature,
                                                           max_tokens=16, seed=cfg.seed + n, json_schema=schema),
                                            max_reasks=cfg.max_reasks)
            if out.value is not None:
                said.append(out.value.verdict)
        counts = Counter(said)
        winner = "A" if chosen_first else "B"
        majority = counts.most_common(1)[0][0] if said and counts["A"] != counts["B"] else None
        return {"pair": pair.id, "votes": dict(counts), "majority": majority, "preferred": winner,
                "correct": majority == winner, "parsed": len(said)}

    async def fit(self, rubric: RubricSet, pairs: list[PreferencePair], client: JudgeClient) -> dict[str, Any]:
        with_rubric = [await self._verdict(p, rubric, client) for p in pairs]
        without = [await self._verdict(p, None, client) for p in pairs]
        x = [float(r["correct"]) for r in with_rubric]
        y = [float(r["correct"]) for r in without]
        boot = paired_bootstrap(x, y, resamples=2000, seed=self.config.seed) if len(pairs) > 1 else None
        changed = sum(1 for r, b in zip(with_rubric, without, strict=True) if r["majority"] != b["majority"])
        return {"pairs": len(pairs), "votes": self.config.votes,
                "accuracy_rubric": sum(x) / len(x) if x else None, "accuracy_no_rubric": sum(y) / len(y) if y else None,
                "delta": (sum(x) - sum(y)) / len(x) if x else None,
                "delta_ci": list(boot.ci) if boot is not None and boot.ci is not None else None,
                "changed_verdicts": changed, "rows": {"rubric": with_rubric, "no_rubric": without}}
