"""What an annotation may hold, checked before anything is stored (the annotation table is
append-only: a bad value stored once would stay for ever).

* The value is JSON with finite numbers only, at most :data:`MAX_BYTES` once encoded and at most
  :data:`MAX_DEPTH` levels deep.
* ``human.grade_*``: an integer on the 1–5 scale of the reviewer grades.
* ``human.comment``: text. ``human.NAME``: a free note. ``human.LIST[k]``: what the method that
  registered ``LIST`` as an ``annotation`` entry accepts (LeMAJ's ``missing``, ``split``, ``merge``).
* An override of a verdict takes the verdict's own type: a number stays a finite number within the
  metric's range (a score, also one the judge left Unscored) or within the range its values live in
  (a probability, a 0/1 verdict);
  a yes/no stays a boolean; a label stays one of the method's labels for that field.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Protocol

MAX_BYTES = 64 * 1024
MAX_DEPTH = 16
GRADE_SCALE = (1, 5)


class Rules(Protocol):
    """What the run's method says about its verdicts (the presentation of the run's kind,
    :func:`assay.core.protocols.run_presentation`, satisfies it; its ``annotation_labels`` too)."""

    def metric_range(self, metric: str) -> tuple[float, float]: ...


class AnnotationRefused(ValueError):
    """The annotation is not stored; the message says why."""


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """A number a float holds, not NaN or infinite (an integer of 400 digits is not: float() overflows)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_encoded(value: Any) -> None:
    """Finite numbers, size and depth."""
    if _depth(value) > MAX_DEPTH:
        raise AnnotationRefused(f"value nested more than {MAX_DEPTH} levels deep")
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except ValueError:
        raise AnnotationRefused("value holds NaN or Infinity, which are not numbers assay accepts") from None
    except TypeError as exc:
        raise AnnotationRefused(f"value is not JSON: {exc}") from None
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError:
        raise AnnotationRefused("value holds text that is not Unicode (a lone surrogate)") from None
    if size > MAX_BYTES:
        raise AnnotationRefused(f"value larger than {MAX_BYTES // 1024} KiB")


_HUMAN_LIST = re.compile(r"^human\.([A-Za-z_]\w*)\[\d+\]$")


def check_human(path: str, value: Any) -> None:
    """Something a reviewer adds under ``human.``: a grade, a comment, a free note under its own
    name, or an entry of a list (``human.split[0]``) whose checks a method registered (the
    registry's ``annotation`` entries: LeMAJ's missing points, splits and merges)."""
    if path.startswith("human.grade_"):
        low, high = GRADE_SCALE
        if not is_int(value) or not low <= value <= high:
            raise AnnotationRefused(f"{path} is a grade: an integer from {low} to {high}, got {value!r}")
        return
    if path == "human.comment":
        if not isinstance(value, str):
            raise AnnotationRefused(f"{path} is text, got {type(value).__name__}")
        return
    match = _HUMAN_LIST.match(path)
    if match is None:
        if not re.match(r"^human\.[A-Za-z_]\w*$", path):
            raise AnnotationRefused(f"{path!r} is not an address a reviewer can annotate")
        return  # a free note of the reviewer's under its own name: any JSON within the limits
    from assay.core.registry import _core as registry

    check = registry.find("annotation", match.group(1))
    if check is None:
        raise AnnotationRefused(f"{path!r} is not an address a reviewer can annotate")
    check(path, value)


def check_override(path: str, current: Any, value: Any, *, scores: dict[str, Any], rules: Any = None) -> None:
    """An override of the verdict at ``path`` (whose value is ``current``)."""
    if value is None:
        return  # "no verdict": the reviewer withdraws the judge's
    field = path.rsplit(".", 1)[-1].split("[", 1)[0]
    labels = (getattr(rules, "annotation_labels", None) or {}).get(field) if rules is not None else None
    if labels:
        if value not in labels:
            raise AnnotationRefused(f"{path} takes one of {', '.join(map(str, labels))}, got {value!r}")
        return
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise AnnotationRefused(f"{path} is yes/no (true or false), got {value!r}")
        return
    if current is None and path in scores:  # an Unscored metric: a reviewer's score is still a score
        low, high = rules.metric_range(path) if rules is not None else (-math.inf, math.inf)
        if not _is_number(value) or not _finite(value):
            raise AnnotationRefused(f"{path} is a score (unscored by the judge): a number, got {value!r}")
        if not low <= value <= high:
            raise AnnotationRefused(f"{path} must lie within [{low:g}, {high:g}], got {value!r}")
        return
    if _is_number(current):
        if not _is_number(value) or not _finite(value):
            raise AnnotationRefused(f"{path} is a number, got {value!r}")
        if path in scores and rules is not None:
            low, high = rules.metric_range(path)
        elif 0.0 <= current <= 1.0:
            low, high = 0.0, 1.0
        else:
            return
        if not low <= value <= high:
            raise AnnotationRefused(f"{path} must lie within [{low:g}, {high:g}], got {value!r}")
        return
    if isinstance(current, str):
        if not isinstance(value, str):
            raise AnnotationRefused(f"{path} is text, got {type(value).__name__}")
        return
    if isinstance(current, list | dict) and type(value) is not type(current):
        raise AnnotationRefused(f"{path} takes a {type(current).__name__}, got {type(value).__name__}")


def valid_grade(value: Any) -> bool:
    """A reviewer grade as stored: an integer on the grade scale (older stores may hold others,
    which readers skip)."""
    low, high = GRADE_SCALE
    return _is_number(value) and _finite(value) and float(value).is_integer() and low <= value <= high


def valid_number(value: Any) -> bool:
    return _is_number(value) and _finite(value)
