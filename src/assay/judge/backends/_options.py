"""Each backend's options, typed: one pydantic model per provider.

``--judge-opt key=value`` (and ``judge_options=`` in Python, and ``judge_opt`` in ``assay.toml``)
is parsed once, against the chosen backend's model, before any store or file is touched: an
unknown key is one line listing the keys the backend takes; a value of the wrong type or out of
its range is one line naming the key. The factory then receives typed values. ``assay judges``
lists every backend's options from the same models.

A plug-in backend declares its own options by subclassing :class:`BackendOptions` and naming the
class on its factory (``factory.options = MyOptions``) or with
``register_backend("name", options=MyOptions)``. A plug-in that declares none receives the
values as given (strings from the command line).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.core.errors import ConfigError

MAX_CONCURRENCY = 4096
"""No backend is asked for more calls in flight than this (a typo such as 40000 is refused)."""


class BackendOptions(BaseModel):
    """Base of every backend's options: unknown keys are refused, NaN and infinities too, and
    text from the command line converts to the declared type (``"4"`` to 4, ``"yes"`` to True)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True,
                              arbitrary_types_allowed=True)


def _json_value(value: Any, key: str, kind: type) -> Any:
    """A dict or list option given as text (``--judge-opt extra_body='{"a": 1}'``) is read as JSON."""
    if isinstance(value, str):
        from assay.core._files import loads_finite

        try:
            value = loads_finite(value)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{key} is not JSON ({str(exc).splitlines()[0][:120]})") from None
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"{key} must be a JSON {'object' if kind is dict else 'array'}, not {type(value).__name__}")
    return value


class OpenAIOptions(BackendOptions):
    base_url: str | list[str] | None = None
    """Server URL (also written openai/MODEL@URL); several URLs (a list, or comma-separated) make a pool."""
    api_key: str | None = Field(default=None, repr=False)
    """API key; default ASSAY_OPENAI_API_KEY or OPENAI_API_KEY."""
    schema_mode: Literal["json_schema", "json_object", "none"] = "json_schema"
    """How JSON output is constrained: json_schema (OpenAI), json_object (llama-cpp-python server) or none."""
    max_concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    """Calls in flight at once (per endpoint in a pool)."""
    timeout_s: float = Field(default=600.0, gt=0, le=86400)
    """Seconds before one HTTP request gives up."""
    extra_body: dict[str, Any] | None = None
    """A JSON object sent with every request (provider-specific fields, e.g. {"repeat_penalty": 1.0})."""
    http_client: Any = None
    """An httpx.AsyncClient to send requests through (Python API only)."""

    @field_validator("extra_body", mode="before")
    @classmethod
    def _extra_body(cls, value: Any) -> Any:
        return _json_value(value, "extra_body", dict)


class LiteLLMOptions(BackendOptions):
    api_base: str | None = None
    """Another server for the provider (LiteLLM's api_base)."""
    api_key: str | None = Field(default=None, repr=False)
    """API key; default the provider's own environment variable."""
    max_concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    """Calls in flight at once."""
    timeout_s: float = Field(default=600.0, gt=0, le=86400)
    """Seconds before one request gives up."""


class LlamaCppOptions(BackendOptions):
    model_path: str | None = None
    """A GGUF file to load instead of the named model's."""
    n_ctx: int = Field(default=8192, ge=256, le=1_048_576)
    """Context window in tokens."""
    n_threads: int | None = Field(default=None, ge=1, le=1024)
    """CPU threads; default the CPUs assay may use (every core unless taskset, a cpuset or a CPU quota limits it)."""
    logits_all: bool = False
    """Give the logprobs of generated tokens (--verdicts soft, G-Eval's weights, DICE's analysis); they are
    read from each step's last output, so prompts are read as fast as without."""
    grammar_sampling: Literal["check-first", "stock"] = "check-first"
    """How JSON is constrained: check-first (assay's sampler) or stock (llama-cpp-python's chain)."""
    state_slots: int = Field(default=6, ge=0, le=64)
    """Snapshots of the KV cache kept for prompt families that share a long start."""
    prefix_cache: bool = True
    """Keep the KV state after each prompt's system message (a method's instructions) on disk, in the cache
    directory's kv/, so that the next run loads it instead of reading it again; the same numbers either way."""
    jump_forward: bool = False
    """Write the text a JSON reply's grammar forces (the rest of a property name once it is opened) in one
    step with the token before it: fewer steps, but that batch rounds differently, so a near-tied choice
    later in the reply can go the other way (off: replies as assay's recorded numbers were made)."""
    process: Literal["child", "inline"] = "child"
    """Where the model runs: child (a separate process, so a crash in native code is reported and the run
    can be resumed) or inline (in assay's own process)."""


class ScriptedOptions(BackendOptions):
    responses: list[str | dict[str, Any]] | None = None
    """Canned completions in call order (Python API; from the CLI, give a script file)."""
    rules: list[dict[str, Any]] | None = None
    """Rules {match, responses, repeat} (Python API; from the CLI, give a script file)."""
    latency: float = Field(default=0.0, ge=0, le=3600)
    """Seconds each call takes."""
    name: str | None = Field(default=None, min_length=1)
    """The judge's name (Python API)."""
    max_concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    """Calls in flight at once."""
    log: str | None = None
    """A file that gets one line per finished call (its prompt's sha256)."""

    @field_validator("responses", "rules", mode="before")
    @classmethod
    def _lists(cls, value: Any, info: Any) -> Any:
        return _json_value(value, info.field_name, list)


class JuryOptions(BackendOptions):
    """A jury takes no options of its own: each --judge-opt goes to every member, which checks it
    against its own options."""


BUILTIN_OPTIONS: dict[str, type[BackendOptions]] = {
    "openai": OpenAIOptions, "litellm": LiteLLMOptions, "llamacpp": LlamaCppOptions,
    "scripted": ScriptedOptions, "jury": JuryOptions,
}


def describe_type(annotation: Any) -> str:
    """A type as a user reads it: ``whole number``, ``one of: a, b``, ..."""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if annotation is int:
        return "whole number"
    if annotation is float:
        return "number"
    if annotation is bool:
        return "true/false"
    if annotation is str:
        return "text"
    if annotation is Any:
        return "object"
    if origin is Literal:
        return "one of: " + ", ".join(map(str, typing.get_args(annotation)))
    if origin in (typing.Union, types.UnionType):
        parts = [describe_type(a) for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(dict.fromkeys(parts))
    if origin is dict:
        return "JSON object"
    if origin is list:
        return "list"
    return getattr(annotation, "__name__", str(annotation))


def describe_range(field: Any) -> str:
    """``1..4096``, ``> 0``, ... from a field's constraints."""
    low = high = None
    low_open = high_open = False
    for meta in field.metadata:
        for name in ("ge", "gt", "le", "lt"):
            value = getattr(meta, name, None)
            if value is None:
                continue
            if name in ("ge", "gt"):
                low, low_open = value, name == "gt"
            else:
                high, high_open = value, name == "lt"
    if low is None and high is None:
        return ""

    def show(value: Any) -> str:
        return str(value) if isinstance(value, int) else f"{value:g}"

    if low is not None and high is not None and not low_open and not high_open:
        return f"{show(low)}..{show(high)}"
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {show(low)}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {show(high)}")
    return ", ".join(parts)


def option_rows(model: type[BackendOptions]) -> list[dict[str, str]]:
    """One row per option: name, type, range, default, description."""
    rows = []
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True)
        rows.append({"option": name, "type": describe_type(field.annotation), "range": describe_range(field),
                     "default": "" if default is None else json.dumps(default) if not isinstance(default, str)
                     else default, "description": field.description or ""})
    return rows


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(error: Any) -> str:
    """A pydantic error as the rest of a sentence that starts with the option's name."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "takes a whole number"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return "takes a finite number"
    if kind in ("bool_parsing", "bool_type"):
        return "takes true or false"
    if kind in ("string_type",):
        return "takes text"
    if kind == "literal_error":
        return f"takes one of: {ctx.get('expected', '')}".replace("'", "")
    bounds = {"greater_than_equal": ("ge", "{} or more"), "greater_than": ("gt", "more than {}"),
              "less_than_equal": ("le", "{} or less"), "less_than": ("lt", "less than {}")}
    if kind in bounds:
        name, form = bounds[kind]
        return "must be " + form.format(ctx.get(name))
    message = " ".join(str(error["msg"]).split()).removeprefix("Value error, ")
    key = str(error["loc"][0]) if error["loc"] else ""
    return message.removeprefix(key + " ") if key and message.startswith(key + " ") else "is wrong: " + message


def validate_options(provider: str, model: type[BackendOptions], options: dict[str, Any],
                     what: str = "--judge-opt") -> dict[str, Any]:
    """``options`` parsed against ``model``; returns the keys that were given, typed. Raises
    ConfigError with one line: the unknown key and the keys ``provider`` takes, or the key whose
    value is wrong and why."""
    known = set(model.model_fields)
    for key in options:
        if key not in known:
            takes = ", ".join(sorted(k for k in known if k != "http_client")) or "no options"
            raise ConfigError(f"{what} {key}: not an option of the {provider} judge; it takes: {takes} "
                              "(see: assay judges)")
    try:
        parsed = model.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        value = options.get(key, error.get("input"))
        shown = "<hidden>" if key == "api_key" else _shown(value)
        raise ConfigError(f"{what} {key} {_plain(error)}, got {shown} ({provider} judge; see: assay judges)") from None
    return {key: getattr(parsed, key) for key in parsed.model_fields_set}
