"""PReMISE reliability-constrained refinement (Algorithm 2, App. C.1–C.2): the SB-PLR budget
validator, the Pareto frontier, the held-out acceptance test, and the search on a rule-following
judge whose fool rate drops exactly when a do-not-reward clause is added."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import JudgeBackend
from assay.judge.runner import JudgeClient, RunnerConfig
from assay.methods.premise.audit import Audit, AuditConfig
from assay.methods.premise.files import Criterion, PreferencePair, RubricSet, load_rubric
from assay.methods.premise.refine import (
    Draft,
    RefineConfig,
    Refiner,
    accepts,
    echoes_instructions,
    pareto,
    sb_plr,
    split_pairs,
)
from assay.store import Store


def test_sb_plr_counts_words_clauses_gates_and_nesting() -> None:
    ok = Draft(gate="the request asks for code", definition="The answer gives complete, runnable code.",
               sub_criteria=["Compiles as given", "Handles the stated inputs"],
               caps=["at most 3 of 10 when the code does not run"],
               do_not_reward=["placeholder comments", "boilerplate imports that do nothing"])
    assert sb_plr(ok) == []
    text = ok.render()
    assert text.startswith("Applies only when: the request asks for code.")
    assert "\n2. Handles the stated inputs." in text
    long_def = Draft(definition=" ".join(["word"] * 61))
    assert sb_plr(long_def) == ["(ii) main definition 61 words > 60"]
    assert sb_plr(Draft(definition="x " * 60, sub_criteria=["y " * 44, "z " * 44])) == []  # 60 + 45 + 45
    assert sb_plr(Draft(definition="x " * 60, sub_criteria=["y " * 45, "z " * 45])) == ["(i) 152 words > 150"]
    nested = Draft(definition="Rewards citations if the claim is contested unless it is common knowledge.")
    assert [v[:36] for v in sb_plr(nested)] == ["(ii) nested conditionals in the main"]
    one_if = Draft(definition="Rewards citations if the claim is contested. Unless asked, no tables.")
    assert sb_plr(one_if) == []  # one condition per sentence is not nesting
    three = Draft(definition="Is accurate. Listing terms without using them does not count.",
                  do_not_reward=["length", "headings"])
    assert sb_plr(three) == ["(iii) 3 anti-gaming clauses > 2"]
    wordy = Draft(definition="Is accurate.", do_not_reward=[" ".join(["w"] * 41)])
    assert sb_plr(wordy) == ["(iii) an anti-gaming clause of 41 words > 40"]
    two_gates = Draft(gate="the request is about code", definition="Score 0 if the prompt does not ask for tests.")
    assert sb_plr(two_gates) == ["(iv) 2 applicability gates > 1"]
    many = Draft(definition="Is helpful.", sub_criteria=["a", "b", "c", "d"])
    assert sb_plr(many) == ["(v) 4 sub-criteria > 3"]
    nest = Draft(definition="Is helpful.", sub_criteria=["covers: 1. the cause 2. the fix"])
    assert sb_plr(nest) == ["(v) sub-criterion 1 has a list inside it"]
    copied = Draft(definition="Explains why the sky over Paris is blue at noon.")
    data = ["Why is the sky over Paris blue at noon?", "the sky over Paris is blue at noon because of scattering"]
    assert sb_plr(copied, data_texts=data)[0].startswith("(vi) not prompt-agnostic")
    assert sb_plr(copied, data_texts=data, allowed=copied.definition) == []  # already in the original


def test_a_revision_that_repeats_the_instructions_is_caught() -> None:
    echo = Draft(definition="Backs its claims.", do_not_reward=["surface markers, or things that look like meeting "
                                                                "the criterion but do not"])
    assert echoes_instructions(echo, "Backs its claims.")[0].startswith("repeats the instructions")
    capped = Draft(definition="Backs its claims.", caps=["agreed with the preference"])
    assert echoes_instructions(capped, "Backs its claims.") == []  # four words: below the five-word run
    real = Draft(definition="Backs its claims.", do_not_reward=["citations to studies the answer does not discuss"])
    assert echoes_instructions(real, "Backs its claims.") == []


def test_pareto_frontier_and_held_out_acceptance() -> None:
    a = {"rel": 0.9, "vfr": 0.3}
    b = {"rel": 0.8, "vfr": 0.1}
    c = {"rel": 0.8, "vfr": 0.3}  # dominated by a (rel higher, vfr equal) and by b
    d = {"rel": 0.9, "vfr": 0.3}  # equal to a: neither dominates
    assert pareto([a, b, c, d]) == [a, b, d]
    before = {"vfr": 0.5, "pref_fit": 0.8, "alpha": None, "flip_rate": 0.2, "rho": None}
    assert accepts(before, {"vfr": 0.3, "pref_fit": 0.76, "flip_rate": 0.2}, 0.05, 0.0) == (True, "accepted")
    assert accepts(before, {"vfr": 0.5, "pref_fit": 0.8, "flip_rate": 0.2}, 0.05, 0.0)[0] is False
    assert "preference fit" in accepts(before, {"vfr": 0.1, "pref_fit": 0.7, "flip_rate": 0.2}, 0.05, 0.0)[1]
    assert "flip_rate" in accepts(before, {"vfr": 0.1, "pref_fit": 0.8, "flip_rate": 0.4}, 0.05, 0.0)[1]
    assert accepts(before, {"vfr": 0.1, "pref_fit": 0.8, "flip_rate": 0.4}, 0.05, math.inf)[0] is True
    assert accepts(before, {"vfr": 0.1, "pref_fit": 0.8, "flip_rate": 0.3}, 0.05, 0.1)[0] is True


def test_split_is_seeded_disjoint_and_keeps_both_parts() -> None:
    pairs = [PreferencePair(id=f"p{n}", prompt="q", chosen="a", rejected="b") for n in range(7)]
    cal, held = split_pairs(pairs, 0.5, 0)
    assert len(held) == 4 and len(cal) == 3 and not {p.id for p in cal} & {p.id for p in held}
    assert split_pairs(pairs, 0.5, 0) == (cal, held) and split_pairs(pairs, 0.5, 1) != (cal, held)
    assert [len(x) for x in split_pairs(pairs[:2], 0.9, 0)] == [1, 1]
    with pytest.raises(ValueError):
        split_pairs(pairs[:1], 0.5, 0)


class Gameable(JudgeBackend):
    """F.6 writes "ATTACK"; F.7 scores an attack 9 unless the criterion has a do-not-reward
    clause (then 3), a genuine answer 6; F.8 calls every attack EXPLOITING. F.4 favours the longer
    answer. L writes the fields it is asked for; ``observable`` writes a 70-word definition (over
    the budget); P predicts 0.2."""

    name = "gameable"
    max_concurrency = 1
    budget_reasks = 0

    def identity(self) -> dict[str, str]:
        return {"backend": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        system, user = messages[0].content, "\n".join(m.content for m in messages[1:])
        if "PReMISE\nrepair" in system or "PReMISE repair" in system:
            if "breaks the structural budget" in user:
                self.budget_reasks += 1
            fields = config.json_schema["properties"]  # type: ignore[index]
            out: dict[str, object] = {}
            if "gate" in fields:
                out["gate"] = "the request asks for an explanation"
            if "do_not_reward" in fields:
                out["do_not_reward"] = ["invented sources or studies"]
            if "definition" in fields:
                out["definition"] = " ".join(["observable"] * 70)
            if "predicted_vfr" in fields:
                out["predicted_vfr"] = 0.2
            return Completion(text=json.dumps(out))
        if "F.6" in system:
            return Completion(text="ATTACK with invented sources")
        if "F.8" in system:
            return Completion(text=json.dumps({"analysis": "a", "verdict": "EXPLOITING", "exploit_type": "authority"}))
        if "F.7" in system:
            answer = user.split("<answer>")[1].split("</answer>")[0].strip()
            score = (3 if "Do not reward" in user else 9) if answer.startswith("ATTACK") else 6
            return Completion(text=json.dumps({"reasoning": "r", "score": score}))
        assert "F.4" in system, system[:200]
        a = user.split("<answer_a>")[1].split("</answer_a>")[0]
        b = user.split("<answer_b>")[1].split("</answer_b>")[0]
        return Completion(text=json.dumps({"reasoning": "r", "score": 8 if len(a) > len(b) else 2}))


PAIRS = [PreferencePair(id=f"p{n}", prompt=f"Explain thing {n}", chosen="a long and careful answer",
                        rejected="short") for n in range(6)]


def test_algorithm_2_keeps_the_edit_that_lowers_the_fool_rate(tmp_path: Path) -> None:
    judge = Gameable()
    client = JudgeClient(judge, Store(tmp_path / "r.db"), RunnerConfig(progress=False))
    refiner = Refiner(Audit(AuditConfig(attacks=2, runs=2, paraphrases=0)),
                      RefineConfig(operators=("gate", "do_not_reward", "observable"), depth=2, beam=3))
    rubric = RubricSet(criteria=[Criterion(id="evidence", description="Backs its claims with evidence.")])
    repaired, results = asyncio.run(refiner.refine(rubric, PAIRS, client))
    r = results[0]
    assert r["before"]["vfr"] == 1.0 and r["before"]["pref_fit"] == 1.0 and r["before"]["flip_rate"] == 0.0
    status = {"+".join(c["operators"]): c["status"] for c in r["candidates"]}
    assert status["gate"] == "no gain"  # measured: a gate alone leaves every attack at 9
    assert status["observable"] == "over budget" and status["do_not_reward+observable"] == "over budget"
    # each over-budget reply was sent back once with its violations (observable, gate+observable, dnr+observable)
    assert judge.budget_reasks == 3
    assert status["do_not_reward"] == "accepted" and status["gate+do_not_reward"] == "accepted"
    assert "attacks that fooled the judge (scored high, verified gaming): 2" in r["packet"]
    # both accepted reach VFR 0 with the same reliability: both on the frontier, the smaller edit chosen
    assert len(r["frontier"]) == 2 and r["chosen"]["operators"] == ["do_not_reward"]
    revised = repaired.criteria[0]
    assert revised.description == "Backs its claims with evidence.\nDo not reward: invented sources or studies."
    assert revised.extra["refine"]["before"]["vfr"] == 1.0 and revised.extra["refine"]["after"]["vfr"] == 0.0
    assert repaired.provenance["repair"]["revised"] == 1
    # a second refinement of the revised rubric starts from its fields, and has nothing to lower
    again, results2 = asyncio.run(refiner.refine(repaired, PAIRS, client))
    assert results2[0]["reason"].startswith("VFR already 0") and again.criteria[0] == revised


def test_vfr_repair_through_the_executable(tmp_path: Path) -> None:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    (tmp_path / "r.yaml").write_text("criteria:\n  - {id: evidence, description: 'Backs its claims. <b>x</b>'}\n")
    rows = [{"prompt": f"Q{n}?", "chosen": "GOOD answer", "rejected": "bad answer"} for n in range(5)]
    (tmp_path / "pairs.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    score = '{{"reasoning": "r", "score": {}}}'.format
    script = {"rules": [
        {"match": "Operators to apply", "responses": ['{"do_not_reward": ["invented studies"]}'], "repeat": True},
        {"match": r"</answer>.*<reference>", "responses": [
            '{"analysis": "a", "verdict": "EXPLOITING", "exploit_type": "authority"}'], "repeat": True},
        {"match": r"Do not reward.*<answer>\s*ATTACK", "responses": [score(3)], "repeat": True},
        {"match": r"<answer>\s*ATTACK", "responses": [score(9)], "repeat": True},
        {"match": r"<answer>", "responses": [score(6)], "repeat": True},
        {"match": r"<reference>", "responses": ["ATTACK citing a study nobody ran"], "repeat": True},
        {"match": r"<answer_a>\s*GOOD", "responses": [score(8)], "repeat": True},
        {"match": r"<answer_a>\s*bad", "responses": [score(2)], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(script))
    cmd = [exe, "rubric", "repair", "r.yaml", "--pairs", "pairs.jsonl", "--judge", "scripted/judge.json",
           "--store", "s.db", "--mode", "vfr", "--operators", "do_not_reward", "--depth", "1", "--attacks", "2",
           "--runs", "2", "-o", "v.yaml", "--report", "v.json"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "evidence: VFR 1.000" in proc.stdout and "→ do_not_reward: VFR 0.000" in proc.stdout
    assert "revised 1 of 1 criteria on 5 pair(s)" in proc.stdout
    revised = load_rubric(tmp_path / "v.yaml").criteria[0]
    assert "Do not reward: invented studies." in revised.description
    assert revised.extra["refine"]["operators"] == ["do_not_reward"]
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["config"]["delta"] == 0 and len(report["criteria"][0]["held_out_pairs"]) == 3
    again = subprocess.run([*cmd, "--force"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and "0 judge call(s) made" in again.stdout  # resumable from the store
    page = subprocess.run([exe, "rubric", "report", "--refine", "v.json", "--rubric", "v.yaml", "-o", "r.html"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "r.html").read_text()
    assert "Refinement cost and benefit (Fig. 5)" in html and "<td>do_not_reward</td>" in html
    assert "<td class=\"num ok\">-1.000</td>" in html  # ΔVFR
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html  # rubric text escaped
    assert "refined with do_not_reward: VFR\n1.000 → 0.000" in html
    bad_page = subprocess.run([exe, "rubric", "report", "--audit", "v.json", "-o", "s.html"], cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=120)
    assert bad_page.returncode == 2 and "v.json" in bad_page.stderr and "'rubrics'" in bad_page.stderr
    assert not (tmp_path / "s.html").exists()
    bad = subprocess.run([*cmd[:-4], "--delta", "-1", "-o", "w.yaml"], cwd=tmp_path, capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--delta" in bad.stderr and not (tmp_path / "w.yaml").exists()


def test_compare_lays_sources_side_by_side_through_the_executable(tmp_path: Path) -> None:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    (tmp_path / "sharp.yaml").write_text("criteria:\n  - {id: cites_sources, description: Names its sources.}\n")
    (tmp_path / "vague.yaml").write_text("criteria:\n  - {id: is_good, description: Is good and nice.}\n"
                                         "  - {id: is_great, description: Is great.}\n")
    passed, failed = '{"reasoning": "r", "verdict": "PASS"}', '{"reasoning": "r", "verdict": "FAIL"}'
    script = {"rules": [{"match": "cites_sources", "responses": [passed], "repeat": True},
                        {"match": r"is_good.*Atomic", "responses": [failed], "repeat": True},
                        {"match": "is_g", "responses": [failed, passed], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(script))
    common = ["--axes", "structure", "--judge", "scripted/judge.json", "--store", "c.db"]
    audit = subprocess.run([exe, "rubric", "audit", "sharp.yaml", *common, "--output", "sharp.json"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=120)
    assert audit.returncode == 0, audit.stderr
    proc = subprocess.run([exe, "rubric", "compare", "sharp.json", "vague.yaml", *common, "--output", "cmp.json"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "cmp.json").read_text())
    assert doc["columns"] == ["structure_mean"]
    sharp, vague = doc["sources"]
    assert (sharp["source"], sharp["k"], sharp["audited"], sharp["summary"]["structure_mean"]) == \
        ("sharp.json", 1, False, 5.0)  # read from the audit file, not re-audited
    assert vague["k"] == 2 and vague["audited"] and vague["summary"]["structure_mean"] is not None
    assert vague["summary"]["structure_mean"] < 5.0 and "structure /5" in proc.stdout
    page = subprocess.run([exe, "rubric", "report", "--audit", "sharp.json", "--rubric", "vague.yaml", "-o", "a.html"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "a.html").read_text()
    assert "Audit (Table 1)" in html and '<td class="num">5.00</td>' in html and "is_great" in html
    assert "Applicability map" not in html  # no out-of-domain audit: no map
    one = subprocess.run([exe, "rubric", "compare", "vague.yaml", *common], cwd=tmp_path, capture_output=True,
                         text=True, env=env, timeout=120)
    assert one.returncode == 2 and "at least two sources" in one.stderr
