"""DeCE: decomposed precision and recall against instance criteria.

Paper: Beyond Pointwise Scores: Decomposed Criteria-Based Evaluation of LLM Responses, §2, App. C.4–C.5.

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
  :func:`assay.judge.text.unsupported_figures`). With ``quote_policy="require"`` (the default) a
  positive verdict counts only when it cites evidence and no figure is missing; otherwise it is
  recorded with ``judge_score=1``, ``downgraded`` (the reason) and counted as 0. This is our
  addition to the paper (its rule "specifics matter", App. C.4, made checkable): weak judges
  readily call "six years" supported by a reference that says three. The figure check is
  literal: "90 days" restated as "three months" fails it, and the record says so.
  ``quote_policy="flag"`` is the paper's reading: verdicts stand, failed checks are flagged.
* Soft verdicts (``verdicts="soft"``, issue 17): the satisfaction and verification calls ask
  for logprobs, and each verdict records ``p_judge``, the judge's probability of 1 at its
  ``score`` (:func:`assay.judge.verdicts.field_label_probs`), and ``soft``, what it counts: ``p_judge``
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

The package, by room: :mod:`.schemas` (response models, JSON schemas), :mod:`.checks` (list,
verdict and evidence checks), :mod:`.criteria` (criteria files), :mod:`.prompts`, :mod:`.calls`
(call settings, extraction), :mod:`.halves` (recall and precision, judged by one code path),
:mod:`.verdicts` (one module per verdict mode) and :mod:`.report`; the options and the method are here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.analysis.stats import f_beta
from assay.core.method import CallEstimate, CliOption, ItemResult, Method, ReportSection, method_template, openai_cached
from assay.core.protocols import HasCommands, MetaEvaluated, Presents
from assay.core.registry import register_method
from assay.core.types import Item, Unscored
from assay.judge.prompts import load_domain
from assay.judge.runner import JudgeClient
from assay.methods.dece import report
from assay.methods.dece.calls import extract
from assay.methods.dece.criteria import CriteriaSet, load_criteria_file
from assay.methods.dece.halves import PRECISION, RECALL, Half
from assay.methods.dece.prompting import BRIEF_PROMPTS, PROMPTS, DeCEPrompts, load_prompts
from assay.methods.dece.schemas import (
    CriteriaOutput,
    CriterionVerdict,
    ElementsOutput,
    ElementVerdict,
    SatisfactionOutput,
    VerificationOutput,
)
from assay.methods.dece.verdicts import MODES

__all__ = ["BRIEF_PROMPTS", "PROMPTS", "CriteriaOutput", "CriteriaSet", "CriterionVerdict", "DeCE", "DeCEConfig",
           "ElementVerdict", "ElementsOutput", "SatisfactionOutput", "VerificationOutput", "load_criteria_file"]


class DeCEConfig(BaseModel):
    """DeCE options. Temperatures are the paper's (App. C.5)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    domain: str = "general"
    """Domain pack: general, legal, medical, financial."""
    beta: float = Field(default=2.0, gt=0, le=1000, allow_inf_nan=False)
    """F-beta weight of recall; the paper reports F2. At most 1000 (in effect recall alone)."""
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
    """minLength of criteria and elements in characters: 12 refuses a fragment like "New York" (8), not a
    short statement; a length cannot tell "New York City" (13) from one."""
    max_evidence: int = Field(default=3, ge=1)
    """Most sentences one verdict may cite."""
    max_reasoning_chars: int = Field(default=120, ge=1)
    """maxLength of each verdict's reasoning."""
    reasoning: bool = True
    """Ask each satisfaction/verification verdict for a short written reason before its score
    (the paper's reasoning lists). False uses the brief prompts: evidence numbers and score only,
    about 30 fewer generated tokens a verdict; the record keeps the cited
    sentences as the verdict's evidence and no reason."""
    max_reasks: int = Field(default=2, ge=0)
    quote_policy: Literal["require", "flag"] = "require"
    """"require": a positive verdict counts only if it cites evidence and every figure it
    asserts occurs in the judged text; "flag": verdicts stand and failed checks are flagged."""
    verdicts: Literal["auto", "hard", "soft", "direct"] = "auto"
    """"auto" (the default since assay 0.2): "direct" on a judge that gives label probabilities
    (the embedded judge, OpenAI-compatible servers with logprobs), "hard" on one that does not.
    On the embedded judge direct verdicts agreed far better with people than generated ones
    (Pearson r 0.64 against 0.37-0.46 with the annotators' preference, 40 RAGChecker dev pairs)
    at 0.43x the time. A store holding a run of the same work from before 0.2 (hard verdicts)
    continues that run (:meth:`DeCE.earlier_defaults`).
    "hard": the paper's generated verdicts, a 0/1 score each with its reasoning and evidence.
    "soft": each satisfaction/support verdict counts its probability P(1) read from the judge's
    logprobs, precision and recall are their means; needs a backend with logprobs.
    "direct": each criterion and each element is asked on its own, the label (yes/no) read from one
    forward pass as the judge's next token; its probability counts, and a second pass over the
    lettered sentences picks the evidence of a positive verdict; needs a backend with label
    probabilities (the embedded judge, OpenAI-compatible servers with logprobs)."""
    top_logprobs: int = Field(default=5, ge=2, le=20)
    calibration: Literal["default", "none"] = "default"
    """Direct verdicts on the embedded judge: "default" adds each element's calibrated P(yes)
    (``p_calibrated``, by the map shipped with assay: fitted on ExpertQA's expert-labelled claims,
    applied only to the model and question it was measured on) and shows each verdict as supported ✓,
    not supported ✗ or uncertain ? by the map's bands (the shipped map has no ✗ band: no low P was
    right about "not supported" 80% of the time); "none" shows the judge's raw P(yes) and marks ✓
    from 0.5. Precision counts the judge's raw P(yes) either way (since 0.2.1: with the mapped values
    it followed RAGChecker's human preferences less closely). Other judges and questions get no
    calibrated value either way."""
    extraction_samples: int = Field(default=1, ge=1, le=9)
    """Self-consistency: sample each extraction (criteria, elements) this many times at
    ``extraction_temperature`` with seeds seed, seed+1, ... and keep the statements a strict
    majority of the samples share (matched by ``sample_matcher``); 1 = one sample, as the paper."""
    sample_matcher: Literal["embeddings", "lexical"] = "embeddings"
    """How statements of different samples are matched (:mod:`assay.judge.embeddings`)."""
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


@register_method
class DeCE(DeCEPrompts, Method, Presents, MetaEvaluated, HasCommands):
    """DeCE: precision (answer statements the gold answer supports), recall (gold criteria met)."""

    name: ClassVar[str] = "dece"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"dece": {"--cache": "--store"}}
    metrics: ClassVar[tuple[str, ...]] = ("precision", "recall", "f_beta")
    version: ClassVar[str] = "2"
    config_model: ClassVar[type[BaseModel] | None] = DeCEConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'beta', 'max_criteria', 'reasoning', 'verdicts', 'criteria')
    primary_metric: ClassVar[str | None] = "f_beta"
    meta_reference: ClassVar[bool] = True
    compact_columns: ClassVar[tuple[str, ...]] = ("f_beta",)
    by_default: bool = False
    """Its verdicts were settled from "auto" for the judge (:meth:`for_judge`), not chosen."""

    @classmethod
    def review_panel(cls) -> str | None:
        return method_template("review.html.j2", __name__)

    @classmethod
    def explain(cls, scores: dict[str, Any], details: dict[str, Any]) -> list[str]:
        return report.explain(details)

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
                             item=method_template("item.html.j2", __name__), context=report.section_context(rows))

    def __init__(self, config: DeCEConfig | None = None,
                 criteria: dict[str, CriteriaSet] | None = None) -> None:
        self.config = config or DeCEConfig()
        self.domain = load_domain(self.config.domain)
        self.prompts = load_prompts(self.config.reasoning, self.config.verdicts)
        # auto stands for hard until a judge settles it (:meth:`for_judge`), as its prompts and manifest do
        self.mode = MODES["hard" if self.config.verdicts == "auto" else self.config.verdicts]
        self.frozen = criteria

    def for_judge(self, capabilities: Any) -> DeCE:
        """``verdicts="auto"`` settled for this judge: direct where it gives label probabilities."""
        if self.config.verdicts != "auto":
            return self
        verdicts = "direct" if capabilities.label_probs else "hard"
        settled = type(self)(self.config.model_copy(update={"verdicts": verdicts}), criteria=self.frozen)
        settled.by_default = True
        return settled

    def earlier_defaults(self) -> list[tuple[Method, str]]:
        """Direct verdicts chosen by default: before assay 0.2 the same command ran hard verdicts."""
        if not getattr(self, "by_default", False) or self.config.verdicts != "direct":
            return []
        earlier = type(self)(self.config.model_copy(update={"verdicts": "hard"}), criteria=self.frozen)
        return [(earlier, "generated verdicts (--verdicts hard), the default before assay 0.2")]

    def reads_label_probs(self) -> bool:
        return self.config.verdicts == "direct"  # --verdicts direct

    def manifest(self) -> dict[str, Any]:
        frozen_hash = None
        if self.frozen is not None:
            blob = json.dumps({k: v.criteria for k, v in sorted(self.frozen.items())}, sort_keys=True)
            frozen_hash = hashlib.sha256(blob.encode()).hexdigest()
        config = self.config.model_dump()
        if self.config.verdicts in ("hard", "auto"):  # hard is how every earlier run scored: keep their run ids
            # (auto is settled for the judge before a run; unsettled, it stands for hard, as its prompts do)
            del config["verdicts"], config["top_logprobs"]
        if self.config.verdicts != "direct" or self.config.calibration == "none":
            del config["calibration"]  # direct verdicts read raw are how every earlier direct run scored
        else:  # a changed map is a new run; so is the change from counting the mapped P (0.2.0)
            from assay.judge.calibration import shipped_sha256

            config["calibration_sha256"] = shipped_sha256()
            config["counts"] = "p_judge"
        if self.config.reasoning:  # likewise verdicts with a written reason
            del config["reasoning"]
        if self.config.extraction_samples == 1:  # likewise one extraction sample
            del config["extraction_samples"], config["sample_matcher"], config["sample_threshold"]
        return {"config": config,
                "prompt_sha256": {k: p.sha256 for k, p in self.prompts.items()},
                "domain_sha256": self.domain["sha256"], "criteria_file_sha256": frozen_hash}

    def check_item(self, item: Item) -> str | None:
        if item.reference is None or not item.reference.required.strip():
            return "DeCE needs a reference answer to compare with (field 'reference')"
        if self.frozen is not None and item.id not in self.frozen:
            return "no criteria for this id in the criteria file"
        return None

    # the judge calls ----------------------------------------------------------------------------
    async def criteria_for(self, item: Item, client: JudgeClient) -> tuple[list[str] | None,
                                                                         list[bool], Unscored | None,
                                                                         list[str], str]:
        """Frozen criteria when a file was given, otherwise extracted ones (cached per question)."""
        if self.frozen is not None:
            frozen = self.frozen[item.id]
            return frozen.criteria, frozen.edited_flags(), None, [], "file"
        cfg = self.config
        criteria, problem, keys, votes = await extract(
            cfg, client, self.render_criteria_extraction(item), CriteriaOutput, "criteria", cfg.max_criteria, "recall")
        if criteria is None:
            return None, [], problem, keys, "extracted"
        source = "extracted" if votes is None else f"extracted (votes of {cfg.extraction_samples} samples: " \
            f"{', '.join(map(str, votes))})"
        return criteria, [False] * len(criteria), None, keys, source

    async def extract_criteria(self, item: Item, client: JudgeClient) -> CriteriaSet | Unscored:
        """Criteria of one question for the review workflow."""
        criteria, _, unscored, _, _ = await self.criteria_for(item, client)
        if criteria is None:
            assert unscored is not None
            return unscored
        return CriteriaSet(id=item.id, query=item.query, criteria=criteria, source="extracted",
                           original=list(criteria), judge=client.backend.name,
                           prompt_sha256=self.prompts["criteria_extraction"].sha256)

    async def _criteria(self, item: Item, client: JudgeClient, details: dict[str, Any],
                        keys: list[str]) -> tuple[list[str], list[bool | None]] | Unscored:
        """Recall's statements: the question's criteria (with each one's edited flag)."""
        criteria, edited, problem, crit_keys, source = await self.criteria_for(item, client)
        keys += crit_keys
        details["criteria_source"] = source
        details["criteria"] = []
        if criteria is None:
            assert problem is not None
            return problem.model_copy(update={"reason": f"criteria extraction: {problem.reason}"})
        return criteria, list(edited)

    async def _elements(self, item: Item, client: JudgeClient, details: dict[str, Any],
                        keys: list[str]) -> tuple[list[str], list[bool | None]] | Unscored:
        """Precision's statements: the elements extracted from the answer."""
        details["elements"] = []
        if not item.response.strip():
            return Unscored(reason="the answer is empty: no element to verify", metric="precision")
        cfg = self.config
        elements, problem, ext_keys, votes = await extract(
            cfg, client, self.render_element_extraction(item), ElementsOutput, "elements", cfg.max_elements,
            "precision")
        keys += ext_keys
        if elements is None:
            assert problem is not None
            return problem.model_copy(update={"reason": f"element extraction: {problem.reason}"})
        if votes is not None:
            details["element_votes"] = votes
        return elements, [None] * len(elements)

    async def _half(self, half: Half, item: Item, client: JudgeClient, details: dict[str, Any],
                    keys: list[str], unscored: list[Unscored]) -> float | None:
        """One half's score: its statements, then the verdict mode's verdicts on them."""
        found = await (self._criteria if half is RECALL else self._elements)(item, client, details, keys)
        if isinstance(found, Unscored):
            unscored.append(found)
            return None
        statements, edited = found
        rows = details[half.plural]
        if not item.response.strip():
            # only recall gets here (an empty answer has no element): it covers no criterion, so
            # recall is 0 by definition and no judge is asked
            rows += [{**half.blank(n, statement, edited[n - 1]), half.label: False,
                      "reasoning": "the answer is empty", **self.mode.empty_fields()}
                     for n, statement in enumerate(statements, 1)]
            if self.mode.probabilistic:
                details[half.hard_key] = 0.0
            return 0.0
        judged = await self.mode.judge(self, half, item, client, statements)
        keys += judged.keys
        for n, statement in enumerate(statements, 1):
            row = half.blank(n, statement, edited[n - 1])
            if n <= len(judged.entries):
                counts, fields = judged.entries[n - 1]
                row.update(fields)
                row[half.label] = counts
            rows.append(row)
        if judged.hard is not None:
            details[half.hard_key] = judged.hard
        if judged.problem is not None:
            unscored.append(judged.problem)
        return judged.score

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        if self.config.verdicts == "auto":  # called outside the engine: settle it for this client's judge
            return await self.for_judge(client.backend.capabilities).evaluate(item, client)
        cfg = self.config
        assert item.reference is not None
        keys: list[str] = []
        unscored: list[Unscored] = []
        details: dict[str, Any] = {"beta": cfg.beta, "verdicts": cfg.verdicts}
        recall = await self._half(RECALL, item, client, details, keys, unscored)
        precision = await self._half(PRECISION, item, client, details, keys, unscored)

        fb: float | None = None
        if precision is not None and recall is not None:
            fb = f_beta(precision, recall, cfg.beta)
            if self.mode.probabilistic and "precision_hard" in details and "recall_hard" in details:
                details["f_beta_hard"] = f_beta(details["precision_hard"], details["recall_hard"], cfg.beta)
        elif recall == 0.0:
            # F-beta(P, 0) = 0 for every P in [0, 1]: with nothing covered, F is 0 whatever the
            # precision (an empty answer has none); precision itself stays Unscored
            fb = 0.0
            details["f_beta_rule"] = "recall is 0, so F-beta is 0 whatever the precision"
            if self.mode.probabilistic and details.get("recall_hard") == 0.0:
                details["f_beta_hard"] = 0.0
        else:
            missing = [m for m, v in (("precision", precision), ("recall", recall)) if v is None]
            unscored.append(Unscored(reason=f"needs {' and '.join(missing)}", metric="f_beta"))
        return ItemResult(scores={"precision": precision, "recall": recall, "f_beta": fb},
                          unscored=unscored, details=details, call_keys=keys)

    GUESS_CRITERIA: ClassVar[int] = 4
    GUESS_ELEMENTS: ClassVar[int] = 4
    GUESS_CHARS: ClassVar[tuple[int, int]] = (80, 30)
    GUESS_POSITIVE: ClassVar[float] = 0.5
    """What an estimate assumes: four criteria of ~80 characters and four elements of ~30 per answer,
    about half of the direct verdicts positive (each then followed by an evidence call) — what the
    embedded judge did on the bundled examples (benchmarks/estimate_vs_measured.py compares the
    estimate with a real run)."""

    def estimate(self, items: list[Item]) -> CallEstimate:
        """By verdict mode: "hard" and "soft" one generated call per half
        with a reason per verdict; "direct" one label call per statement and an evidence call after
        each positive one. The prompts are rendered as a run renders them (placeholder statements)
        and a local judge's reading is simulated as llama.cpp does it: a call reads only what its
        prompt does not share with the recent calls whose state it keeps. The same shared start is
        what OpenAI's prompt cache would bill as cached, by its rule (:func:`openai_cached`). "auto"
        stands for hard here; ``assay eval --dry-run`` settles it for the judge first, as a run does."""
        def text(messages: list[Any]) -> str:
            return "\n".join(m.content for m in messages)

        def tokens(chars: int, messages: int = 2) -> int:  # DeCE's prompts: ~4.8 characters a token (Qwen's)
            return round(chars / 4.8) + 4 * messages

        total = CallEstimate()
        seen_questions: set[str] = set()
        guess_criteria = ["x" * self.GUESS_CHARS[0]] * self.GUESS_CRITERIA
        guess_elements = ["y" * self.GUESS_CHARS[1]] * self.GUESS_ELEMENTS
        direct = self.config.verdicts == "direct"
        previous: list[str] = []  # llama.cpp's kept states: the last prompts of recent families
        systems: set[str] = set()  # system messages read so far (the embedded judge keeps them on disk)

        def call(messages: list[Any], completion: int) -> CallEstimate:
            prompt = text(messages)
            shared = max((_shared_start(p, prompt) for p in previous), default=0)
            previous[:] = [*previous[-7:], prompt]
            prompt_tokens, evaluated = tokens(len(prompt), len(messages)), tokens(len(prompt) - shared, 0)
            instructions = 0
            if messages[0].role == "system" and messages[0].content not in systems:
                systems.add(messages[0].content)
                instructions = min(evaluated, tokens(max(0, len(messages[0].content) - shared), 1))
            return CallEstimate(calls=1, prompt_tokens=prompt_tokens, completion_tokens=completion,
                                evaluated_tokens=evaluated, instruction_tokens=instructions,
                                cached_tokens=openai_cached(prompt_tokens, prompt_tokens - evaluated))

        per_statement = 15 if direct else 30
        for item in sorted(items, key=self.order_key):
            criteria = self.frozen[item.id].criteria if self.frozen is not None else guess_criteria
            if self.frozen is None and item.id not in seen_questions:
                seen_questions.add(item.id)
                total += call(self.render_criteria_extraction(item), len(criteria) * per_statement + 10)
            if not direct:
                reason = 40 if self.config.reasoning else 15
                total += call(self.render_satisfaction(item, criteria), len(criteria) * reason)
                total += call(self.render_element_extraction(item), len(guess_elements) * per_statement + 10)
                total += call(self.render_verification(item, guess_elements), len(guess_elements) * reason)
                continue
            for half, statements in ((RECALL, criteria), (PRECISION, guess_elements)):
                if half is PRECISION:
                    total += call(self.render_element_extraction(item), len(statements) * per_statement + 10)
                sentences = half.sentences(item) or [""]
                positives = round(len(statements) * self.GUESS_POSITIVE)
                for n, statement in enumerate(statements):
                    asked = self.render_direct(half, sentences, statement)
                    total += call(asked, 0)
                    if n < positives and len(sentences) > 1:  # the evidence call extends the verdict's prompt
                        follow_up = [*asked, type(asked[-1])(role="assistant", content="yes"),
                                     type(asked[-1])(role="user", content="Which lettered sentence shows this best?")]
                        total += call(follow_up, 0)
        guessed = (["" if self.frozen is not None else f"{self.GUESS_CRITERIA} criteria",
                    f"{self.GUESS_ELEMENTS} elements"] if items else [])
        if guessed:
            total.assumes = (" and ".join(g for g in guessed if g) + " an answer (the judge's extraction decides; "
                             "calls and tokens grow with them)")
        return total


def _shared_start(a: str, b: str) -> int:
    """The length of the start ``a`` and ``b`` share, found by halving with slice comparisons (done in C):
    os.path.commonprefix compares character by character in Python, which was 85% of a 1,000-answer
    dry run's 5.4 s."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while high - low > 1:  # a[:low] == b[:low] and a[:high] != b[:high]
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low
