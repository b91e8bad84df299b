"""DeCE's response models and the JSON schemas its judge calls are constrained by."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel


class CriteriaOutput(BaseModel):
    criteria: list[str]


class ElementsOutput(BaseModel):
    elements: list[str]


class CriterionVerdict(BaseModel):
    criterion: int
    evidence: list[int]
    reasoning: str = ""  # absent in the brief form (reasoning=False); the schema decides
    score: Literal[0, 1]


class ElementVerdict(BaseModel):
    element: int
    evidence: list[int]
    reasoning: str = ""
    score: Literal[0, 1]


class SatisfactionOutput(BaseModel):
    verdicts: list[CriterionVerdict]


class VerificationOutput(BaseModel):
    verdicts: list[ElementVerdict]


def list_schema(field: str, max_items: int, max_chars: int, min_chars: int = 1) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": [field],
            "properties": {field: {"type": "array", "minItems": 1, "maxItems": max_items,
                                   "items": {"type": "string", "minLength": min(min_chars, max_chars),
                                             "maxLength": max_chars}}}}


def verdict_schema(index_field: str, count: int, sentences: int, max_evidence: int,
                   max_reasoning: int) -> dict[str, Any]:
    """One verdict object per criterion/element; ``max_reasoning`` 0 leaves out the reasoning."""
    evidence: dict[str, Any] = {"type": "array", "maxItems": 0}
    if sentences:
        evidence = {"type": "array", "maxItems": max_evidence,
                    "items": {"type": "integer", "enum": list(range(1, sentences + 1))}}
    properties: dict[str, Any] = {index_field: {"type": "integer"}, "evidence": evidence}
    if max_reasoning:
        properties["reasoning"] = {"type": "string", "minLength": 1, "maxLength": max_reasoning}
    properties["score"] = {"type": "integer", "enum": [0, 1]}
    verdict = {"type": "object", "additionalProperties": False, "required": list(properties),
               "properties": properties}
    return {"type": "object", "additionalProperties": False, "required": ["verdicts"],
            "properties": {"verdicts": {"type": "array", "minItems": count, "maxItems": count,
                                        "items": verdict}}}
