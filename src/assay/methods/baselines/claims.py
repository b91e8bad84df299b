"""The ``claims`` baseline: RAGChecker-style claim precision and recall by bidirectional
entailment (hard, soft or direct verdicts; optional cited evidence)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from assay.analysis.stats import f_beta
from assay.core.method import CallEstimate, ItemResult
from assay.core.registry import register_method
from assay.core.types import Completion, Item, Unscored
from assay.judge.direct import ask, lettered, point_to
from assay.judge.prompts import fence, load_prompt, numbered
from assay.judge.runner import JudgeClient
from assay.judge.structured import OutputInvalid, generate_structured
from assay.judge.text import numbered_text, split_sentences
from assay.judge.verdicts import field_label_probs
from assay.methods.baselines.base import BaselineConfig, BaselineMethod, estimated_tokens


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
class Claims(BaselineMethod):
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
            self.prompts["claims_checking_evidence"] = load_prompt("prompts/claims_checking_evidence",
                                                                     package=__package__)
        if self.config.verdicts == "direct":  # one question per claim instead of the list
            del self.prompts["claims_checking"]
            self.prompts["claims_direct"] = load_prompt("prompts/claims_direct", package=__package__)

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
            tokens = estimated_tokens(self.render_extraction(item.query, "answer", item.response)) * 3
            if item.id not in seen:
                seen.add(item.id)
                calls += 1
                tokens += estimated_tokens(self.render_extraction(item.query, "reference", item.reference.full_text()))
            # two of the calls check claims; with evidence each claim's verdict runs ~70 tokens, not ~16;
            # direct verdicts generate nothing there (one label call per claim, prompts mostly cached)
            checking = 2 * (48 + 72 * self.config.max_claims // 2) if self.config.evidence else 2 * 120
            if self.config.verdicts == "direct":
                checking = 0
            total += CallEstimate(calls=calls, prompt_tokens=tokens,
                                  completion_tokens=(calls - 2) * 120 + checking)
        return total
