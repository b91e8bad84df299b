"""A judge's answers recorded once and replayed exactly (as HTTP cassettes are).

``RecordingJudge`` wraps a real backend and writes each call's request key and completion to a
:class:`Recording`; ``ReplayJudge`` answers the same calls from that recording, with the recorded
judge's name, identity and capabilities, and refuses (``BackendError``) any call it has no answer
for — never a made-up one. Because a run's calls are determined by its inputs and the answers
before them, a replay reproduces the recorded run exactly, offline and in seconds. The docs use it
so that every printed output and picture comes from the real embedded judge.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from assay.core.errors import BackendError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends._base import Capabilities, JudgeBackend

FORMAT = "assay-judge-recording/1"


def request_key(name: str, messages: list[Message], config: GenerateConfig) -> str:
    """sha256 of everything that decides a call's answer: the judge, the messages, the parameters."""
    request = {"judge": name, "messages": [{"role": m.role, "content": m.content} for m in messages],
               "config": config.model_dump(mode="json")}
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class Recording:
    """A file of recorded judge calls: for each judge name its identity and capabilities, and for
    each request key the completion. Written as JSON, keys sorted, so a re-recording diffs well."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.judges: dict[str, dict[str, Any]] = {}
        self.calls: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                raise BackendError(f"{self.path}: not a judge recording ({FORMAT})")
            self.judges, self.calls = data["judges"], data["calls"]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": FORMAT, "judges": self.judges, "calls": self.calls}, sort_keys=True,
                          indent=0, ensure_ascii=False, allow_nan=False)
        self.path.write_text(text + "\n", encoding="utf-8")


class RecordingJudge(JudgeBackend):
    """``inner``'s answers, each written to ``recording`` (call :meth:`Recording.save` at the end).
    ``keep``: a call the recording already answers is answered from it (``inner`` is asked only
    for the calls it lacks: recording again after a change costs only the changed calls)."""

    def __init__(self, inner: JudgeBackend, recording: Recording, *, keep: bool = False) -> None:
        self.inner, self.recording, self.keep = inner, recording, keep
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.max_concurrency = inner.max_concurrency
        recording.judges[self.name] = {"identity": inner.identity(), "capabilities": inner.capabilities.model_dump(),
                                       "max_concurrency": inner.max_concurrency}

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        key = request_key(self.name, messages, config)
        if self.keep and key in self.recording.calls:
            return Completion.model_validate(self.recording.calls[key])
        completion = await self.inner.generate(messages, config)
        self.recording.calls[key] = completion.model_dump(mode="json")
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()


class ReplayJudge(JudgeBackend):
    """The judge ``name`` as ``recording`` recorded it. A call not in the recording raises
    ``BackendError`` and is listed in :attr:`misses`."""

    def __init__(self, name: str, recording: Recording) -> None:
        if name not in recording.judges:
            raise BackendError(f"{recording.path}: no calls of the judge {name!r} were recorded "
                               f"(recorded: {', '.join(sorted(recording.judges)) or 'none'})")
        self.name, self.recording = name, recording
        judge = recording.judges[name]
        self.capabilities = Capabilities(**judge["capabilities"])
        self.max_concurrency = int(judge["max_concurrency"])
        self.misses: list[str] = []

    def identity(self) -> dict[str, Any]:
        return dict(self.recording.judges[self.name]["identity"])

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        key = request_key(self.name, messages, config)
        found = self.recording.calls.get(key)
        if found is None:
            self.misses.append(key)
            raise BackendError(f"{self.recording.path}: no recorded answer of {self.name} for this call "
                               f"(key {key[:16]}; the prompts or inputs changed since it was recorded: record again)")
        return Completion.model_validate(found)
