"""DICE: pairwise A/B/Tie verdicts with probabilities.

Paper: DICE: Discrete Interpretable Comparative Evaluation with Probabilistic Scoring for Retrieval-Augmented
Generation, §3, App. A.

A unit is an ordered pair of answers to one query (a pairwise record's ``a`` and ``b``, or two
systems answering the same id). Two judge calls per order:

1. Stage I (§3.1): an evidence-coupled analysis of both answers — each with its own retrieved
   passages, against the reference when one is given — placing each in the hierarchy fully
   correct > partially correct > insufficient information > incorrect (App. A's special rules).
2. Stage II (§3.2): one decision from {A, B, Tie}, asked as a follow-up in the same conversation
   (so llama.cpp reuses the whole stage-I prompt as a cached prefix).

Probabilities (eq. 1). With logprobs, the distribution over the three labels is read at the
position where the decision's label is generated: every top-logprob token that is a non-empty
prefix of a label (``"T"`` and ``"Ti"`` count for ``Tie``, which the embedded tokenizer splits
into ``T`` + ``ie``; a leading space or quote is ignored) adds its probability to that label, and
the three are renormalised — the softmax over the labels' logits, read at the only position where
the constrained output can still choose. The labels start with different letters, so a label's
first token decides it and its later tokens are forced. A label absent from the top logprobs gets
0, its true probability lies between 0 and the smallest probability shown (the row keeps that
bound in ``p_missing_bound``). Without logprobs, ``samples`` decisions at temperature > 0 are
drawn and the shares used (``probability_source: samples``).

Scores (eqs. 2–4): margin ΔP = P_max − P_second; ΔP ≥ τ gives the hard score (1, 0), (0, 1) or
(0.5, 0.5); below τ the soft score redistributes P(Tie) between A and B in proportion.

Hierarchy (§3.1: "fully correct answers win over all other types; partially correct answers
win over insufficient or incorrect answers …"). The paper makes the four classes the decision's
ranking rule; a small judge's stage-II label often ignores its own stage-I classes (on 60 PandaLM
dev pairs the 1.5B judge said Tie in 20 of the 26 pairs its analysis had put in different
classes). With ``hierarchy="enforce"`` (default) an order whose analysis put the answers in
different classes is decided by the classes: its distribution becomes all on the higher-class
answer (the judge's own stays in ``p_judge``), and the order is ``decided_by: hierarchy``; when
both answers share a class the judge's label distribution decides (``decided_by: judge``). With
swap, two orders decided by the hierarchy in opposite directions average to 0.5/0.5 — a soft
tie. ``hierarchy="advise"`` keeps the paper's stage II as the only decider (the classes are
shown to the judge and recorded, nothing more).

Swap (``swap=true``): the pair is judged in both orders; the second order's probabilities are
mapped back (its A is our B) and averaged with the first's, and the row records whether the
verdict survived the swap and which position won each order.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.core.errors import ConfigError
from assay.core.method import CallEstimate, ItemResult, Method, ReportSection, method_template
from assay.core.protocols import HasCommands, MetaEvaluated, Presents
from assay.core.registry import register_method
from assay.core.types import Completion, GenerateConfig, Item, Message, Unit, Unscored, pairs_from_items
from assay.judge.direct import ask
from assay.judge.prompts import fence, load_domain, load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.judge.verdicts import field_label_probs

LABELS = ("A", "B", "Tie")
CLASSES = ("fully correct", "partially correct", "insufficient information", "incorrect")


class DiceConfig(BaseModel):
    """DICE options."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    domain: str = "general"
    """Domain pack (the expert named in the prompts): general, legal, medical, financial."""
    tau: float = Field(default=0.1, ge=0, le=1, allow_inf_nan=False)
    """Margin threshold: ΔP ≥ tau gives the hard score, below it the soft score (paper: 0.1)."""
    swap: bool = True
    """Judge both orders and combine the probabilities (position-bias control). The default since
    assay 0.2: on the embedded judge the answer shown first won 94% of single orders (60 PandaLM
    dev pairs); over both orders that bias cancels."""
    verdict_rule: Literal["forced_choice", "argmax"] = "forced_choice"
    """How the verdict is read from P(A), P(B), P(Tie). forced_choice (the default since assay 0.2):
    the answer with the higher probability wins, the Tie mass left out (Tie only when both are
    equal) — a small judge says Tie by habit, yet its P(A) against P(B) over both orders agreed
    with the annotators' majority on 36 of 49 non-tie PandaLM dev pairs (0.73), against 0.37
    three-way. argmax: the most probable of A, B and Tie (the paper's reading). An alignment fitted
    with ``assay align`` adds decisions at a tie threshold fitted to reviewers' ties."""
    probabilities: Literal["auto", "logprobs", "samples"] = "auto"
    """Where the label probabilities come from: logprobs when the backend returns them (auto)."""
    samples: int = Field(default=5, ge=2, le=50)
    """Decisions sampled per order when probabilities come from samples."""
    sample_temperature: float = Field(default=0.7, gt=0, le=2)
    """Temperature of the sampled decisions."""
    top_logprobs: int = Field(default=10, ge=3, le=20)
    """Alternatives read at the decision's position."""
    hierarchy: Literal["enforce", "advise"] = "enforce"
    """enforce: when the analysis puts the two answers in different classes (fully correct >
    partially correct > insufficient information > incorrect), the higher class wins that order;
    advise: the stage-II label alone decides. Analysis verdicts only: direct verdicts have no classes."""
    verdicts: Literal["auto", "analysis", "direct"] = "auto"
    """analysis: the written analysis (stage I), then the decision read after it (stage II).
    direct: no analysis; the decision A, B or Tie is read from one forward pass over the two
    answers (a judge that gives label probabilities), far cheaper, without the class hierarchy.
    auto (the default since 0.2.1): direct on a judge that gives label probabilities, else analysis.
    Measured on 30 PandaLM dev pairs with the embedded judge, both orders: direct agreed with the
    annotators' majority on 0.600 of them (kappa 0.30), the analysis mode on 0.433 (0.19), with half
    the calls, a third of the prompt tokens and nothing generated."""
    focus: Literal["rag", "instruction"] = "rag"
    """What the direct decision weighs first (direct verdicts only). rag: accuracy against the
    reference and the retrieved passages, then completeness (DICE's hierarchy). instruction: whether
    each answer does exactly what the instruction asks, before correctness and helpfulness, with
    length and polish given no credit — the rule set of LLMBar (Zeng et al., arXiv:2310.07641) for
    pairs where an answer that ignores the instruction is made to look better."""
    judge_reference: bool = False
    """When a pair has no reference answer, the judge first writes a short answer of its own (one
    generated call per pair, shared by both orders) and the decision is shown it as a guide,
    marked as the judge's (LLMBar's self-generated reference)."""
    max_analysis_chars: int = Field(default=600, ge=50)
    """maxLength of each analysis field (small models loop without a bound)."""
    seed: int = 0
    max_reasks: int = Field(default=2, ge=0)


class Analysis(BaseModel):
    analysis_a: str
    analysis_b: str
    comparison: str
    class_a: Literal["fully correct", "partially correct", "insufficient information", "incorrect"]
    class_b: Literal["fully correct", "partially correct", "insufficient information", "incorrect"]


class Decision(BaseModel):
    verdict: Literal["A", "B", "Tie"]


# --- scoring (pure functions, tested against hand-computed cases) -----------------------------
def label_distribution(completion: Completion,
                       field: str = "verdict") -> tuple[dict[str, float], dict[str, float]] | None:
    """(P over A/B/Tie, upper bounds of labels absent from the top logprobs) at the position
    where ``field``'s value starts in a JSON completion; None without logprobs there
    (:func:`assay.judge.verdicts.field_label_probs`, first occurrence)."""
    found = field_label_probs(completion, field, LABELS)
    if not found:
        return None
    return found[0].p, found[0].missing_bound


def margin(p: dict[str, float]) -> float:
    """ΔP = P_max − P_second (eq. 2)."""
    first, second = sorted(p.values(), reverse=True)[:2]
    return first - second


def scores(p: dict[str, float], tau: float) -> tuple[float, float, str]:
    """(score_a, score_b, "hard" | "soft") by eqs. 3–4. With ΔP ≥ tau the argmax decides
    (ties of probability go to Tie, then A); below it P(Tie) is split in proportion to P(A) and
    P(B) (evenly when both are 0)."""
    if margin(p) >= tau:
        best = max(LABELS, key=lambda label: (p[label], label == "Tie", label == "A"))
        return {"A": (1.0, 0.0), "B": (0.0, 1.0), "Tie": (0.5, 0.5)}[best] + ("hard",)
    pa, pb, pt = p["A"], p["B"], p["Tie"]
    if pa + pb == 0:
        return 0.5, 0.5, "soft"
    return pa + pt * pa / (pa + pb), pb + pt * pb / (pa + pb), "soft"


def swapped(p: dict[str, float]) -> dict[str, float]:
    """Probabilities of the reversed order expressed in the original order."""
    return {"A": p["B"], "B": p["A"], "Tie": p["Tie"]}


def combine(first: dict[str, float], second_reversed: dict[str, float]) -> dict[str, float]:
    """Average of the first order and the (mapped-back) second order."""
    back = swapped(second_reversed)
    return {label: (first[label] + back[label]) / 2 for label in LABELS}


def verdict_of(p: dict[str, float]) -> str:
    return max(LABELS, key=lambda label: (p[label], label == "Tie", label == "A"))


# --- the method -----------------------------------------------------------------------------------
@register_method
class Dice(Method, Presents, MetaEvaluated, HasCommands):
    """DICE: pairwise A/B/Tie verdicts with probabilities, hard/soft scores, both orders (--no-swap: one)."""

    name: ClassVar[str] = "dice"
    metrics: ClassVar[tuple[str, ...]] = ("score_a", "score_b")
    version: ClassVar[str] = "1"
    config_model: ClassVar[type[BaseModel] | None] = DiceConfig
    by_default: bool = False
    """Set on a method whose verdicts "auto" was settled for a judge (its earlier defaults apply)."""
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'swap', 'verdict_rule', 'hierarchy', 'samples', 'verdicts')
    primary_metric: ClassVar[str | None] = "score_a"
    compact_columns: ClassVar[tuple[str, ...]] = ("system_a", "system_b", "verdict", "p_a", "p_b", "p_tie",
                                                  "score_a", "score_b", "decision", "decided_by")
    unit_kind: ClassVar[str] = "pair"

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        if cls is Dice:  # one command, two names: `assay pairwise` is `assay eval dice`
            app.command("pairwise", rich_help_panel=kit.panels["evaluate"],
                        help="DICE pairwise A/B/Tie verdicts with probabilities (the same command as "
                             "`assay eval dice`).")(kit.make_command(cls))

    def __init__(self, config: DiceConfig | None = None) -> None:
        self.config = config or DiceConfig()
        self.domain = load_domain(self.config.domain)
        if self.config.focus == "instruction" and self.config.verdicts == "analysis":
            raise ConfigError("DICE's focus 'instruction' is a direct decision: use it with --verdicts direct")
        direct = "decision_direct_instruction" if self.config.focus == "instruction" else "decision_direct"
        # unsettled, "auto" stands for the analysis mode (as its prompts do), unless only direct fits
        as_direct = self.config.verdicts == "direct" or (self.config.verdicts == "auto"
                                                         and self.config.focus == "instruction")
        names = (direct,) if as_direct else ("analysis", "decision")
        if self.config.judge_reference:
            names = (*names, "reference_answer")
        self.prompts = {name: load_prompt(f"prompts/{name}", package=__package__) for name in names}
        self.direct_prompt = direct

    @classmethod
    def per_answer_scores(cls, scores: dict[str, Any]) -> list[dict[str, Any]]:
        """Each answer of the pair gets its own score (eqs. 3–4): ``score_a`` the first's,
        ``score_b`` the second's."""
        return [{"score": scores.get("score_a")}, {"score": scores.get("score_b")}]

    @classmethod
    def pair_verdict(cls, details: dict[str, Any]) -> tuple[str, float | None, str | None, str | None] | None:
        verdict = details.get("verdict")
        if verdict not in LABELS:
            return None
        confidence = {"A": details.get("p_a"), "B": details.get("p_b"), "Tie": details.get("p_tie")}[verdict]
        return verdict, confidence, details.get("decision"), str(details.get("decided_by") or "judge")

    def reads_label_probs(self) -> bool:
        return self.config.verdicts == "direct"  # --verdicts direct

    def for_judge(self, capabilities: Any) -> Dice:
        """``verdicts="auto"`` settled for this judge: direct where it gives label probabilities."""
        if self.config.verdicts != "auto":
            return self
        verdicts = "direct" if capabilities.label_probs else "analysis"
        if verdicts == "analysis" and self.config.focus == "instruction":
            raise ConfigError("DICE's focus 'instruction' is a direct decision, and this judge gives no label "
                              "probabilities: use a judge that does, or leave --focus at rag")
        settled = type(self)(self.config.model_copy(update={"verdicts": verdicts}))
        settled.by_default = True
        return settled

    def manifest(self) -> dict[str, Any]:
        config = self.config.model_dump()
        if config["verdicts"] in ("analysis", "auto"):  # added later: at its default, runs keep their run id
            del config["verdicts"]  # (auto is settled for the judge before a run; unsettled it stands for analysis)
        if config["verdict_rule"] == "argmax":  # likewise: argmax is how every earlier run read its verdict
            del config["verdict_rule"]
        for added, default in (("focus", "rag"), ("judge_reference", False)):  # added in 0.2.1: same run ids
            if config[added] == default:
                del config[added]
        return {"config": config, "prompt_sha256": {k: p.sha256 for k, p in self.prompts.items()},
                "domain_sha256": self.domain["sha256"]}

    def earlier_defaults(self) -> list[tuple[Method, str]]:
        """Both orders and the forced choice became the defaults in assay 0.2, direct verdicts (on a
        judge with label probabilities) in 0.2.1; a store holding the same work read an earlier way
        continues that run."""
        if getattr(self, "by_default", False) and self.config.verdicts == "direct":
            if self.config.focus == "instruction":  # a direct decision only: no earlier analysis run of it exists
                return []
            analysis = type(self)(self.config.model_copy(update={"verdicts": "analysis"}))
            return [(analysis, "the written analysis, then the decision (--verdicts analysis), the default "
                               "before assay 0.2.1"), *analysis.earlier_defaults()]
        if not (self.config.swap and self.config.verdict_rule == "forced_choice"):
            return []
        argmax = self.config.model_copy(update={"verdict_rule": "argmax"})
        return [(type(self)(argmax), "three-way verdicts (--verdict-rule argmax)"),
                (type(self)(argmax.model_copy(update={"swap": False})),
                 "one order and three-way verdicts, the defaults before assay 0.2")]

    @classmethod
    def summary_lines(cls, rows: list[dict[str, Any]]) -> list[str]:
        """Lines the run summary prints under its table (an optional hook of a method)."""
        return summary_lines(rows)

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        return ReportSection(section=method_template("section.html.j2", __name__),
                             item=method_template("item.html.j2", __name__),
                             context=dice_section(rows))

    def check_item(self, item: Item) -> str | None:
        if not item.system:
            return "DICE compares systems: each answer needs its system (field 'system')"
        return None

    def check_all(self, items: list[Item]) -> str | None:
        """Answers compared with each other must answer one question: the same id under two
        different query texts would judge one of them under the wrong question."""
        queries: dict[str, Item] = {}
        for item in items:
            first = queries.setdefault(item.id, item)
            if " ".join(first.query.split()) != " ".join(item.query.split()):
                return (f"id {item.id!r}: systems {first.system!r} and {item.system!r} answer different questions "
                        f"({first.query[:60]!r} vs {item.query[:60]!r}); answers compared with each other need "
                        "the same id and the same query")
        if not pairs_from_items(items):
            systems = sorted({str(i.system) for i in items})
            return (f"nothing to compare: {len(systems)} system(s) ({', '.join(systems[:5])}) and no id answered by "
                    "two of them; DICE needs pairwise records (a, b) or two systems answering the same id")
        return None

    def units(self, items: list[Item]) -> list[Unit]:
        pairs = pairs_from_items(items)
        if not pairs:
            raise ConfigError("DICE needs pairs: pairwise records (a, b) or at least two systems answering one id")
        return pairs

    def estimate(self, items: list[Item]) -> CallEstimate:
        pairs = pairs_from_items(items)
        orders = 2 if self.config.swap else 1
        own = CallEstimate()
        if self.config.judge_reference:  # the judge's own answer: one generated call per pair without a reference
            bare = [p for p in pairs if p.items[0].reference is None]
            own = CallEstimate(calls=len(bare), prompt_tokens=sum(len(p.items[0].query) // 4 + 120 for p in bare),
                               completion_tokens=150 * len(bare))
        # every call of a pair shows its question, reference, both answers and their passages, after the
        # instructions (~350 tokens for the direct question, ~700 for the analysis): per call, not per run
        text = sum(_shown_chars(p) for p in pairs) // 4
        per_order, instructions, written = self.calls_per_order()
        prompt = text + instructions * len(pairs)
        return own + CallEstimate(calls=len(pairs) * orders * per_order, prompt_tokens=prompt * orders * per_order,
                                  completion_tokens=len(pairs) * orders * written)

    def calls_per_order(self) -> tuple[int, int, int]:
        """An order's calls, the instructions' tokens of each and the tokens the order writes: a direct
        decision is one label call that writes nothing; the analysis mode writes an analysis, then reads
        the decision from its logprobs (one call) or samples it ``samples`` times (a judge without
        logprobs: the embedded judge unless built with logits_all)."""
        if self.config.verdicts == "direct":
            return 1, 350, 0
        per_order = 1 + (self.config.samples if self.config.probabilities == "samples" else 1)
        return per_order, 700, 450 + 8 * per_order

    # rendering ---------------------------------------------------------------------------------
    def _fields(self, first: Item, second: Item, own: str | None = None) -> dict[str, str]:
        """What the prompts show of one order: the question, the reference, each answer and its
        passages. ``own``: the judge's own answer, shown when the pair has no reference."""
        def passages(item: Item) -> str:
            return "\n\n".join(f"[{n}] {c.text.strip()}" for n, c in enumerate(item.contexts, 1)) or "(none)"
        if first.reference is not None:
            reference = fence("reference", first.reference.full_text())
        elif own is not None:
            reference = ("A reference answer written by the judge itself (a guide, not checked; it may be wrong):\n"
                         + fence("reference", own))
        else:
            reference = "<reference>\n(no reference answer given)\n</reference>"
        return {"expert": str(self.domain["expert"]), "query": _inner(first.query), "reference": reference,
                "answer_a": _inner(first.response), "contexts_a": _inner(passages(first)),
                "answer_b": _inner(second.response), "contexts_b": _inner(passages(second))}

    def render_analysis(self, first: Item, second: Item) -> list[Message]:
        return self.prompts["analysis"].render(**self._fields(first, second))

    def _analysis_schema(self) -> dict[str, Any]:
        text = {"type": "string", "minLength": 1, "maxLength": self.config.max_analysis_chars}
        return {"type": "object", "additionalProperties": False,
                "required": ["analysis_a", "analysis_b", "comparison", "class_a", "class_b"],
                "properties": {"analysis_a": text, "analysis_b": text, "comparison": text,
                               "class_a": {"type": "string", "enum": list(CLASSES)},
                               "class_b": {"type": "string", "enum": list(CLASSES)}}}

    @staticmethod
    def _decision_schema() -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["verdict"],
                "properties": {"verdict": {"type": "string", "enum": list(LABELS)}}}

    async def _own_reference(self, item: Item, client: JudgeClient) -> tuple[str | None, list[str]]:
        """The judge's own answer to the pair's question (``judge_reference``, no reference given)."""
        if not self.config.judge_reference or item.reference is not None:
            return None, []
        messages = self.prompts["reference_answer"].render(expert=str(self.domain["expert"]), query=_inner(item.query))
        key, completion = await client.complete(messages, GenerateConfig(temperature=0.0, max_tokens=256,
                                                                         seed=self.config.seed))
        text = completion.text.strip()
        return (text or None), [key]

    async def _judge_order_direct(self, first: Item, second: Item, client: JudgeClient,
                                  own: str | None = None) -> dict[str, Any] | Unscored:
        """The decision alone for one order, from one forward pass."""
        prompt = self.prompts[self.direct_prompt]
        fields = self._fields(first, second, own)
        messages = prompt.render(**{k: v for k, v in fields.items() if k in prompt.variables})
        probs, key, problem = await ask(client, messages, LABELS, "score_a")
        if probs is None:
            assert problem is not None
            return problem.model_copy(update={"reason": f"decision: {problem.reason}"})
        return {"p": probs, "p_missing_bound": {}, "probability_source": "label probabilities",
                "greedy": max(LABELS, key=lambda label: probs[label]), "decided_by": "judge",
                "call_keys": [key] if key else []}

    async def _judge_order(self, first: Item, second: Item, client: JudgeClient,
                           own: str | None = None) -> dict[str, Any] | Unscored:
        """Stages I and II for one order: the analysis, the label distribution and its source."""
        if self.config.verdicts == "direct":
            return await self._judge_order_direct(first, second, client, own)
        messages = self.prompts["analysis"].render(**self._fields(first, second, own))
        chars = self.config.max_analysis_chars
        analysis = await generate_structured(
            client, messages, Analysis,
            GenerateConfig(temperature=0.0, max_tokens=64 + (3 * chars) // 3 + 60, seed=self.config.seed,
                           json_schema=self._analysis_schema()),
            max_reasks=self.config.max_reasks, metric="score_a")
        keys = analysis.keys
        if analysis.value is None or analysis.completion is None:
            assert analysis.unscored is not None
            return analysis.unscored.model_copy(update={"reason": f"analysis: {analysis.unscored.reason}"})
        follow_up = [*messages, Message(role="assistant", content=analysis.completion.text),
                     *self.prompts["decision"].render()]
        source = self.config.probabilities
        use_logprobs = source == "logprobs" or (source == "auto" and client.backend.capabilities.logprobs)
        record: dict[str, Any] = {"analysis": analysis.value.model_dump(), "call_keys": list(keys)}
        if use_logprobs:
            decision = await generate_structured(
                client, follow_up, Decision,
                GenerateConfig(temperature=0.0, max_tokens=16, seed=self.config.seed,
                               json_schema=self._decision_schema(), logprobs=True,
                               top_logprobs=self.config.top_logprobs),
                max_reasks=self.config.max_reasks, metric="score_a")
            record["call_keys"] += decision.keys
            if decision.value is None or decision.completion is None:
                assert decision.unscored is not None
                return decision.unscored.model_copy(update={"reason": f"decision: {decision.unscored.reason}"})
            found = label_distribution(decision.completion)
            if found is None:
                return Unscored(reason="decision: the backend returned no logprobs at the label's position",
                                raw_output=decision.completion.text, metric="score_a")
            record.update(p=found[0], p_missing_bound=found[1], probability_source="logprobs",
                          greedy=decision.value.verdict)
            return self._by_hierarchy(record)
        votes = dict.fromkeys(LABELS, 0)
        for n in range(self.config.samples):
            sample = await generate_structured(
                client, follow_up, Decision,
                GenerateConfig(temperature=self.config.sample_temperature, max_tokens=16,
                               seed=self.config.seed + n, json_schema=self._decision_schema()),
                max_reasks=self.config.max_reasks, metric="score_a")
            record["call_keys"] += sample.keys
            if sample.value is not None:
                votes[sample.value.verdict] += 1
        total = sum(votes.values())
        if total == 0:
            return Unscored(reason=f"decision: none of {self.config.samples} samples parsed", metric="score_a")
        record.update(p={label: votes[label] / total for label in LABELS}, p_missing_bound={},
                      probability_source="samples", votes=votes)
        return self._by_hierarchy(record)

    def _by_hierarchy(self, record: dict[str, Any]) -> dict[str, Any]:
        """Record the class ranking of one order and, with ``hierarchy="enforce"``, let it decide."""
        winner = hierarchy_winner(record["analysis"]["class_a"], record["analysis"]["class_b"])
        record["hierarchy_winner"] = winner
        if self.config.hierarchy == "enforce" and winner is not None:
            record["p_judge"] = record["p"]
            record["p"] = {label: float(label == winner) for label in LABELS}
            record["decided_by"] = "hierarchy"
        else:
            record["decided_by"] = "judge"
        return record

    async def evaluate_unit(self, unit: Unit, client: JudgeClient) -> ItemResult:
        a, b = unit.items
        orders = [(a, b), (b, a)] if self.config.swap else [(a, b)]
        own, own_keys = await self._own_reference(a, client)
        judged = [await self._judge_order(first, second, client, own) for first, second in orders]
        call_keys = [*own_keys, *(k for j in judged if isinstance(j, dict) for k in j["call_keys"])]
        failed = [j for j in judged if isinstance(j, Unscored)]
        if failed:
            reasons = "; ".join(f.reason for f in failed)
            return ItemResult(scores={"score_a": None, "score_b": None},
                              unscored=[Unscored(reason=reasons, raw_output=failed[0].raw_output, metric=m)
                                        for m in self.metrics], call_keys=call_keys)
        first = judged[0]
        assert isinstance(first, dict)
        p = first["p"]
        deciders = {j["decided_by"] for j in judged if isinstance(j, dict)}
        details: dict[str, Any] = {"system_a": a.system, "system_b": b.system,
                                   **({"judge_reference": own} if own else {}),
                                   "probability_source": first["probability_source"],
                                   "decided_by": deciders.pop() if len(deciders) == 1 else "mixed",
                                   "orders": [{k: v for k, v in j.items() if k != "call_keys"}  # type: ignore[union-attr]
                                              for j in judged]}
        if self.config.swap:
            second = judged[1]
            assert isinstance(second, dict)
            p = combine(first["p"], second["p"])
            kept = verdict_of(first["p"]) == verdict_of(swapped(second["p"]))
            details["position_consistent"] = kept
            details["first_position_won"] = [verdict_of(first["p"]) == "A", verdict_of(second["p"]) == "A"]
        score_a, score_b, decision = scores(p, self.config.tau)
        # the forced-choice reading: A against B alone, the Tie mass left out (P(A) / (P(A) + P(B)));
        # a small judge that says Tie by habit still ranks the two answers by it
        both = p["A"] + p["B"]
        forced = ("A" if p["A"] > p["B"] else "B" if p["B"] > p["A"] else None) if both > 0 else None
        three_way = verdict_of(p)
        details.update(p_a=p["A"], p_b=p["B"], p_tie=p["Tie"], margin=margin(p), decision=decision,
                       verdict=(forced or "Tie") if self.config.verdict_rule == "forced_choice" else three_way,
                       verdict_rule=self.config.verdict_rule, verdict_argmax=three_way, tau=self.config.tau,
                       forced_choice_a=p["A"] / both if both > 0 else None, forced_choice=forced,
                       forced_choice_margin=abs(p["A"] - p["B"]) / both if both > 0 else None)
        return ItemResult(scores={"score_a": score_a, "score_b": score_b}, details=details, call_keys=call_keys)


def hierarchy_winner(class_a: str, class_b: str) -> str | None:
    """"A" or "B" when the §3.1 hierarchy ranks one class above the other, None for the same class."""
    rank_a, rank_b = CLASSES.index(class_a), CLASSES.index(class_b)  # CLASSES is best first
    return None if rank_a == rank_b else ("A" if rank_a < rank_b else "B")


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What the run summary adds for pairs: how often the answer shown first won a single order
    (position bias), and how decided the forced choices are (their margins)."""
    section = dice_section(rows)  # the report's counts: one computation for both
    lines = []
    if section["single_orders"]:
        lines.append(f"position: the answer shown first won {section['first_wins']} of {section['single_orders']} "
                     f"single orders ({section['first_share']:.0%}; 50% is no bias); the verdict held across the swap "
                     f"in {section['consistent']} of {section['swapped']} pair(s)")
    margins = section["fc_margins"]
    if margins:
        median = margins[len(margins) // 2] if len(margins) % 2 else (margins[len(margins) // 2 - 1]
                                                                       + margins[len(margins) // 2]) / 2
        close = sum(1 for m in margins if m < 0.1)

        def shown(m: float) -> str:  # a margin just under 0.10 is not printed as 0.10 beside "under 0.10"
            return f"{m:.3f}" if m < 0.1 <= round(m, 2) else f"{m:.2f}"

        lines.append(f"forced choice: margin |P(A) - P(B)| / (P(A) + P(B)) median {shown(median)}, smallest "
                     f"{shown(margins[0])}; {close} of {len(margins)} pair(s) under 0.10 (a near coin flip)")
    return lines


def dice_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts for the report: verdicts, hard/soft, margins, swap consistency, and the confusion
    matrix against ``human.winner`` (A | B | tie) where the items carry it."""
    from assay.analysis.stats import cohen_kappa

    scored = [r for r in rows if r.get("verdict") is not None]
    verdicts = {label: sum(1 for r in scored if r["verdict"] == label) for label in LABELS}
    swapped_rows = [r for r in scored if "position_consistent" in r]
    first_wins = [w for r in swapped_rows for w in r.get("first_position_won") or []]
    context: dict[str, Any] = {
        "n": len(rows), "unscored": len(rows) - len(scored), "verdicts": verdicts,
        "hard": sum(1 for r in scored if r.get("decision") == "hard"),
        "soft": sum(1 for r in scored if r.get("decision") == "soft"),
        "mean_margin": sum(r["margin"] for r in scored) / len(scored) if scored else None,
        "tau": scored[0].get("tau") if scored else None,
        "sources": sorted({str(r.get("probability_source")) for r in scored}),
        "deciders": {k: sum(1 for r in scored if r.get("decided_by") == k) for k in ("hierarchy", "judge", "mixed")},
        "swapped": len(swapped_rows), "consistent": sum(1 for r in swapped_rows if r["position_consistent"]),
        "consistent_share": (sum(1 for r in swapped_rows if r["position_consistent"]) / len(swapped_rows)
                             if swapped_rows else None),
        "first_share": sum(first_wins) / len(first_wins) if first_wins else None,
        "first_wins": sum(first_wins), "single_orders": len(first_wins),
        "fc_margins": sorted(r["forced_choice_margin"] for r in scored if r.get("forced_choice_margin") is not None),
        "labels": ["A", "B", "Tie"], "confusion": None, "ranking": None, "bar": {}}
    human = [(str((r.get("human") or {}).get("winner", "")).capitalize().replace("Tie", "Tie"), r["verdict"])
             for r in scored if (r.get("human") or {}).get("winner")]
    human = [(h if h in ("A", "B") else "Tie", j) for h, j in human]
    if human:
        context["confusion"] = {h: {j: sum(1 for a, b in human if a == h and b == j) for j in LABELS} for h in LABELS}
        context["confusion_n"] = len(human)
        context["accuracy"] = sum(1 for a, b in human if a == b) / len(human)
        try:
            context["kappa"] = cohen_kappa([a for a, _ in human], [b for _, b in human])
        except ValueError:
            context["kappa"] = None
    return context


def _shown_chars(pair: Any) -> int:
    """Characters of a pair that its prompts show: the question, the reference, both answers and their
    passages."""
    first = pair.items[0]
    reference = first.reference.full_text() if first.reference is not None else ""
    return len(first.query) + len(reference) + sum(len(i.response) + sum(len(c.text) for c in i.contexts)
                                                   for i in pair.items)


def _inner(text: str) -> str:
    """Evaluated text, with anything imitating our delimiters neutralised (the tags are in the
    prompt file)."""
    return fence("x", text).removeprefix("<x>\n").removesuffix("\n</x>")
