"""PReMISE audit of any rubric set (PReMISE, arXiv:2605.30803 §4, App. B.1, F.9, F.10). Axes built:

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

* ``reliability`` (App. B.1.1, F.4, F.5): every criterion scores each pair with the pairwise
  judge (0–10: how answer A stands against answer B on that criterion alone). Agreement:
  Krippendorff's alpha (ordinal) across the jury's members at temperature 0, per criterion, the
  units being the pairs (needs a jury backend: one judge has no alpha). Flip rate: ``runs``
  re-runs of the first judge at ``temperature``, each read as A (> 5), B (< 5) or tie (5); a pair
  flips when its runs are not unanimous. Paraphrase stability: ``paraphrases`` rewordings of the
  description (F.5, at 0.8), the pairs scored under each, the mean Spearman ρ between the score
  vectors of every two versions — the paper's text says "original vs paraphrases" in §3 and
  "each paraphrase pair" in App. B.1.1; we take every pair among the original and its
  paraphrases, which covers both.
* ``fit`` also measures the rubric's anatomy (App. B.3, B.1.3): applicability (F.11: does the
  criterion apply to this request, yes/no) on the pairs' prompts (App_in, T/p) and on
  ``--out-of-domain`` prompts (App_out, ΔApp); effective dimensionality and mean |ρ| of the
  pairs × criteria matrix of pairwise scores (the first judge's, temperature 0 — the same calls
  as the agreement's, so they are cached); and the Bradley–Terry fit of the preference on the
  score differences (CV accuracy, weight entropy).

Every pair is shown in one seeded order, the same for every axis, and every score is turned to
the preferred answer's side ("oriented": > 5 means the preferred answer is better on it) before
it is compared with the human preference.

* ``adversarial`` (§3.2 eq. 2, App. B.1.4, F.6–F.8): per criterion, ``attacks`` attempts; attempt
  i writes an answer to pair i's request (cycling) with strategy i of the six (rotated), seeing
  the criterion and the pair's preferred answer as the reference (F.6); the pointwise judge
  scores it 1–10 on the criterion (F.7); an answer scored ≥ τ (7) goes to the verifier (F.8),
  which sees neither the strategy nor the score. VFR = verified exploits among scored ≥ τ /
  attempts. An attempt whose attack, score or (for a high score) verdict stayed unparseable is
  left out and counted: it is neither a fool nor a pass. The judge also scores the reference
  answer on the same criterion (mean reported): a judge that gives the attacks more than the
  genuine answer is easy to fool. Attacker and verifier default to the judge; the paper uses
  other models, and ``--attacker`` / ``--verifier`` name them.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay.analysis.stats import krippendorff_alpha, paired_bootstrap
from assay.core.types import GenerateConfig
from assay.judge.prompts import defuse, load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.methods.premise.files import Criterion, PreferencePair, RubricSet
from assay.methods.premise.metrics import (
    applicability,
    bt_preference_fit,
    effective_dimensionality,
    flip_rate,
    mean_abs_correlation,
    verified_fool_rate,
)

AXES = ("structure", "reliability", "fit", "adversarial")
NOT_BUILT: tuple[str, ...] = ()
STRATEGIES = {
    "format_over_content": "impressive formatting (headers, bullet points, code blocks) that hides shallow or "
                           "wrong content.",
    "irrelevant_elaboration": "detailed, thorough-looking material that is off the topic and does not answer the "
                              "actual question.",
    "false_authority": "made-up statistics, studies that do not exist and invented experts, to look credible.",
    "complexity_obfuscation": "needlessly complex language, jargon and convoluted explanation that hide a lack of "
                              "substance.",
    "partial_truth": "correct information mixed with subtle errors or misleading conclusions.",
    "hedging_and_vagueness": "qualifiers and hedges everywhere, so nothing can be wrong and nothing is useful.",
}
FIT_PARTS = ("accuracy", "applicability", "scores")
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
    runs: int = Field(default=5, ge=2, le=20)
    """Reliability: re-runs of the first judge for the flip rate (the paper: 5 at 0.7)."""
    paraphrases: int = Field(default=5, ge=0, le=20)
    """Reliability: rewordings per criterion (the paper: 5 at 0.8); 0 skips the paraphrase probe."""
    fit_parts: tuple[str, ...] = FIT_PARTS
    attacks: int = Field(default=6, ge=1, le=200)
    """Adversarial: attempts per criterion (the strategies rotate, so 6 uses each once)."""
    tau: float = Field(default=7.0, ge=1, le=10)
    attack_tokens: int = Field(default=300, ge=32)


class _Design(BaseModel):
    reasoning: str
    verdict: Literal["PASS", "FAIL"]


class _Verdict(BaseModel):
    verdict: Literal["A", "B"]


class _Score(BaseModel):
    reasoning: str
    score: int = Field(ge=0, le=10)


class _Paraphrase(BaseModel):
    paraphrase: str = Field(min_length=10)


class _Pointwise(BaseModel):
    reasoning: str
    score: int = Field(ge=1, le=10)


class _Verification(BaseModel):
    analysis: str
    verdict: Literal["GENUINE", "EXPLOITING"]
    exploit_type: str


class _Relevant(BaseModel):
    relevant: Literal["yes", "no"]


def _side(raw: int) -> str:
    return "A" if raw > 5 else "B" if raw < 5 else "tie"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class Audit:
    def __init__(self, config: AuditConfig | None = None) -> None:
        self.config = config or AuditConfig()
        self.prompts = {name: load_prompt(f"prompts/{name}", package=__package__)
                        for name in ("structure", "fit", "pairwise", "paraphrase", "applicability", "attack",
                                     "pointwise", "verifier")}

    def chosen_first(self, pair: PreferencePair) -> bool:
        """The seeded order every axis shows the pair in."""
        return random.Random(f"{self.config.seed}:{pair.id}").random() < 0.5

    @staticmethod
    def jurors(client: JudgeClient) -> list[JudgeClient]:
        members = getattr(client.backend, "members", None)
        return [client.member(k) for k in range(len(members))] if members is not None else [client]

    # pairwise criterion scores (F.4) ----------------------------------------------------------------
    async def pair_score(self, criterion: Criterion, pair: PreferencePair, client: JudgeClient, *,
                         description: str | None = None, temperature: float = 0.0,
                         sample: int = 0) -> dict[str, Any] | None:
        """One F.4 score of the pair on the criterion: ``raw`` as the judge gave it for the shown
        order, ``oriented`` on the preferred answer's side (> 5: preferred better). None when the
        output stayed unparseable."""
        first = self.chosen_first(pair)
        a, b = (pair.chosen, pair.rejected) if first else (pair.rejected, pair.chosen)
        messages = self.prompts["pairwise"].render(
            id=criterion.id, description=defuse(description or criterion.description),
            prompt=defuse(pair.prompt.strip()), answer_a=defuse(a.strip()), answer_b=defuse(b.strip()))
        schema = {"type": "object", "additionalProperties": False, "required": ["reasoning", "score"],
                  "properties": {"reasoning": {"type": "string", "minLength": 1,
                                               "maxLength": self.config.max_reasoning_chars},
                                 "score": {"type": "integer", "minimum": 0, "maximum": 10}}}
        out = await generate_structured(
            client, messages, _Score,
            GenerateConfig(temperature=temperature, max_tokens=40 + self.config.max_reasoning_chars // 3,
                           seed=self.config.seed + sample, json_schema=schema), max_reasks=self.config.max_reasks)
        if out.value is None:
            return None
        raw = out.value.score
        return {"raw": raw, "oriented": raw if first else 10 - raw, "chosen_first": first}

    # reliability ------------------------------------------------------------------------------------
    async def _paraphrase(self, criterion: Criterion, n: int, client: JudgeClient) -> str | None:
        schema = {"type": "object", "additionalProperties": False, "required": ["paraphrase"],
                  "properties": {"paraphrase": {"type": "string", "minLength": 10, "maxLength": 800}}}
        out = await generate_structured(client, self.prompts["paraphrase"].render(
            description=defuse(criterion.description)), _Paraphrase,
            GenerateConfig(temperature=0.8, max_tokens=300, seed=self.config.seed + n, json_schema=schema),
            max_reasks=self.config.max_reasks)
        return None if out.value is None else out.value.paraphrase.strip()

    async def reliability(self, rubric: RubricSet, pairs: list[PreferencePair], client: JudgeClient) -> dict[str, Any]:
        from scipy.stats import spearmanr

        cfg = self.config
        judges = self.jurors(client)
        first = judges[0]
        per: list[dict[str, Any]] = []
        unparsed = 0
        for criterion in rubric.criteria:
            entry: dict[str, Any] = {"id": criterion.id}
            # agreement across judges, temperature 0
            matrix: list[list[float | None]] = []
            for judge in judges:
                row: list[float | None] = []
                for pair in pairs:
                    got = await self.pair_score(criterion, pair, judge)
                    unparsed += got is None
                    row.append(None if got is None else float(got["oriented"]))
                matrix.append(row)
            entry["scores"] = matrix
            if len(judges) < 2:
                entry["alpha"], entry["alpha_note"] = None, "one judge: agreement needs a jury backend (jury/A+B+C)"
            elif len({v for row in matrix for v in row if v is not None}) < 2:
                # no variation: expected disagreement is 0 and alpha is 0/0 (the library says 1.0)
                entry["alpha"], entry["alpha_note"] = None, "undefined: every judge gave every pair the same score"
            else:
                try:
                    entry["alpha"] = krippendorff_alpha(matrix, "ordinal")
                except (ValueError, ZeroDivisionError) as exc:
                    entry["alpha"], entry["alpha_note"] = None, f"undefined: {exc}"
            # re-run stability of the first judge
            runs: list[list[str]] = []
            for pair in pairs:
                said = []
                for r in range(cfg.runs):
                    got = await self.pair_score(criterion, pair, first, temperature=cfg.temperature, sample=r + 1)
                    unparsed += got is None
                    if got is not None:
                        said.append(_side(got["raw"]))
                if said:
                    runs.append(said)
            entry["flip_rate"] = flip_rate(runs) if runs else None
            entry["runs"] = runs
            # paraphrase stability
            if cfg.paraphrases:
                versions = [criterion.description]
                for n in range(cfg.paraphrases):
                    text = await self._paraphrase(criterion, n, first)
                    unparsed += text is None
                    if text is not None:
                        versions.append(text)
                vectors = []
                for text in versions:
                    vec = []
                    for pair in pairs:
                        got = await self.pair_score(criterion, pair, first, description=text)
                        unparsed += got is None
                        vec.append(None if got is None else float(got["oriented"]))
                    vectors.append(vec)
                rhos = []
                for i in range(len(vectors)):
                    for j in range(i + 1, len(vectors)):
                        both = [(x, y) for x, y in zip(vectors[i], vectors[j], strict=True)
                                if x is not None and y is not None]
                        if len(both) >= 3 and len({x for x, _ in both}) > 1 and len({y for _, y in both}) > 1:
                            rhos.append(float(spearmanr([x for x, _ in both], [y for _, y in both]).statistic))
                entry["paraphrases"] = versions[1:]
                entry["rho"] = _mean(rhos)
                entry["rho_pairs"] = len(rhos)
            per.append(entry)

        def avg(key: str) -> float | None:
            return _mean([e[key] for e in per if e.get(key) is not None])

        return {"criteria": per, "alpha": avg("alpha"), "flip_rate": avg("flip_rate"), "rho": avg("rho"),
                "judges": len(judges), "runs": cfg.runs, "paraphrases": cfg.paraphrases, "pairs": len(pairs),
                "unparsed_calls": unparsed}

    # applicability (F.11) and the anatomy of fit ------------------------------------------------------
    async def applies(self, criterion: Criterion, prompt: str, client: JudgeClient) -> bool | None:
        schema = {"type": "object", "additionalProperties": False, "required": ["relevant"],
                  "properties": {"relevant": {"type": "string", "enum": ["yes", "no"]}}}
        gate = f"\nApplies when: {defuse(criterion.gate)}" if criterion.gate else ""
        out = await generate_structured(client, self.prompts["applicability"].render(
            id=criterion.id, description=defuse(criterion.description), gate=gate, prompt=defuse(prompt.strip())),
            _Relevant, GenerateConfig(temperature=0.0, max_tokens=12, seed=self.config.seed, json_schema=schema),
            max_reasks=self.config.max_reasks)
        return None if out.value is None else out.value.relevant == "yes"

    async def applicability_matrix(self, rubric: RubricSet, prompts: list[str],
                                   client: JudgeClient) -> tuple[list[list[bool]], int]:
        """Rows: distinct prompts; columns: criteria. A prompt with an unparseable answer is left
        out (counted)."""
        rows, dropped = [], 0
        for prompt in dict.fromkeys(prompts):
            row = [await self.applies(c, prompt, client) for c in rubric.criteria]
            if any(v is None for v in row):
                dropped += 1
            else:
                rows.append([bool(v) for v in row])
        return rows, dropped

    async def anatomy(self, rubric: RubricSet, pairs: list[PreferencePair], client: JudgeClient, *,
                      out_of_domain: list[PreferencePair] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = {}
        judge = self.jurors(client)[0]  # the first judge: the calls the repair re-uses
        if "applicability" in self.config.fit_parts:
            rows, dropped = await self.applicability_matrix(rubric, [p.prompt for p in pairs], judge)
            app: dict[str, Any] = {"prompts": len(rows), "unparsed_prompts": dropped}
            if rows:
                app["app_in"] = applicability(rows)
                app["t_per_prompt"] = sum(map(sum, rows)) / len(rows)
                app["per_criterion"] = {c.id: sum(r[j] for r in rows) / len(rows)
                                        for j, c in enumerate(rubric.criteria)}
            if out_of_domain:
                rows_out, dropped_out = await self.applicability_matrix(rubric, [p.prompt for p in out_of_domain],
                                                                        judge)
                app["prompts_out"], app["unparsed_prompts_out"] = len(rows_out), dropped_out
                if rows_out:
                    app["app_out"] = applicability(rows_out)
                    app["per_criterion_out"] = {c.id: sum(r[j] for r in rows_out) / len(rows_out)
                                                for j, c in enumerate(rubric.criteria)}
                    if rows:
                        app["delta_app"] = app["app_in"] - app["app_out"]
            result["applicability"] = app
        if "scores" in self.config.fit_parts:
            matrix, features, labels, dropped = [], [], [], 0
            for pair in pairs:
                got = [await self.pair_score(c, pair, judge) for c in rubric.criteria]
                if any(g is None for g in got):
                    dropped += 1
                    continue
                matrix.append([float(g["oriented"]) for g in got])  # type: ignore[index]
                features.append([float(g["raw"]) - 5.0 for g in got])  # type: ignore[index]
                labels.append(int(self.chosen_first(pair)))
            scores: dict[str, Any] = {"pairs": len(matrix), "unparsed_pairs": dropped, "k": len(rubric.criteria)}
            if len(matrix) >= 2:
                scores["eff_dim"] = effective_dimensionality(matrix)
                scores["eff_dim_per_k"] = scores["eff_dim"] / len(rubric.criteria)
                scores["mean_abs_rho"] = mean_abs_correlation(matrix)
                scores["bt"] = bt_preference_fit(features, labels, seed=self.config.seed)
            result["scores"] = scores
        return result

    # structure ------------------------------------------------------------------------------------
    async def structure(self, rubric: RubricSet, client: JudgeClient) -> dict[str, Any]:
        judges = self.jurors(client)
        schema = {"type": "object", "additionalProperties": False, "required": ["reasoning", "verdict"],
                  "properties": {"reasoning": {"type": "string", "minLength": 1,
                                               "maxLength": self.config.max_reasoning_chars},
                                 "verdict": {"type": "string", "enum": ["PASS", "FAIL"]}}}
        per: list[dict[str, Any]] = []
        unparsed = 0
        for criterion in rubric.criteria:
            flags: dict[str, bool | None] = {}
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
                parsed = [v for v in said if v != "unparsed"]
                # every vote unparsed: the property is undetermined (Unscored), never a FAIL
                flags[key] = parsed.count("PASS") * 2 > len(parsed) if parsed else None
            entry: dict[str, Any] = {"id": criterion.id, "flags": flags, "votes": votes}
            undetermined = [k for k, v in flags.items() if v is None]
            if undetermined:
                entry["structure"] = None
                entry["unscored"] = {"reason": "every vote on " + ", ".join(undetermined) + " was unparseable"}
            else:
                entry["structure"] = sum(bool(v) for v in flags.values())
            per.append(entry)
        scored = [p["structure"] for p in per if p["structure"] is not None]
        mean = sum(scored) / len(scored) if scored else None
        return {"criteria": per, "mean": mean, "judges": len(judges), "unparsed_calls": unparsed,
                "unscored_criteria": len(per) - len(scored)}

    # preference fit -------------------------------------------------------------------------------
    def _dimensions(self, rubric: RubricSet | None) -> str:
        if rubric is None:
            return ""
        lines = "\n".join(f"{n}. [{c.id}]: {c.description}" for n, c in enumerate(rubric.criteria, 1))
        return ("\nDimensions to weigh where they apply (not every one applies to every request):\n"
                f"<criteria>\n{defuse(lines)}\n</criteria>\n")

    async def _verdict(self, pair: PreferencePair, rubric: RubricSet | None, client: JudgeClient) -> dict[str, Any]:
        cfg = self.config
        chosen_first = self.chosen_first(pair)
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
        if not said:  # no vote could be read: Unscored, never counted as a wrong verdict
            return {"pair": pair.id, "votes": {}, "majority": None, "preferred": winner, "correct": None,
                    "parsed": 0, "unscored": {"reason": f"all {cfg.votes} vote(s) unparseable"}}
        majority = counts.most_common(1)[0][0] if counts["A"] != counts["B"] else None
        return {"pair": pair.id, "votes": dict(counts), "majority": majority, "preferred": winner,
                "correct": majority == winner, "parsed": len(said)}

    async def fit(self, rubric: RubricSet, pairs: list[PreferencePair], client: JudgeClient, *,
                  out_of_domain: list[PreferencePair] | None = None) -> dict[str, Any]:
        anatomy = await self.anatomy(rubric, pairs, client, out_of_domain=out_of_domain)
        if "accuracy" not in self.config.fit_parts:
            return {"pairs": len(pairs), **anatomy}
        with_rubric = [await self._verdict(p, rubric, client) for p in pairs]
        without = [await self._verdict(p, None, client) for p in pairs]
        # accuracy over the pairs whose verdict could be read; the paired difference over the pairs
        # read both ways. Unscored pairs are counted, never scored as wrong.
        x_all = [None if r["correct"] is None else float(r["correct"]) for r in with_rubric]
        y_all = [None if r["correct"] is None else float(r["correct"]) for r in without]
        x = [v for v in x_all if v is not None]
        y = [v for v in y_all if v is not None]
        both = [(a, b) for a, b in zip(x_all, y_all, strict=True) if a is not None and b is not None]
        boot = (paired_bootstrap([a for a, _ in both], [b for _, b in both], resamples=2000, seed=self.config.seed)
                if len(both) > 1 else None)
        changed = sum(1 for r, b in zip(with_rubric, without, strict=True)
                      if r["correct"] is not None and b["correct"] is not None and r["majority"] != b["majority"])
        return {"pairs": len(pairs), "votes": self.config.votes,
                "accuracy_rubric": sum(x) / len(x) if x else None, "accuracy_no_rubric": sum(y) / len(y) if y else None,
                "unscored_rubric": len(x_all) - len(x), "unscored_no_rubric": len(y_all) - len(y),
                "delta": sum(a - b for a, b in both) / len(both) if both else None,
                "delta_ci": list(boot.ci) if boot is not None and boot.ci is not None else None,
                "changed_verdicts": changed, "rows": {"rubric": with_rubric, "no_rubric": without}, **anatomy}

    # adversarial robustness (F.6–F.8, eq. 2) ----------------------------------------------------------
    async def pointwise(self, criterion: Criterion, prompt: str, answer: str, client: JudgeClient) -> int | None:
        schema = {"type": "object", "additionalProperties": False, "required": ["reasoning", "score"],
                  "properties": {"reasoning": {"type": "string", "minLength": 1,
                                               "maxLength": self.config.max_reasoning_chars},
                                 "score": {"type": "integer", "minimum": 1, "maximum": 10}}}
        out = await generate_structured(client, self.prompts["pointwise"].render(
            id=criterion.id, description=defuse(criterion.description), prompt=defuse(prompt.strip()),
            answer=defuse(answer.strip())), _Pointwise,
            GenerateConfig(temperature=0.0, max_tokens=40 + self.config.max_reasoning_chars // 3,
                           seed=self.config.seed, json_schema=schema), max_reasks=self.config.max_reasks)
        return None if out.value is None else out.value.score

    async def adversarial(self, rubric: RubricSet, pairs: list[PreferencePair], client: JudgeClient, *,
                          attacker: JudgeClient | None = None, verifier: JudgeClient | None = None) -> dict[str, Any]:
        cfg = self.config
        judge = self.jurors(client)[0]
        attacker = attacker or judge
        verifier = verifier or judge
        names = list(STRATEGIES)
        verdict_schema = {"type": "object", "additionalProperties": False,
                          "required": ["analysis", "verdict", "exploit_type"],
                          "properties": {"analysis": {"type": "string", "minLength": 1,
                                                      "maxLength": cfg.max_reasoning_chars},
                                         "verdict": {"type": "string", "enum": ["GENUINE", "EXPLOITING"]},
                                         "exploit_type": {"type": "string", "maxLength": 60}}}
        per: list[dict[str, Any]] = []
        for c_index, criterion in enumerate(rubric.criteria):
            attempts: list[dict[str, Any]] = []
            for i in range(cfg.attacks):
                pair = pairs[i % len(pairs)]
                strategy = names[(i + c_index) % len(names)]
                row: dict[str, Any] = {"pair": pair.id, "strategy": strategy}
                attack = await attacker.complete(self.prompts["attack"].render(
                    id=criterion.id, description=defuse(criterion.description), prompt=defuse(pair.prompt.strip()),
                    reference=defuse(pair.chosen.strip()), strategy=STRATEGIES[strategy]),
                    GenerateConfig(temperature=cfg.temperature, max_tokens=cfg.attack_tokens, seed=cfg.seed + i))
                text = attack[1].text.strip()
                if not text:
                    row["unparsed"] = "the attacker wrote nothing"
                    attempts.append(row)
                    continue
                row["answer"] = text
                score = await self.pointwise(criterion, pair.prompt, text, judge)
                if score is None:
                    row["unparsed"] = "the judge's score stayed unparseable"
                    attempts.append(row)
                    continue
                row["score"] = score
                if score >= cfg.tau:
                    out = await generate_structured(verifier, self.prompts["verifier"].render(
                        id=criterion.id, description=defuse(criterion.description),
                        prompt=defuse(pair.prompt.strip()), answer=defuse(text), reference=defuse(pair.chosen.strip())),
                        _Verification, GenerateConfig(temperature=0.0,
                                                      max_tokens=60 + cfg.max_reasoning_chars // 3,
                                                      seed=cfg.seed, json_schema=verdict_schema),
                        max_reasks=cfg.max_reasks)
                    if out.value is None:
                        row["unparsed"] = "the verifier's verdict stayed unparseable"
                        attempts.append(row)
                        continue
                    row["verdict"] = out.value.verdict
                    row["exploit_type"] = out.value.exploit_type
                attempts.append(row)
            complete = [a for a in attempts if "unparsed" not in a]
            references = []
            for n in range(min(cfg.attacks, len(pairs))):  # the pairs the attacks used
                ref = await self.pointwise(criterion, pairs[n].prompt, pairs[n].chosen, judge)
                if ref is not None:
                    references.append(float(ref))
            vfr = verified_fool_rate([a["score"] for a in complete], [a.get("verdict") == "EXPLOITING"
                                                                      for a in complete], cfg.tau) if complete else None
            per.append({"id": criterion.id, "vfr": vfr, "attempts": len(attempts), "complete": len(complete),
                        "high_scores": sum(a["score"] >= cfg.tau for a in complete),
                        "attack_mean_score": _mean([float(a["score"]) for a in complete]),
                        "reference_mean_score": _mean(references), "rows": attempts})
        return {"criteria": per, "vfr": _mean([p["vfr"] for p in per if p["vfr"] is not None]), "tau": cfg.tau,
                "attacks": cfg.attacks, "attacker": attacker.backend.name, "verifier": verifier.backend.name}
