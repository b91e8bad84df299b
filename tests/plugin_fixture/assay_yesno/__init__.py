"""A toy third-party method: does the answer address the question? (one judge call, yes/no)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from assay.core.method import method_template
from assay.core.types import Completion, GenerateConfig, Item, Message, Unit
from assay.judge.backends import JudgeBackend
from assay.judge.prompts import load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.methods import CallEstimate, ItemResult, Method, ReportSection


class YesNoConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)
    strictness: int = Field(default=1, ge=0, le=3)
    """How strictly to read 'addresses' (0 lenient .. 3 strict)."""


class Verdict(BaseModel):
    answer: str


class YesNo(Method):
    """Plug-in: does the answer address the question (yes/no)."""

    name: ClassVar[str] = "yesno"
    metrics: ClassVar[tuple[str, ...]] = ("addresses",)
    version: ClassVar[str] = "3"
    config_model: ClassVar[type[BaseModel] | None] = YesNoConfig

    def __init__(self, config: YesNoConfig | None = None) -> None:
        self.config = config or YesNoConfig()
        self.prompt = load_prompt("prompts/ask", package="assay_yesno")  # shipped in the plug-in's package

    def manifest(self) -> dict[str, Any]:  # the prompt's hash: an edited prompt file is a new run
        return {"config": self.config.model_dump(), "prompt_sha256": self.prompt.sha256}

    def check_item(self, item: Item) -> str | None:
        return None

    def estimate(self, items: list[Item]) -> CallEstimate:
        return CallEstimate(calls=len(items), prompt_tokens=50 * len(items), completion_tokens=5 * len(items))

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        messages = self.prompt.render(strictness=str(self.config.strictness), query=item.query,
                                      answer=item.response)
        out = await generate_structured(client, messages, Verdict, GenerateConfig(max_tokens=20), metric="addresses")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"addresses": None}, unscored=[out.unscored], call_keys=out.keys)
        return ItemResult(scores={"addresses": 1.0 if out.value.answer == "yes" else 0.0},
                          details={"verdict": out.value.answer}, call_keys=out.keys)

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        """A command of the plug-in's own, with the run options of the kit (``assay.cli.kit``)."""

        @app.command("yesno-judge", rich_help_panel=kit.panels["tools"])
        def yesno_judge(judge: str = kit.JUDGE) -> None:
            """Plug-in: print the judge yesno would ask."""
            kit.console.print(f"yesno would ask {judge}")

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        yes = sum(1 for r in rows if r.get("addresses") == 1.0)
        return ReportSection(section=method_template("yesno.section.html.j2", "assay_yesno"),
                             context={"yes": yes, "total": len(rows)})


class AlwaysYes(JudgeBackend):
    """A plug-in judge provider: answers every call with a yes verdict."""

    def __init__(self, model: str) -> None:
        self.name = f"alwaysyes/{model}"

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        return Completion(text='{"answer": "yes"}', backend="alwaysyes", model=self.name)


def always_yes(model: str, options: dict[str, Any]) -> JudgeBackend:
    return AlwaysYes(model)


# --- a pairwise method with rounds (the engine's units and scheduler) ----------------------------
class DuelConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)
    rounds: int = Field(default=3, ge=1)
    """Rounds of the Swiss-style schedule."""


class DuelVerdict(BaseModel):
    winner: str


class Duel(Method):
    """Plug-in: pairwise A/B duels over answers sharing an id, in Swiss-style rounds."""

    name: ClassVar[str] = "duel"
    metrics: ClassVar[tuple[str, ...]] = ("a_wins",)
    config_model: ClassVar[type[BaseModel] | None] = DuelConfig
    unit_kind: ClassVar[str] = "pair"

    def __init__(self, config: DuelConfig | None = None) -> None:
        self.config = config or DuelConfig()

    @classmethod
    def register_commands(cls, app: Any, panels: Any) -> None:
        """Written against the hook's first form, whose second argument was the help panels."""
        app.command("duel-rounds", rich_help_panel=panels["compare"])(lambda: print(DuelConfig().rounds))

    def manifest(self) -> dict[str, Any]:
        return {"config": self.config.model_dump()}

    def check_item(self, item: Item) -> str | None:
        return None if item.system else "a duel needs the answering system (field 'system')"

    def estimate(self, items: list[Item]) -> CallEstimate:
        return CallEstimate(calls=len(items) * self.config.rounds // 2)

    def next_units(self, items: list[Item], history: list[tuple[Unit, ItemResult | None]]) -> list[Unit]:
        """Round r pairs, per question, the systems ordered by wins so far (then name), each with
        the next one it has not met on that question."""
        round_ = max((u.round for u, _ in history), default=-1) + 1
        if round_ >= self.config.rounds:
            return []
        wins: dict[str, float] = {}
        met: set[tuple[str, str, str]] = set()
        for unit, result in history:
            a, b = unit.items
            met |= {(a.id, str(a.system), str(b.system)), (a.id, str(b.system), str(a.system))}
            if result is not None and result.scores.get("a_wins") is not None:
                score = float(result.scores["a_wins"])  # type: ignore[arg-type]
                wins[str(a.system)] = wins.get(str(a.system), 0.0) + score
                wins[str(b.system)] = wins.get(str(b.system), 0.0) + 1 - score
        by_id: dict[str, list[Item]] = {}
        for item in items:
            by_id.setdefault(item.id, []).append(item)
        batch = []
        for qid, answers in sorted(by_id.items()):
            free = sorted(answers, key=lambda i: (-wins.get(str(i.system), 0.0), str(i.system)))
            while len(free) > 1:
                first = free.pop(0)
                partner = next((o for o in free if (qid, str(first.system), str(o.system)) not in met), None)
                if partner is None:
                    continue
                free.remove(partner)
                batch.append(Unit.pair(first, partner, round=round_))
        return batch

    async def evaluate_unit(self, unit: Unit, client: JudgeClient) -> ItemResult:
        a, b = unit.items
        messages = [Message(role="user", content=f"<question>{a.query}</question>\n<a>{a.response}</a>\n"
                                                 f"<b>{b.response}</b>\nWhich is better: A, B or tie?")]
        out = await generate_structured(client, messages, DuelVerdict, GenerateConfig(max_tokens=20), metric="a_wins")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"a_wins": None}, unscored=[out.unscored], call_keys=out.keys)
        score = {"A": 1.0, "B": 0.0}.get(out.value.winner, 0.5)
        return ItemResult(scores={"a_wins": score}, details={"winner": out.value.winner}, call_keys=out.keys)


class Longer(JudgeBackend):
    """A plug-in judge for duels: the longer answer wins. ``latency`` (seconds) slows each call;
    ``log`` (a path) gets one line per finished call, to count repeated calls."""

    def __init__(self, model: str, options: dict[str, Any]) -> None:
        self.name = f"longer/{model}"
        self.latency = float(options.get("latency", 0))
        self.log = options.get("log")
        self.max_concurrency = 1

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        import asyncio
        import hashlib
        import re

        text = messages[-1].content
        a = re.search(r"<a>(.*?)</a>", text, re.S)
        b = re.search(r"<b>(.*?)</b>", text, re.S)
        assert a is not None and b is not None
        await asyncio.sleep(self.latency)
        winner = "A" if len(a.group(1)) > len(b.group(1)) else "B" if len(b.group(1)) > len(a.group(1)) else "tie"
        if self.log:
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(hashlib.sha256(text.encode()).hexdigest() + "\n")
        return Completion(text=f'{{"winner": "{winner}"}}', backend="longer", model=self.name)


def longer(model: str, options: dict[str, Any]) -> JudgeBackend:
    return Longer(model, options)


# --- a dataset adapter: "question<TAB>answer<TAB>reference<TAB>human score" lines ----------------
def read_toyqa(path: str) -> Any:
    """A plug-in dataset kind for ``assay meta toyqa FILE``: one labelled answer per line."""
    from pathlib import Path

    from assay.core.types import Reference
    from assay.data.datasets.adapters import MetaSet, MetaUnit

    items, units = [], []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        query, answer, reference, score = line.split("\t")
        item = Item(id=f"t{n}", query=query, response=answer, reference=Reference(required=reference), system="toy")
        items.append(item)
        units.append(MetaUnit(id=item.key, keys=(item.key,), human={"score": [float(score)]}))
    return MetaSet("toyqa", str(path), False, ["score"], items, units)
