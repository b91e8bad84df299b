"""PReMISE reliability-constrained refinement (PReMISE, arXiv:2605.30803 §3.4, App. C.1 Algorithm 2, C.2
Table 8): ``assay rubric repair --mode vfr``.

Per criterion r (the pairs are split, seeded, into a calibration part and a held-out part):

1. **Scorecards.** r is measured on the calibration pairs (for its failure packet) and on the
   held-out pairs (its metrics m_r): VFR (the audit's adversarial axis: ``attacks`` attempts,
   pointwise judge, blind verifier), preference fit (the share of pairs whose preferred answer
   the criterion's pairwise F.4 score favours, temperature 0), and reliability Rel = (alpha,
   flip rate, paraphrase ρ) from the reliability axis (alpha needs a jury backend; ρ needs
   ``paraphrases`` > 0). A criterion whose held-out VFR is 0 or unmeasurable is left as it is,
   with that reason: Algorithm 2 only accepts a lower VFR.
2. **Failure packet** C_r (§3.4): from the calibration scorecard — pairs where the criterion
   agreed with the preference, pairs where it favoured the rejected answer, borderline pairs
   (within one point of a tie), unstable pairs (re-runs disagreed), attacks that fooled the judge
   (scored ≥ τ and verified exploiting: the false accepts of the adversarial protocol) and
   attacks it resisted. Counts of each, and up to two short excerpts.
3. **Step 1, singletons.** For each operator o of the library (Table 8, the seven only;
   ``operators`` may restrict them, never add), the repair assistant L writes r'_{o}, which is
   checked against the structural budget and measured on the held-out pairs.
4. **Steps 2–3.** Every subset S of the operators with 2 ≤ |S| ≤ ``depth`` goes to the predictor
   P with the context X = (r, m_r, C_r, the singletons' texts and measured metrics, the budget);
   P writes r'_S and a predicted VFR. S is discarded when r'_S breaks the budget or the predicted
   VFR is not below VFR_r. A singleton's "prediction" is its measurement (Step 1 already measured
   it on the held-out pairs).
5. **Step 4.** The survivors are ranked by predicted gain VFR_r − VFR̂_S; the top ``beam`` stay.
6. **Step 5.** Each beam member is measured on the held-out pairs (singletons already were) and
   accepted when VFR < VFR_r, preference fit ≥ fit_r − ε and every reliability component that
   both sides have is within δ (alpha ≥ alpha_r − δ, flip ≤ flip_r + δ, ρ ≥ ρ_r − δ). δ = 0 is
   the paper's constrained operating point, δ = inf the unconstrained one.
7. **Step 6.** The Pareto frontier of the accepted on (reliability, VFR), the reliability
   coordinate being alpha when the judge is a jury and 1 − flip rate otherwise (one judge has no
   alpha). The output rubric takes, per criterion, the frontier member with the lowest VFR (ties:
   the more reliable, then fewer operators); a criterion with no accepted edit stays unchanged.

A revision is written as fields (``Draft``): at most one gate, a main definition, at most three
flat sub-criteria (the paper's decomposition "into separate rubrics" is kept inside one criterion
as numbered sub-criteria, SB-PLR (v)), caps (maximum-score caps and non-compensation rules) and
do-not-reward clauses (do-not-reward clauses and false-positive anchors: the anti-gaming clauses
of SB-PLR (iii)). L and P are only asked for the fields their operators own; every other field is
copied from r, so "only the library's operators" holds by construction. The budget SB-PLR (App.
C.1) is checked in code by :func:`sb_plr`.

The judge-call cache makes the search resumable: a killed repair re-run with the same store makes
only the calls it had not finished. Every accepted edit is saved in the output criterion's
``extra.refine`` with its operators and before/after metrics; ``--report`` has every candidate.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from assay.core.types import GenerateConfig
from assay.judge.prompts import defuse, load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import OutputInvalid, generate_structured, parse_output
from assay.methods.premise.audit import Audit
from assay.methods.premise.files import Criterion, PreferencePair, RubricSet


@dataclass(frozen=True)
class Operator:
    name: str
    fields: tuple[str, ...]
    targets: str
    does: str


# Table 8 (App. C.2): the fixed library. Each operator owns the Draft fields it may write.
OPERATORS: dict[str, Operator] = {
    "gate": Operator("Applicability gate", ("gate",), "the criterion fires on requests it has nothing to do with",
                     "add one condition naming the requests the criterion applies to; elsewhere it must not "
                     "separate answers"),
    "do_not_reward": Operator("Do-not-reward clause", ("do_not_reward",),
                              "the judge rewards surface markers (length, formatting, headings)",
                              "add a clause naming a surface marker that must earn nothing"),
    "cap": Operator("Maximum-score cap", ("caps",), "a high score in spite of a fatal flaw",
                    "add a rule that caps the score when a named fatal flaw is present"),
    "decompose": Operator("Decomposition", ("definition", "sub_criteria"), "the criterion joins several qualities",
                          "split it into at most three separate flat sub-criteria, each one quality, under a short "
                          "definition"),
    "observable": Operator("Abstract-to-observable rewrite", ("definition",),
                           "abstract wording that judges read differently",
                           "rewrite the definition as behaviours one can see in the answer"),
    "fp_anchor": Operator("False-positive anchor", ("do_not_reward",), "a known exploit fools the judge",
                          "add a note naming what looks like meeting the criterion but does not"),
    "non_compensation": Operator("Non-compensation rule", ("caps",),
                                 "strengths elsewhere make up for failing the core requirement",
                                 "add a prerequisite: when the core requirement fails, the score is capped low "
                                 "whatever else is good"),
}
_FIELD_HELP = {
    "gate": '"gate": the one condition under which the criterion applies (a kind of request), a short phrase',
    "definition": '"definition": the main definition, at most 60 words',
    "sub_criteria": '"sub_criteria": a list of at most 3 separate sub-criteria, one quality each',
    "caps": '"caps": a list of score caps; each names a fatal flaw or an unmet prerequisite and the highest '
            "score (of 10) it allows",
    "do_not_reward": '"do_not_reward": a list of at most 2 clauses naming what must earn nothing: surface markers, '
                     "or things that look like meeting the criterion but do not",
}
_FIELD_ORDER = ("gate", "definition", "sub_criteria", "caps", "do_not_reward")
_PACKET_HEADINGS = ("agreed with the preference", "favoured the rejected answer",
                    "borderline (within one point of a tie)", "unstable (re-runs disagreed)",
                    "attacks that fooled the judge (scored high, verified gaming)", "attacks the judge resisted")

MAX_WORDS, MAX_DEFINITION_WORDS, MAX_ANTI_GAMING, MAX_CLAUSE_WORDS, MAX_GATES, MAX_SUB = 150, 60, 2, 40, 1, 3
_WORD = re.compile(r"\S+")
_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_CONDITIONAL = re.compile(r"\b(if|unless|when|whenever|otherwise|except|provided)\b", re.I)
_ANTI_GAMING = re.compile(r"\bdo not reward\b|\bdoes not (?:count|constitute|satisfy|earn)\b", re.I)
_GATE_PHRASE = re.compile(r"\b(?:applies only|only applies|does not apply|not applicable|score 0 if|"
                          r"if the (?:prompt|request|question) does not)\b", re.I)
_NESTED = re.compile(r"(?:^|\s)(?:\d+[.)]|\([a-z0-9]{1,3}\)|[a-z][.)]|[-*•])\s|\n")


def words(text: str) -> int:
    return len(_WORD.findall(text))


class Draft(BaseModel):
    """A criterion in the fields the operators edit."""

    gate: str | None = None
    definition: str
    sub_criteria: list[str] = Field(default_factory=list)
    caps: list[str] = Field(default_factory=list)
    do_not_reward: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, criterion: Criterion) -> Draft:
        stored = criterion.extra.get("draft")
        if isinstance(stored, dict):
            return cls.model_validate(stored)
        return cls(gate=criterion.gate, definition=criterion.description)

    def render(self) -> str:
        """The text the judge reads; the gate is also kept in ``Criterion.gate`` (F.11)."""
        parts = [f"Applies only when: {_clause(self.gate)}."] if self.gate else []
        parts.append(self.definition.strip())
        parts += [f"{n}. {_clause(s)}." for n, s in enumerate(self.sub_criteria, 1)]
        parts += [f"Cap: {_clause(c)}." for c in self.caps]
        parts += [f"Do not reward: {_clause(d)}." for d in self.do_not_reward]
        return "\n".join(parts)

    def criterion(self, base: Criterion) -> Criterion:
        return base.model_copy(update={"description": self.render(), "gate": self.gate,
                                       "extra": {**base.extra, "draft": self.model_dump()}}, deep=True)


def _clause(text: str | None) -> str:
    return (text or "").strip().rstrip(".").strip()


def _ngrams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    tokens = _TOKEN.findall(text.lower())
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


_INSTRUCTIONS = set().union(*(_ngrams(f"{o.name}: for when {o.targets}; {o.does}.") for o in OPERATORS.values()),
                            *(_ngrams(h) for h in _FIELD_HELP.values()), *(_ngrams(h) for h in _PACKET_HEADINGS))


def sb_plr(draft: Draft, *, data_texts: Sequence[str] = (), allowed: str = "") -> list[str]:
    """The structural budget of App. C.1, checked in code; returns the violations (empty: within).

    (i) whole criterion ≤ 150 words; (ii) main definition ≤ 60 words and no nested conditionals
    (a sentence of it with two or more of if / unless / when / whenever / otherwise / except /
    provided); (iii) ≤ 2 anti-gaming clauses — the do-not-reward fields plus any "do not reward" /
    "does not count|constitute|satisfy|earn" written elsewhere — each ≤ 40 words; (iv) ≤ 1
    applicability gate — the gate field plus gate phrases ("applies only", "does not apply",
    "score 0 if" …) written elsewhere; (v) ≤ 3 sub-criteria, none with a list inside; (vi)
    prompt-agnostic: no run of five words from ``data_texts`` (the packet's requests and
    answers) that ``allowed`` (the original criterion) does not already contain."""
    out: list[str] = []
    total = words(draft.render())
    if total > MAX_WORDS:
        out.append(f"(i) {total} words > {MAX_WORDS}")
    if not draft.definition.strip():
        out.append("(ii) empty main definition")
    if (n := words(draft.definition)) > MAX_DEFINITION_WORDS:
        out.append(f"(ii) main definition {n} words > {MAX_DEFINITION_WORDS}")
    for sentence in _SENTENCE.split(draft.definition):
        if len(_CONDITIONAL.findall(sentence)) >= 2:
            out.append(f"(ii) nested conditionals in the main definition: {sentence.strip()[:80]!r}")
    elsewhere = [draft.definition, *draft.sub_criteria, *draft.caps]
    anti = len(draft.do_not_reward) + sum(len(_ANTI_GAMING.findall(t)) for t in elsewhere)
    if anti > MAX_ANTI_GAMING:
        out.append(f"(iii) {anti} anti-gaming clauses > {MAX_ANTI_GAMING}")
    for clause in draft.do_not_reward:
        if (n := words(clause)) > MAX_CLAUSE_WORDS:
            out.append(f"(iii) an anti-gaming clause of {n} words > {MAX_CLAUSE_WORDS}")
    gates = int(bool(draft.gate and draft.gate.strip())) + sum(len(_GATE_PHRASE.findall(t)) for t in elsewhere)
    if gates > MAX_GATES:
        out.append(f"(iv) {gates} applicability gates > {MAX_GATES}")
    if len(draft.sub_criteria) > MAX_SUB:
        out.append(f"(v) {len(draft.sub_criteria)} sub-criteria > {MAX_SUB}")
    for n, sub in enumerate(draft.sub_criteria, 1):
        if _NESTED.search(sub.strip()):
            out.append(f"(v) sub-criterion {n} has a list inside it")
    if data_texts:
        known = _ngrams(allowed)
        data = set().union(*(_ngrams(t) for t in data_texts))
        copied = sorted((_ngrams(draft.render()) - known) & data)
        if copied:
            out.append(f"(vi) not prompt-agnostic: copies {' '.join(copied[0])!r} from the data")
    return out


def echoes_instructions(draft: Draft, allowed: str = "") -> list[str]:
    """A revision that repeats our own instructions (an operator's description, a field's help
    text, a packet heading) is not an edit; the embedded 1.5B judge does this often. Returns the
    problem (empty: none): a run of five words from the instructions that ``allowed`` (the
    original criterion) does not contain."""
    known = _ngrams(allowed)
    copied = sorted((_ngrams(draft.render()) - known) & _INSTRUCTIONS)
    return [f"repeats the instructions instead of editing: {' '.join(copied[0])!r}"] if copied else []


class RefineConfig(BaseModel):
    operators: tuple[str, ...] = tuple(OPERATORS)
    depth: int = Field(default=2, ge=1, le=3)
    beam: int = Field(default=3, ge=1, le=64)
    epsilon: float = Field(default=0.05, ge=0)
    """Preference fit may drop by at most this much."""
    delta: float = Field(default=0.0, ge=0)
    """Reliability slack: 0 constrained, inf unconstrained."""
    holdout: float = Field(default=0.5, gt=0, lt=1)
    seed: int = 0
    max_tokens: int = Field(default=400, ge=64)
    excerpt_chars: int = Field(default=200, ge=40)
    budget_reasks: int = Field(default=1, ge=0, le=3)
    """L and P see a revision over the SB-PLR budget once more, with its violations."""


def split_pairs(pairs: list[PreferencePair], holdout: float, seed: int) -> tuple[list[PreferencePair],
                                                                                   list[PreferencePair]]:
    """Seeded split into (calibration, held-out); each keeps at least one pair."""
    if len(pairs) < 2:
        raise ValueError("the vfr repair needs at least 2 pairs (a calibration part and a held-out part)")
    order = sorted(pairs, key=lambda p: random.Random(f"{seed}:split:{p.id}").random())
    n_held = min(len(order) - 1, max(1, math.ceil(holdout * len(order))))
    return order[n_held:], order[:n_held]


def pareto(members: list[dict[str, Any]], rel_key: str = "rel") -> list[dict[str, Any]]:
    """Members not dominated on (reliability ↑, VFR ↓): no other with reliability ≥ and VFR ≤,
    one of them strict."""
    front = []
    for m in members:
        dominated = any(o is not m and o[rel_key] >= m[rel_key] and o["vfr"] <= m["vfr"]
                        and (o[rel_key] > m[rel_key] or o["vfr"] < m["vfr"]) for o in members)
        if not dominated:
            front.append(m)
    return front


def accepts(before: dict[str, Any], after: dict[str, Any], epsilon: float, delta: float) -> tuple[bool, str]:
    """Step 5's held-out test; returns the decision and why."""
    if after.get("vfr") is None:
        return False, "VFR not measurable"
    if after["vfr"] >= before["vfr"]:
        return False, f"VFR {after['vfr']:.3f} not below {before['vfr']:.3f}"
    if before.get("pref_fit") is not None:
        if after.get("pref_fit") is None:
            return False, "preference fit not measurable"
        if after["pref_fit"] < before["pref_fit"] - epsilon:
            return False, f"preference fit {after['pref_fit']:.3f} < {before['pref_fit']:.3f} − ε {epsilon:g}"
    if not math.isinf(delta):
        for key, higher_better in (("alpha", True), ("flip_rate", False), ("rho", True)):
            b, a = before.get(key), after.get(key)
            if b is None:
                continue
            if a is None:
                return False, f"{key} not measurable"
            if (a < b - delta) if higher_better else (a > b + delta):
                return False, f"{key} {a:.3f} vs {b:.3f} outside δ {delta:g}"
    return True, "accepted"


class Refiner:
    def __init__(self, auditor: Audit, config: RefineConfig | None = None) -> None:
        self.audit = auditor
        self.config = config or RefineConfig()
        unknown = [o for o in self.config.operators if o not in OPERATORS]
        if unknown:
            raise ValueError(f"unknown operator(s) {unknown}; the library (Table 8): {', '.join(OPERATORS)}")
        self.prompt = load_prompt("prompts/repair", package=__package__)

    # measurement ----------------------------------------------------------------------------------
    async def scorecard(self, criterion: Criterion, pairs: list[PreferencePair], judge: JudgeClient, *,
                        attacker: JudgeClient | None, verifier: JudgeClient | None) -> dict[str, Any]:
        one = RubricSet(criteria=[criterion])
        adv = (await self.audit.adversarial(one, pairs, judge, attacker=attacker, verifier=verifier))["criteria"][0]
        rel = (await self.audit.reliability(one, pairs, judge))["criteria"][0]
        scored = [v for v in rel["scores"][0] if v is not None]
        return {"vfr": adv["vfr"], "pref_fit": sum(v > 5 for v in scored) / len(scored) if scored else None,
                "alpha": rel.get("alpha"), "flip_rate": rel.get("flip_rate"), "rho": rel.get("rho"),
                "pairs": len(pairs), "attacks": adv["attempts"], "attacks_complete": adv["complete"],
                "_adversarial": adv["rows"], "_scores": rel["scores"][0], "_runs": rel["runs"]}

    @staticmethod
    def public(metrics: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in metrics.items() if not k.startswith("_")}

    # the failure packet ---------------------------------------------------------------------------
    def packet(self, calibration: dict[str, Any], pairs: list[PreferencePair]) -> str:
        cut = self.config.excerpt_chars

        def excerpt(text: str) -> str:
            text = " ".join(text.split())
            return text if len(text) <= cut else text[:cut] + "…"

        groups: dict[str, list[str]] = {heading: [] for heading in _PACKET_HEADINGS}
        keys = list(groups)
        for pair, score in zip(pairs, calibration["_scores"], strict=True):
            if score is None:
                continue
            line = f"request: {excerpt(pair.prompt)} | preferred scored {score:g} of 10 against the other"
            groups[keys[0] if score > 5 else keys[1] if score < 5 else keys[2]].append(line)
            if 4 <= score <= 6 and score != 5:
                groups[keys[2]].append(line)
        for pair, said in zip(pairs, calibration["_runs"], strict=False):
            if len(set(said)) > 1:
                groups[keys[3]].append(f"request: {excerpt(pair.prompt)} | re-runs said {', '.join(said)}")
        tau = self.audit.config.tau
        for row in calibration["_adversarial"]:
            if "score" not in row:
                continue
            line = f"tactic {row['strategy']}, scored {row['score']}: {excerpt(row.get('answer', ''))}"
            if row["score"] >= tau and row.get("verdict") == "EXPLOITING":
                groups[keys[4]].append(line + f" (gaming: {row.get('exploit_type', '')})")
            elif row["score"] < tau:
                groups[keys[5]].append(line)
        return "\n".join(f"{name}: {len(lines)}" + "".join(f"\n  - {line}" for line in lines[:2])
                         for name, lines in groups.items())

    @staticmethod
    def data_texts(pairs: list[PreferencePair], calibration: dict[str, Any]) -> list[str]:
        return [t for p in pairs for t in (p.prompt, p.chosen, p.rejected)] + \
            [r.get("answer", "") for r in calibration["_adversarial"]]

    # L and P --------------------------------------------------------------------------------------
    async def propose(self, criterion: Criterion, metrics: dict[str, Any], packet: str, subset: tuple[str, ...],
                      client: JudgeClient, *, singletons: list[dict[str, Any]] | None = None,
                      budget: Callable[[Draft], list[str]] | None = None
                      ) -> tuple[Draft | None, float | None, str | None]:
        """L (``singletons`` None) or P: the revised draft, P's predicted VFR, and why it failed.

        "Under the SB-PLR constraint" (Algorithm 2, line 5): a reply that parses but breaks
        ``budget`` is sent back once with its violations (``budget_reasks``); if the last reply
        still breaks it, that draft is returned and the caller records it as over budget."""
        fields = [f for f in _FIELD_ORDER if any(f in OPERATORS[o].fields for o in subset)]
        base = Draft.of(criterion)
        props: dict[str, Any] = {}
        for f in fields:
            if f in ("gate", "definition"):
                props[f] = {"type": "string", "minLength": 3, "maxLength": 600}
            else:
                props[f] = {"type": "array", "maxItems": 3, "items": {"type": "string", "minLength": 3,
                                                                      "maxLength": 400}}
        help_lines = [_FIELD_HELP[f] for f in fields]
        if singletons is not None:
            props["predicted_vfr"] = {"type": "number", "minimum": 0, "maximum": 1}
            help_lines.append('"predicted_vfr": the fool rate you expect for your revision, 0 to 1')
        schema = {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}
        reply = "Reply with a JSON object only, with these fields:\n" + "\n".join(help_lines)
        ops = "\n".join(f"- {OPERATORS[o].name}: for when {OPERATORS[o].targets}; {OPERATORS[o].does}."
                        for o in subset)
        evidence = ""
        if singletons is not None:
            evidence = "\nEach operator applied alone, measured (use them to predict the combination):\n" + "\n".join(
                f"- {s['operators'][0]}: " + (f"VFR {_fmt(s['metrics'].get('vfr'))}, preference fit "
                                              f"{_fmt(s['metrics'].get('pref_fit'))}, flip rate "
                                              f"{_fmt(s['metrics'].get('flip_rate'))}; text: {s['text']}"
                                              if s.get("metrics") else
                                              f"over budget ({'; '.join(s['violations'])})" if s.get("violations")
                                              else "no usable text")
                for s in singletons)
        messages = self.prompt.render(
            reply_format=reply, id=criterion.id, description=defuse(criterion.description),
            metrics=", ".join(f"{k} {_fmt(metrics.get(k))}" for k in ("vfr", "pref_fit", "alpha", "flip_rate", "rho")),
            packet=defuse(packet), operators=ops, singletons=defuse(evidence))
        model = _draft_model(fields, singletons is not None)

        def to_draft(value: BaseModel) -> Draft:
            got = value.model_dump()
            update = {f: got[f] for f in fields}
            if isinstance(update.get("gate"), str) and not update["gate"].strip():
                update["gate"] = None
            return base.model_copy(update=update)

        def check(value: BaseModel) -> None:
            problems = budget(to_draft(value)) if budget is not None else []
            if problems:
                raise OutputInvalid("the revision breaks the structural budget: " + "; ".join(problems)
                                    + ". Rewrite it so that it fits.")

        out = await generate_structured(client, messages, model,
                                        GenerateConfig(temperature=0.0, max_tokens=self.config.max_tokens,
                                                       seed=self.config.seed, json_schema=schema),
                                        check=check, max_reasks=self.config.budget_reasks)
        value = out.value
        if value is None and out.unscored is not None and out.unscored.raw_output is not None:
            try:  # parsed, only over the budget: the caller records the violations
                value = parse_output(out.unscored.raw_output, model)
            except OutputInvalid:
                value = None
        if value is None:
            return None, None, out.unscored.reason if out.unscored else "unparseable"
        return to_draft(value), getattr(value, "predicted_vfr", None), None

    # Algorithm 2 ----------------------------------------------------------------------------------
    async def refine_criterion(self, criterion: Criterion, pairs: list[PreferencePair], judge: JudgeClient, *,
                               predictor: JudgeClient | None = None, attacker: JudgeClient | None = None,
                               verifier: JudgeClient | None = None) -> dict[str, Any]:
        cfg = self.config
        predictor = predictor or judge
        calibration_pairs, held = split_pairs(pairs, cfg.holdout, cfg.seed)
        measure = {"attacker": attacker, "verifier": verifier}
        rel_key = "alpha" if len(self.audit.jurors(judge)) > 1 else "flip_rate"
        before = await self.scorecard(criterion, held, judge, **measure)
        result: dict[str, Any] = {"id": criterion.id, "before": self.public(before),
                                  "calibration_pairs": [p.id for p in calibration_pairs],
                                  "held_out_pairs": [p.id for p in held], "candidates": [], "frontier": [],
                                  "chosen": None}
        if before["vfr"] is None or before["vfr"] == 0:
            result["reason"] = ("VFR not measurable on the held-out pairs" if before["vfr"] is None else
                                "VFR already 0 on the held-out pairs: nothing to lower")
            return result
        calibration = await self.scorecard(criterion, calibration_pairs, judge, **measure)
        packet = self.packet(calibration, calibration_pairs)
        result["packet"] = packet
        data = self.data_texts(calibration_pairs, calibration)
        original = criterion.description

        def budget(draft: Draft) -> list[str]:
            return sb_plr(draft, data_texts=data, allowed=original) + echoes_instructions(draft, original)

        # Step 1: singletons, measured on the held-out pairs
        singletons: list[dict[str, Any]] = []
        for op in cfg.operators:
            draft, _, failed = await self.propose(criterion, self.public(before), packet, (op,), predictor,
                                                  budget=budget)
            entry: dict[str, Any] = {"operators": [op]}
            if draft is None:
                entry.update(status="unparsed", reason=failed)
            else:
                entry["text"], entry["draft"] = draft.render(), draft.model_dump()
                entry["violations"] = budget(draft)
                if entry["violations"]:
                    entry["status"] = "over budget"
                else:
                    after = await self.scorecard(draft.criterion(criterion), held, judge, **measure)
                    entry["metrics"] = self.public(after)
                    entry["predicted_vfr"] = after["vfr"]
                    entry["status"] = "measured"
            singletons.append(entry)
        # Steps 2–3: subsets of 2..D operators through the predictor
        multis: list[dict[str, Any]] = []
        for size in range(2, cfg.depth + 1):
            for subset in itertools.combinations(cfg.operators, size):
                draft, predicted, failed = await self.propose(criterion, self.public(before), packet, subset,
                                                              predictor, singletons=singletons, budget=budget)
                entry = {"operators": list(subset)}
                if draft is None:
                    entry.update(status="unparsed", reason=failed)
                else:
                    entry.update(text=draft.render(), draft=draft.model_dump(), predicted_vfr=predicted,
                                 violations=budget(draft))
                    entry["status"] = "over budget" if entry["violations"] else \
                        "no predicted gain" if predicted is None or predicted >= before["vfr"] else "proposed"
                multis.append(entry)
        # Step 4: beam
        survivors = [e for e in singletons if e["status"] == "measured" and e["predicted_vfr"] is not None
                     and e["predicted_vfr"] < before["vfr"]] + [e for e in multis if e["status"] == "proposed"]
        for e in singletons:
            if e["status"] == "measured" and e not in survivors:
                e["status"] = "no gain" if e["predicted_vfr"] is not None else "VFR not measurable"
        survivors.sort(key=lambda e: before["vfr"] - e["predicted_vfr"], reverse=True)
        beam = survivors[:cfg.beam]
        for e in survivors[cfg.beam:]:
            e["status"] = "outside the beam"
        # Step 5: held-out acceptance
        accepted = []
        for e in beam:
            if "metrics" not in e:
                after = await self.scorecard(Draft.model_validate(e["draft"]).criterion(criterion), held, judge,
                                             **measure)
                e["metrics"] = self.public(after)
            ok, why = accepts(before, e["metrics"], cfg.epsilon, cfg.delta)
            e["status"], e["reason"] = ("accepted" if ok else "rejected"), why
            if ok:
                accepted.append({**e, "vfr": e["metrics"]["vfr"], "rel": _rel(e["metrics"], rel_key)})
        # Step 6: Pareto frontier on (reliability, VFR)
        usable = [a for a in accepted if a["rel"] is not None]
        front = pareto(usable) if usable else accepted
        result["candidates"] = singletons + multis
        result["reliability_coordinate"] = "alpha" if rel_key == "alpha" else "1 − flip rate"
        result["frontier"] = [{"operators": f["operators"], "metrics": f["metrics"], "text": f["text"]} for f in front]
        if front:
            best = min(front, key=lambda f: (f["vfr"], -(f["rel"] or 0.0), len(f["operators"])))
            result["chosen"] = {"operators": best["operators"], "metrics": best["metrics"], "draft": best["draft"],
                                "text": best["text"]}
            result["reason"] = f"{len(accepted)} accepted, {len(front)} on the frontier"
        else:
            result["reason"] = "no candidate passed the held-out acceptance: left unchanged"
        return result

    async def refine(self, rubric: RubricSet, pairs: list[PreferencePair], judge: JudgeClient, *,
                     predictor: JudgeClient | None = None, attacker: JudgeClient | None = None,
                     verifier: JudgeClient | None = None, step: Any = None) -> tuple[RubricSet, list[dict[str, Any]]]:
        """Refine each criterion in turn. ``step(key, compute)``: how each criterion's search is run
        (a workflow's committed step, :meth:`assay.engine.Run.step`); by default, directly."""
        results, criteria = [], []
        for criterion in rubric.criteria:
            def search(criterion: Criterion = criterion) -> Any:
                return self.refine_criterion(criterion, pairs, judge, predictor=predictor, attacker=attacker,
                                             verifier=verifier)
            r = await (step(f"criterion:{criterion.id}", search) if step is not None else search())
            results.append(r)
            if r["chosen"] is None:
                criteria.append(criterion)
                continue
            revised = Draft.model_validate(r["chosen"]["draft"]).criterion(criterion)
            revised.extra["refine"] = {"operators": r["chosen"]["operators"], "before": r["before"],
                                       "after": r["chosen"]["metrics"]}
            criteria.append(revised)
        cfg = self.config
        provenance = {**rubric.provenance, "repair": {
            "mode": "vfr", "delta": "inf" if math.isinf(cfg.delta) else cfg.delta, "epsilon": cfg.epsilon,
            "depth": cfg.depth, "beam": cfg.beam, "operators": list(cfg.operators), "pairs": len(pairs),
            "revised": sum(r["chosen"] is not None for r in results), "of": len(rubric.criteria)}}
        return RubricSet(criteria=criteria, source=f"{rubric.source} + vfr repair", provenance=provenance), results


def _rel(metrics: dict[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    if value is None:
        return None
    return value if key == "alpha" else 1.0 - value


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _draft_model(fields: list[str], predicted: bool) -> type[BaseModel]:
    from pydantic import create_model

    spec: dict[str, Any] = {}
    for f in fields:
        spec[f] = (str, ...) if f in ("gate", "definition") else (list[str], ...)
    if predicted:
        spec["predicted_vfr"] = (float, Field(ge=0, le=1))
    return create_model("RepairDraft_" + "_".join(fields) + ("_p" if predicted else ""), **spec)
