"""The scripted backend: canned completions for tests, plus injected faults.

It is never a default. Two ways to script it:

* ``responses``: a list consumed in call order; a call after the last one raises
  :class:`~assay.core.errors.ScriptExhausted`.
* ``rules``: ``[{"match": REGEX, "responses": [...], "repeat": bool}]``; a call takes the next
  response of the first rule whose regex matches its user messages, joined (so a re-ask
  matches the rule of the prompt it re-asks). Order-independent, so it survives concurrency
  and resumed runs. A rule without ``repeat`` also runs out loudly.

A response is a string, or a fault: ``{"fault": "hang", "seconds": 5}`` (sleeps: exercises the
runner's timeout), ``{"fault": "rate_limit", "retry_after": 0.1}`` (HTTP 429),
``{"fault": "server_error"}`` (HTTP 500), ``{"fault": "bad_request"}`` (HTTP 400, not retried),
``{"fault": "truncated", "text": "..."}`` (finish_reason ``length``), and the answer to a label call,
``{"label_probs": {"yes": 0.8, "no": 0.2}}``: a script with such answers is a judge that gives label
probabilities (its capabilities say so), one without is not. Malformed JSON is just a string that
is not JSON.

From the CLI: ``--judge scripted/path/to/script.json`` with ``{"responses": [...]}`` or
``{"rules": [...]}`` and optionally ``"latency": seconds``, ``"max_concurrency": n`` and ``"log": path`` (a line per
finished call, its prompt's sha256: tests of resume count repeated calls with it).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.core.errors import BackendError, ConfigError, RateLimited, ScriptExhausted, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message, Usage
from assay.judge.backends._base import Capabilities, JudgeBackend

Response = str | dict[str, Any]


@dataclass
class _Rule:
    pattern: re.Pattern[str]
    responses: list[Response]
    repeat: bool
    next: int = 0


class ScriptedBackend(JudgeBackend):
    """Returns canned completions; see the module docstring."""

    def __init__(self, responses: list[Response] | None = None, *,
                 rules: list[dict[str, Any]] | None = None, latency: float = 0.0,
                 name: str = "scripted/test", max_concurrency: int = 8, log: str | None = None,
                 label_probs: bool | None = None) -> None:
        if (responses is None) == (rules is None):
            raise ConfigError("scripted backend needs exactly one of responses= or rules=")
        self.name = name
        self.max_concurrency = max_concurrency
        self._responses = list(responses) if responses is not None else None
        self._rules = []
        for n, rule in enumerate(rules or [], 1):
            if not isinstance(rule, dict) or not isinstance(rule.get("match"), str) \
                    or not isinstance(rule.get("responses"), list):
                raise ConfigError(f"{name}: rule {n} must be an object with 'match' (a regex) and 'responses' "
                                  "(a list)")
            try:
                pattern = re.compile(rule["match"], re.S)
            except re.error as exc:
                raise ConfigError(f"{name}: rule {n}: 'match' is not a regular expression ({exc})") from None
            self._rules.append(_Rule(pattern, list(rule["responses"]), bool(rule.get("repeat", False))))
        # it gives label probabilities when its script answers label calls (a method whose default
        # depends on that, DeCE's verdicts, settles as it would on a real judge of either kind)
        scripted = [*(self._responses or []), *(r for rule in self._rules for r in rule.responses)]
        if label_probs is None:  # said outright, or read from the script
            label_probs = any(isinstance(r, dict) and "label_probs" in r for r in scripted)
        self.capabilities = Capabilities(json_schema=False, seed=True, label_probs=label_probs)
        self.latency = latency
        self.log = log
        self.calls: list[list[Message]] = []

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name}

    def _next(self, messages: list[Message]) -> Response:
        if self._responses is not None:
            if not self._responses:
                raise ScriptExhausted(f"{self.name}: no canned completion left for call "
                                      f"{len(self.calls)}")
            return self._responses.pop(0)
        # All user messages, so a re-ask still matches the rule of the prompt it re-asks.
        user_text = "\n".join(m.content for m in messages if m.role == "user")
        for rule in self._rules:
            if rule.pattern.search(user_text):
                index = rule.next
                if index >= len(rule.responses):
                    if not rule.repeat:
                        raise ScriptExhausted(
                            f"{self.name}: rule {rule.pattern.pattern!r} has no response left")
                    index = len(rule.responses) - 1
                rule.next = index + 1
                return rule.responses[index]
        raise ScriptExhausted(f"{self.name}: no rule matches the call:\n{user_text[:300]}")

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        self.calls.append(list(messages))
        response = self._next(messages)
        if self.latency:
            await asyncio.sleep(self.latency)
        finish = "stop"
        probs: dict[str, float] | None = None
        if isinstance(response, dict):
            fault = response.get("fault")
            if fault == "hang":
                await asyncio.sleep(float(response.get("seconds", 3600)))
                text = str(response.get("text", ""))
            elif fault == "rate_limit":
                raise RateLimited("HTTP 429 (scripted)", retry_after=response.get("retry_after"))
            elif fault == "server_error":
                raise TransientBackendError("HTTP 500 (scripted)")
            elif fault == "bad_request":
                raise BackendError("HTTP 400 (scripted)")
            elif fault == "truncated":
                text, finish = str(response.get("text", "")), "length"
            elif "label_probs" in response:  # an answer to a label call: {"label_probs": {"yes": 0.8, "no": 0.2}}
                probs = {str(k): float(v) for k, v in response["label_probs"].items()}
                text, finish = max(probs, key=lambda k: probs[k]), "label"
            else:
                raise ConfigError(f"unknown scripted fault {fault!r}")
        else:
            text = response
        if self.log:
            import hashlib
            digest = hashlib.sha256("\n".join(m.content for m in messages).encode()).hexdigest()
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(digest + "\n")
        prompt_chars = sum(len(m.content) for m in messages)
        return Completion(text=text, usage=Usage(prompt_tokens=prompt_chars // 4,
                                                 completion_tokens=len(text) // 4),
                          finish_reason=finish, backend="scripted", model=self.name,
                          latency_s=self.latency, label_probs=probs)


class ScriptFile(BaseModel):
    """A script file (``--judge scripted/PATH``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    responses: list[str | dict[str, Any]] | None = None
    rules: list[dict[str, Any]] | None = None
    latency: float = Field(default=0.0, ge=0, le=3600)
    max_concurrency: int = Field(default=8, ge=1, le=4096)
    log: str | None = None
    label_probs: bool | None = None
    """Whether the judge gives label probabilities; by default, whether the script answers label calls."""


def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
    """``options`` arrive parsed against :class:`~assay.judge.backends._options.ScriptedOptions`."""
    options = dict(options)
    if "responses" in options or "rules" in options:
        options.setdefault("name", f"scripted/{model}")
        return ScriptedBackend(options.pop("responses", None), rules=options.pop("rules", None), **options)
    path = Path(model)
    if not path.is_file():
        found = "no such file" if model and not path.exists() else "not a file" if model else "no path given"
        raise ConfigError(f"scripted/{model}: {found}; give a script file path (JSON with 'responses' or "
                          "'rules'); the scripted backend is for tests only")
    from assay.core._load import load_json, validate

    script = validate(ScriptFile, load_json(path, dict, kind="a script"), str(path))
    settings: dict[str, Any] = {"latency": script.latency, "max_concurrency": script.max_concurrency,
                                "log": script.log, "label_probs": script.label_probs, "name": f"scripted/{path.stem}",
                                **options}
    return ScriptedBackend(script.responses, rules=script.rules, **settings)
