"""DeCE's deterministic checks: of an extraction's list, of a verdict list's shape, and of each
positive verdict's evidence (it cites a sentence; every figure it states is in the judged text)."""

from __future__ import annotations

import re
from typing import Any

from assay.judge.structured import OutputInvalid
from assay.judge.text import unsupported_figures
from assay.methods.dece.schemas import CriterionVerdict, ElementVerdict


def clean_list(values: list[str]) -> list[str]:
    """Strip the '1: ' numbering models like to add, blank entries and exact repeats."""
    seen: set[str] = set()
    cleaned = []
    for value in values:
        text = re.sub(r"^\s*\d+\s*[:.)]\s*", "", value).strip()
        if text and text.lower() not in seen:
            seen.add(text.lower())
            cleaned.append(text)
    return cleaned


def check_nonempty_list(field: str) -> Any:
    def check(output: Any) -> None:
        if not clean_list(getattr(output, field)):
            raise OutputInvalid(f"'{field}' holds no non-empty entry")
    return check


def check_verdicts(index_field: str, count: int, sentences: int) -> Any:
    def check(output: Any) -> None:
        if len(output.verdicts) != count:
            raise OutputInvalid(f"expected {count} verdicts, one per {index_field}, got "
                                f"{len(output.verdicts)}")
        for position, verdict in enumerate(output.verdicts, 1):
            if getattr(verdict, index_field) != position:
                raise OutputInvalid(f"verdict {position} is numbered {getattr(verdict, index_field)}; "
                                    f"give the verdicts in order 1..{count}")
            bad = [n for n in verdict.evidence if not 1 <= n <= sentences]
            if bad:
                raise OutputInvalid(f"verdict {position} cites sentence(s) {bad}; there are sentences "
                                    f"1..{sentences}" if sentences else f"verdict {position} cites "
                                    "sentences, but the text has none")
    return check


def grounded(verdict: CriterionVerdict | ElementVerdict, statement: str, sentences: list[str],
             source_name: str, quote_policy: str) -> dict[str, Any]:
    """A verdict with its evidence checks applied under the quote policy."""
    cited = list(dict.fromkeys(verdict.evidence))
    quote = " ".join(sentences[n - 1] for n in cited)
    missing = unsupported_figures(statement, " ".join(sentences))
    counts = bool(verdict.score)
    problems = []
    if counts and not cited:
        problems.append(f"cites no sentence of the {source_name}")
    if counts and missing:
        problems.append(f"states {', '.join(missing)}, which the {source_name} does not contain")
    downgraded = None
    if problems and quote_policy == "require":
        counts = False
        downgraded = "positive verdict that " + " and ".join(problems)
    return {"counts": counts, "judge_score": verdict.score, "evidence": cited, "quote": quote,
            "quote_found": bool(cited), "figures_missing": missing, "downgraded": downgraded,
            "reasoning": verdict.reasoning or None}
