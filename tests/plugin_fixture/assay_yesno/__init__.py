"""A toy third-party method: does the answer address the question? (one judge call, yes/no)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from assay.backends import JudgeBackend
from assay.methods import CallEstimate, ItemResult, Method, ReportSection
from assay.methods._base import method_template
from assay.runner import JudgeClient
from assay.structured import generate_structured
from assay.types import Completion, GenerateConfig, Item, Message


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

    def manifest(self) -> dict[str, Any]:
        return {"config": self.config.model_dump()}

    def check_item(self, item: Item) -> str | None:
        return None

    def estimate(self, items: list[Item]) -> CallEstimate:
        return CallEstimate(calls=len(items), prompt_tokens=50 * len(items), completion_tokens=5 * len(items))

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        messages = [Message(role="user", content=f"strictness {self.config.strictness}\n<question>{item.query}"
                                                 f"</question>\n<answer>{item.response}</answer>\nyes or no?")]
        out = await generate_structured(client, messages, Verdict, GenerateConfig(max_tokens=20), metric="addresses")
        if out.value is None:
            assert out.unscored is not None
            return ItemResult(scores={"addresses": None}, unscored=[out.unscored], call_keys=out.keys)
        return ItemResult(scores={"addresses": 1.0 if out.value.answer == "yes" else 0.0},
                          details={"verdict": out.value.answer}, call_keys=out.keys)

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
