"""Views: what a method (or a plug-in) shows in assay's generic pages, registered in the registry
as ``view`` entries, so the UI and the report ask the registry instead of naming a method.

* ``review:METHOD`` — a :class:`ReviewView`: the method's panel on an item's page of ``assay ui``
  (Jinja source, autoescaped), the context it is rendered with, and the script that wires its
  controls (it runs inside the page's script, where ``post(path, value, reason)``,
  ``count(prefix)`` and ``done()`` are defined). A method that only defines
  ``Presents.review_panel`` (:mod:`assay.core.protocols`) gets one made from it when it is
  registered.
* ``grades`` — a :class:`GradeScale`: the reviewer's grades of a whole answer, offered on every
  item's page (assay's own is LeMAJ's expert scale).
* ``report:NAME`` — a :class:`ReportView`: a report of a method's own files (PReMISE's rubric
  report), rendered by the method's command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assay.core.registry import _core as registry


@dataclass(frozen=True)
class ReviewView:
    panel: Callable[[], str | None]
    """The panel's Jinja source (read when first shown), or None."""
    context: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] = lambda row, mine: {}
    """Extra context: ``context(row, mine)`` with ``mine`` the reviewer's latest annotations by address."""
    script: str = ""
    """JavaScript wiring the panel's controls (trusted: it ships with the method)."""


@dataclass(frozen=True)
class GradeScale:
    questions: dict[str, tuple[str, str]]
    """Per annotation address (``human.grade_correctness``): (label, what it asks, shown as a tooltip)."""
    levels: dict[str, tuple[tuple[int, str], ...]]
    """Per address: the grades offered, best first, each (value, name)."""


@dataclass(frozen=True)
class ReportView:
    render: Callable[..., str]
    """The report as an HTML page."""
    title: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def review_view(method: str) -> ReviewView | None:
    """The review panel registered for ``method`` (``review:METHOD``), or None."""
    found = registry.find("view", f"review:{method}")
    return found if isinstance(found, ReviewView) else None


def grade_scale() -> GradeScale | None:
    """The grades of a whole answer the UI offers (the ``grades`` view), or None."""
    found = registry.find("view", "grades")
    return found if isinstance(found, GradeScale) else None


def report_view(name: str) -> ReportView:
    """The report view ``report:NAME``, or one line listing the views there are."""
    found: ReportView = registry.get("view", f"report:{name}")
    return found
