"""Which conversation a turn belongs to: shared by the case-aware method and its comparison."""

from __future__ import annotations

from typing import Any


def conversation_of(item: dict[str, Any]) -> str:
    """The conversation an item (as stored) belongs to: ``metadata.conversation_id``, else its id."""
    metadata = item.get("metadata") or {}
    return str(metadata.get("conversation_id") or item["id"])
