"""Case-aware multi-turn RAG judge.

Paper: Case-Aware LLM-as-a-Judge Evaluation for Enterprise-Scale RAG Systems, §4–6, App. A.2, B, C, H, J,
L, M.

One judge call per turn, conditioned on the case subject and description, the earlier turns,
the query, the retrieved passages, the answer and an optional reference, and restricted to
them. It returns the 16 fields of the paper's Table 5 (a score in [0, 1] and a justification
for each of 8 metrics); we add, per metric, the severity band of App. B.1 that the judge chose
before its score. A score outside its band is re-asked with the reason, then fails closed.

    S_final = Σ w_i s_i   (§5.2, Eq. 1), weights validated to sum to 1.

Readings we chose, so the next person knows:

* Band edges are the paper's two-decimal ranges (severe 0.00–0.30, moderate 0.31–0.60, minor
  0.61–0.85, none 0.86–1.00); a score in a gap (e.g. 0.305) fits no band and is re-asked.
* ``retrieval-heavy`` (§6): retrieval correctness and context sufficiency 0.20 each, the other
  six scaled in proportion to their default weights to share the remaining 0.60.
* The justification names the most severe issue first (the App. B protocol asks the judge to
  identify it before mapping it to a band); we order the fields justification → band → score so
  a left-to-right decoder commits to the issue before the number.
* Conversation-level aggregation (§8.3) is the mean over a conversation's scored turns, the
  conversation being ``metadata.conversation_id`` (else the item id).
* Identifier check (our addition, for App. J.4 "corruption is high severity"): identifiers in
  the answer (tokens with a digit such as error codes, versions, IDs, "E-7731", "3.2.1", "806";
  and paths with two or more separators) that occur nowhere in the inputs (query, case, history,
  passages, reference) are listed in ``identifier_check``. With ``identifier_check="cap"`` (the
  default) a judge's identifier_integrity score above the severe band is capped at 0.30 (band
  severe) when there is such an identifier; the judge's own score and band are kept as
  ``identifier_integrity_judge_score`` / ``_judge_band``. "flag" only lists them; "off" skips
  the check. Weak judges call a corrupted "error 806" (for 809) "kept exactly"; this catches it.
  The check is literal: an identifier the answer derives correctly but that no input spells out
  (a computed port number, say) is capped too, and the record says which one.
* Soft verdicts (``verdicts="soft"``, issue 17): the call asks for logprobs and, per metric, the
  judge's probability of each band is read at the band's value (renormalised over the four bands;
  "moderate" and "minor" share their first token, split by the tokens after it,
  :func:`assay.judge.verdicts.field_label_probs`). The metric's score is then the expected score: the
  judge's own score stands for the band it wrote, each other band counts its midpoint (severe
  0.15, moderate 0.455, minor 0.73, none 0.93), weighted by the band probabilities. So a
  confident judge keeps its score and an unsure one is pulled toward the bands it hesitated
  over. The band in the record stays the greedy one; the judge's score and S_final are kept as
  ``<metric>_score_hard`` / ``s_final_hard``; the identifier cap applies to the soft score too (a
  capped metric counts at most 0.30). A completion without logprobs at every band is Unscored.

The package, by room: :mod:`.scoring` (metrics, bands, weight profiles, S_final),
:mod:`.identifiers` (the identifier check), :mod:`.report`, :mod:`.compare` and :mod:`.cli`
(comparing runs, the gate); the options, the turn's response model and the method are here.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from assay.core.errors import ConfigError
from assay.core.method import CallEstimate, CliOption, ItemResult, Method, ReportSection, method_template
from assay.core.protocols import HasCommands, Presents
from assay.core.registry import register_method
from assay.core.types import Completion, GenerateConfig, Item, Unscored
from assay.judge.backends import COUPLED
from assay.judge.direct import ask
from assay.judge.prompts import defuse, fence, load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import OutputInvalid, generate_structured
from assay.judge.verdicts import field_label_probs
from assay.methods.caseaware import report
from assay.methods.caseaware.conversations import conversation_of as conversation_of  # re-exported
from assay.methods.caseaware.identifiers import identifiers, unsupported_identifiers
from assay.methods.caseaware.scoring import (
    BANDS,
    METRICS,
    MIDPOINTS,
    PROFILES,
    band_of,
    resolve_weights,
    s_final,
    validate_weights,
)

__all__ = ["BANDS", "METRICS", "MIDPOINTS", "PROFILES", "CaseAware", "CaseAwareConfig", "TurnOutput", "band_of",
           "conversation_of", "identifiers", "resolve_weights", "s_final", "unsupported_identifiers",
           "validate_weights"]


class CaseAwareConfig(BaseModel):

    model_config = ConfigDict(use_attribute_docstrings=True)
    weights: str | dict[str, float] = "default"
    """Profile (default, uniform, retrieval-heavy), a .toml path, or a mapping metric → weight."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    seed: int = 0
    max_justification_chars: int = Field(default=200, ge=20)
    max_reasks: int = Field(default=2, ge=0)
    identifier_check: Literal["cap", "flag", "off"] = "cap"
    """Identifiers in the answer that no input contains: cap identifier_integrity at 0.30, only
    flag them, or skip the check."""
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": each metric's score is its expected score under the judge's band probabilities,
    read from the logprobs. "direct": each metric asked on its own, its band
    read from one forward pass (a judge that gives label probabilities); the score is the
    expected band midpoint, nothing is generated."""
    top_logprobs: int = Field(default=5, ge=2, le=20)
    """Candidates read at each band (soft verdicts)."""


def _turn_model() -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for metric in METRICS:
        fields[f"{metric}_justification"] = (str, ...)
        fields[f"{metric}_band"] = (Literal["severe", "moderate", "minor", "none"], ...)
        fields[f"{metric}_score"] = (float, ...)
    return create_model("CaseAwareTurn", **fields)


TurnOutput = _turn_model()


def _check_turn(output: Any) -> None:
    problems = []
    for metric in METRICS:
        score = getattr(output, f"{metric}_score")
        band = getattr(output, f"{metric}_band")
        lo, hi = BANDS[band]
        if not 0.0 <= score <= 1.0:
            problems.append(f"{metric}_score {score} is outside [0, 1]")
        elif not lo - 1e-9 <= score <= hi + 1e-9:
            problems.append(f"{metric}_score {score} is outside its band '{band}' ({lo:.2f}-{hi:.2f})")
        if not getattr(output, f"{metric}_justification").strip():
            problems.append(f"{metric}_justification is empty")
    if problems:
        raise OutputInvalid("; ".join(problems[:4]) + (f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""))


@register_method
class CaseAware(Method, Presents, HasCommands):
    """Case-aware RAG judge: 8 metrics per turn with severity bands, and S_final."""

    name: ClassVar[str] = "caseaware"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"compare": {"--out": "--output"}}
    metrics: ClassVar[tuple[str, ...]] = (*(f"{m}_score" for m in METRICS), "s_final")
    version: ClassVar[str] = "1"
    config_model: ClassVar[type[BaseModel] | None] = CaseAwareConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('weight', 'identifier_check', 'verdicts')
    primary_metric: ClassVar[str | None] = "s_final"
    compact_columns: ClassVar[tuple[str, ...]] = ("conversation_id", "case", "contexts", "s_final")
    annotation_labels: ClassVar[dict[str, tuple[str, ...]]] = {f"{m}_band": tuple(BANDS) for m in METRICS}
    """A reviewer's band is one of the four (an override "weird" was stored and reported)."""

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        from assay.methods.caseaware import cli

        app.command("compare", rich_help_panel=kit.panels["compare"])(cli.compare)
        app.command("gate", rich_help_panel=kit.panels["compare"])(cli.gate_command)

    @classmethod
    def cli_options(cls) -> list[CliOption]:
        return [CliOption(name="weight", type="list", env=False,
                          help="custom weight METRIC=W (repeat for all 8; must sum to 1); overrides --weights")]

    @classmethod
    def options_from_cli(cls, values: dict[str, Any]) -> dict[str, Any]:
        entries = values.pop("weight", None) or []
        if entries:
            weights: dict[str, float] = {}
            for entry in entries:
                key, sep, value = entry.partition("=")
                try:
                    weights[key.strip()] = float(value)
                except ValueError:
                    raise ConfigError(f"--weight {entry!r}: expected METRIC=NUMBER") from None
                if not sep:
                    raise ConfigError(f"--weight {entry!r}: expected METRIC=NUMBER")
            values["weights"] = weights
        return values

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        context = report.section_context(rows)
        return ReportSection(section=method_template("section.html.j2", __name__),
                             item=method_template("item.html.j2", __name__),
                             context={"ca": context, "ca_metrics": context["metrics"]})

    def __init__(self, config: CaseAwareConfig | None = None) -> None:
        self.config = config or CaseAwareConfig()
        self.profile, self.weights = resolve_weights(self.config.weights)
        self.prompt = load_prompt("prompts/turn_direct" if self.config.verdicts == "direct" else "prompts/turn",
                                  package=__package__)

    def reads_label_probs(self) -> bool:
        return self.config.verdicts == "direct"  # --verdicts direct

    def manifest(self) -> dict[str, Any]:
        config = self.config.model_dump()
        if config["verdicts"] == "hard" and config["top_logprobs"] == 5:  # hard runs keep their earlier run id
            del config["verdicts"], config["top_logprobs"]
        return {"config": config, "weight_profile": self.profile, "weights": self.weights,
                "prompt_sha256": {"turn": self.prompt.sha256}}

    def check_item(self, item: Item) -> str | None:
        if not item.query.strip():
            return "the query is empty (field 'query')"
        return None

    def order_key(self, item: Item) -> Any:
        return (str(item.metadata.get("conversation_id") or item.id), item.id)

    def render(self, item: Item, metric: str | None = None) -> list[Any]:
        history = "\n".join(f"{turn.role}: {turn.content.strip()}" for turn in item.history) or "(no earlier turns)"
        contexts = "\n\n".join(f"[{n}]{f' ({c.id})' if c.id else ''} {c.text.strip()}"
                               for n, c in enumerate(item.contexts, 1)) or "(no passages were retrieved)"
        reference = (fence("reference", item.reference.full_text()) if item.reference is not None
                     else "<reference>\n(no reference answer given)\n</reference>")
        case = item.case
        # not sealed: with the sealed fence the embedded judge saw 1 of the 4 planted failures of
        # benchmarks/embedded/test_caseaware_embedded.py (3+ with this plain one) and scored one
        # planted turn above its clean twin; left plain until a measurement says otherwise
        return self.prompt.render(subject=defuse((case.subject if case else "") or "(none given)"),
                                  description=defuse((case.description if case else "") or "(none given)"),
                                  history=defuse(history), query=defuse(item.query.strip()),
                                  contexts=defuse(contexts), reference=reference,
                                  answer=fence("answer", item.response),
                                  **({} if metric is None else {"metric": metric}))

    def schema(self, *, coupled: bool = False) -> dict[str, Any]:
        """The turn's JSON schema; ``coupled`` (a judge that takes our grammar: the embedded one)
        also ties each score to the band written before it, so that a score outside its band
        cannot be written (elsewhere it is asked again, then the turn fails closed)."""
        properties: dict[str, Any] = {}
        for metric in METRICS:
            properties[f"{metric}_justification"] = {"type": "string", "minLength": 1,
                                                     "maxLength": self.config.max_justification_chars}
            properties[f"{metric}_band"] = {"type": "string", "enum": list(BANDS)}
            # bounded only where the grammar keeps it: other judges' requests (and cached calls) unchanged
            properties[f"{metric}_score"] = ({"type": "number", "minimum": 0, "maximum": 1} if coupled
                                             else {"type": "number"})
        schema = {"type": "object", "additionalProperties": False, "required": list(properties),
                  "properties": properties}
        if coupled:
            schema[COUPLED] = [{"key": f"{m}_band", "value": f"{m}_score", "decimals": 2,
                                "ranges": {band: list(edges) for band, edges in BANDS.items()}} for m in METRICS]
        return schema

    def _max_tokens(self, *, grammar: bool = False) -> int:
        """The cap on the turn's one reply. On a judge whose grammar bounds the reply (the embedded
        one: each justification at most ``max_justification_chars`` characters, every key fixed),
        the longest reply the grammar allows at one token a character, so that a reply in plain
        text is not cut off (an escape such as ``\\u00e9`` or a character of several byte tokens
        can still take more): a fixed 24 tokens a metric for the keys was enough for Qwen's tokenizer but not for
        SmolLM2's, which spends ~60 on ``"case_resolution_alignment_justification"`` and its
        neighbours, and one SmolLM2 build wrote "1.0.0.1.1..." justifications at a token a
        character; each cut-off reply was asked again, at the full cost of the turn. Elsewhere the
        estimate it always was (so other judges' requests and cached calls are unchanged)."""
        if grammar:
            fixed = sum(len(f'"{m}_justification": "", "{m}_band": "moderate", "{m}_score": 0.00, ') for m in METRICS)
            return 32 + len(METRICS) * self.config.max_justification_chars + fixed
        return 32 + len(METRICS) * (self.config.max_justification_chars // 3 + 24)

    async def _direct_bands(self, item: Item, client: JudgeClient) -> tuple[dict[str, dict[str, float]] | None,
                                                                            Unscored | None, list[str]]:
        """Each metric's band probabilities, one label call per metric (the turn first, so the
        eight calls share their prefix)."""
        bands: dict[str, dict[str, float]] = {}
        keys: list[str] = []
        for metric in METRICS:
            probs, key, problem = await ask(client, self.render(item, metric), tuple(BANDS))
            if key:
                keys.append(key)
            if probs is None:
                assert problem is not None
                return None, problem.model_copy(update={"reason": f"{metric} band: {problem.reason}"}), keys
            bands[metric] = probs
        return bands, None, keys

    async def _evaluate_direct(self, item: Item, client: JudgeClient, details: dict[str, Any]) -> ItemResult:
        bands, problem, keys = await self._direct_bands(item, client)
        if bands is None:
            assert problem is not None
            return ItemResult(scores=dict.fromkeys(self.metrics), details=details, call_keys=keys,
                              unscored=[problem.model_copy(update={"metric": m}) for m in self.metrics])
        scores: dict[str, float | None] = {}
        details["verdicts"] = "direct"
        for metric in METRICS:
            p = bands[metric]
            best = max(p, key=lambda band: p[band])
            scores[f"{metric}_score"] = sum(p[band] * MIDPOINTS[band] for band in BANDS)
            details[f"{metric}_band"], details[f"{metric}_band_p"] = best, p
            details[f"{metric}_score_hard"] = MIDPOINTS[best]
        self._check_identifiers(item, scores, details)
        scores["s_final"] = s_final({m: scores[f"{m}_score"] for m in METRICS}, self.weights)
        return ItemResult(scores=scores, details=details, call_keys=keys)

    def _check_identifiers(self, item: Item, scores: dict[str, float | None], details: dict[str, Any]) -> None:
        """Identifiers the inputs never contain: flag them, and under "cap" hold
        identifier_integrity at 0.30 (the judge's own score kept in the details)."""
        if self.config.identifier_check == "off":
            return
        missing = unsupported_identifiers(item)
        details["identifier_check"] = {"unsupported": missing, "policy": self.config.identifier_check,
                                       "capped": False}
        judged = scores["identifier_integrity_score"]
        if missing and self.config.identifier_check == "cap" and judged is not None and judged > 0.30:
            details["identifier_integrity_judge_score"] = judged
            details["identifier_integrity_judge_band"] = details["identifier_integrity_band"]
            scores["identifier_integrity_score"] = 0.30
            details["identifier_integrity_band"] = "severe"
            details["identifier_check"]["capped"] = True

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        if self.config.verdicts == "direct":
            return await self._evaluate_direct(item, client, {
                "weight_profile": self.profile, "weights": self.weights,
                "conversation_id": str(item.metadata.get("conversation_id") or item.id)})
        soft = self.config.verdicts == "soft"
        grammar = client.backend.capabilities.grammar
        schema = self.schema(coupled=grammar)
        config = GenerateConfig(temperature=self.config.temperature, max_tokens=self._max_tokens(grammar=grammar),
                                seed=self.config.seed, json_schema=schema, logprobs=soft,
                                top_logprobs=self.config.top_logprobs if soft else 0)
        out = await generate_structured(client, self.render(item), TurnOutput, config, check=_check_turn,
                                        max_reasks=self.config.max_reasks)
        details: dict[str, Any] = {"weight_profile": self.profile, "weights": self.weights,
                                   "conversation_id": str(item.metadata.get("conversation_id") or item.id)}
        if out.value is None:
            assert out.unscored is not None
            reason = out.unscored
            return ItemResult(scores=dict.fromkeys(self.metrics), details=details, call_keys=out.keys,
                              unscored=[reason.model_copy(update={"metric": m}) for m in self.metrics])
        scores: dict[str, float | None] = {}
        for metric in METRICS:
            scores[f"{metric}_score"] = float(getattr(out.value, f"{metric}_score"))
            details[f"{metric}_justification"] = getattr(out.value, f"{metric}_justification")
            details[f"{metric}_band"] = getattr(out.value, f"{metric}_band")
        self._check_identifiers(item, scores, details)
        scores["s_final"] = s_final({m: scores[f"{m}_score"] for m in METRICS}, self.weights)
        if soft:
            failed = self._soften(scores, details, out.completion)
            if failed is not None:
                return ItemResult(scores=dict.fromkeys(self.metrics), details=details, call_keys=out.keys,
                                  unscored=[failed.model_copy(update={"metric": m}) for m in self.metrics])
        return ItemResult(scores=scores, details=details, call_keys=out.keys)

    def _soften(self, scores: dict[str, float | None], details: dict[str, Any],
                completion: Completion | None) -> Unscored | None:
        """Replace each score by its expected score under the band probabilities (in place)."""
        found = []
        for metric in METRICS:
            at = field_label_probs(completion, f"{metric}_band", tuple(BANDS)) if completion is not None else None
            greedy = details.get(f"{metric}_judge_band", details[f"{metric}_band"])
            if not at or len(at) != 1 or at[0].greedy != greedy:
                return Unscored(reason=f"soft verdicts need the judge's logprobs at every band (none usable at "
                                       f"{metric}_band)",
                                raw_output=completion.text if completion is not None else None)
            found.append(at[0])
        details["s_final_hard"] = scores["s_final"]
        for metric, probs in zip(METRICS, found, strict=True):
            key = f"{metric}_score"
            judged = details.get(f"{metric}_judge_score", scores[key])
            assert judged is not None
            expected = sum(p * (judged if band == probs.greedy else MIDPOINTS[band]) for band, p in probs.p.items())
            if metric == "identifier_integrity" and details.get("identifier_check", {}).get("capped"):
                expected = min(expected, 0.30)  # the check still says what counts
            details[f"{key}_hard"] = scores[key]
            details[f"{metric}_band_p"] = dict(probs.p)
            scores[key] = expected
        scores["s_final"] = s_final({m: scores[f"{m}_score"] for m in METRICS}, self.weights)
        return None

    def estimate(self, items: list[Item]) -> CallEstimate:
        total = CallEstimate()
        for item in items:
            prompt = sum(len(m.content) for m in self.render(item)) // 4 + 16
            if self.config.verdicts == "direct":  # eight label calls sharing the turn: each new only by its metric
                total += CallEstimate(calls=len(METRICS), prompt_tokens=prompt * len(METRICS), completion_tokens=0)
                continue
            total += CallEstimate(calls=1, prompt_tokens=prompt,
                                  completion_tokens=len(METRICS) * (self.config.max_justification_chars // 5 + 16))
        return total
