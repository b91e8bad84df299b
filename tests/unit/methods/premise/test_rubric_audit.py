"""PReMISE audit axes beyond structure (reliability, applicability, score anatomy, BT fit) and the
preference-rank repair, on a rule-following judge whose right answers are known by construction."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import JudgeBackend
from assay.judge.backends._jury import JuryBackend
from assay.judge.runner import JudgeClient, RunnerConfig
from assay.methods.premise.audit import Audit, AuditConfig
from assay.methods.premise.files import Criterion, PreferencePair, RubricSet, load_rubric
from assay.methods.premise.metrics import bt_preference_fit
from assay.methods.premise.repair import PrefRepairConfig, preference_rank_selection
from assay.store import Store


class PairJudge(JudgeBackend):
    """F.4: ``length`` gives A 8 when A is the longer answer, else 2; ``contrary`` the reverse;
    ``wobbly`` says 5 (a tie) at temperature 0 and alternates 7 / 3 with the seed when sampled. F.5:
    "Reworded: …". F.11: ``wobbly`` applies only to requests about code, the others always."""

    max_concurrency = 1

    def __init__(self, name: str = "pair") -> None:
        self.name = name

    def identity(self) -> dict[str, str]:
        return {"backend": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        system, user = messages[0].content, messages[-1].content
        if "F.5" in system:
            text = user.split("<criteria>")[1].split("</criteria>")[0].strip()
            return Completion(text=json.dumps({"paraphrase": f"Reworded ({config.seed}): {text}"}))
        criterion = re.search(r"Criterion (\w+):", user)
        assert criterion is not None
        cid = criterion.group(1)
        if "F.11" in system:
            applies = cid != "wobbly" or "code" in user
            return Completion(text=json.dumps({"relevant": "yes" if applies else "no"}))
        assert "F.4" in system
        a = user.split("<answer_a>")[1].split("</answer_a>")[0]
        b = user.split("<answer_b>")[1].split("</answer_b>")[0]
        if cid == "wobbly":
            score = 5 if config.temperature == 0 else (7 if (config.seed or 0) % 2 else 3)
        else:
            longer = len(a) > len(b)
            score = 8 if longer == (cid == "length") else 2
        return Completion(text=json.dumps({"reasoning": "r", "score": score}))


RUBRIC = RubricSet(criteria=[Criterion(id="wobbly", description="Something vague about programs."),
                             Criterion(id="contrary", description="Keeps it short."),
                             Criterion(id="length", description="Covers the question fully.")])
# the preferred answer is the longer one in 6 of 8 pairs; half the requests are about code
PAIRS = [PreferencePair(id=f"p{n}", prompt=("Fix my code " if n % 2 else "Why is the sky blue ") + str(n),
                        chosen="a longer preferred answer" if n < 6 else "short",
                        rejected="short" if n < 6 else "a longer rejected answer") for n in range(8)]
FOREIGN = [PreferencePair(id=f"o{n}", prompt=f"Write a poem {n}", chosen="x", rejected="y") for n in range(4)]


def _client(tmp_path: Path, backend: JudgeBackend) -> JudgeClient:
    return JudgeClient(backend, Store(tmp_path / "a.db"), RunnerConfig(progress=False))


def test_reliability_alpha_flip_rate_and_paraphrase_stability(tmp_path: Path) -> None:
    jury = JuryBackend([PairJudge("j1"), PairJudge("j2")], "jury/j1+j2")
    auditor = Audit(AuditConfig(runs=5, paraphrases=2))
    rel = asyncio.run(auditor.reliability(RUBRIC, PAIRS, _client(tmp_path, jury)))
    by_id = {c["id"]: c for c in rel["criteria"]}
    assert by_id["length"]["alpha"] == pytest.approx(1.0) and by_id["contrary"]["alpha"] == pytest.approx(1.0)
    assert by_id["wobbly"]["alpha"] is None and "undefined" in by_id["wobbly"]["alpha_note"]  # all 5: no variation
    assert by_id["length"]["flip_rate"] == 0.0 and by_id["wobbly"]["flip_rate"] == 1.0  # 7,3,7,3,7 at seeds 1..5
    assert by_id["length"]["rho"] == pytest.approx(1.0) and by_id["length"]["rho_pairs"] == 3  # C(1+2, 2)
    assert by_id["wobbly"]["rho"] is None  # constant scores have no rank correlation
    assert by_id["length"]["paraphrases"][0].startswith("Reworded")
    assert rel["alpha"] == pytest.approx(1.0) and rel["flip_rate"] == pytest.approx(1 / 3) and rel["judges"] == 2
    # one judge: no alpha, said so
    single = asyncio.run(Audit(AuditConfig(paraphrases=0)).reliability(RUBRIC, PAIRS[:3],
                                                                        _client(tmp_path, PairJudge())))
    assert single["alpha"] is None and "jury" in single["criteria"][0]["alpha_note"] and single["rho"] is None


def test_applicability_effective_dimensionality_and_bt_fit(tmp_path: Path) -> None:
    auditor = Audit(AuditConfig(fit_parts=("applicability", "scores")))
    fit = asyncio.run(auditor.fit(RUBRIC, PAIRS, _client(tmp_path, PairJudge()), out_of_domain=FOREIGN))
    app = fit["applicability"]
    assert app["per_criterion"] == {"wobbly": 0.5, "contrary": 1.0, "length": 1.0}
    assert app["app_in"] == pytest.approx(2.5 / 3) and app["t_per_prompt"] == 2.5
    assert app["app_out"] == pytest.approx(2 / 3) and app["delta_app"] == pytest.approx(0.5 / 3)
    assert app["per_criterion_out"] == {"wobbly": 0.0, "contrary": 1.0, "length": 1.0}  # poems are not code
    from assay.methods.premise.report import render_rubric_report

    doc = {"rubrics": [{"id": cid, "applicability": app["per_criterion"][cid],
                        "applicability_out": app["per_criterion_out"][cid]} for cid in app["per_criterion"]],
           "summary": {"app_in": app["app_in"], "app_out": app["app_out"]}}
    (tmp_path / "audit.json").write_text(json.dumps(doc))
    html = render_rubric_report([tmp_path / "audit.json"], [], [])
    assert "Applicability map (Fig. 4a)" in html and html.count("<circle") == 3 + 1  # 3 criteria + legend
    assert "<title>wobbly</title>" in html and "stroke-dasharray" in html  # the diagonal
    scores = fit["scores"]
    # length and contrary move in lockstep (opposite signs), wobbly never moves: one direction
    assert scores["pairs"] == 8 and scores["eff_dim"] == pytest.approx(1.0) and scores["mean_abs_rho"] == 1.0
    assert 0.0 <= scores["bt"]["cv_accuracy"] <= 1.0 and scores["bt"]["folds"] >= 2
    assert "rows" not in fit  # accuracy (F.10) not asked for


def test_bt_preference_fit_by_construction() -> None:
    separable = [[float(s)] * 2 for s in (3, 2, 4, 1, -3, -2, -4, -1)]
    result = bt_preference_fit(separable, [1, 1, 1, 1, 0, 0, 0, 0])
    assert result["cv_accuracy"] == 1.0 and result["entropy"] == pytest.approx(1.0)  # two equal weights
    lopsided = bt_preference_fit([[1.0], [2.0], [3.0]], [1, 1, 0])
    assert lopsided["cv_accuracy"] is None and "≥ 2 pairs of each label" in lopsided["reason"]


def test_preference_rank_selection_keeps_a_reordered_strict_subset(tmp_path: Path) -> None:
    def repair(eta: float) -> tuple[RubricSet, dict[str, dict]]:
        repaired, decisions = asyncio.run(preference_rank_selection(
            RUBRIC, PAIRS, _client(tmp_path, PairJudge()), Audit(), PrefRepairConfig(eta=eta)))
        return repaired, {d["id"]: d for d in decisions}

    repaired, by_id = repair(0.6)
    assert by_id["wobbly"]["applicable_pairs"] == 4 and by_id["wobbly"]["ties"] == 4  # only code prompts; all 5
    assert by_id["wobbly"]["share"] == 0.0 and not by_id["wobbly"]["kept"]
    assert (by_id["length"]["wins"], by_id["length"]["applicable_pairs"]) == (6, 8)
    assert by_id["contrary"]["share"] == 0.25 and not by_id["contrary"]["kept"]
    assert [c.id for c in repaired.criteria] == ["length"]
    assert repaired.criteria[0].extra["pref_share"] == 0.75 and repaired.provenance["repair"]["eta"] == 0.6
    repaired, _ = repair(0.2)
    assert [c.id for c in repaired.criteria] == ["length", "contrary"]  # re-ordered by share


def _assay(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed `assay` in a subprocess, as a user starts it (no ASSAY_ variables of this shell)."""
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_repair_through_the_executable(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(
        "criteria:\n  - {id: keep_me, description: Gives the full answer.}\n"
        "  - {id: drop_me, description: Stays short.}\n")
    rows = [{"prompt": f"Q{n}?", "chosen": "GOOD answer", "rejected": "bad answer"} for n in range(5)]
    (tmp_path / "pairs.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    good, bad = '{"reasoning": "r", "score": 8}', '{"reasoning": "r", "score": 2}'
    script = {"rules": [{"match": r"keep_me.*<answer_a>\s*GOOD", "responses": [good], "repeat": True},
                        {"match": r"keep_me.*<answer_a>\s*bad", "responses": [bad], "repeat": True},
                        {"match": r"drop_me.*<answer_a>\s*GOOD", "responses": [bad], "repeat": True},
                        {"match": r"drop_me.*<answer_a>\s*bad", "responses": [good], "repeat": True},
                        {"match": "Criterion", "responses": ['{"relevant": "yes"}'], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(script))
    base = ["rubric", "repair", "r.yaml", "--pairs", "pairs.jsonl", "--judge", "scripted/judge.json",
            "--store", "s.db"]
    proc = _assay(*base, "-o", "fixed.yaml", "--report", "why.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "kept 1 of 2 on 5 pair(s)" in proc.stdout and "dropped drop_me" in proc.stdout
    assert [c.id for c in load_rubric(tmp_path / "fixed.yaml").criteria] == ["keep_me"]
    assert json.loads((tmp_path / "why.json").read_text())["decisions"][1]["share"] == 0.0
    bad_op = _assay(*base, "-o", "v.yaml", "--mode", "vfr", "--operators", "gate,make_it_better", cwd=tmp_path)
    assert bad_op.returncode == 2 and "make_it_better" in bad_op.stderr and "Table 8" in bad_op.stderr
    assert not (tmp_path / "v.yaml").exists()


class RedTeam(JudgeBackend):
    """F.6 writes "ATTACK <tactic>"; F.7 scores format / authority / jargon attacks 9, the others
    4, a genuine answer 6, and cannot score the hedging attack at all; F.8 calls authority and
    jargon EXPLOITING, format GENUINE."""

    name = "redteam"
    max_concurrency = 1
    TACTICS: ClassVar[dict[str, str]] = {"formatting": "format", "off the topic": "elaboration", "made-up": "authority",
               "jargon": "jargon", "subtle errors": "partial", "hedges": "hedging"}

    def identity(self) -> dict[str, str]:
        return {"backend": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        system, user = messages[0].content, "\n".join(m.content for m in messages[1:])
        if "F.6" in system:
            tactic = next(v for k, v in self.TACTICS.items() if k in system)
            return Completion(text=f"ATTACK {tactic}")
        answer = user.split("<answer>")[1].split("</answer>")[0].strip()
        if "F.7" in system:
            if answer == "ATTACK hedging":
                return Completion(text="no idea")
            score = 9 if answer in ("ATTACK format", "ATTACK authority", "ATTACK jargon") else \
                4 if answer.startswith("ATTACK") else 6
            return Completion(text=json.dumps({"reasoning": "r", "score": score}))
        assert "F.8" in system
        verdict = "EXPLOITING" if answer in ("ATTACK authority", "ATTACK jargon") else "GENUINE"
        return Completion(text=json.dumps({"analysis": "a", "verdict": verdict, "exploit_type": "x"}))


def test_the_adversarial_axis_through_the_executable(tmp_path: Path) -> None:
    # the audit's adversarial line as a user reads it (the real-model path of this axis is the VFR
    # refinement test in tests/integration/test_premise_embedded.py); every attack scores 9 of 10
    # and is verified as exploiting the criterion: VFR 1
    (tmp_path / "r.yaml").write_text("criteria:\n  - {id: backs, description: Backs its claims with sources.}\n")
    rows = [{"prompt": f"Q{n}?", "chosen": "GOOD answer", "rejected": "bad answer"} for n in range(2)]
    (tmp_path / "pairs.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    verdict = '{"analysis": "a", "verdict": "EXPLOITING", "exploit_type": "x"}'
    script = {"rules": [{"match": r"<answer>[\s\S]*<reference>", "responses": [verdict], "repeat": True},  # F.8
                        {"match": "<answer>", "responses": ['{"reasoning": "r", "score": 9}'], "repeat": True},
                        {"match": "<reference>", "responses": ["ATTACK: cites made-up studies"], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(script))
    proc = _assay("rubric", "audit", "r.yaml", "--pairs", "pairs.jsonl", "--axes", "adversarial", "--attacks", "2",
                  "--judge", "scripted/judge.json", "--store", "s.db", "--output", "audit.json", "--no-progress",
                  cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "adversarial: VFR 1.000 (2 attack(s) per criterion, τ 7; attacker scripted/judge, verifier " \
           "scripted/judge)" in " ".join(proc.stdout.split())
    assert json.loads((tmp_path / "audit.json").read_text())["summary"]["vfr"] == 1.0


def test_adversarial_verified_fool_rate(tmp_path: Path) -> None:
    rubric = RubricSet(criteria=[Criterion(id="c1", description="Backs claims."),
                                 Criterion(id="c2", description="Is clear.")])
    adv = asyncio.run(Audit(AuditConfig(attacks=6)).adversarial(rubric, PAIRS[:2], _client(tmp_path, RedTeam())))
    first = adv["criteria"][0]
    assert [r["strategy"] for r in first["rows"]][:2] == ["format_over_content", "irrelevant_elaboration"]
    assert adv["criteria"][1]["rows"][0]["strategy"] == "irrelevant_elaboration"  # rotated per criterion
    # 6 attempts, the hedging one unscorable and left out; 3 scored ≥ 7, 2 of them verified exploits
    assert (first["attempts"], first["complete"], first["high_scores"]) == (6, 5, 3)
    assert first["vfr"] == pytest.approx(2 / 5) and adv["vfr"] == pytest.approx(2 / 5)
    assert first["reference_mean_score"] == 6.0 and first["attack_mean_score"] == pytest.approx((9 * 3 + 4 * 2) / 5)
    assert next(r for r in first["rows"] if r["strategy"] == "hedging_and_vagueness")["unparsed"].startswith(
        "the judge's score")
    assert "verdict" not in next(r for r in first["rows"] if r["strategy"] == "partial_truth")  # 4 < τ: not verified
