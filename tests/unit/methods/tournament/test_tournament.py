"""DICE tournaments: Swiss pairing, the Elo update, and a tournament run on a fake judge."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.judge.runner import RunnerConfig
from assay.methods.tournament import Tournament, elo_after, match_scores, swiss_pairs
from assay.store import Store
from tests.unit.methods.dice.test_dice import LogprobJudge

QUIET = RunnerConfig(progress=False)


def _exe() -> str:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    return exe


def test_swiss_pairs_closest_ratings_without_repeats() -> None:
    ratings = {"a": 1600.0, "b": 1550.0, "c": 1500.0, "d": 1420.0, "e": 1400.0}
    assert swiss_pairs(ratings, set()) == [("a", "b"), ("c", "d")]  # e sits out (odd number)
    assert swiss_pairs(ratings, {frozenset(("a", "b"))}) == [("a", "c"), ("b", "d")]
    assert swiss_pairs({"a": 1500.0, "b": 1500.0}, {frozenset(("a", "b"))}) == []


def test_elo_update_by_hand() -> None:
    ratings = elo_after(["a", "b"], [(0, "a", "b", 1.0, 3)], k=32, upset_weight=0, initial=1500)
    assert ratings == {"a": 1516.0, "b": 1484.0}  # E = 0.5, Δ = 32 · (1 − 0.5)
    # then b (1484) beats a (1516): an upset. E_b = 1 / (1 + 10^(32/400)) = 0.454078;
    # plain: Δ = 32 · 0.545922 = 17.4695; with w = 1: K = 32 · (1 + 32/400) = 34.56, Δ = 18.8671
    played = [(0, "a", "b", 1.0, 3), (1, "b", "a", 1.0, 3)]
    plain = elo_after(["a", "b"], played, k=32, upset_weight=0, initial=1500)
    weighted = elo_after(["a", "b"], played, k=32, upset_weight=1.0, initial=1500)
    assert plain["b"] == pytest.approx(1484 + 17.4695, abs=1e-3)
    assert weighted["b"] == pytest.approx(1484 + 18.8671, abs=1e-3)
    assert weighted["a"] + weighted["b"] == pytest.approx(3000)  # zero-sum


def answers(systems: dict[str, int], questions: int = 2) -> list[dict]:
    return [{"id": f"q{q}", "query": f"question {q}?", "response": "x" * (length + q), "system": name}
            for q in range(questions) for name, length in systems.items()]


def test_a_swiss_tournament_ranks_by_strength_and_round_robin_reuses_its_judgments(tmp_path) -> None:
    data = answers({"weak": 5, "fair": 15, "good": 25, "best": 35})
    store = Store(tmp_path / "t.db")
    judge = LogprobJudge()
    swiss = assay.evaluate(data, "tournament", judge, store=store, runner=QUIET)
    units = store.units(swiss.run_id)
    assert sorted({u.round for u in units}) == [0, 1, 2]  # ⌈log2 4⌉ + 1 rounds
    assert len(units) == 3 * 2 * 2  # rounds × matches per round × questions
    first_round = {(u.items[0].system, u.items[1].system) for u in units if u.round == 0}
    assert len(first_round) == 2 and all(a < b for a, b in first_round)  # canonical order: name first
    history = [(u, _result(r)) for u, r in zip(units, store.results(swiss.run_id), strict=True)]
    ranking = Tournament().ranking([assay.Item.model_validate(d) for d in data], history, resamples=200)
    assert [r["system"] for r in ranking["ranking"]] == ["best", "good", "fair", "weak"]
    assert len(ranking["matches"]) == 6 and ranking["comparisons"] == 12
    calls_before = len(judge.calls)
    robin = assay.evaluate(data, "tournament", judge, store=store, runner=QUIET, mode="round-robin")
    assert robin.client_stats is not None and robin.client_stats.calls == 0  # every match was judged already
    assert len(judge.calls) == calls_before
    assert len(store.units(robin.run_id)) == 6 * 2


def _result(record):  # a stored result as the engine hands it to the scheduler
    from assay.engine import as_result as _as_result
    return _as_result(record)


def test_match_scores_average_over_questions() -> None:
    from assay.core.method import ItemResult
    from assay.core.types import Item, Unit
    a1 = Item(id="q1", query="q", response="x", system="a")
    b1 = Item(id="q1", query="q", response="y", system="b")
    a2 = Item(id="q2", query="q", response="x", system="a")
    b2 = Item(id="q2", query="q", response="y", system="b")
    history = [(Unit.pair(a1, b1), ItemResult(scores={"score_a": 1.0, "score_b": 0.0})),
               (Unit.pair(a2, b2), ItemResult(scores={"score_a": 0.3, "score_b": 0.7}))]
    assert match_scores(history) == [(0, "a", "b", pytest.approx(0.65), 2)]


def always_a_judge(tmp_path: Path) -> dict[str, str]:
    """A scripted judge (judge.json) whose analysis prefers A and whose decision is always A; the
    environment to run the executable in."""
    analysis = json.dumps({"analysis_a": "x", "analysis_b": "y", "comparison": "z", "class_a": "fully correct",
                           "class_b": "incorrect"})
    rules = [{"match": "DICE stage 2", "responses": ['{"verdict": "A"}'], "repeat": True},
             {"match": "<answer_a>", "responses": [analysis], "repeat": True}]
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}))
    return {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}


def test_assay_tournament_through_the_executable(tmp_path) -> None:
    exe = _exe()
    (tmp_path / "answers.jsonl").write_text("\n".join(json.dumps(a) for a in answers(
        {"s1": 5, "s2": 15, "s3": 25, "s4": 35, "s5": 45}, questions=2)) + "\n")
    env = always_a_judge(tmp_path)
    proc = subprocess.run([exe, "tournament", "answers.jsonl", "--judge", "scripted/judge.json", "--samples", "2",
                           "--store", "t.db", "--output", "t.json", "--versus-round-robin", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "t.json").read_text())
    assert result["mode"] == "swiss" and result["rounds"] == 4 and result["systems"] == 5
    assert {r["system"] for r in result["ranking"]} == {"s1", "s2", "s3", "s4", "s5"}
    assert all(set(r) == {"system", "elo", "bt", "bt_ci"} for r in result["ranking"])
    assert result["judge_calls"] > 0 and result["round_robin"]["matches"] == 10
    assert len(result["matches"]) <= 2 * 4  # ⌊5/2⌋ matches a round, 4 rounds
    # the judge always says "A" and A is the name that sorts first: s1 wins everything
    assert result["ranking"][0]["system"] == "s1" and result["kendall_tau_vs_round_robin"] is not None
    assert "Kendall τ, Swiss vs round-robin" in proc.stdout


@pytest.mark.parametrize(("flag", "k", "bound"), [("--elo-k", "1000000", "1000"), ("--elo-k", "1e308", "1000"),
                                                  ("--elo-k", "1000.5", "1000"), ("--upset-weight", "11", "10"),
                                                  ("--upset-weight", "1e300", "10")])
def test_an_elo_k_above_1000_is_one_line_before_any_store(tmp_path, flag: str, k: str, bound: str) -> None:
    """--elo-k 1000000 was an OverflowError in elo_expected after the store was made; an --upset-weight
    of 1e300 gave ratings of ±1e9."""
    (tmp_path / "answers.jsonl").write_text("\n".join(json.dumps(a) for a in answers({"s1": 5, "s2": 15})) + "\n")
    env = always_a_judge(tmp_path)
    proc = subprocess.run([_exe(), "tournament", "answers.jsonl", "--judge", "scripted/judge.json", "--store", "t.db",
                           "--output", "t.json", "--no-swap", flag, k, "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}: ") and bound in lines[0], proc.stderr
    assert not (tmp_path / "t.db").exists() and not (tmp_path / "t.json").exists()


def test_elo_is_overflow_safe_at_any_rating_gap() -> None:
    from assay.analysis.stats import elo_expected

    assert elo_expected(0.0, 1e300) == 0.0 and elo_expected(1e300, 0.0) == 1.0
    # upsets with a large --upset-weight open a gap 10 ** gap cannot hold (was an OverflowError)
    played = [(r, "a", "b", float(r % 2 == 0), 1) for r in range(4)]
    ratings = elo_after(["a", "b"], played, k=1000, upset_weight=1e6, initial=1500)
    assert all(math.isfinite(v) for v in ratings.values())


def test_the_report_of_a_tournament_ranks_the_systems(tmp_path) -> None:
    data = answers({"weak": 5, "fair": 15, "good": 25, "best": 35})
    result = assay.evaluate(data, "tournament", LogprobJudge(), store=tmp_path / "t.db", runner=QUIET)
    html = result.report(tmp_path / "r.html").read_text()
    assert "Tournament ranking" in html
    html = html[html.index("Tournament ranking"):]
    ranked = [name for name in ("best", "good", "fair", "weak") if f"<td>{name}</td>" in html]
    positions = [html.index(f"<td>{name}</td>") for name in ranked]
    assert len(ranked) == 4 and positions == sorted(positions)


def test_adding_a_system_to_a_round_robin_costs_only_its_matches(tmp_path) -> None:
    store = Store(tmp_path / "t.db")
    judge = LogprobJudge()
    three = answers({"weak": 5, "fair": 15, "good": 25})
    assay.evaluate(three, "tournament", judge, store=store, runner=QUIET, mode="round-robin")
    before = len(judge.calls)
    assert before == 3 * 2 * 2 * 2  # 3 matches × 2 questions × 2 orders × (analysis + decision)
    four = answers({"weak": 5, "fair": 15, "good": 25, "best": 35})
    bigger = assay.evaluate(four, "tournament", judge, store=store, runner=QUIET, mode="round-robin")
    assert len(judge.calls) - before == 3 * 2 * 2 * 2  # only best's 3 matches are judged
    assert bigger.client_stats is not None and bigger.client_stats.cache_hits == 3 * 2 * 2 * 2


def test_baseline_tiers_place_a_new_system_with_its_record_per_tier(tmp_path) -> None:
    tiers = answers({"high": 30, "medium": 15, "low": 3}, questions=3)
    new = answers({"new": 20}, questions=3)
    store = Store(tmp_path / "t.db")
    judge = LogprobJudge()  # prefers the longer answer, confidently
    run = assay.evaluate(tiers + new, "tournament", judge, store=store, runner=QUIET, mode="baselines",
                         tiers=["high", "medium", "low"])
    units = store.units(run.run_id)
    played = [(u.items[0].system, u.items[1].system) for u in units[::3]]
    assert played == [("high", "medium"), ("high", "low"), ("low", "medium"), ("low", "new"), ("medium", "new"),
                      ("high", "new")]  # tiers first, then the new system from the lowest tier up
    history = [(u, _result(r)) for u, r in zip(units, store.results(run.run_id), strict=True)]
    method = Tournament(Tournament.config_model(mode="baselines", tiers=["high", "medium", "low"]))
    ranking = method.ranking([assay.Item.model_validate(d) for d in tiers + new], history, resamples=100)
    record = ranking["placement"]["new"]
    assert record["low"] == {"won": 3, "tied": 0, "lost": 0, "mean_score": 1.0, "questions": 3}
    assert record["medium"]["won"] == 3 and record["high"]["lost"] == 3 and record["high"]["mean_score"] == 0.0
    assert [r["system"] for r in ranking["ranking"]] == ["high", "new", "medium", "low"]
    # a second system placed later costs only its own three matches
    before = len(judge.calls)
    assay.evaluate(tiers + new + answers({"newer": 40}, questions=3), "tournament", judge, store=store,
                   runner=QUIET, mode="baselines", tiers=["high", "medium", "low"])
    assert len(judge.calls) - before == 3 * 3 * 2 * 2  # 3 matches × 3 questions × 2 orders × 2 calls
    with pytest.raises(Exception, match="needs tiers"):
        Tournament.config_model(mode="baselines")


def test_assay_tournament_baselines_through_the_executable(tmp_path) -> None:
    exe = _exe()

    def write(name: str, rows: list[dict]) -> None:
        (tmp_path / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    write("new.jsonl", answers({"new": 20}))
    write("h.jsonl", answers({"gpt": 30}))
    write("l.jsonl", [{k: v for k, v in r.items() if k != "system"} for r in answers({"x": 3})])
    write("two.jsonl", answers({"p": 3, "q": 4}))
    write("other.jsonl", [{**r, "query": "another question"} for r in answers({"x": 3})])
    env = always_a_judge(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, "tournament", "new.jsonl", "--judge", "scripted/judge.json", "--samples", "2",
                               "--no-progress", *args], cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=600)

    # both orders (the default): a judge that always says "A" favours neither answer, every question ties
    proc = run("--baselines", "high=h.jsonl,low=l.jsonl", "--store", "both.db", "--output", "both.json")
    assert proc.returncode == 0, proc.stderr
    placed = json.loads((tmp_path / "both.json").read_text())["placement"]["new"]["high"]
    assert placed["tied"] == 2 and placed["mean_score"] == 0.5
    proc = run("--baselines", "high=h.jsonl,low=l.jsonl", "--store", "t.db", "--output", "t.json", "--no-swap")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "t.json").read_text())
    assert result["mode"] == "baselines" and result["tiers"] == ["high", "low"]
    # one order: the judge always says "A", the name that sorts first: high < low < new, so new loses every question
    assert result["placement"]["new"]["high"] == {"won": 0, "tied": 0, "lost": 2, "mean_score": 0.0, "questions": 2}
    assert result["placement"]["new"]["low"]["lost"] == 2 and len(result["matches"]) == 3
    assert "against the baseline tiers" in proc.stdout
    for spec, message in [("high", "expected TIER=FILE"), ("new=h.jsonl", "also a system"),
                          ("high=two.jsonl", "one system's answers; this file has 2"),
                          ("high=other.jsonl", "is not the question of the same id"),
                          ("high=h.jsonl,high=l.jsonl", "named twice"), ("high=nope.jsonl", "no such file")]:
        bad = run("--baselines", spec, "--store", "bad.db")
        assert bad.returncode == 2 and message in bad.stderr, (spec, bad.stderr)
        assert bad.stderr.count("\n") == 1 and not (tmp_path / "bad.db").exists()


def test_the_dry_run_counts_the_calls_a_run_makes() -> None:
    """The tournament's estimate assumed the analysis mode's two calls an order whatever the verdicts (24 for
    a run of 12); DICE's analysis mode on a judge without logprobs samples the decision 5 times an order (24
    calls for examples/pairs.jsonl, as dice.md's run made, where the estimate said 8)."""
    examples = Path(__file__).parents[4] / "examples"

    def calls(*args: str) -> int:
        proc = subprocess.run([_exe(), *args, "--dry-run"], capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")})
        assert proc.returncode == 0, proc.stderr
        return int(re.search(r"≈(\d+) judge calls", proc.stdout).group(1))  # type: ignore[union-attr]

    assert calls("tournament", str(examples / "systems.jsonl"), "--judge", "llamacpp/smollm2") == 12
    pairs = ("pairwise", str(examples / "pairs.jsonl"), "--judge", "llamacpp/smollm2")
    assert calls(*pairs) == 4  # direct: a label call an order
    assert calls(*pairs, "--verdicts", "analysis") == 2 * 2 * (1 + 5)
    assert calls(*pairs, "--verdicts", "analysis", "--judge-opt", "logits_all=true") == 2 * 2 * 2
