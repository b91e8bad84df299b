"""Structured judge output: constrained decoding where the backend has it, strict
validation always, a bounded re-ask carrying the validation error, then fail closed as
:class:`~assay.core.types.Unscored` with the reason and the raw output. No score is ever invented.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from assay.core.errors import BackendError, ScriptExhausted
from assay.core.types import CALL_FAILED, Completion, GenerateConfig, Message, Unscored
from assay.judge.runner import JudgeClient

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


class OutputInvalid(ValueError):
    """A judge output that does not satisfy its response model or a method's own checks."""


class OutputRejected(OutputInvalid):
    """A judge output that parses and fits its schema, but fails a method's own check (a score
    outside the band written beside it, a verdict citing a sentence that does not exist)."""


def extract_json(text: str) -> Any:
    """Parse the JSON object in a completion: bare, in a code fence, or after some prose."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1)
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    start = stripped.find("{")
    if start < 0:
        raise OutputInvalid("no JSON object in the output")
    try:
        value, _ = json.JSONDecoder().raw_decode(stripped[start:])
    except json.JSONDecodeError as exc:
        raise OutputInvalid(f"invalid JSON: {exc.msg} at position {exc.pos + start}") from exc
    return value


def parse_output(text: str, model: type[M], check: Callable[[M], None] | None = None) -> M:
    """Parse and validate one completion text; raise :class:`OutputInvalid` with a readable reason."""
    data = extract_json(text)
    try:
        parsed = model.model_validate(data, strict=False)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:6])
        raise OutputInvalid(f"does not match the schema: {problems}") from exc
    where = _boolean_as_number(data, parsed.model_dump(by_alias=True))
    if where is not None:  # pydantic's lax mode reads true as 1 and false as 0: a score the judge never wrote
        raise OutputInvalid(f"does not match the schema: {where}: a number is required, not true or false")
    if check is not None:
        try:
            check(parsed)
        except OutputRejected:
            raise
        except OutputInvalid as exc:
            raise OutputRejected(str(exc)) from exc
    return parsed


def _boolean_as_number(data: Any, parsed: Any, path: str = "") -> str | None:
    """Where the judge wrote true or false and the parsed output holds a number, else None."""
    if isinstance(data, bool):
        return None if isinstance(parsed, bool) or not isinstance(parsed, int | float) else (path or "(root)")
    if isinstance(data, dict) and isinstance(parsed, dict):
        for key, value in data.items():
            if key in parsed:
                found = _boolean_as_number(value, parsed[key], f"{path}.{key}" if path else str(key))
                if found is not None:
                    return found
    elif isinstance(data, list) and isinstance(parsed, list | tuple) and len(data) == len(parsed):
        for i, (value, out) in enumerate(zip(data, parsed, strict=True)):
            found = _boolean_as_number(value, out, f"{path}.{i}" if path else str(i))
            if found is not None:
                return found
    return None


@dataclass
class Attempt:
    """One call made for a structured output, kept as evidence."""

    key: str
    raw: str
    cached: bool
    error: str | None


@dataclass
class Structured(Generic[M]):
    """The outcome of :func:`generate_structured`: a value or an Unscored, and the calls behind it."""

    value: M | None
    unscored: Unscored | None
    attempts: list[Attempt] = field(default_factory=list)
    completion: Completion | None = None
    """The completion the value was parsed from (its logprobs, usage); None when unscored."""

    @property
    def keys(self) -> list[str]:
        return [a.key for a in self.attempts]


REASK = ("Your previous reply could not be used: {error}. Reply again with only the JSON object, "
         "following the required format exactly.")


async def generate_structured(client: JudgeClient, messages: Sequence[Message], model: type[M],
                              config: GenerateConfig, *, check: Callable[[M], None] | None = None,
                              max_reasks: int = 2, metric: str | None = None) -> Structured[M]:
    """Ask for a structured answer; re-ask at most ``max_reasks`` times, then fail closed.

    ``config.json_schema`` is sent to backends that constrain decoding; ``check`` adds
    method-specific validation (e.g. one verdict per criterion) whose message is fed back.
    A judge call that fails after all retries also ends as Unscored, with the error as reason.
    """
    conversation = list(messages)
    attempts: list[Attempt] = []
    last_error = ""
    rejected = False
    last_raw: str | None = None
    for _ in range(max_reasks + 1):
        try:
            key, completion = await client.complete(conversation, config)
        except ScriptExhausted:
            raise
        except BackendError as exc:
            return Structured(None, Unscored(reason=f"{CALL_FAILED}: {exc}", raw_output=last_raw,
                                             metric=metric), attempts)
        last_raw = completion.text
        try:
            value = _validate(completion, model, check)
        except OutputInvalid as exc:
            last_error, rejected = str(exc), isinstance(exc, OutputRejected)
            attempts.append(Attempt(key, completion.text, completion.cached, last_error))
            conversation = [*conversation, Message(role="assistant", content=completion.text),
                            Message(role="user", content=REASK.format(error=last_error))]
            continue
        attempts.append(Attempt(key, completion.text, completion.cached, None))
        return Structured(value, None, attempts, completion)
    # the same output read differently: it could not be read, or it was read and a check refused it
    what = "judge output refused by its checks" if rejected else "unparseable judge output"
    reason = f"{what} after {len(attempts)} attempt(s): {last_error}"
    return Structured(None, Unscored(reason=reason, raw_output=last_raw, metric=metric), attempts)


def _validate(completion: Completion, model: type[M], check: Callable[[M], None] | None) -> M:
    if completion.finish_reason == "length":
        try:
            return parse_output(completion.text, model, check)
        except OutputInvalid as exc:
            raise OutputInvalid(f"output truncated at the token limit ({exc})") from exc
    return parse_output(completion.text, model, check)
