"""PReMISE discovery (Algorithm 1) on a rule-following judge over synthetic criteria with known
duplicates: what should merge merges, operationally distinct criteria stay apart, it stops."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assay.core.errors import InputError
from assay.core.report_models import RubricAuditReport, RubricAuditSummary
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import JudgeBackend
from assay.judge.runner import JudgeClient, RunnerConfig
from assay.methods.premise.discover import Discovery, DiscoveryConfig, cluster
from assay.methods.premise.files import PreferencePair, load_rubric, read_preference_pairs, save_rubric
from assay.store import Store

THEMES = {
    "sources": ["Cites sources: names the references and citations that back each claim",
                "Source citation: gives the references a reader can check for the claims",
                "Evidence references: backs statements with citations of sources"],
    "concise": ["Concise answer: stays brief and short without padding or repetition",
                "Brevity: keeps the response short and concise, no filler",
                "To the point: a concise, brief answer with no digressions"],
    "biology": ["Factual accuracy about biology: states biology facts about cells and organisms correctly",
                "Correct biology: the biology facts about organisms are accurate"],
    "sql": ["Factual accuracy about SQL: states SQL facts about queries and joins correctly",
            "Correct SQL: the SQL facts about queries are accurate"],
}


def theme(text: str) -> str:
    lowered = text.lower()
    for name, keys in (("sources", ("citation", "reference", "sources")), ("concise", ("concise", "brief", "short")),
                       ("biology", ("biology",)), ("sql", ("sql",))):
        if any(k in lowered for k in keys):
            return name
    raise AssertionError(f"no theme in {text!r}")


class RuleJudge(JudgeBackend):
    """Extraction: one criterion per theme, worded by the pair's number. SubGroup: same-theme ids
    together (the distinctness test keeps biology and SQL apart). Describe: the theme's wording."""

    name = "rules"
    max_concurrency = 1

    def __init__(self) -> None:
        self.calls = {"extraction": 0, "subgroup": 0, "describe": 0}

    def identity(self) -> dict[str, str]:
        return {"backend": "rules"}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        system, user = messages[0].content, messages[-1].content
        if "F.1" in system:
            self.calls["extraction"] += 1
            n = int(re.search(r"pair(\d+)", user).group(1)) if re.search(r"pair(\d+)", user) else 0
            criteria = [{"name": wording[n % len(wording)].split(":")[0],
                         "description": wording[n % len(wording)].split(": ", 1)[1], "score_a": 7, "score_b": 3}
                        for wording in THEMES.values()]
            return Completion(text=json.dumps({"criteria": criteria[:5]}))
        if "F.2" in system:
            self.calls["subgroup"] += 1
            entries = re.findall(r"^(c\d+): (.*)$", user, re.M)
            by_theme: dict[str, list[str]] = {}
            for cid, text in entries:
                by_theme.setdefault(theme(text), []).append(cid)
            number = {}
            for ids in by_theme.values():
                for start in range(0, len(ids), 5):
                    chunk = ids[start:start + 5]
                    for cid in chunk:
                        number[cid] = len({*number.values()} - {0}) + 1 if len(chunk) >= 2 else 0
                    if len(chunk) >= 2:  # one number for the whole chunk
                        first = number[chunk[0]]
                        number.update(dict.fromkeys(chunk, first))
            return Completion(text=json.dumps({"assignments": [{"id": cid, "group": number[cid]}
                                                               for cid, _ in entries]}))
        assert "F.3" in system
        self.calls["describe"] += 1
        name = theme(user)
        text = THEMES[name][0]
        return Completion(text=json.dumps({"id": name, "description": text + ", judged across the whole answer "
                                                                             "and every claim it makes."}))


def run_discovery(tmp_path: Path, pairs: int = 6, **options: object) -> tuple[object, dict, RuleJudge]:
    judge = RuleJudge()
    store = Store(tmp_path / "d.db")
    items = [PreferencePair(id=f"pair{n}", prompt=f"Question pair{n}?", chosen="good", rejected="bad")
             for n in range(pairs)]
    config = DiscoveryConfig(k=4, cluster_size=4, matcher="lexical", **options)  # type: ignore[arg-type]

    async def go() -> tuple[object, dict]:
        return await Discovery(config).run(items, JudgeClient(judge, store, RunnerConfig(progress=False)), store)

    rubric, trace = asyncio.run(go())
    return rubric, trace, judge


def test_duplicates_merge_distinct_criteria_stay_apart_and_it_terminates(tmp_path: Path) -> None:
    rubric, trace, judge = run_discovery(tmp_path)
    criteria = rubric.criteria
    assert trace["levels"][0]["pool"] == 24  # 6 pairs × 4 candidates
    assert trace["stopped"] and len(trace["levels"]) <= 11
    # every selected criterion is one theme; biology and SQL were never merged into one
    assert sorted(theme(c.description) for c in criteria) == ["biology", "concise", "sources", "sql"]
    for c in criteria:
        assert c.support >= 2 and len(c.sources) >= 2
    total = {name: sum(c.support for c in criteria if theme(c.description) == name) for name in THEMES}
    assert all(1 < v <= 6 for v in total.values()), total
    assert judge.calls["extraction"] == 6 and judge.calls["subgroup"] >= 1 and judge.calls["describe"] >= 4
    # the same discovery again: every part is in the stages, no judge call
    again, _, judge2 = run_discovery(tmp_path)
    assert judge2.calls == {"extraction": 0, "subgroup": 0, "describe": 0}
    assert [c.id for c in again.criteria] == [c.id for c in criteria]


def test_min_support_and_genericity_filter_the_pool(tmp_path: Path) -> None:
    rubric, trace, _ = run_discovery(tmp_path, pairs=1, min_sources=2)
    assert rubric.criteria == [] and trace["selected"] == 0  # one pair: nothing is generic


def test_clustering_splits_clusters_over_twice_the_target_size() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    groups = cluster(vectors @ vectors.T, 4)
    assert sorted(i for g in groups for i in g) == list(range(40))
    assert all(len(g) <= 8 for g in groups) and len(groups) >= 10
    assert cluster(np.ones((3, 3)), 4) == [[0, 1, 2]]


def test_rubric_files_round_trip_and_bad_ones_name_the_entry(tmp_path: Path) -> None:
    (tmp_path / "hand.yaml").write_text("criteria:\n  - name: cites_sources\n    description: Names its sources.\n"
                                        "  - id: concise\n    description: Stays brief.\n    gate: only if asked\n"
                                        "    weight: 2\n")
    rubric = load_rubric(tmp_path / "hand.yaml")
    assert [c.id for c in rubric.criteria] == ["cites_sources", "concise"]
    assert rubric.criteria[1].gate == "only if asked" and rubric.criteria[1].extra == {"weight": 2}
    save_rubric(rubric, tmp_path / "out.json")
    assert load_rubric(tmp_path / "out.json").criteria == rubric.criteria
    (tmp_path / "bad.yaml").write_text("- id: a\n  description: x\n- id: b\n")
    with pytest.raises(InputError, match="criterion 2: 'description' is missing"):
        load_rubric(tmp_path / "bad.yaml")
    (tmp_path / "dup.json").write_text(json.dumps([{"id": "a", "description": "x"}, {"id": "a", "description": "y"}]))
    with pytest.raises(InputError, match="id 'a' appears twice"):
        load_rubric(tmp_path / "dup.json")


def test_preference_pairs_from_tsv_and_pairwise_jsonl(tmp_path: Path) -> None:
    (tmp_path / "p.tsv").write_text("\tquestion_text\tpreferred_response\trejected_response\n"
                                    "3\tWhy?\tBecause.\tNo.\n")
    pairs, _ = read_preference_pairs(tmp_path / "p.tsv")
    assert pairs == [PreferencePair(id="pair3", prompt="Why?", chosen="Because.", rejected="No.")]
    rows = [{"id": "q1", "query": "Q?", "a": {"response": "x"}, "b": {"response": "y"}, "human": {"winner": "B"}},
            {"id": "q2", "query": "Q?", "a": {"response": "x"}, "b": {"response": "y"}, "human": {"winner": "tie"}}]
    (tmp_path / "p.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    pairs, notes = read_preference_pairs(tmp_path / "p.jsonl")
    assert [(p.id, p.chosen, p.rejected) for p in pairs] == [("q1", "y", "x")] and "1 tie(s) skipped" in notes[0]
    (tmp_path / "bad.jsonl").write_text(json.dumps({**rows[0], "human": {"winner": "C"}}) + "\n")
    with pytest.raises(InputError, match=r"line 1.*human\.winner must be A, B or tie"):
        read_preference_pairs(tmp_path / "bad.jsonl")


def test_the_command_refuses_bad_pairs_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    (tmp_path / "p.tsv").write_text("question_text\tpreferred_response\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.run([exe, "rubric", "discover", "p.tsv", "-o", "r.yaml", "--store", "s.db"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and "missing column(s) rejected_response" in proc.stderr
    assert not (tmp_path / "r.yaml").exists()


class FitJudge(JudgeBackend):
    """F.10 with dimensions: prefers the longer answer; without: always A. F.9: fails only 'Atomic'."""

    name = "fit"
    max_concurrency = 1

    def identity(self) -> dict[str, str]:
        return {"backend": "fit"}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        system, user = messages[0].content, messages[-1].content
        if "F.9" in system:
            verdict = "FAIL" if "Design property — Atomic" in user else "PASS"
            return Completion(text=json.dumps({"reasoning": "r", "verdict": verdict}))
        a = user.split("<answer_a>")[1].split("</answer_a>")[0]
        b = user.split("<answer_b>")[1].split("</answer_b>")[0]
        if "Dimensions to weigh" in system:
            return Completion(text=json.dumps({"verdict": "A" if len(a) > len(b) else "B"}))
        return Completion(text=json.dumps({"verdict": "A"}))


def test_audit_structure_and_rubric_conditioned_fit(tmp_path: Path) -> None:
    import random

    from assay.methods.premise.audit import Audit, AuditConfig
    from assay.methods.premise.files import Criterion, RubricSet

    rubric = RubricSet(criteria=[Criterion(id="complete", description="Covers every part of the question."),
                                 Criterion(id="sourced", description="Names sources for its claims.")])
    pairs = [PreferencePair(id=f"p{n}", prompt="Q?", chosen="a long and complete answer", rejected="short")
             for n in range(8)]
    store = Store(tmp_path / "a.db")

    async def go() -> tuple[dict, dict]:
        client = JudgeClient(FitJudge(), store, RunnerConfig(progress=False))
        auditor = Audit(AuditConfig(votes=3, fit_parts=("accuracy",)))
        return await auditor.structure(rubric, client), await auditor.fit(rubric, pairs, client)

    structure, fit = asyncio.run(go())
    assert [c["structure"] for c in structure["criteria"]] == [4, 4] and structure["mean"] == 4
    assert structure["criteria"][0]["flags"]["atomic"] is False
    first = sum(random.Random(f"0:p{n}").random() < 0.5 for n in range(8))  # chosen shown as A
    assert fit["accuracy_rubric"] == 1.0 and fit["accuracy_no_rubric"] == first / 8
    assert fit["delta"] == pytest.approx(1 - first / 8) and fit["changed_verdicts"] == 8 - first
    assert fit["rows"]["rubric"][0]["votes"] in ({"A": 3}, {"B": 3})


def test_a_hand_written_rubric_is_audited_through_the_executable(tmp_path: Path) -> None:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    (tmp_path / "hand.yaml").write_text(
        "criteria:\n"
        "  - {id: answers_the_question, description: Addresses what was asked before anything else.}\n"
        "  - {id: correct_facts, description: States facts that are correct.}\n"
        "  - {id: clear_and_concise, description: Is clear and concise.}\n"
        "  - {id: cites_sources, description: Names the sources of its claims.}\n")
    rows = [{"id": f"q{n}", "query": "Q?", "a": {"response": "x"}, "b": {"response": "y"},
             "human": {"winner": "A" if n % 2 else "B"}} for n in range(4)]
    (tmp_path / "pairs.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    script = {"rules": [{"match": "Design property — Atomic", "responses": ['{"reasoning": "r", "verdict": "FAIL"}'],
                         "repeat": True},
                        {"match": "Design property", "responses": ['{"reasoning": "r", "verdict": "PASS"}'],
                         "repeat": True},
                        {"match": "<answer_a>", "responses": ['{"verdict": "A"}'], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(script))
    proc = subprocess.run([exe, "rubric", "audit", "hand.yaml", "--pairs", "pairs.jsonl", "--votes", "1",
                           "--fit-parts", "accuracy",
                           "--judge", "scripted/judge.json", "--store", "s.db", "--output", "audit.json"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    audit = json.loads((tmp_path / "audit.json").read_text())
    assert [r["id"] for r in audit["rubrics"]] == ["answers_the_question", "correct_facts", "clear_and_concise",
                                                  "cites_sources"]
    assert all(r["structure"] == 4 and r["flags"]["atomic"] is False for r in audit["rubrics"])
    assert audit["summary"]["structure_mean"] == 4.0 and audit["detail"]["fit"]["pairs"] == 4
    # a typed report (assay.core.report_models) with the keys the audit always wrote
    assert list(audit) == ["generator", "rubrics", "summary", "detail"]
    assert list(audit["summary"]) == list(RubricAuditSummary.model_fields)
    assert RubricAuditReport.model_validate({k: v for k, v in audit.items() if k != "generator"}).summary.delta_ci == \
        audit["summary"]["delta_ci"]
    assert "structure: mean 4.00 of 5" in proc.stdout
    bad = subprocess.run([exe, "rubric", "audit", "hand.yaml", "--axes", "adversarial", "--store", "s.db"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--axes adversarial needs --pairs" in bad.stderr
