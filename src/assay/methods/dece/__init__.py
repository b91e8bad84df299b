"""DeCE: decomposed precision and recall against instance criteria (dece.txt §2, App. C.4–C.5).

Recall workflow (§2.2 step 2): criteria are extracted from the reference's Required Information
(T=0.3) and each is judged satisfied or not by the answer, citing the answer's sentences (T=0).
Precision workflow (§2.2 step 1): elements are extracted from the answer, purely extractively
(T=0.3), and each is judged supported or not by the whole reference, citing the
reference's sentences (T=0).

    P = supported elements / elements      R = satisfied criteria / criteria      F-beta (default F2)

Readings of the paper we chose, so the next person knows:

* The paper returns parallel ``scores`` and ``reasoning`` lists; we ask for one object per
  criterion/element with ``evidence``, ``reasoning`` and ``score`` in that order (reasoning
  before the verdict), and constrain the list length to the number of criteria/elements.
* Evidence is cited, not retyped: the answer (for satisfaction) and the reference (for
  verification) are shown as numbered sentences, and each verdict lists the numbers of the
  sentences it rests on (``evidence``); ``quote`` is those sentences verbatim. Small judges
  asked to copy a quote paraphrase it or copy the criterion instead, so a retyped quote could
  not be checked reliably; a cited one always can.
* Each positive verdict is checked (``quote_found``: it cites at least one sentence;
  ``figures_missing``: figures the criterion/element states, digits or number words, that the
  judged text does not contain anywhere; a percentage needs the same percentage,
  :func:`assay.text.unsupported_figures`). With ``quote_policy="require"`` (the default) a
  positive verdict counts only when it cites evidence and no figure is missing; otherwise it is
  recorded with ``judge_score=1``, ``downgraded`` (the reason) and counted as 0. This is our
  addition to the paper (its rule "specifics matter", App. C.4, made checkable): weak judges
  readily call "six years" supported by a reference that says three. The figure check is
  literal: "90 days" restated as "three months" fails it, and the record says so.
  ``quote_policy="flag"`` is the paper's reading: verdicts stand, failed checks are flagged.
* Soft verdicts (``verdicts="soft"``, issue 17): the satisfaction and verification calls ask
  for logprobs, and each verdict records ``p_judge``, the judge's probability of 1 at its
  ``score`` (:func:`assay.verdicts.field_label_probs`), and ``soft``, what it counts: ``p_judge``
  when the evidence checks allow a positive verdict (no figure missing; for a judge's 1, a cited
  sentence — a negative verdict need not cite), else 0 under "require". Precision and recall are
  the means of ``soft``; the hard ones stay in ``precision_hard`` / ``recall_hard`` / ``f_beta_hard``
  (the greedy labels of the same calls). Extraction
  calls are unchanged, so a soft run re-uses a hard run's cached criteria and elements; a
  completion without logprobs for every verdict makes the metric Unscored, never hard.
* An answer with no extractable element has no defined precision: it is Unscored with that
  reason (never 0 or 1). Likewise recall without criteria. An empty answer covers no criterion:
  its recall is 0 without a judge call, and since F-beta(P, 0) = 0 for every P its F-beta is 0
  although its precision is Unscored (version 2; version 1 left F Unscored, which dropped the
  answers human raters rank lowest — an empty response — from every correlation).
* Criteria are per question (item ``id``), shared by every system's answer to it; a frozen
  criteria file (the expert review workflow, §3.3.1) replaces extraction.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.direct import ask, lettered, point_to, record
from assay.errors import InputError
from assay.methods._base import CallEstimate, CliOption, ItemResult, Method, ReportSection, method_template
from assay.prompts import fence, load_domain, load_prompt, numbered
from assay.registry import register_method
from assay.runner import JudgeClient
from assay.stats import f_beta
from assay.structured import OutputInvalid, generate_structured
from assay.text import numbered_text, split_sentences, unsupported_figures
from assay.types import Completion, GenerateConfig, Item, Unscored
from assay.verdicts import field_label_probs

PROMPTS = ("dece/criteria_extraction", "dece/criteria_satisfaction", "dece/element_extraction",
           "dece/element_verification")
# reasoning=False: the two verdict prompts in brief form (no written reason per verdict)
BRIEF_PROMPTS = ("dece/criteria_satisfaction_brief", "dece/element_verification_brief")


class DeCEConfig(BaseModel):
    """DeCE options. Temperatures are the paper's (App. C.5)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    domain: str = "general"
    """Domain pack: general, legal, medical, financial."""
    beta: float = Field(default=2.0, gt=0, allow_inf_nan=False)
    """F-beta weight of recall; the paper reports F2."""
    seed: int = 0
    """Sampling seed for the T=0.3 extraction steps."""
    extraction_temperature: float = Field(default=0.3, ge=0, le=2)
    verification_temperature: float = Field(default=0.0, ge=0, le=2)
    max_criteria: int = Field(default=8, ge=1)
    """Cap on criteria per question (the paper's experts kept 979 for 224 questions, ~4.4)."""
    max_elements: int = Field(default=10, ge=1)
    """Cap on elements per answer; bounds runaway lists from small judges."""
    max_text_chars: int = Field(default=160, ge=1)
    """maxLength of criteria and elements (small models loop without a bound)."""
    min_text_chars: int = Field(default=12, ge=0)
    """minLength of criteria and elements: a statement, not a fragment like "New York"."""
    max_evidence: int = Field(default=3, ge=1)
    """Most sentences one verdict may cite."""
    max_reasoning_chars: int = Field(default=120, ge=1)
    """maxLength of each verdict's reasoning."""
    reasoning: bool = True
    """Ask each satisfaction/verification verdict for a short written reason before its score
    (the paper's reasoning lists). False uses the brief prompts: evidence numbers and score only,
    about 30 fewer generated tokens a verdict (issue 17, item 5: cost); the record keeps the cited
    sentences as the verdict's evidence and no reason."""
    max_reasks: int = Field(default=2, ge=0)
    quote_policy: Literal["require", "flag"] = "require"
    """"require": a positive verdict counts only if it cites evidence and every figure it
    asserts occurs in the judged text; "flag": verdicts stand and failed checks are flagged."""
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": each satisfaction/support verdict counts its probability P(1) read from the judge's
    logprobs (issue 17), precision and recall are their means; needs a backend with logprobs.
    "direct": each criterion and each element is asked on its own, the label (yes/no) read from one
    forward pass as the judge's next token; its probability counts, and a second pass over the
    lettered sentences picks the evidence of a positive verdict; needs a backend with label
    probabilities (the embedded judge, OpenAI-compatible servers with logprobs)."""
    top_logprobs: int = Field(default=5, ge=2, le=20)
    extraction_samples: int = Field(default=1, ge=1, le=9)
    """Self-consistency (issue 17): sample each extraction (criteria, elements) this many times at
    ``extraction_temperature`` with seeds seed, seed+1, ... and keep the statements a strict
    majority of the samples share (matched by ``sample_matcher``); 1 = one sample, as the paper."""
    sample_matcher: Literal["embeddings", "lexical"] = "embeddings"
    """How statements of different samples are matched (:mod:`assay.embeddings`)."""
    sample_threshold: float | None = Field(default=None, ge=0, le=1)
    """Similarity at or above which two sampled statements are one (default per matcher)."""

    @model_validator(mode="after")
    def _min_below_max(self) -> DeCEConfig:
        if self.min_text_chars > self.max_text_chars:
            raise ValueError(f"min_text_chars={self.min_text_chars} is above max_text_chars={self.max_text_chars}")
        return self

    @model_validator(mode="after")
    def _samples_need_sampling(self) -> DeCEConfig:
        if self.extraction_samples > 1 and self.extraction_temperature == 0:
            raise ValueError(f"extraction_samples={self.extraction_samples} needs extraction_temperature > 0 "
                             "(greedy samples are all the same)")
        return self


# --- response models ---------------------------------------------------------------------------
class CriteriaOutput(BaseModel):
    criteria: list[str]


class ElementsOutput(BaseModel):
    elements: list[str]


class CriterionVerdict(BaseModel):
    criterion: int
    evidence: list[int]
    reasoning: str = ""  # absent in the brief form (reasoning=False); the schema decides
    score: Literal[0, 1]


class ElementVerdict(BaseModel):
    element: int
    evidence: list[int]
    reasoning: str = ""
    score: Literal[0, 1]


class SatisfactionOutput(BaseModel):
    verdicts: list[CriterionVerdict]


class VerificationOutput(BaseModel):
    verdicts: list[ElementVerdict]


def _list_schema(field: str, max_items: int, max_chars: int, min_chars: int = 1) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": [field],
            "properties": {field: {"type": "array", "minItems": 1, "maxItems": max_items,
                                   "items": {"type": "string", "minLength": min(min_chars, max_chars),
                                             "maxLength": max_chars}}}}


def _verdict_schema(index_field: str, count: int, sentences: int, max_evidence: int,
                    max_reasoning: int) -> dict[str, Any]:
    """One verdict object per criterion/element; ``max_reasoning`` 0 leaves out the reasoning."""
    evidence: dict[str, Any] = {"type": "array", "maxItems": 0}
    if sentences:
        evidence = {"type": "array", "maxItems": max_evidence,
                    "items": {"type": "integer", "enum": list(range(1, sentences + 1))}}
    properties: dict[str, Any] = {index_field: {"type": "integer"}, "evidence": evidence}
    if max_reasoning:
        properties["reasoning"] = {"type": "string", "minLength": 1, "maxLength": max_reasoning}
    properties["score"] = {"type": "integer", "enum": [0, 1]}
    verdict = {"type": "object", "additionalProperties": False, "required": list(properties),
               "properties": properties}
    return {"type": "object", "additionalProperties": False, "required": ["verdicts"],
            "properties": {"verdicts": {"type": "array", "minItems": count, "maxItems": count,
                                        "items": verdict}}}


def _clean_list(values: list[str]) -> list[str]:
    """Strip the '1: ' numbering models like to add, blank entries and exact repeats."""
    seen: set[str] = set()
    cleaned = []
    for value in values:
        text = re.sub(r"^\s*\d+\s*[:.)]\s*", "", value).strip()
        if text and text.lower() not in seen:
            seen.add(text.lower())
            cleaned.append(text)
    return cleaned


def _check_nonempty_list(field: str) -> Any:
    def check(output: Any) -> None:
        if not _clean_list(getattr(output, field)):
            raise OutputInvalid(f"'{field}' holds no non-empty entry")
    return check


def _check_verdicts(index_field: str, count: int, sentences: int) -> Any:
    def check(output: Any) -> None:
        if len(output.verdicts) != count:
            raise OutputInvalid(f"expected {count} verdicts, one per {index_field}, got "
                                f"{len(output.verdicts)}")
        for position, verdict in enumerate(output.verdicts, 1):
            if getattr(verdict, index_field) != position:
                raise OutputInvalid(f"verdict {position} is numbered {getattr(verdict, index_field)}; "
                                    f"give the verdicts in order 1..{count}")
            bad = [n for n in verdict.evidence if not 1 <= n <= sentences]
            if bad:
                raise OutputInvalid(f"verdict {position} cites sentence(s) {bad}; there are sentences "
                                    f"1..{sentences}" if sentences else f"verdict {position} cites "
                                    "sentences, but the text has none")
    return check


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[\"'“”‘’`]", "", text)
    return re.sub(r"\s+", " ", text).strip(" .…")


# --- frozen criteria (review workflow) ---------------------------------------------------------
class CriteriaSet(BaseModel):
    """Criteria of one question, as written to and read from a criteria file."""

    id: str
    query: str = ""
    criteria: list[str]
    source: str = "extracted"
    original: list[str] | None = None
    """The criteria as extracted, kept so the store can mark what an expert edited."""
    judge: str | None = None
    prompt_sha256: str | None = None

    def edited_flags(self) -> list[bool]:
        if self.original is None:
            return [False] * len(self.criteria)
        original = {_normalise(c) for c in self.original}
        return [_normalise(c) not in original for c in self.criteria]

    def summary(self) -> dict[str, int]:
        flags = self.edited_flags()
        removed = 0
        if self.original is not None:
            current = {_normalise(c) for c in self.criteria}
            removed = sum(1 for c in self.original if _normalise(c) not in current)
        return {"criteria": len(self.criteria), "edited_or_added": sum(flags), "removed": removed}


def load_criteria_file(path: str | Path) -> dict[str, CriteriaSet]:
    """Read a criteria JSONL file (from ``assay dece criteria extract``, maybe edited)."""
    from assay._load import jsonl_records, validate

    path = Path(path)
    sets: dict[str, CriteriaSet] = {}
    for number, data in jsonl_records(path, kind="a criteria record"):
        criteria_set = validate(CriteriaSet, data, str(path), number)
        cleaned = [c.strip() for c in criteria_set.criteria if c.strip()]
        if not cleaned:
            raise InputError("no criteria", source=str(path), line=number, field="criteria")
        if criteria_set.id in sets:
            raise InputError(f"id {criteria_set.id!r} appears twice", source=str(path), line=number,
                             field="id")
        sets[criteria_set.id] = criteria_set.model_copy(update={"criteria": cleaned})
    if not sets:
        raise InputError("the criteria file is empty", source=str(path))
    return sets


def _dece_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from assay.report import charts

    def points(group: str) -> dict[str, list[tuple[float, float, str]]]:
        series: dict[str, list[tuple[float, float, str]]] = {}
        for r in rows:
            if r.get("precision") is None or r.get("recall") is None:
                continue
            key = str(r.get("system")) if group == "system" else str((r.get("metadata") or {}).get(group))
            series.setdefault(key, []).append((r["recall"], r["precision"], f"{r['id']} · {r.get('system')}"))
        return series

    plots = [("system", charts.scatter(points("system"), "recall", "precision", quadrants=(0.5, 0.5)))]
    fields = sorted({k for r in rows for k, v in (r.get("metadata") or {}).items() if isinstance(v, str)})
    for field in fields:
        distinct = {(r.get("metadata") or {}).get(field) for r in rows}
        if 1 < len(distinct) <= 8:
            plots.append((field, charts.scatter(points(field), "recall", "precision", quadrants=(0.5, 0.5))))
    return {"plots": plots}


# --- the method --------------------------------------------------------------------------------
def _criterion_entry(n: int, criterion: str, edited: Any) -> dict[str, Any]:
    """A criterion's record before any verdict: every field present, none decided."""
    return {"n": n, "criterion": criterion, "edited": edited, "satisfied": None, "judge_score": None,
            "evidence": None, "quote": None, "quote_found": None, "figures_missing": None,
            "downgraded": None, "reasoning": None}


@register_method
class DeCE(Method):
    """DeCE: precision and recall of answers against criteria from a gold answer."""

    name: ClassVar[str] = "dece"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"dece": {"--cache": "--store"}}
    metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f_beta")
    version: ClassVar[str] = "2"
    config_model: ClassVar[type[BaseModel] | None] = DeCEConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'beta', 'max_criteria', 'reasoning', 'verdicts', 'criteria')
    primary_metric: ClassVar[str | None] = "f_beta"
    meta_reference: ClassVar[bool] = True
    compact_columns: ClassVar[tuple[str, ...]] = ("f_beta",)

    @classmethod
    def review_panel(cls) -> str | None:
        return method_template("review.html.j2", __name__)

    @classmethod
    def explain(cls, scores: dict[str, Any], details: dict[str, Any]) -> list[str]:
        def mark(value: Any) -> str:
            return "?" if value is None else "✓" if float(value) >= 0.5 else "✗"

        def why(entry: dict[str, Any]) -> str:
            # a written reason when the judge gave one; a direct verdict has its probability instead,
            # and a verdict a deterministic check overruled says so
            parts = [str(entry.get("reasoning") or "").strip()[:140]]
            if entry.get("p_judge") is not None and not parts[0]:
                parts[0] = f"P(yes) {float(entry['p_judge']):.2f}"
            if entry.get("downgraded"):
                parts.append(f"not counted: {entry['downgraded']}")
            text = "; ".join(p for p in parts if p)
            return f" — {text}" if text else ""

        lines = []
        for c in details.get("criteria") or []:
            lines.append(f"{mark(c.get('satisfied'))} criterion: {c.get('criterion')}"
                         + (why(c) if mark(c.get("satisfied")) != "✓" else ""))
        for e in details.get("elements") or []:
            if mark(e.get("supported")) != "✓":
                lines.append(f"{mark(e.get('supported'))} not in the reference: {e.get('element')}" + why(e))
        return lines

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        from assay.methods.dece import cli

        app.add_typer(cli.app, name="dece", rich_help_panel=kit.panels["rubrics"])

    @classmethod
    def from_options(cls, config: BaseModel | None, **extras: Any) -> Method:
        criteria = extras.pop("criteria", None)
        if extras:
            raise TypeError(f"unexpected options {', '.join(extras)}")
        if isinstance(criteria, str | Path):
            criteria = load_criteria_file(criteria)
        return cls(config, criteria=criteria)  # type: ignore[arg-type]

    @classmethod
    def cli_options(cls) -> list[CliOption]:
        return [CliOption(name="criteria", type="path",
                          help="frozen criteria JSONL (from `assay dece criteria extract`), edited by an expert")]

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        return ReportSection(section=method_template("section.html.j2", __name__),
                             item=method_template("item.html.j2", __name__), context=_dece_section(rows))

    def __init__(self, config: DeCEConfig | None = None,
                 criteria: dict[str, CriteriaSet] | None = None) -> None:
        self.config = config or DeCEConfig()
        self.domain = load_domain(self.config.domain)
        names = PROMPTS if self.config.reasoning else (PROMPTS[0], BRIEF_PROMPTS[0], PROMPTS[2], BRIEF_PROMPTS[1])
        # keyed by role (the brief forms stand in for the verdict prompts when reasoning=False)
        self.prompts = {role.split("/")[1]: load_prompt(name) for role, name in zip(PROMPTS, names, strict=True)}
        if self.config.verdicts == "direct":  # the verdict prompts are the one-question forms
            del self.prompts["criteria_satisfaction"], self.prompts["element_verification"]
            self.prompts.update(criterion_direct=load_prompt("dece/criterion_direct"),
                                element_direct=load_prompt("dece/element_direct"))
        self.frozen = criteria

    @classmethod
    def recognises_output(cls, record: dict[str, Any]) -> bool:
        return {"criteria", "original"} <= set(record)  # a criteria file (assay dece criteria extract)

    def reads_label_probs(self) -> bool:
        return self.config.verdicts == "direct"  # --verdicts direct

    def manifest(self) -> dict[str, Any]:
        frozen_hash = None
        if self.frozen is not None:
            blob = json.dumps({k: v.criteria for k, v in sorted(self.frozen.items())}, sort_keys=True)
            frozen_hash = hashlib.sha256(blob.encode()).hexdigest()
        config = self.config.model_dump()
        if self.config.verdicts == "hard":  # hard is how every earlier run scored: keep their run ids
            del config["verdicts"], config["top_logprobs"]
        if self.config.reasoning:  # likewise verdicts with a written reason
            del config["reasoning"]
        if self.config.extraction_samples == 1:  # likewise one extraction sample
            del config["extraction_samples"], config["sample_matcher"], config["sample_threshold"]
        return {"config": config,
                "prompt_sha256": {k: p.sha256 for k, p in self.prompts.items()},
                "domain_sha256": self.domain["sha256"], "criteria_file_sha256": frozen_hash}

    def check_item(self, item: Item) -> str | None:
        if item.reference is None or not item.reference.required.strip():
            return "DeCE needs a reference answer with Required Information (field 'reference')"
        if self.frozen is not None and item.id not in self.frozen:
            return "no criteria for this id in the criteria file"
        return None

    # rendering (I/O-free) ----------------------------------------------------------------------
    def _expert(self) -> str:
        return str(self.domain["expert"])

    def _categories(self, key: str) -> str:
        values = self.domain.get(key) or self.domain["criteria_categories"]
        return "\n".join(f"   - {v}" for v in values)

    def render_criteria_extraction(self, item: Item) -> list[Any]:
        assert item.reference is not None
        reference = fence("reference", item.reference.full_text())
        return self.prompts["criteria_extraction"].render(
            expert=self._expert(), categories=self._categories("criteria_categories"),
            query=item.query.strip(), reference=reference)

    def render_satisfaction(self, item: Item, criteria: list[str]) -> list[Any]:
        return self.prompts["criteria_satisfaction"].render(
            expert=self._expert(), rules=numbered(self.domain["satisfaction_rules"]),
            criteria=numbered(criteria), answer=fence("answer", numbered_text(item.response)))

    def render_element_extraction(self, item: Item) -> list[Any]:
        return self.prompts["element_extraction"].render(
            expert=self._expert(), categories=self._categories("element_categories"),
            query=item.query.strip(), answer=fence("answer", item.response))

    def render_verification(self, item: Item, elements: list[str]) -> list[Any]:
        assert item.reference is not None
        return self.prompts["element_verification"].render(
            expert=self._expert(), rules=numbered(self.domain["verification_rules"]),
            reference=fence("reference", numbered_text(item.reference.full_text())),
            elements=numbered(elements))

    def _config(self, temperature: float, max_tokens: int, schema: dict[str, Any],
                soft: bool = False) -> GenerateConfig:
        return GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=self.config.seed,
                              json_schema=schema, logprobs=soft, top_logprobs=self.config.top_logprobs if soft else 0)

    def _soften(self, entries: list[dict[str, Any]], completion: Completion | None,
                what: str) -> tuple[float | None, Unscored | None]:
        """Attach ``p_judge`` and ``soft`` to each verdict entry; the mean of ``soft``, or why not."""
        found = field_label_probs(completion, "score", ("0", "1")) if completion is not None else None
        if found is None or [f.greedy for f in found] != [str(e["judge_score"]) for e in entries]:
            return None, Unscored(reason=f"{what}: soft verdicts need the judge's logprobs at every score "
                                         f"(got {0 if found is None else len(found)} of {len(entries)})",
                                  raw_output=completion.text if completion is not None else None)
        for entry, probs in zip(entries, found, strict=True):
            blocked = bool(entry["figures_missing"]) or (entry["judge_score"] == 1 and not entry["evidence"])
            entry["p_judge"] = probs.p["1"]
            entry["soft"] = 0.0 if blocked and self.config.quote_policy == "require" else probs.p["1"]
        return sum(e["soft"] for e in entries) / len(entries), None

    def _reasoning_chars(self) -> int:
        return self.config.max_reasoning_chars if self.config.reasoning else 0

    def _verdict_tokens(self, count: int) -> int:
        # index + evidence + reasoning per verdict, at ~3.5 characters per token, plus framing
        return 48 + count * (32 + self._reasoning_chars() // 3)

    def _grounded(self, verdict: CriterionVerdict | ElementVerdict, statement: str, sentences: list[str],
                  source_name: str) -> dict[str, Any]:
        """A verdict with its evidence checks applied under the quote policy."""
        cited = list(dict.fromkeys(verdict.evidence))
        quote = " ".join(sentences[n - 1] for n in cited)
        missing = unsupported_figures(statement, " ".join(sentences))
        counts = bool(verdict.score)
        problems = []
        if counts and not cited:
            problems.append(f"cites no sentence of the {source_name}")
        if counts and missing:
            problems.append(f"states {', '.join(missing)}, which the {source_name} does not contain")
        downgraded = None
        if problems and self.config.quote_policy == "require":
            counts = False
            downgraded = "positive verdict that " + " and ".join(problems)
        return {"counts": counts, "judge_score": verdict.score, "evidence": cited, "quote": quote,
                "quote_found": bool(cited), "figures_missing": missing, "downgraded": downgraded,
                "reasoning": verdict.reasoning or None}

    async def _direct(self, item: Item, client: JudgeClient, statements: list[str], kind: str,
                      keys: list[str]) -> tuple[list[dict[str, Any]], Unscored | None]:
        """One label call per statement (and one evidence call per positive verdict), the judged
        text first so the calls of one answer share their prefix. ``kind``: criterion (against the
        answer) or element (against the reference)."""
        cfg = self.config
        if kind == "criterion":
            sentences = split_sentences(item.response)
            text = fence("answer", lettered(sentences))
            prompt, field, source, metric = self.prompts["criterion_direct"], "criterion", "answer", "recall"
        else:
            assert item.reference is not None
            sentences = split_sentences(item.reference.full_text())
            text = fence("reference", lettered(sentences))
            prompt, field, source, metric = self.prompts["element_direct"], "statement", "reference", "precision"
        whole = " ".join(sentences)
        entries: list[dict[str, Any]] = []
        for statement in statements:
            messages = prompt.render(expert=self._expert(), rules=numbered(
                self.domain["satisfaction_rules" if kind == "criterion" else "verification_rules"]),
                **{"answer" if kind == "criterion" else "reference": text, field: statement})
            probs, key, problem = await ask(client, messages, metric=metric)
            if key:
                keys.append(key)
            if probs is None:
                return entries, problem.model_copy(update={"reason": f"{kind} verdict: {problem.reason}"}) \
                    if problem else Unscored(reason=f"{kind} verdict failed", metric=metric)
            p_yes = probs["yes"]
            evidence = p_evidence = None
            if p_yes >= 0.5 and cfg.max_evidence > 0:
                evidence, p_evidence, ev_key = await point_to(client, messages, "yes", len(sentences), metric)
                if ev_key:
                    keys.append(ev_key)
            entries.append(record(p_yes, evidence, p_evidence, sentences, unsupported_figures(statement, whole),
                                  cfg.quote_policy, source))
        return entries, None

    # the judge calls ----------------------------------------------------------------------------
    async def criteria_for(self, item: Item, client: JudgeClient) -> tuple[list[str] | None,
                                                                         list[bool], Unscored | None,
                                                                         list[str], str]:
        """Frozen criteria when a file was given, otherwise extracted ones (cached per question)."""
        if self.frozen is not None:
            frozen = self.frozen[item.id]
            return frozen.criteria, frozen.edited_flags(), None, [], "file"
        cfg = self.config
        criteria, problem, keys, votes = await self._extract(
            client, self.render_criteria_extraction(item), CriteriaOutput, "criteria", cfg.max_criteria, "recall")
        if criteria is None:
            return None, [], problem, keys, "extracted"
        source = "extracted" if votes is None else f"extracted (votes of {cfg.extraction_samples} samples: " \
            f"{', '.join(map(str, votes))})"
        return criteria, [False] * len(criteria), None, keys, source

    async def _extract(self, client: JudgeClient, messages: list[Any], model: type[BaseModel], field: str,
                       cap: int, metric: str) -> tuple[list[str] | None, Unscored | None, list[str],
                                                       list[int] | None]:
        """One extraction, or with ``extraction_samples`` k > 1 the statements a majority of k
        samples share (seeds seed..seed+k−1; sample 1 is the call a one-sample run makes, so it
        is shared with such runs' cache). A sample that fails is left out of the vote; if every
        sample fails, the first failure is the reason. Returns the statements, the problem, the
        call keys and each statement's votes (None for one sample)."""
        cfg = self.config
        config = self._config(cfg.extraction_temperature, 64 + cap * (cfg.max_text_chars // 3),
                              _list_schema(field, cap, cfg.max_text_chars, cfg.min_text_chars))
        keys: list[str] = []
        samples: list[list[str]] = []
        first_problem: Unscored | None = None
        for n in range(cfg.extraction_samples):
            sample = config.model_copy(update={"seed": cfg.seed + n})
            outcome = await generate_structured(client, messages, model, sample,
                                                check=_check_nonempty_list(field), max_reasks=cfg.max_reasks,
                                                metric=metric)
            keys += outcome.keys
            if outcome.value is None:
                first_problem = first_problem or outcome.unscored
                continue
            samples.append(_clean_list(getattr(outcome.value, field))[:cap])
        if not samples:
            return None, first_problem, keys, None
        if cfg.extraction_samples == 1:
            return samples[0], None, keys, None
        from assay.embeddings import consensus
        kept = consensus(samples, cfg.sample_matcher, cfg.sample_threshold,
                         min_votes=cfg.extraction_samples // 2 + 1)[:cap]
        if not kept:
            return None, Unscored(reason=f"no {field[:-1]} was shared by a majority of {cfg.extraction_samples} "
                                         f"samples ({len(samples)} parsed)", metric=metric), keys, None
        return [text for text, _ in kept], None, keys, [votes for _, votes in kept]

    async def extract_criteria(self, item: Item, client: JudgeClient) -> CriteriaSet | Unscored:
        """Criteria of one question for the review workflow."""
        criteria, _, unscored, _, _ = await self.criteria_for(item, client)
        if criteria is None:
            assert unscored is not None
            return unscored
        return CriteriaSet(id=item.id, query=item.query, criteria=criteria, source="extracted",
                           original=list(criteria), judge=client.backend.name,
                           prompt_sha256=self.prompts["criteria_extraction"].sha256)

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        cfg = self.config
        assert item.reference is not None
        keys: list[str] = []
        unscored: list[Unscored] = []
        details: dict[str, Any] = {"beta": cfg.beta, "verdicts": cfg.verdicts}
        soft = cfg.verdicts == "soft"

        # Recall: criteria, then satisfaction.
        criteria, edited, problem, crit_keys, source = await self.criteria_for(item, client)
        keys += crit_keys
        details["criteria_source"] = source
        recall: float | None = None
        details["criteria"] = []
        if criteria is None:
            assert problem is not None
            unscored.append(problem.model_copy(update={"reason": f"criteria extraction: {problem.reason}"}))
        elif not item.response.strip():
            # an empty answer covers no criterion: recall is 0 by definition, no judge is asked
            probabilistic = cfg.verdicts in ("soft", "direct")  # the same fields as their asked verdicts
            for n, criterion in enumerate(criteria, 1):
                details["criteria"].append({**_criterion_entry(n, criterion, edited[n - 1]), "satisfied": False,
                                            "reasoning": "the answer is empty",
                                            **({"p_judge": None, "soft": 0.0} if probabilistic else {}),
                                            **({"decided_by": "deterministic check"}
                                               if cfg.verdicts == "direct" else {})})
            recall = 0.0
            if probabilistic:
                details["recall_hard"] = 0.0
        elif cfg.verdicts == "direct":
            entries, problem = await self._direct(item, client, criteria, "criterion", keys)
            for n, criterion in enumerate(criteria, 1):
                entry = _criterion_entry(n, criterion, edited[n - 1])
                if n <= len(entries):
                    entry.update(entries[n - 1])
                    entry["satisfied"] = entry["soft"]
                details["criteria"].append(entry)
            if problem is not None:
                unscored.append(problem.model_copy(update={"metric": "recall"}))
            else:
                recall = sum(e["soft"] for e in entries) / len(criteria)
                details["recall_hard"] = sum(bool(e["judge_score"]) and not e["downgraded"] for e in entries) \
                    / len(criteria)
        else:
            answer_sentences = split_sentences(item.response)
            outcome = await generate_structured(
                client, self.render_satisfaction(item, criteria), SatisfactionOutput,
                self._config(cfg.verification_temperature, self._verdict_tokens(len(criteria)),
                             _verdict_schema("criterion", len(criteria), len(answer_sentences),
                                             cfg.max_evidence, self._reasoning_chars()), soft),
                check=_check_verdicts("criterion", len(criteria), len(answer_sentences)),
                max_reasks=cfg.max_reasks,
                metric="recall")
            keys += outcome.keys
            sat_verdicts = outcome.value.verdicts if outcome.value is not None else None
            for n, criterion in enumerate(criteria, 1):
                entry = _criterion_entry(n, criterion, edited[n - 1])
                if sat_verdicts is not None:
                    entry.update(self._grounded(sat_verdicts[n - 1], criterion, answer_sentences, "answer"))
                    entry["satisfied"] = entry.pop("counts")
                details["criteria"].append(entry)
            if sat_verdicts is None:
                assert outcome.unscored is not None
                unscored.append(outcome.unscored.model_copy(
                    update={"reason": f"criterion satisfaction: {outcome.unscored.reason}"}))
            else:
                recall = sum(bool(c["satisfied"]) for c in details["criteria"]) / len(criteria)
                if soft:
                    details["recall_hard"] = recall
                    recall, failed = self._soften(details["criteria"], outcome.completion, "criterion satisfaction")
                    if failed is not None:
                        unscored.append(failed.model_copy(update={"metric": "recall"}))

        # Precision: elements, then verification against the whole reference.
        precision: float | None = None
        details["elements"] = []
        if not item.response.strip():
            unscored.append(Unscored(reason="the answer is empty: no element to verify", metric="precision"))
        else:
            elements_or_none, ext_problem, ext_keys, votes = await self._extract(
                client, self.render_element_extraction(item), ElementsOutput, "elements", cfg.max_elements,
                "precision")
            keys += ext_keys
            if elements_or_none is None:
                assert ext_problem is not None
                unscored.append(ext_problem.model_copy(
                    update={"reason": f"element extraction: {ext_problem.reason}"}))
            else:
                elements = elements_or_none
                if votes is not None:
                    details["element_votes"] = votes
                reference_sentences = split_sentences(item.reference.full_text())
            if elements_or_none is not None and cfg.verdicts == "direct":
                entries, problem = await self._direct(item, client, elements, "element", keys)
                for n, element in enumerate(elements, 1):
                    direct_row: dict[str, Any] = {"n": n, "element": element, "supported": None,
                                                  **(entries[n - 1] if n <= len(entries) else {})}
                    if n <= len(entries):
                        direct_row["supported"] = direct_row["soft"]
                    details["elements"].append(direct_row)
                if problem is not None:
                    unscored.append(problem.model_copy(update={"metric": "precision"}))
                else:
                    precision = sum(e["soft"] for e in entries) / len(elements)
                    details["precision_hard"] = sum(bool(e["judge_score"]) and not e["downgraded"]
                                                    for e in entries) / len(elements)
            elif elements_or_none is not None:
                ver = await generate_structured(
                    client, self.render_verification(item, elements), VerificationOutput,
                    self._config(cfg.verification_temperature, self._verdict_tokens(len(elements)),
                                 _verdict_schema("element", len(elements), len(reference_sentences),
                                                 cfg.max_evidence, self._reasoning_chars()), soft),
                    check=_check_verdicts("element", len(elements), len(reference_sentences)),
                    max_reasks=cfg.max_reasks,
                    metric="precision")
                keys += ver.keys
                el_verdicts = ver.value.verdicts if ver.value is not None else None
                for n, element in enumerate(elements, 1):
                    row: dict[str, Any] = {"n": n, "element": element, "supported": None, "judge_score": None,
                                           "evidence": None, "quote": None, "quote_found": None,
                                           "figures_missing": None, "downgraded": None, "reasoning": None}
                    if el_verdicts is not None:
                        row.update(self._grounded(el_verdicts[n - 1], element, reference_sentences, "reference"))
                        row["supported"] = row.pop("counts")
                    details["elements"].append(row)
                if el_verdicts is None:
                    assert ver.unscored is not None
                    unscored.append(ver.unscored.model_copy(
                        update={"reason": f"element verification: {ver.unscored.reason}"}))
                else:
                    precision = sum(bool(e["supported"]) for e in details["elements"]) / len(elements)
                    if soft:
                        details["precision_hard"] = precision
                        precision, failed = self._soften(details["elements"], ver.completion,
                                                         "element verification")
                        if failed is not None:
                            unscored.append(failed.model_copy(update={"metric": "precision"}))

        fb: float | None = None
        if precision is not None and recall is not None:
            fb = f_beta(precision, recall, cfg.beta)
            if cfg.verdicts in ("soft", "direct") and "precision_hard" in details and "recall_hard" in details:
                details["f_beta_hard"] = f_beta(details["precision_hard"], details["recall_hard"], cfg.beta)
        elif recall == 0.0:
            # F-beta(P, 0) = 0 for every P in [0, 1]: with nothing covered, F is 0 whatever the
            # precision (an empty answer has none); precision itself stays Unscored
            fb = 0.0
            details["f_beta_rule"] = "recall is 0, so F-beta is 0 whatever the precision"
            if cfg.verdicts in ("soft", "direct") and details.get("recall_hard") == 0.0:
                details["f_beta_hard"] = 0.0
        else:
            missing = [m for m, v in (("precision", precision), ("recall", recall)) if v is None]
            unscored.append(Unscored(reason=f"needs {' and '.join(missing)}", metric="f_beta"))
        return ItemResult(scores={"precision": precision, "recall": recall, "f_beta": fb},
                          unscored=unscored, details=details, call_keys=keys)

    def estimate(self, items: list[Item]) -> CallEstimate:
        """~4 characters a token; assumes 5 criteria and 8 elements per answer."""
        def tokens(messages: list[Any]) -> int:
            return sum(len(m.content) for m in messages) // 4 + 8 * len(messages)

        total = CallEstimate()
        seen_questions: set[str] = set()
        guess_criteria = [("x" * 100)] * 5
        guess_elements = [("x" * 100)] * 8
        for item in items:
            if self.frozen is None and item.id not in seen_questions:
                seen_questions.add(item.id)
                total += CallEstimate(calls=1, prompt_tokens=tokens(self.render_criteria_extraction(item)),
                                      completion_tokens=5 * 30)
            criteria = self.frozen[item.id].criteria if self.frozen is not None else guess_criteria
            total += CallEstimate(calls=3, prompt_tokens=(
                tokens(self.render_satisfaction(item, criteria))
                + tokens(self.render_element_extraction(item))
                + tokens(self.render_verification(item, guess_elements))),
                completion_tokens=(len(criteria) + 8) * (80 if self.config.reasoning else 20) + 8 * 30)
        return total
