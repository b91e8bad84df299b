"""Judges through LiteLLM (``pip install -e '.[litellm]'``): Anthropic, Gemini, Bedrock, Azure,
Mistral and the rest under one name, ``litellm/PROVIDER/MODEL``
(``litellm/anthropic/claude-3-5-sonnet-20240620``, ``litellm/gemini/gemini-1.5-pro``,
``litellm/azure/DEPLOYMENT``). Keys come from the provider's own
environment variables (``ANTHROPIC_API_KEY``, ...); ``--judge-opt api_base=URL`` points at another
server.

What each model can do is declared from LiteLLM's model table: logprobs (and so ``--verdicts
soft`` / ``direct``) only where the provider returns them, JSON-schema output only where it is
supported (elsewhere the structured layer validates and re-asks). LiteLLM's own retries are off:
the runner retries, honouring Retry-After, and counts. The answer is read as an OpenAI-compatible
server's: the prompt tokens the provider read from its cache become the completion's
``cached_prompt_tokens`` whether LiteLLM reports them as OpenAI does
(``prompt_tokens_details.cached_tokens``) or as Anthropic does (``cache_read_input_tokens``; LiteLLM
counts them into ``prompt_tokens``, as OpenAI does).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from assay.core.errors import BackendError, ConfigError, RateLimited, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends._answer import parse_answer
from assay.judge.backends._base import Capabilities, JudgeBackend, label_completion


def _litellm() -> Any:
    # the model table ships with the package: never fetch it at run time
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise ConfigError("litellm/... judges need: pip install 'assay[litellm]'") from exc
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMBackend(JudgeBackend):
    """Chat completions through ``litellm.acompletion``."""

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 8, timeout_s: float = 600.0) -> None:
        if "/" not in model:
            raise ConfigError(f"litellm/{model}: name the provider too, e.g. "
                              "litellm/anthropic/claude-3-5-sonnet-20240620")
        self._lib = _litellm()
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.name = f"litellm/{model}"
        self.max_concurrency = max_concurrency
        params = self._lib.get_supported_openai_params(model=model) or []
        try:
            schema = bool(self._lib.supports_response_schema(model=model))
        except Exception:  # a model LiteLLM's table does not know
            schema = False
        logprobs = "logprobs" in params
        self.capabilities = Capabilities(json_schema=schema, logprobs=logprobs, seed="seed" in params,
                                         label_probs=logprobs)

    def identity(self) -> dict[str, Any]:
        return {"backend": "litellm", "model": self.model, "api_base": self.api_base}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        if config.labels:
            return await self._label_probs(messages, config)
        return await self._chat(messages, config)

    async def _chat(self, messages: list[Message], config: GenerateConfig) -> Completion:
        lib = self._lib
        kwargs: dict[str, Any] = {"model": self.model, "messages": [{"role": m.role, "content": m.content}
                                                                     for m in messages],
                                  "temperature": config.temperature, "top_p": config.top_p,
                                  "max_tokens": config.max_tokens, "num_retries": 0, "timeout": self.timeout_s}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if config.seed is not None and self.capabilities.seed:
            kwargs["seed"] = config.seed
        if config.json_schema is not None and self.capabilities.json_schema:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "judgement",
                                                                                "schema": config.json_schema}}
        if config.logprobs:
            if not self.capabilities.logprobs:
                raise ConfigError(f"{self.name} returns no logprobs")
            kwargs["logprobs"] = True
            if config.top_logprobs:
                kwargs["top_logprobs"] = config.top_logprobs
        start = time.perf_counter()
        try:
            response = await lib.acompletion(**kwargs)
        except lib.RateLimitError as exc:
            raise RateLimited(f"rate limited by {self.name}: {exc}") from exc
        except (lib.Timeout, lib.APIConnectionError, lib.ServiceUnavailableError, lib.InternalServerError) as exc:
            raise TransientBackendError(f"{type(exc).__name__} from {self.name}: {exc}") from exc
        except lib.APIError as exc:
            raise BackendError(f"{type(exc).__name__} from {self.name}: {exc}") from exc
        latency = time.perf_counter() - start
        try:  # the answer's fields are validated like an OpenAI-compatible server's (assay.judge.backends._answer)
            body = response.model_dump_json() if hasattr(response, "model_dump_json") else json.dumps(response)
        except Exception as exc:
            raise TransientBackendError(f"{self.name} answered with something that is not a chat completion "
                                        f"({type(exc).__name__})") from exc
        completion = parse_answer(body, self.name).completion("litellm", self.model, latency)
        return completion.model_copy(update={"model": self.model})

    async def _label_probs(self, messages: list[Message], config: GenerateConfig) -> Completion:
        labels = list(config.labels or [])
        asked = config.model_copy(update={"labels": None, "max_tokens": 1, "temperature": 0.0, "logprobs": True,
                                          "top_logprobs": 20, "json_schema": None})
        completion = await self._chat(messages, asked)
        return label_completion(completion, labels, self.name,
                                f"{self.name} returned no logprobs: --verdicts direct needs them")


def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
    """``options`` arrive parsed against :class:`~assay.judge.backends._options.LiteLLMOptions`."""
    return LiteLLMBackend(model, **options)
