"""What the baselines share: their options, the manifest (prompt and domain hashes; options
added later left out at their default, so earlier runs keep their ids), the gold text and the
call settings."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from assay.core.method import Method
from assay.core.protocols import HasCommands
from assay.core.types import GenerateConfig, Item
from assay.judge.prompts import fence, load_domain, load_prompt


class BaselineConfig(BaseModel):

    model_config = ConfigDict(use_attribute_docstrings=True)
    domain: str = "general"
    seed: int = 0
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_reasks: int = Field(default=2, ge=0)
    max_reasoning_chars: int = 400
    """Bound on free text, so small judges cannot loop."""


def estimated_tokens(messages: list[Any]) -> int:
    """Prompt tokens of ``messages`` for a dry run: ~4 characters a token, plus framing."""
    return sum(len(m.content) for m in messages) // 4 + 8 * len(messages)


class BaselineMethod(Method, HasCommands):
    prompt_names: ClassVar[tuple[str, ...]]
    answer_fence: ClassVar[str] = "plain"
    """How the answer is fenced; part of the run id when it is not plain (``fence(sealed=True)``)."""

    def __init__(self, config: BaselineConfig | None = None) -> None:
        self.config = config or BaselineConfig()
        self.domain = load_domain(self.config.domain)
        self.prompts = {name: load_prompt(f"prompts/{name}", package=__package__) for name in self.prompt_names}

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

