"""A jury of judges (LeMAJ App. E.4): ``jury/JUDGE1+JUDGE2+...``, e.g.
``jury/llamacpp/default+openai/gpt-4o-mini``. Each member is a backend of its own (its own
cache identity, concurrency and options: ``--judge-opt`` applies to every member). A method that
supports juries (LeMAJ) asks every member and aggregates; it reaches member k through
:meth:`assay.judge.runner.JudgeClient.member`. Any other method refuses a jury (a jury has no single
answer to a call)."""

from __future__ import annotations

from typing import Any

from assay.core.errors import ConfigError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends._base import Capabilities, JudgeBackend
from assay.judge.backends._registry import get_backend


class JuryBackend(JudgeBackend):
    """Several judges that answer the same calls independently."""

    def __init__(self, members: list[JudgeBackend], name: str) -> None:
        if len(members) < 2:
            raise ConfigError(f"a jury needs at least two judges, got {len(members)} in {name!r}")
        self.members = members
        self.name = name
        self.max_concurrency = 1
        self.capabilities = Capabilities(json_schema=all(m.capabilities.json_schema for m in members),
                                         logprobs=False)

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        raise ConfigError(f"{self.name} is a jury: only methods with juries (lemaj) can use it")

    def identity(self) -> dict[str, Any]:
        return {"backend": "jury", "members": [m.identity() for m in self.members]}

    async def aclose(self) -> None:
        for member in self.members:
            await member.aclose()


def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
    names = [n.strip() for n in model.split("+") if n.strip()]
    if any(n.startswith("jury/") for n in names):
        raise ConfigError("a jury cannot sit on a jury")
    return JuryBackend([get_backend(n, **options) for n in names], f"jury/{model}")
