"""A server's chat completion, validated as it is received.

Every field of an OpenAI-compatible chat completion that assay uses — the content, the finish
reason, the token counts (with the cached prompt tokens) and the log-probabilities — is parsed
here, from the body's bytes, by one pydantic model. An answer that is not a chat completion at
all (a proxy's HTML page, no ``choices``) is a transient failure of that call (the endpoint may
come back); one whose fields are out of range (a token count beyond 2^63 or below 0, a
log-probability that is NaN, infinite or above 0, content that is not text) is a failure of that
call that is not retried. Either way the call fails typed — its items become Unscored with the
reason — never a crash, and never a wrong number in the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.core.errors import BackendError, TransientBackendError
from assay.core.types import Completion, TokenLogprob, Usage

MAX_TOKENS_COUNT = 2**63 - 1
"""A token count is stored as SQLite INTEGER: anything larger is not a count of tokens."""
LOGPROB_SLACK = 1e-3
"""A log-probability a hair above 0 (rounding on the server) is read as 0; more is refused."""

Count = Annotated[int, Field(strict=True, ge=0, le=MAX_TOKENS_COUNT)]
LogProb = Annotated[float, Field(le=LOGPROB_SLACK, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False, frozen=True)


class AnswerTopLogprob(_Model):
    token: str
    logprob: LogProb


class AnswerTokenLogprob(_Model):
    token: str
    logprob: LogProb
    top_logprobs: list[AnswerTopLogprob] | None = None


class AnswerLogprobs(_Model):
    content: list[AnswerTokenLogprob] | None = None


class AnswerMessage(_Model):
    content: str | None = None


class AnswerChoice(_Model):
    message: AnswerMessage
    finish_reason: Annotated[str, Field(max_length=64)] | None = None
    logprobs: AnswerLogprobs | None = None


class AnswerPromptDetails(_Model):
    cached_tokens: Count | None = None


class AnswerUsage(_Model):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    prompt_tokens_details: AnswerPromptDetails | None = None
    cache_read_input_tokens: Count | None = None
    """Anthropic's name of the prompt tokens read from its cache (LiteLLM passes it through, and
    copies it to ``prompt_tokens_details.cached_tokens``)."""

    def cached_tokens(self) -> int:
        """The prompt tokens read from the provider's cache: OpenAI's
        ``prompt_tokens_details.cached_tokens``, else Anthropic's ``cache_read_input_tokens``."""
        details = self.prompt_tokens_details
        if details is not None and details.cached_tokens is not None:
            return details.cached_tokens
        return self.cache_read_input_tokens or 0

    @field_validator("prompt_tokens_details", mode="before")
    @classmethod
    def _details(cls, value: Any) -> Any:
        return None if value == {} else value


class ChatAnswer(_Model):
    """The fields of a chat completion assay reads."""

    choices: list[AnswerChoice] = Field(min_length=1)
    usage: AnswerUsage | None = None
    model: str | None = None

    def completion(self, backend: str, model: str, latency_s: float) -> Completion:
        choice = self.choices[0]
        logprobs: list[TokenLogprob] | None = None
        if choice.logprobs is not None and choice.logprobs.content is not None:
            logprobs = [TokenLogprob(token=t.token, logprob=min(0.0, t.logprob),
                                     top={a.token: min(0.0, a.logprob) for a in (t.top_logprobs or [])})
                        for t in choice.logprobs.content]
        usage = Usage()
        if self.usage is not None:
            usage = Usage(prompt_tokens=self.usage.prompt_tokens or 0,
                          completion_tokens=self.usage.completion_tokens or 0,
                          cached_prompt_tokens=self.usage.cached_tokens())
        return Completion(text=choice.message.content or "", usage=usage, logprobs=logprobs, latency_s=latency_s,
                          finish_reason=choice.finish_reason, backend=backend, model=self.model or model)


def _where(error: Any) -> str:
    return ".".join(str(p) for p in error["loc"]) or "the body"


def parse_answer(body: bytes | str, name: str) -> ChatAnswer:
    """``body`` read as a chat completion, or the call's typed failure: TransientBackendError
    when it is not a chat completion at all, BackendError when a field is out of range."""
    import json

    try:
        return ChatAnswer.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        if (first["type"] in ("json_invalid", "model_type", "model_attributes_type") and not first["loc"]) \
                or (first["loc"][:1] == ("choices",) and first["type"] in ("missing", "too_short", "list_type")):
            # a proxy's maintenance page, an HTML error with status 200, an object that is no completion
            raise TransientBackendError(f"{name} answered with a body that is not a chat completion "
                                        f"({first['type']}: {' '.join(str(first['msg']).split())[:120]})") from None
        shown = json.dumps(first.get("input"), default=str)[:60] if "input" in first else ""
        raise BackendError(f"{name} answered a chat completion with an unusable field {_where(first)}: "
                           f"{' '.join(str(first['msg']).split())}" + (f" (got {shown})" if shown else "")) from None
    except (RecursionError, ValueError) as exc:
        raise TransientBackendError(f"{name} answered with a body that is not a chat completion "
                                    f"({type(exc).__name__})") from None


def error_text(message: Any, limit: int = 300) -> str:
    """A server's error message as one line of at most ``limit`` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


LABEL_MASS_SLACK = 1e-3
"""Label probabilities sum to 1 over the labels asked, within this (a backend's rounding)."""


def check_completion(completion: Completion, name: str, labels: Sequence[str] | None = None) -> Completion:
    """Any backend's completion (a plug-in's, LiteLLM's, the scripted one's) checked before the
    runner stores or uses it: token counts within 0..2^63-1, log-probabilities finite and not
    above 0, label probabilities in [0, 1], given only for the ``labels`` asked and summing to 1
    over them (a label left out gets 0). Out of range: BackendError, that call's typed failure."""
    import math

    usage = completion.usage
    for field in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens"):
        value = getattr(usage, field)
        if not 0 <= value <= MAX_TOKENS_COUNT:
            raise BackendError(f"{name} reported {field} = {value}, not a token count")
    if usage.cached_prompt_tokens > usage.prompt_tokens:  # cached tokens are part of the prompt's
        raise BackendError(f"{name} reported {usage.cached_prompt_tokens} cached prompt tokens of a prompt of "
                           f"{usage.prompt_tokens} tokens")
    for token in completion.logprobs or []:
        for value in (token.logprob, *token.top.values()):
            if not math.isfinite(value) or value > LOGPROB_SLACK:
                raise BackendError(f"{name} returned a log-probability of {value!r} (must be finite and <= 0)")
    for label, p in (completion.label_probs or {}).items():
        if not (isinstance(p, int | float) and math.isfinite(p) and -1e-9 <= p <= 1 + 1e-9):
            raise BackendError(f"{name} returned a probability of {p!r} for label {label!r} (must lie in [0, 1])")
    if labels and completion.label_probs is not None:
        probs = completion.label_probs
        unknown = [label for label in probs if label not in labels]
        if unknown:
            raise BackendError(f"{name} returned probabilities for {', '.join(map(repr, unknown))}, which are not "
                               f"among the labels asked ({', '.join(map(repr, labels))})")
        total = math.fsum(probs.values())
        if abs(total - 1.0) > LABEL_MASS_SLACK:
            raise BackendError(f"{name} returned label probabilities summing to {total:g}, not 1, over the labels "
                               f"asked ({', '.join(map(repr, labels))})")
        if len(probs) < len(labels):
            completion = completion.model_copy(update={"label_probs": {label: probs.get(label, 0.0)
                                                                       for label in labels}})
    if not math.isfinite(completion.latency_s):
        completion = completion.model_copy(update={"latency_s": 0.0})
    return completion
