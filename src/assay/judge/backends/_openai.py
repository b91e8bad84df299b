"""OpenAI-compatible backend on the official ``openai`` SDK.

Names: ``openai/MODEL`` (api.openai.com, key from ``OPENAI_API_KEY``) or
``openai/MODEL@BASE_URL`` (any OpenAI-compatible server: vLLM, Ollama, LM Studio, the
llama.cpp server ...; key from ``ASSAY_OPENAI_API_KEY`` or ``OPENAI_API_KEY``, and a
placeholder when the server needs none), or ``openai/MODEL@URL1,URL2,...``: one model behind
several endpoints (:mod:`assay.judge.backends._pool`; ``max_concurrency`` applies to each endpoint;
in TOML, ``base_url`` may be a list).

``schema_mode`` chooses how JSON output is constrained:

* ``json_schema`` (default): OpenAI structured outputs, ``response_format={"type": "json_schema"}``.
* ``json_object``: ``{"type": "json_object", "schema": ...}``, what the llama-cpp-python server
  accepts (it answers HTTP 500 to ``json_schema``).
* ``none``: no constraint; the structured layer still validates and re-asks.

``extra_body`` (a dict) is sent with every request as provider-specific fields. For the
llama-cpp-python server (``python -m llama_cpp.server`` or ``python -m assay.judge.serve``) pass
``{"repeat_penalty": 1.0}``: that server applies a repetition penalty of 1.1 unless told
otherwise (not an OpenAI parameter), which pushes a list of verdicts away from repeating a
label and makes its output differ from the same model in-process.

Prefix reuse: ``usage.prompt_tokens_details.cached_tokens`` (OpenAI's field; ``assay.judge.serve``
fills it) is kept as the completion's ``cached_prompt_tokens``.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from assay.core.errors import BackendError, ConfigError, RateLimited, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends._answer import error_text, parse_answer
from assay.judge.backends._base import Capabilities, JudgeBackend, label_completion

SCHEMA_MODES = ("json_schema", "json_object", "none")


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date; the runner falls back to exponential backoff


def redact_url(url: str | None) -> str | None:
    """The URL with any credentials in it (``http://user:KEY@host/v1``) replaced by ``***``: what
    names, identities, manifests and error messages show. The request still uses the real URL."""
    if url is None:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed address (http://[::1): hide whatever precedes an @ in its host part
        scheme, sep, rest = url.partition("://")
        netloc, tail = re.match(r"([^/?#]*)(.*)", rest, re.S).groups()  # type: ignore[union-attr]
        return url if "@" not in netloc else f"{scheme}{sep}***@{netloc.rsplit('@', 1)[1]}{tail}"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = "***@" + host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class OpenAIBackend(JudgeBackend):
    """Chat completions against any OpenAI-compatible endpoint."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 schema_mode: str = "json_schema", max_concurrency: int = 8,
                 http_client: Any = None, timeout_s: float = 600.0,
                 extra_body: dict[str, Any] | None = None) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise ConfigError("the openai backend needs: pip install openai") from exc
        if schema_mode not in SCHEMA_MODES:
            raise ConfigError(f"schema_mode must be one of {SCHEMA_MODES}, not {schema_mode!r}")
        key = api_key or os.environ.get("ASSAY_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")
        if key is None:
            if base_url is None:
                raise ConfigError("openai/...: set OPENAI_API_KEY (or give a base_url with "
                                  "openai/MODEL@URL for a local server)")
            key = "no-key-needed"
        if extra_body is not None and not isinstance(extra_body, dict):  # text: parsed by the options model
            from assay.judge.backends._options import OpenAIOptions, validate_options

            extra_body = validate_options("openai", OpenAIOptions, {"extra_body": extra_body})["extra_body"]
        self.model = model
        self.base_url = redact_url(base_url)
        self._secret_url = base_url if base_url != self.base_url else None
        self.extra_body = dict(extra_body or {})
        self.schema_mode = schema_mode
        self.name = f"openai/{model}" + (f"@{self.base_url}" if self.base_url else "")
        self.max_concurrency = max_concurrency
        self.capabilities = Capabilities(json_schema=schema_mode != "none", logprobs=True, seed=True,
                                         label_probs=True)
        # The SDK's own retries are off: the runner retries, honouring Retry-After, and counts.
        self._client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0,
                                          timeout=timeout_s, http_client=http_client)
        self._openai = openai

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {"backend": "openai", "model": self.model, "base_url": self.base_url,
                                    "schema_mode": self.schema_mode}
        if self.extra_body:  # it changes the output (absent before it existed: old run ids hold)
            identity["extra_body"] = self.extra_body
        return identity

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        if self.schema_mode == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": "judgement", "schema": schema, "strict": False}}
        if self.schema_mode == "json_object":
            return {"type": "json_object", "schema": schema}
        return None

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        if config.labels:
            return await self._label_probs(messages, config)
        return await self._chat(messages, config)

    async def _label_probs(self, messages: list[Message], config: GenerateConfig) -> Completion:
        """One token with its top log-probabilities (servers that cache prefixes, vLLM and the
        llama.cpp server, reuse the shared prompt); each label's probability is the mass of the
        first-token variants it could start with, renormalised over the labels."""

        labels = list(config.labels or [])
        asked = config.model_copy(update={"labels": None, "max_tokens": 1, "temperature": 0.0, "logprobs": True,
                                          "top_logprobs": 20, "json_schema": None})
        completion = await self._chat(messages, asked)
        return label_completion(completion, labels, self.name,
                                f"{self.name} returned no logprobs: label calls (--verdicts direct) need a "
                                "server that does")

    async def _chat(self, messages: list[Message], config: GenerateConfig) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            kwargs["seed"] = config.seed
        if config.json_schema is not None:
            fmt = self._response_format(config.json_schema)
            if fmt is not None:
                kwargs["response_format"] = fmt
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        if config.logprobs:
            kwargs["logprobs"] = True
            if config.top_logprobs:
                kwargs["top_logprobs"] = config.top_logprobs
        try:
            return await self._generate(kwargs)
        except BackendError as exc:
            if self._secret_url is not None and self._secret_url in str(exc):
                message = str(exc).replace(self._secret_url, self.base_url or "")
                if isinstance(exc, RateLimited):
                    raise RateLimited(message, retry_after=exc.retry_after) from None
                raise type(exc)(message) from None
            raise

    async def _generate(self, kwargs: dict[str, Any]) -> Completion:
        """One request; the answer's bytes are validated by :mod:`assay.judge.backends._answer` (the
        SDK's own parsing, which trusts the server, is not used)."""
        openai = self._openai
        start = time.perf_counter()
        try:
            raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
            body = raw.http_response.content
        except openai.RateLimitError as exc:
            raise RateLimited(f"HTTP 429 from {self.name}: {error_text(exc.message)}",
                              retry_after=_retry_after(exc.response.headers)) from exc
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise TransientBackendError(f"{type(exc).__name__} from {self.name}: {error_text(exc)}") from exc
        except openai.InternalServerError as exc:
            raise TransientBackendError(f"HTTP {exc.status_code} from {self.name}: {error_text(exc.message)}") from exc
        except openai.APIStatusError as exc:
            raise BackendError(f"HTTP {exc.status_code} from {self.name}: {error_text(exc.message)}") from exc
        except (json.JSONDecodeError, UnicodeDecodeError, openai.APIResponseValidationError) as exc:
            # a proxy's maintenance page, an HTML error with status 200: this call failed, the
            # endpoint may come back (in a pool: set aside, the call goes to the next one)
            raise TransientBackendError(f"{self.name} answered with a body that is not a chat completion "
                                        f"({type(exc).__name__})") from exc
        latency = time.perf_counter() - start
        return parse_answer(body, self.name).completion("openai", self.model, latency)

    async def aclose(self) -> None:
        await self._client.close()


def check_url(url: str, where: str) -> None:
    """An endpoint assay can reach: http(s), a host, a port in 1-65535. One line (ConfigError)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a port out of range, a malformed address
        raise ConfigError(f"{where}: {redact_url(url)!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{where}: {redact_url(url)!r} must start with http:// or https://")
    if not parts.hostname:
        raise ConfigError(f"{where}: {redact_url(url)!r} names no host")
    if port == 0:
        raise ConfigError(f"{where}: {redact_url(url)!r}: port 0 is not a port a server listens on")


def endpoints(model: str, options: dict[str, Any]) -> tuple[str, list[str]]:
    """The model and the endpoint URLs a judge name and its options give (none: OpenAI's)."""
    base_url = options.get("base_url")
    if "@" in model:
        model, base_url = model.split("@", 1)
    urls = [u.strip() for u in base_url.split(",")] if isinstance(base_url, str) else list(base_url or [])
    for url in urls:
        if url:
            check_url(url, f"openai/{model}")
    return model, urls


def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
    """``options`` arrive parsed against :class:`~assay.judge.backends._options.OpenAIOptions`."""
    options = dict(options)
    base_url = options.pop("base_url", None)
    if "@" in model:
        model, base_url = model.split("@", 1)
    endpoints(model, {"base_url": base_url})
    if not model:
        raise ConfigError("openai/MODEL needs a model name")
    urls = [u.strip() for u in base_url.split(",")] if isinstance(base_url, str) else base_url
    if isinstance(urls, list) and len(urls) > 1:  # several endpoints, one judge (assay.judge.backends._pool)
        from assay.judge.backends._pool import PoolBackend

        if any(not u for u in urls) or len(set(urls)) != len(urls):
            raise ConfigError(f"openai/{model}@...: empty or repeated endpoint in {base_url!r}")
        members: list[JudgeBackend] = [OpenAIBackend(model, base_url=u, **options) for u in urls]
        first = members[0]
        assert isinstance(first, OpenAIBackend)
        identity: dict[str, Any] = {"backend": "openai", "model": model, "schema_mode": first.schema_mode,
                                    "endpoints": "pool"}
        if first.extra_body:
            identity["extra_body"] = first.extra_body
        return PoolBackend(members, name=f"openai/{model}@{','.join(str(redact_url(u)) for u in urls)}",
                           identity=identity)
    if isinstance(urls, list):
        urls = urls[0] if urls else None
    return OpenAIBackend(model, base_url=urls, **options)
