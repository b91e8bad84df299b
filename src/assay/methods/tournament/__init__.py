"""DICE tournaments: rank many systems that answered the same questions, with DICE's pairwise judgments.

Paper: DICE: Discrete Interpretable Comparative Evaluation with Probabilistic Scoring for Retrieval-Augmented
Generation, §3.3, Algorithm 1.

A *match* between two systems is every question both answered, judged as a DICE pair unit; the
match score of the first system is its summed DICE score over those questions divided by their
number (S_total / N_questions, eq. 5). Two modes:

- ``swiss`` (default): every system starts at Elo 1500 (``initial``); each round pairs the
  systems by current Elo — the highest-rated unpaired system meets the closest-rated one it has
  not met yet (with an odd number the last one sits the round out) — and after the round every
  match updates both ratings by eq. 5–6 with factor ``k``. ``upset_weight`` w > 0 amplifies an
  upset (the lower-rated system scores above 1/2): K · (1 + w · min(1, |R_A − R_B| / 400)), our
  reading of the paper's "upset bonuses" (it gives no formula). Rounds default to ⌈log2 N⌉ + 1.
- ``round-robin``: every pair of systems once.
- ``baselines``: a gauntlet against stored answer sets of known quality (``tiers``, e.g. the
  answers of a strong, a middling and a weak system to the same questions): the tiers play each
  other once and every other system plays every tier, in one round. A new system's place is its
  wins per tier and its rating on the tiers' scale (Elo over the matches — tier matches first,
  then each system's from the lowest tier up — and Bradley–Terry). The tiers' own matches are
  cached, so placing another system later costs only its matches against them.

The schedule is a function of the stored results (``next_units``), so a tournament killed
mid-round resumes where it stopped; a match already judged in another run of the same store
(e.g. a round-robin after a Swiss tournament) costs no judge call, its prompts being cached.
The ranking adds a Bradley–Terry fit over every judged question-level comparison with bootstrap
CIs (:func:`assay.analysis.stats.bradley_terry`), and Kendall's τ between two rankings.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from assay.core.errors import ConfigError
from assay.core.method import CallEstimate, ItemResult, ReportSection
from assay.core.registry import register_method
from assay.core.types import Item, Unit
from assay.methods.dice import Dice, DiceConfig


class TournamentConfig(DiceConfig):
    """DICE tournament options."""

    mode: Literal["swiss", "round-robin", "baselines"] = "swiss"
    """swiss: pair by current Elo each round; round-robin: every pair of systems once; baselines:
    every system plays each of the tiers (and the tiers play each other)."""
    tiers: list[str] = Field(default_factory=list)
    """baselines mode: the systems that are baseline tiers, best first (e.g. high, medium, low)."""
    rounds: int | None = Field(default=None, ge=1)
    """Swiss rounds (default ⌈log2 N⌉ + 1 for N systems)."""
    k: float = Field(default=32.0, gt=0, le=1000, allow_inf_nan=False)
    """Elo K-factor: how far one match moves a rating (at most 1000; the usual values are 16 to 40)."""
    upset_weight: float = Field(default=0.0, ge=0, le=10, allow_inf_nan=False)
    """w > 0 amplifies K for an upset: K · (1 + w · min(1, |ΔR| / 400)); 0 is the plain update (at most 10)."""
    initial: float = Field(default=1500.0, allow_inf_nan=False)
    """Every system's starting Elo."""
    @model_validator(mode="after")
    def _tiers_for_baselines(self) -> TournamentConfig:
        if self.mode == "baselines" and not self.tiers:
            raise ValueError("mode 'baselines' needs tiers (the baseline systems, best first)")
        if self.mode != "baselines" and self.tiers:
            raise ValueError(f"tiers are only used by mode 'baselines', not {self.mode!r}")
        if len(set(self.tiers)) != len(self.tiers):
            raise ValueError(f"tiers named twice: {self.tiers}")
        return self

    rank_by: Literal["bt", "elo"] = "bt"
    """Order of the final ranking: bt (Bradley–Terry over every judged comparison, order-free) or
    elo (the sequential rating after the last round, as in the DICE paper). Elo drives
    the Swiss pairing either way. On synthetic systems (benchmarks/swiss_sim.py) BT over the Swiss
    matches ranks much closer to the round-robin than the sequential Elo does."""


def _answers(items: list[Item]) -> dict[str, dict[str, Item]]:
    """question id → system → answer."""
    table: dict[str, dict[str, Item]] = {}
    for item in items:
        table.setdefault(item.id, {})[str(item.system)] = item
    return table


def match_units(items: list[Item], one: str, other: str, round_: int) -> list[Unit]:
    """The pair units of one match: every question both systems answered. The system whose name
    sorts first is A whatever the pairing order, so a match judged in any mode or round has the
    same prompts — and is served from the cache the second time (``swap`` judges both orders)."""
    first, second = sorted((one, other))
    units = []
    for _, answers in sorted(_answers(items).items()):
        if first in answers and second in answers:
            units.append(Unit.pair(answers[first], answers[second], round=round_))
    return units


def match_scores(history: list[tuple[Unit, ItemResult | None]]) -> list[tuple[int, str, str, float, int]]:
    """(round, first, second, first's mean score, questions scored) per match, in round order and,
    within a round, in the order the matches were proposed."""
    matches: dict[tuple[int, str, str], list[float]] = {}
    for unit, result in history:
        a, b = unit.items
        key = (unit.round, str(a.system), str(b.system))
        bucket = matches.setdefault(key, [])
        if result is not None and result.scores.get("score_a") is not None:
            bucket.append(float(result.scores["score_a"]))  # type: ignore[arg-type]
    return [(r, a, b, sum(scores) / len(scores), len(scores)) for (r, a, b), scores in matches.items() if scores]


def elo_after(systems: list[str], matches: list[tuple[int, str, str, float, int]], *, k: float,
              upset_weight: float, initial: float) -> dict[str, float]:
    """Elo of every system after the given matches (eqs. 5–6, with the optional upset bonus):
    :func:`assay.analysis.stats.elo_ratings` over the tournament's matches, in the order played."""
    from assay.analysis.stats import elo_ratings

    return elo_ratings([(a, b, score) for _, a, b, score, _ in matches], k=k, initial=initial,
                       upset_weight=upset_weight, systems=systems)


def swiss_pairs(ratings: dict[str, float], met: set[frozenset[str]]) -> list[tuple[str, str]]:
    """Pair by current rating: the highest-rated unpaired system meets the closest-rated unpaired
    one it has not met (ties broken by name); a system with no such partner sits out."""
    order = sorted(ratings, key=lambda s: (-ratings[s], s))
    free = list(order)
    pairs = []
    while free:
        first = free.pop(0)
        options = [s for s in free if frozenset((first, s)) not in met]
        if not options:
            continue
        partner = min(options, key=lambda s: (abs(ratings[s] - ratings[first]), order.index(s)))
        free.remove(partner)
        pairs.append((first, partner))
    return pairs


@register_method
class Tournament(Dice):
    """DICE tournament: Swiss rounds (or round-robin) of pairwise matches over many systems, Elo."""

    name: ClassVar[str] = "tournament"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"tournament": {"--out": "--output"}}
    config_model: ClassVar[type[BaseModel] | None] = TournamentConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'swap', 'verdicts', 'mode',
                                                  'tiers', 'rounds', 'k', 'rank_by')
    config: TournamentConfig
    eval_command: ClassVar[bool] = False  # `assay tournament` is its command

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        from assay.methods.tournament import cli

        app.command("tournament", rich_help_panel=kit.panels["compare"])(cli.make_tournament_command())

    def __init__(self, config: TournamentConfig | None = None) -> None:
        super().__init__(config or TournamentConfig())

    def systems(self, items: list[Item]) -> list[str]:
        return sorted({str(i.system) for i in items})

    def check_all(self, items: list[Item]) -> str | None:
        problem = super().check_all(items)
        if problem:
            return problem
        systems = self.systems(items)
        if len(systems) < 2:
            return f"a tournament needs at least two systems, got {len(systems)}"
        asked: dict[str, set[str]] = {}
        for item in items:
            asked.setdefault(str(item.system), set()).add(item.id)
        if self.config.mode == "baselines":
            tiers = self.config.tiers
            missing = [t for t in tiers if t not in systems]
            if missing:
                return f"baseline tier(s) {', '.join(missing)} have no answers among the items"
            pairs = [(a, b) for i, a in enumerate(tiers) for b in tiers[i + 1:]]
            pairs += [(s, t) for s in systems if s not in tiers for t in tiers]
        else:
            pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
        apart = [(a, b) for a, b in pairs if not asked[a] & asked[b]]
        if len(apart) == len(pairs):
            return "no two systems that would meet answer a common question (same id): there is nothing to compare"
        if self.config.mode == "baselines" and apart:
            a, b = apart[0]
            return (f"systems {a!r} and {b!r} share no question (same id), so {a!r} cannot be placed against "
                    f"tier {b!r}" + (f" (and {len(apart) - 1} more such pair(s))" if len(apart) > 1 else ""))
        return None

    def planned_rounds(self, items: list[Item]) -> int:
        n = len(self.systems(items))
        if self.config.mode in ("round-robin", "baselines"):
            return 1
        return self.config.rounds or math.ceil(math.log2(max(n, 2))) + 1

    def units(self, items: list[Item]) -> list[Unit]:
        return self.next_units(items, [])

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        """DICE's section plus the ranking, rebuilt from the exported rows (defaults for K and the
        initial rating: the report does not know the run's options)."""
        section = super().report_section(rows)
        assert section is not None
        played: dict[tuple[int, str, str], list[float]] = {}
        for r in rows:
            if r.get("score_a") is not None and r.get("system_a") is not None:
                played.setdefault((int(r.get("round") or 0), str(r["system_a"]), str(r["system_b"])), []).append(
                    float(r["score_a"]))
        matches = [(rnd, a, b, sum(v) / len(v), len(v)) for (rnd, a, b), v in sorted(played.items())]
        if matches:
            from assay.analysis.stats import bradley_terry

            systems = sorted({s for _, a, b, _, _ in matches for s in (a, b)})
            default = TournamentConfig()
            elo = elo_after(systems, matches, k=default.k, upset_weight=default.upset_weight, initial=default.initial)
            comparisons = [(str(r["system_a"]), str(r["system_b"]), float(r["score_a"])) for r in rows
                           if r.get("score_a") is not None and r.get("system_a") is not None]
            bt = bradley_terry(comparisons, resamples=200, seed=0)
            order = sorted(systems, key=lambda s: (-bt.ratings.get(s, -math.inf), s))
            ranking: list[dict[str, Any]] = [{"system": s, "elo": elo[s], "bt": bt.ratings.get(s),
                        "bt_ci": list(bt.ci[s]) if bt.ci and s in bt.ci else None} for s in order]
            low = min(r["bt"] for r in ranking if r["bt"] is not None)
            high = max(r["bt"] for r in ranking if r["bt"] is not None)
            section.context["ranking"] = {"mode": "tournament", "ranked_by": "bt", "ranking": ranking,
                                          "matches": matches}
            section.context["bar"] = {r["system"]: round(5 + 95 * ((r["bt"] - low) / (high - low) if high > low
                                                                   else 1.0)) for r in ranking}
        return section

    def estimate(self, items: list[Item]) -> CallEstimate:
        """Calls of the planned rounds: ⌊N/2⌋ matches a Swiss round (N(N−1)/2 for round-robin),
        each over the questions its two systems share (taken as all of them)."""
        n = len(self.systems(items))
        t = len(self.config.tiers)
        matches = {"round-robin": n * (n - 1) // 2, "baselines": t * (t - 1) // 2 + (n - t) * t}.get(
            self.config.mode, self.planned_rounds(items) * (n // 2))
        questions = len({i.id for i in items})
        orders = 2 if self.config.swap else 1
        per_order, instructions, written = self.calls_per_order()  # direct: one label call an order (it assumed
        # the analysis mode's two whatever the verdicts, twice the calls a run made)
        prompt = sum(len(i.query) + len(i.response) for i in items) // max(1, len(items)) // 2 + instructions
        calls = matches * questions * orders * per_order
        return CallEstimate(calls=calls, prompt_tokens=calls * prompt,
                            completion_tokens=matches * questions * orders * written)

    def next_units(self, items: list[Item], history: list[tuple[Unit, ItemResult | None]]) -> list[Unit]:
        systems = self.systems(items)
        round_ = max((u.round for u, _ in history), default=-1) + 1
        if round_ >= self.planned_rounds(items):
            return []
        if self.config.mode == "round-robin":
            pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
        elif self.config.mode == "baselines":
            tiers = self.config.tiers
            missing = [t for t in tiers if t not in systems]
            if missing:
                raise ConfigError(f"baseline tier(s) {', '.join(missing)} have no answers among the items")
            pairs = [(a, b) for i, a in enumerate(tiers) for b in tiers[i + 1:]]
            pairs += [(s, t) for s in systems if s not in tiers for t in reversed(tiers)]
        else:
            played = match_scores(history)
            ratings = elo_after(systems, played, k=self.config.k, upset_weight=self.config.upset_weight,
                                initial=self.config.initial)
            met = {frozenset((str(u.items[0].system), str(u.items[1].system))) for u, _ in history}
            pairs = swiss_pairs(ratings, met)
        return [unit for a, b in pairs for unit in match_units(items, a, b, round_)]

    def ranking(self, items: list[Item], history: list[tuple[Unit, ItemResult | None]], *, resamples: int = 1000,
                seed: int = 0) -> dict[str, Any]:
        """Elo after the tournament, a Bradley–Terry fit with CIs, and the matches played."""
        from assay.analysis.stats import bradley_terry

        systems = self.systems(items)
        played = match_scores(history)
        elo = elo_after(systems, played, k=self.config.k, upset_weight=self.config.upset_weight,
                        initial=self.config.initial)
        comparisons = [(str(u.items[0].system), str(u.items[1].system), float(r.scores["score_a"]))  # type: ignore[arg-type]
                       for u, r in history if r is not None and r.scores.get("score_a") is not None]
        bt = bradley_terry(comparisons, resamples=resamples, seed=seed) if comparisons else None
        bt_of: dict[str, float | None] = {s: bt.ratings.get(s) if bt else None for s in systems}

        def bt_key(system: str) -> float:
            value = bt_of[system]
            return -math.inf if value is None else value

        if self.config.rank_by == "bt" and bt is not None:
            order = sorted(systems, key=lambda s: (-bt_key(s), -elo[s], s))
        else:
            order = sorted(systems, key=lambda s: (-elo[s], s))
        rows: list[dict[str, Any]] = [{"system": s, "elo": elo[s], "bt": bt_of[s],
                                       "bt_ci": list(bt.ci[s]) if bt and bt.ci and s in bt.ci else None}
                                      for s in order]
        placement = self.placement(history) if self.config.mode == "baselines" else None
        return {"mode": self.config.mode, "rounds": self.planned_rounds(items), "systems": len(systems),
                **({"tiers": self.config.tiers, "placement": placement} if placement is not None else {}),
                "ranked_by": self.config.rank_by if bt is not None else "elo",
                "ranking": rows, "bt_note": bt.note if bt else None,
                "matches": [{"round": r, "a": a, "b": b, "score_a": s, "questions": n} for r, a, b, s, n in played],
                "comparisons": len(comparisons)}

    def placement(self, history: list[tuple[Unit, ItemResult | None]]) -> dict[str, dict[str, dict[str, Any]]]:
        """baselines mode: for every system that is not a tier, its record against each tier —
        questions won, tied (score exactly ½) and lost, and its mean DICE score."""
        tiers = self.config.tiers
        table: dict[str, dict[str, list[float]]] = {}
        for unit, result in history:
            if result is None or result.scores.get("score_a") is None:
                continue
            a, b = (str(i.system) for i in unit.items)
            score_a = float(result.scores["score_a"])  # type: ignore[arg-type]
            if b in tiers and a not in tiers:
                table.setdefault(a, {}).setdefault(b, []).append(score_a)
            elif a in tiers and b not in tiers:
                table.setdefault(b, {}).setdefault(a, []).append(1.0 - score_a)
        return {system: {tier: {"won": sum(v > 0.5 for v in scores), "tied": sum(v == 0.5 for v in scores),
                                "lost": sum(v < 0.5 for v in scores), "mean_score": sum(scores) / len(scores),
                                "questions": len(scores)}
                         for tier in tiers if (scores := per_tier.get(tier))}
                for system, per_tier in sorted(table.items())}
