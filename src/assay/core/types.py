"""Records shared by every part of assay: items, messages, completions, verdicts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    """One chat message sent to a judge."""

    model_config = ConfigDict(frozen=True)
    role: Role
    content: str


class Reference(BaseModel):
    """A gold answer split into Required and Helpful Information (DeCE §2.1).

    A plain-string reference in the input means all of it is required information.
    """

    required: str
    helpful: str = ""

    def full_text(self) -> str:
        """The whole reference, with its sections labelled."""
        if not self.helpful.strip():
            return f"Required Information:\n{self.required}"
        return f"Required Information:\n{self.required}\n\nHelpful Information:\n{self.helpful}"


class Context(BaseModel):
    """A retrieved passage."""

    id: str = ""
    text: str


class Turn(BaseModel):
    """One earlier turn of a conversation."""

    role: str
    content: str


class Case(BaseModel):
    """Support-case subject and description (case-aware judge)."""

    subject: str = ""
    description: str = ""


class Item(BaseModel):
    """One evaluation item in assay's item format.

    Only ``id``, ``query`` and ``response`` are required; methods say which other fields they need.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    query: str
    response: str
    reference: Reference | None = None
    contexts: list[Context] = Field(default_factory=list)
    history: list[Turn] = Field(default_factory=list)
    case: Case | None = None
    document: str | None = None
    system: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    human: dict[str, Any] = Field(default_factory=dict)
    _line: int | None = PrivateAttr(default=None)
    """Where the item was read from (line of a JSONL/CSV file, row of a Parquet file), for errors."""

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_string(cls, value: Any) -> Any:
        # Integer ids are common in exported datasets; keep them, as text.
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("reference", mode="before")
    @classmethod
    def _plain_reference(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"required": value}
        return value

    @property
    def key(self) -> str:
        """Identifies the item within a run: id plus system (many systems share an id)."""
        return f"{self.id}::{self.system}" if self.system else self.id


class Unit(BaseModel):
    """What one evaluation scores: one item, an ordered pair of answers to one query (``a`` then
    ``b``), or a group. Results, resume, export and summaries are keyed by unit. ``round`` is the
    scheduling round that proposed it (0 for units known from the start)."""

    kind: Literal["item", "pair", "group"] = "item"
    key: str
    items: list[Item]
    round: int = 0

    @classmethod
    def of(cls, item: Item) -> Unit:
        return cls(kind="item", key=item.key, items=[item])

    @classmethod
    def pair(cls, a: Item, b: Item, round: int = 0) -> Unit:
        """The ordered pair (a, b): two answers to the same query by different systems."""
        if a.id != b.id:
            raise ValueError(f"a pair needs two answers to one query, got ids {a.id!r} and {b.id!r}")
        return cls(kind="pair", key=f"r{round}:{a.id}:{a.system}|{b.system}", items=[a, b], round=round)

    @property
    def item(self) -> Item:
        """The first (for an item unit: the only) item."""
        return self.items[0]

    def payload(self) -> dict[str, Any]:
        """What the store keeps: an item unit as the item itself (as stores always held), other
        kinds as their items."""
        if self.kind == "item":
            return self.items[0].model_dump(mode="json")
        return {"items": [i.model_dump(mode="json") for i in self.items]}

    @classmethod
    def from_stored(cls, kind: str, key: str, round: int | None, payload: dict[str, Any]) -> Unit:
        if kind == "item":
            return cls(kind="item", key=key, items=[Item.model_validate(payload)], round=round or 0)
        return cls(kind=kind, key=key, items=[Item.model_validate(i) for i in payload["items"]],  # type: ignore[arg-type]
                   round=round or 0)


def pairs_from_items(items: list[Item]) -> list[Unit]:
    """The ordered pairs of answers to one query: a pairwise record's (a, b) in its order
    (``metadata.pair_position``), else every two systems answering the same id, in system-name
    order. Ids with one answer make no pair."""
    by_id: dict[str, list[Item]] = {}
    for item in items:
        by_id.setdefault(item.id, []).append(item)
    pairs = []
    for answers in by_id.values():
        marked = {a.metadata.get("pair_position"): a for a in answers}
        if len(answers) == 2 and set(marked) == {"a", "b"}:
            pairs.append(Unit.pair(marked["a"], marked["b"]))
            continue
        ordered = sorted(answers, key=lambda a: str(a.system))
        pairs += [Unit.pair(x, y) for i, x in enumerate(ordered) for y in ordered[i + 1:]]
    return pairs


class Usage(BaseModel):
    """Token counts of one judge call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens the backend did not recompute (a reused KV-cache prefix: llama.cpp)."""

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TokenLogprob(BaseModel):
    """Log-probability of one generated token with its top alternatives."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)


class Completion(BaseModel):
    """What a backend returns for one call."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    logprobs: list[TokenLogprob] | None = None
    latency_s: float = 0.0
    finish_reason: str | None = None
    backend: str = ""
    model: str = ""
    cached: bool = False
    label_probs: dict[str, float] | None = None
    """For a label-probability call: each label's probability (they sum to 1)."""


CALL_FAILED = "judge call failed"
"""Reason prefix of an Unscored whose judge call failed (after its retries) rather than
returned something unparseable; ``--resume`` evaluates such items again."""


class ReadsLikeADict:
    """A pydantic model that replaced a dict, read as one still: ``m["field"]``, ``m.get("field")``."""

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:  # type: ignore[attr-defined]
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in type(self).model_fields else default  # type: ignore[attr-defined]


class Unscored(ReadsLikeADict, BaseModel):
    """A result that could not be scored, with why and the raw judge output behind it.

    Never replaced by a default score; aggregates exclude it and count it. Reads like the dict a
    stored result's Unscored once was (``u["reason"]``).
    """

    reason: str
    raw_output: str | None = None
    metric: str | None = None



class GenerateConfig(BaseModel):
    """Parameters of one judge call that change its output (they are part of the cache key)."""

    model_config = ConfigDict(frozen=True)

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    labels: list[str] | None = None
    """A label-probability call (``--verdicts direct``): no text is generated; the backend reads
    the probability of each label as the judge's next token from one forward pass."""
