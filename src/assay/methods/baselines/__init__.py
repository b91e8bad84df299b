"""Baseline judges the DeCE paper compares against (§3.2, Table 2), on the same backends:

* ``pointwise``: one 0–4 grade against the gold answer with the App. C.1 rubric, the six
  reasoning stages of App. C.2 and its issue labels (App. C.3 template). Metric ``pointwise``
  on the paper's 0–4 GPA scale.
* ``geval``: G-Eval-style precision and recall, each 1–5. With a backend that returns
  logprobs, each axis is the probability-weighted mean over the digits 1–5 at the position
  of its score (G-Eval's weighting); otherwise the generated digit. Reported mapped to [0, 1]
  as (s − 1) / 4 so that ``f_beta`` (F2, like DeCE) is defined; the 1–5 values are in the
  details.
* ``claims``: RAGChecker-style claim-level precision and recall. Claims are extracted from the
  answer and from the gold answer; the answer's claims are checked against the gold answer
  (precision = entailed / answer claims) and the gold answer's claims against the answer
  (recall = entailed / gold claims); F1 as RAGChecker reports. With ``verdicts="soft"`` (issue
  17) each checking call asks for logprobs and a claim counts its probability of "entailment"
  (renormalised over the three labels at the verdict's value, :func:`assay.verdicts.field_label_probs`)
  instead of 0/1; the greedy metrics of the same calls stay in the details as ``precision_hard`` /
  ``recall_hard`` / ``f1_hard``, every claim keeps its three probabilities, and a completion
  without logprobs at every verdict makes the metric Unscored (never hard).

Readings we chose: the whole reference (Required + Helpful Information) is the gold text for
every baseline, as for DeCE verification; an answer or reference without extractable claims
leaves that metric Unscored, never 0.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.direct import ask, lettered, point_to
from assay.methods._base import CallEstimate, ItemResult, Method
from assay.prompts import fence, load_domain, load_prompt, numbered
from assay.registry import register_method
from assay.runner import JudgeClient
from assay.stats import f_beta
from assay.structured import OutputInvalid, generate_structured
from assay.text import numbered_text, split_sentences
from assay.types import Completion, GenerateConfig, Item, Unscored
from assay.verdicts import field_label_probs

ISSUE_LABELS = ("Incorrect", "Misattribution", "Missing information", "Citation needed", "Irrelevant",
                "Wrong jurisdiction", "Repetitive")
"""The issue labels of DeCE App. C.2, phase 5."""


class BaselineConfig(BaseModel):

    model_config = ConfigDict(use_attribute_docstrings=True)
    domain: str = "general"
    seed: int = 0
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_reasks: int = Field(default=2, ge=0)
    max_reasoning_chars: int = 400
    """Bound on free text, so small judges cannot loop."""


def _tokens(messages: list[Any]) -> int:
    return sum(len(m.content) for m in messages) // 4 + 8 * len(messages)


class _Baseline(Method):
    prompt_names: ClassVar[tuple[str, ...]]
    answer_fence: ClassVar[str] = "plain"
    """How the answer is fenced; part of the run id when it is not plain (``fence(sealed=True)``)."""

    def __init__(self, config: BaselineConfig | None = None) -> None:
        self.config = config or BaselineConfig()
        self.domain = load_domain(self.config.domain)
        self.prompts = {name: load_prompt(f"baselines/{name}") for name in self.prompt_names}

    added_options: ClassVar[dict[str, Any]] = {}
    """Options added after runs were made, with their defaults: left out of the manifest while at
    the default, so those runs keep their run id."""

    def reads_label_probs(self) -> bool:
        return getattr(self.config, "verdicts", None) == "direct"  # --verdicts direct

    def manifest(self) -> dict[str, Any]:
        config = {k: v for k, v in self.config.model_dump().items()
                  if k not in self.added_options or v != self.added_options[k]}
        manifest = {"config": config,
                    "prompt_sha256": {k: p.sha256 for k, p in self.prompts.items()},
                    "domain_sha256": self.domain["sha256"]}
        if self.answer_fence != "plain":
            manifest["answer_fence"] = self.answer_fence
        return manifest

    def check_item(self, item: Item) -> str | None:
        if item.reference is None or not item.reference.required.strip():
            return f"{self.name} needs a reference answer (field 'reference')"
        return None

    def _gold(self, item: Item) -> str:
        assert item.reference is not None
        return fence("reference", item.reference.full_text())

    def _config(self, max_tokens: int, schema: dict[str, Any], **extra: Any) -> GenerateConfig:
        return GenerateConfig(temperature=self.config.temperature, max_tokens=max_tokens, seed=self.config.seed,
                              json_schema=schema, **extra)


# --- pointwise ---------------------------------------------------------------------------------
class PointwiseConfig(BaselineConfig):
    """Pointwise baseline options."""

    reference_free: bool = False
    """Grade each answer against the question alone (no gold answer; a reference, if given, is
    not shown). For sets without references, e.g. PandaLM's pairs, where the scores of a pair
    give a verdict."""
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": the grade is the expected grade over 0–4 under the judge's probabilities at its
    score (read from the logprobs, as G-Eval weighs 1–5); the greedy grade stays in
    ``pointwise_hard``. "direct": the grade alone is asked for, with no written reasoning, and its
    probabilities read from one forward pass (a judge that gives label probabilities); the
    expected grade is the score, the most probable one ``pointwise_hard``."""
    top_logprobs: int = Field(default=5, ge=2, le=20)
    """Candidates read at the score (soft verdicts)."""


GRADES = ("0", "1", "2", "3", "4")


class PointwiseOutput(BaseModel):
    reasoning: str
    issues: list[Literal[ISSUE_LABELS]]  # type: ignore[valid-type]
    score: Literal[0, 1, 2, 3, 4]
    justification: str


@register_method
class Pointwise(_Baseline):
    """Baseline: pointwise 0–4 grade against the reference (the DeCE paper's rubric)."""

    name: ClassVar[str] = "pointwise"
    metrics: ClassVar[tuple[str, ...]] = ("pointwise",)
    metric_ranges: ClassVar[dict[str, tuple[float, float]]] = {"pointwise": (0.0, 4.0)}
    config_model: ClassVar[type[BaseModel] | None] = PointwiseConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'reference_free', 'verdicts')
    primary_metric: ClassVar[str | None] = "pointwise"
    prompt_names: ClassVar[tuple[str, ...]] = ("pointwise",)
    answer_fence: ClassVar[str] = "sealed-sha256-12"
    added_options: ClassVar[dict[str, Any]] = {"reference_free": False, "verdicts": "hard", "top_logprobs": 5}
    config: PointwiseConfig

    def __init__(self, config: PointwiseConfig | None = None) -> None:
        super().__init__(config or PointwiseConfig())
        direct = "_direct" if self.config.verdicts == "direct" else ""
        if self.config.reference_free:
            self.prompts = {"pointwise_noref": load_prompt(f"baselines/pointwise_noref{direct}")}
        elif direct:
            self.prompts = {"pointwise": load_prompt("baselines/pointwise_direct")}

    def check_item(self, item: Item) -> str | None:
        return None if self.config.reference_free else super().check_item(item)

    def render(self, item: Item) -> list[Any]:
        labels = {} if self.config.verdicts == "direct" else {"issue_labels": ", ".join(ISSUE_LABELS)}
        if self.config.reference_free:
            return self.prompts["pointwise_noref"].render(
                expert=str(self.domain["expert"]), query=item.query.strip(),
                answer=fence("answer", item.response, sealed=True), **labels)
        return self.prompts["pointwise"].render(
            expert=str(self.domain["expert"]), query=item.query.strip(),
            reference=self._gold(item), answer=fence("answer", item.response, sealed=True), **labels)

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False,
                "required": ["reasoning", "issues", "score", "justification"],
                "properties": {"reasoning": {"type": "string", "minLength": 1,
                                             "maxLength": self.config.max_reasoning_chars},
                               "issues": {"type": "array", "maxItems": len(ISSUE_LABELS),
                                          "items": {"type": "string", "enum": list(ISSUE_LABELS)}},
                               "score": {"type": "integer", "enum": [0, 1, 2, 3, 4]},
                               "justification": {"type": "string", "minLength": 1, "maxLength": 160}}}

    async def _evaluate_direct(self, item: Item, client: JudgeClient) -> ItemResult:
        probs, key, problem = await ask(client, self.render(item), GRADES, metric="pointwise")
        keys = [key] if key else []
        if probs is None:
            assert problem is not None
            return ItemResult(scores={"pointwise": None}, unscored=[problem], call_keys=keys)
        best = max(probs, key=lambda g: probs[g])
        return ItemResult(scores={"pointwise": sum(int(g) * p for g, p in probs.items())}, call_keys=keys,
                          details={"verdicts": "direct", "pointwise_hard": float(best), "score_distribution": probs})

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        if self.config.verdicts == "direct":
            return await self._evaluate_direct(item, client)
        soft = self.config.verdicts == "soft"
        extra = {"logprobs": True, "top_logprobs": self.config.top_logprobs} if soft else {}
        out = await generate_structured(client, self.render(item), PointwiseOutput,
                                        self._config(64 + (self.config.max_reasoning_chars + 160) // 3 + 40,
                                                     self.schema(), **extra),
                                        max_reasks=self.config.max_reasks, metric="pointwise")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"pointwise": None}, unscored=[out.unscored], call_keys=out.keys)
        v = out.value
        details: dict[str, Any] = {"issues": list(dict.fromkeys(v.issues)), "reasoning": v.reasoning,
                                   "justification": v.justification}
        score = float(v.score)
        if soft:
            found = field_label_probs(out.completion, "score", GRADES) if out.completion is not None else None
            if not found or len(found) != 1 or found[0].greedy != str(v.score):
                reason = "soft verdicts need the judge's logprobs at its score"
                return ItemResult(scores={"pointwise": None}, details=details, call_keys=out.keys,
                                  unscored=[Unscored(reason=reason, metric="pointwise", raw_output=out.completion.text
                                                     if out.completion is not None else None)])
            details["pointwise_hard"], details["score_distribution"] = score, dict(found[0].p)
            details["verdicts"] = "soft"
            score = sum(int(g) * p for g, p in found[0].p.items())
        return ItemResult(scores={"pointwise": score}, call_keys=out.keys, details=details)

    def estimate(self, items: list[Item]) -> CallEstimate:
        generated = 0 if self.config.verdicts == "direct" else 180
        return sum((CallEstimate(calls=1, prompt_tokens=_tokens(self.render(i)), completion_tokens=generated)
                    for i in items), CallEstimate())


# --- G-Eval ------------------------------------------------------------------------------------
class GEvalConfig(BaselineConfig):
    weighting: Literal["auto", "logprobs", "none"] = "auto"
    """"auto": probability-weighted when the backend returns logprobs, else the generated digit."""
    beta: float = Field(default=2.0, gt=0)


class GEvalOutput(BaseModel):
    precision: Literal[1, 2, 3, 4, 5]
    recall: Literal[1, 2, 3, 4, 5]
    reason: str


def weighted_digit(completion: Completion, field: str) -> tuple[float, dict[str, float]] | None:
    """G-Eval weighting: the expected score over the digits 1–5 at the position where
    ``field``'s value was generated, from that token's top logprobs (renormalised over 1–5;
    :func:`assay.verdicts.field_label_probs`). None when the completion has no logprobs there."""
    found = field_label_probs(completion, field, ("1", "2", "3", "4", "5"))
    if not found:
        return None
    dist = {d: p for d, p in found[0].p.items() if p > 0}
    return sum(int(d) * p for d, p in dist.items()), dist


@register_method
class GEval(_Baseline):
    """Baseline: G-Eval-style precision and recall 1–5 (logprob-weighted when available)."""

    name: ClassVar[str] = "geval"
    metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f_beta")
    config_model: ClassVar[type[BaseModel] | None] = GEvalConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'weighting', 'beta')
    primary_metric: ClassVar[str | None] = "f_beta"
    prompt_names: ClassVar[tuple[str, ...]] = ("geval",)
    answer_fence: ClassVar[str] = "sealed-sha256-12"
    config: GEvalConfig

    def __init__(self, config: GEvalConfig | None = None) -> None:
        super().__init__(config or GEvalConfig())

    def render(self, item: Item) -> list[Any]:
        return self.prompts["geval"].render(expert=str(self.domain["expert"]), query=item.query.strip(),
                                            reference=self._gold(item),
                                            answer=fence("answer", item.response, sealed=True))

    @staticmethod
    def schema() -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["precision", "recall", "reason"],
                "properties": {"precision": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                               "recall": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                               "reason": {"type": "string", "minLength": 1, "maxLength": 200}}}

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        weighting = self.config.weighting
        use_logprobs = weighting == "logprobs" or (weighting == "auto" and client.backend.capabilities.logprobs)
        extra = {"logprobs": True, "top_logprobs": 5} if use_logprobs else {}
        out = await generate_structured(client, self.render(item), GEvalOutput,
                                        self._config(96, self.schema(), **extra),
                                        max_reasks=self.config.max_reasks, metric="f_beta")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"precision": None, "recall": None, "f_beta": None},
                              unscored=[out.unscored.model_copy(update={"metric": m})
                                        for m in ("precision", "recall", "f_beta")], call_keys=out.keys)
        details: dict[str, Any] = {"reason": out.value.reason, "weighting": "generated digit"}
        raw = {"precision": float(out.value.precision), "recall": float(out.value.recall)}
        if use_logprobs:
            for axis in ("precision", "recall"):
                weighted = weighted_digit(out.completion, axis) if out.completion is not None else None
                if weighted is None:  # asked for logprobs and got none: fail closed, do not fall back
                    reason = f"the backend returned no logprobs at the {axis} score"
                    return ItemResult(scores={"precision": None, "recall": None, "f_beta": None},
                                      unscored=[Unscored(reason=reason, raw_output=out.completion.text
                                                         if out.completion else None, metric=m)
                                                for m in ("precision", "recall", "f_beta")], call_keys=out.keys)
                raw[axis], details[f"{axis}_distribution"] = weighted
            details["weighting"] = "logprobs"
        details["precision_1to5"], details["recall_1to5"] = raw["precision"], raw["recall"]
        precision, recall = (raw["precision"] - 1) / 4, (raw["recall"] - 1) / 4
        return ItemResult(scores={"precision": precision, "recall": recall,
                                  "f_beta": f_beta(precision, recall, self.config.beta)},
                          details=details, call_keys=out.keys)

    def estimate(self, items: list[Item]) -> CallEstimate:
        return sum((CallEstimate(calls=1, prompt_tokens=_tokens(self.render(i)), completion_tokens=60)
                    for i in items), CallEstimate())


# --- claims (RAGChecker-style) -----------------------------------------------------------------
class ClaimsOutput(BaseModel):
    claims: list[str]


class ClaimVerdict(BaseModel):
    claim: int
    evidence: list[int] | None = None
    reason: str | None = None
    verdict: Literal["entailment", "contradiction", "neutral"]


class CheckingOutput(BaseModel):
    verdicts: list[ClaimVerdict]


class ClaimsConfig(BaselineConfig):
    max_claims: int = 10
    max_claim_chars: int = 200
    evidence: bool = False
    """Opt-in: show the passage as numbered sentences and have each verdict cite the sentences
    it rests on plus a short reason before the label (prompt ``claims_checking_evidence``).
    Off by default, so ``claims`` stays the plain RAGChecker-style baseline; the 1.5B embedded
    judge's verdicts move a lot with this (benchmarks/README.md, claims prompt probe)."""
    max_reason_chars: int = 120
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": a claim counts P(entailment) read from the judge's logprobs, not its greedy 0/1.
    "direct": each claim is asked on its own and its label read from one forward pass (a judge
    that gives label probabilities); it counts P(entailment), and an entailed claim points to the
    sentence of the passage it rests on."""
    top_logprobs: int = Field(default=5, ge=2, le=20)
    """Candidates read at each verdict (soft verdicts)."""


LABELS = ("entailment", "contradiction", "neutral")


@register_method
class Claims(_Baseline):
    """Baseline: RAGChecker-style claim precision and recall by bidirectional entailment."""

    name: ClassVar[str] = "claims"
    metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1")
    version: ClassVar[str] = "2"
    """2: with ``evidence``, cited sentence numbers are constrained to the passage's sentences
    (version 1 checked them only after generation, and left answers Unscored)."""
    config_model: ClassVar[type[BaseModel] | None] = ClaimsConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'max_claims', 'evidence', 'verdicts')
    primary_metric: ClassVar[str | None] = "f1"
    prompt_names: ClassVar[tuple[str, ...]] = ("claims_extraction", "claims_checking")
    added_options: ClassVar[dict[str, Any]] = {"verdicts": "hard", "top_logprobs": 5}
    config: ClaimsConfig

    def __init__(self, config: ClaimsConfig | None = None) -> None:
        super().__init__(config or ClaimsConfig())
        if self.config.evidence:  # loaded only when used, so the plain baseline's manifest is unchanged
            self.prompts["claims_checking_evidence"] = load_prompt("baselines/claims_checking_evidence")
        if self.config.verdicts == "direct":  # one question per claim instead of the list
            del self.prompts["claims_checking"]
            self.prompts["claims_direct"] = load_prompt("baselines/claims_direct")

    def render_extraction(self, query: str, tag: str, text: str) -> list[Any]:
        return self.prompts["claims_extraction"].render(query=query.strip(), text=fence(tag, text))

    def render_checking(self, tag: str, passage: str, claims: list[str]) -> list[Any]:
        if self.config.evidence:
            return self.prompts["claims_checking_evidence"].render(passage=fence(tag, numbered_text(passage)),
                                                                   claims=numbered(claims))
        return self.prompts["claims_checking"].render(passage=fence(tag, passage), claims=numbered(claims))

    async def _extract(self, client: JudgeClient, query: str, tag: str, text: str,
                       metric: str) -> tuple[list[str] | None, Unscored | None, list[str]]:
        cfg = self.config
        schema = {"type": "object", "additionalProperties": False, "required": ["claims"],
                  "properties": {"claims": {"type": "array", "minItems": 1, "maxItems": cfg.max_claims,
                                            "items": {"type": "string", "minLength": 8,
                                                      "maxLength": cfg.max_claim_chars}}}}
        out = await generate_structured(client, self.render_extraction(query, tag, text), ClaimsOutput,
                                        self._config(48 + cfg.max_claims * cfg.max_claim_chars // 3, schema),
                                        max_reasks=cfg.max_reasks, metric=metric)
        if out.value is None:
            return None, out.unscored, out.keys
        claims = list(dict.fromkeys(c.strip() for c in out.value.claims if c.strip()))[: cfg.max_claims]
        if not claims:
            return None, Unscored(reason=f"no claim in the {tag}", metric=metric), out.keys
        return claims, None, out.keys

    async def _check(self, client: JudgeClient, tag: str, passage: str, claims: list[str],
                     metric: str) -> tuple[list[ClaimVerdict] | None, Unscored | None, list[str], Completion | None]:
        n = len(claims)
        evidence = self.config.evidence
        sentences = len(split_sentences(passage))
        props: dict[str, Any] = {"claim": {"type": "integer"}}
        if evidence:
            # the grammar allows only sentence numbers that exist: on 20 RAGChecker pairs an
            # unconstrained 1.5B judge cited missing sentences in 8 of 80 checks even after 2 re-asks
            props["evidence"] = ({"type": "array", "maxItems": 4,
                                  "items": {"type": "integer", "enum": list(range(1, sentences + 1))}}
                                 if sentences else {"type": "array", "maxItems": 0, "items": {"type": "integer"}})
            props["reason"] = {"type": "string", "maxLength": self.config.max_reason_chars}
        props["verdict"] = {"type": "string", "enum": list(LABELS)}
        schema = {"type": "object", "additionalProperties": False, "required": ["verdicts"],
                  "properties": {"verdicts": {"type": "array", "minItems": n, "maxItems": n, "items": {
                      "type": "object", "additionalProperties": False, "required": list(props),
                      "properties": props}}}}

        def check(output: CheckingOutput) -> None:
            if [v.claim for v in output.verdicts] != list(range(1, n + 1)):
                raise OutputInvalid(f"expected verdicts for claims 1..{n} in order")
            for v in output.verdicts:
                bad = [s for s in v.evidence or [] if not 1 <= s <= sentences]
                if bad:
                    raise OutputInvalid(f"claim {v.claim} cites sentence(s) {bad}; the passage has 1..{sentences}")

        # evidence numbers and a reason cost ~55 more tokens per claim than the bare verdict
        budget = 48 + 72 * n if evidence else 32 + 16 * n
        extra = ({"logprobs": True, "top_logprobs": self.config.top_logprobs} if self.config.verdicts == "soft"
                 else {})
        out = await generate_structured(client, self.render_checking(tag, passage, claims), CheckingOutput,
                                        self._config(budget, schema, **extra), check=check,
                                        max_reasks=self.config.max_reasks, metric=metric)
        if out.value is None:
            return None, out.unscored, out.keys, None
        return out.value.verdicts, None, out.keys, out.completion

    async def _check_direct(self, client: JudgeClient, tag: str, passage: str, claims: list[str],
                            metric: str) -> tuple[list[dict[str, Any]] | None, Unscored | None, list[str]]:
        """One label call per claim (the passage first, so the calls share their prefix) and,
        for an entailed claim, one evidence call over the passage's lettered sentences."""
        sentences = split_sentences(passage)
        text = fence(tag, lettered(sentences))
        keys: list[str] = []
        entries: list[dict[str, Any]] = []
        for claim in claims:
            messages = self.prompts["claims_direct"].render(passage=text, claim=claim)
            probs, key, problem = await ask(client, messages, LABELS, metric)
            if key:
                keys.append(key)
            if probs is None:
                assert problem is not None
                return None, problem.model_copy(update={"reason": f"claim verdict: {problem.reason}"}), keys
            verdict = max(LABELS, key=lambda label: probs[label])
            entry: dict[str, Any] = {"claim": claim, "verdict": verdict, "p": probs, "evidence": []}
            if verdict == "entailment":
                found, p_found, ev_key = await point_to(client, messages, verdict, len(sentences), metric)
                if ev_key:
                    keys.append(ev_key)
                if found is not None:
                    entry["evidence"] = [{"sentence": found, "text": sentences[found - 1], "p": p_found}]
            entries.append(entry)
        return entries, None, keys

    async def _claims_score(self, client: JudgeClient, tag: str, passage: str, claims: list[str], metric: str,
                            details: dict[str, Any], keys: list[str],
                            unscored: list[Unscored]) -> tuple[float | None, list[dict[str, Any]] | None]:
        """Check ``claims`` against ``passage``: the metric and the claims' entries (None when
        the check failed, its reason added to ``unscored``)."""
        if self.config.verdicts == "direct":
            entries, problem, k = await self._check_direct(client, tag, passage, claims, metric)
            keys += k
            if entries is None:
                assert problem is not None
                unscored.append(problem)
                return None, None
            details[f"{metric}_hard"] = sum(e["verdict"] == "entailment" for e in entries) / len(entries)
            return sum(e["p"]["entailment"] for e in entries) / len(entries), entries
        verdicts, problem, k, completion = await self._check(client, tag, passage, claims, metric)
        keys += k
        if problem:
            unscored.append(problem)
            return None, None
        assert verdicts is not None
        entries = self._claim_details(claims, verdicts, passage)
        score, problem = self._score(entries, verdicts, completion, metric, details)
        if problem:
            unscored.append(problem)
        return score, entries

    def _score(self, entries: list[dict[str, Any]], verdicts: list[ClaimVerdict], completion: Completion | None,
               metric: str, details: dict[str, Any]) -> tuple[float | None, Unscored | None]:
        """The share of entailed claims; with soft verdicts the mean P(entailment), each claim's
        probabilities kept in its entry and the greedy share in ``<metric>_hard``."""
        hard = sum(v.verdict == "entailment" for v in verdicts) / len(verdicts)
        if self.config.verdicts == "hard":
            return hard, None
        details[f"{metric}_hard"] = hard
        found = field_label_probs(completion, "verdict", LABELS) if completion is not None else None
        if found is None or [f.greedy for f in found] != [v.verdict for v in verdicts]:
            return None, Unscored(reason=f"soft verdicts need the judge's logprobs at every verdict (got "
                                         f"{0 if found is None else len(found)} of {len(verdicts)})",
                                  metric=metric, raw_output=completion.text if completion is not None else None)
        for entry, probs in zip(entries, found, strict=True):
            entry["p"] = {label: probs.p[label] for label in LABELS}
        return sum(f.p["entailment"] for f in found) / len(found), None

    def _claim_details(self, claims: list[str], verdicts: list[ClaimVerdict], passage: str) -> list[dict[str, Any]]:
        if not self.config.evidence:
            return [{"claim": c, "verdict": v.verdict} for c, v in zip(claims, verdicts, strict=True)]
        sentences = split_sentences(passage)
        return [{"claim": c, "verdict": v.verdict, "reason": v.reason,
                 "evidence": [{"sentence": s, "text": sentences[s - 1]} for s in v.evidence or []]}
                for c, v in zip(claims, verdicts, strict=True)]

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        assert item.reference is not None
        gold = item.reference.full_text()
        keys: list[str] = []
        unscored: list[Unscored] = []
        details: dict[str, Any] = {"verdicts": self.config.verdicts} if self.config.verdicts != "hard" else {}
        scores: dict[str, float | None] = {"precision": None, "recall": None, "f1": None}
        if not item.response.strip():
            unscored.append(Unscored(reason="the answer is empty", metric="precision"))
            answer_claims = None
        else:
            answer_claims, problem, k = await self._extract(client, item.query, "answer", item.response, "precision")
            keys += k
            if problem:
                unscored.append(problem)
        gold_claims, problem, k = await self._extract(client, item.query, "reference", gold, "recall")
        keys += k
        if problem:
            unscored.append(problem)
        if answer_claims:
            scores["precision"], entries = await self._claims_score(client, "reference", gold, answer_claims,
                                                                    "precision", details, keys, unscored)
            if entries is not None:
                details["answer_claims"] = entries
        if gold_claims:
            if not item.response.strip():
                scores["recall"] = 0.0  # nothing can entail a claim; no call needed
                details["gold_claims"] = [{"claim": c, "verdict": "neutral"} for c in gold_claims]
                if self.config.verdicts != "hard":
                    details["recall_hard"] = 0.0
            else:
                scores["recall"], entries = await self._claims_score(client, "answer", item.response, gold_claims,
                                                                     "recall", details, keys, unscored)
                if entries is not None:
                    details["gold_claims"] = entries
        p, r = scores["precision"], scores["recall"]
        if p is not None and r is not None:
            scores["f1"] = f_beta(p, r, 1.0)
            if "precision_hard" in details and "recall_hard" in details:
                details["f1_hard"] = f_beta(details["precision_hard"], details["recall_hard"], 1.0)
        else:
            unscored.append(Unscored(reason="needs precision and recall", metric="f1"))
        return ItemResult(scores=scores, unscored=unscored, details=details, call_keys=keys)

    def estimate(self, items: list[Item]) -> CallEstimate:
        total = CallEstimate()
        seen: set[str] = set()
        for item in items:
            assert item.reference is not None
            calls = 3
            tokens = _tokens(self.render_extraction(item.query, "answer", item.response)) * 3
            if item.id not in seen:
                seen.add(item.id)
                calls += 1
                tokens += _tokens(self.render_extraction(item.query, "reference", item.reference.full_text()))
            # two of the calls check claims; with evidence each claim's verdict runs ~70 tokens, not ~16;
            # direct verdicts generate nothing there (one label call per claim, prompts mostly cached)
            checking = 2 * (48 + 72 * self.config.max_claims // 2) if self.config.evidence else 2 * 120
            if self.config.verdicts == "direct":
                checking = 0
            total += CallEstimate(calls=calls, prompt_tokens=tokens,
                                  completion_tokens=(calls - 2) * 120 + checking)
        return total
