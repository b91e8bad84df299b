"""DICE on a real model in llama.cpp: with --verdicts analysis both stages run and the decision's label
probabilities come from real logprobs ("Tie" is two tokens in both SmolLM2's and the 1.5B judge's
tokenizer, so its probability comes through its first token); the installed `assay pairwise` command
runs at its default, which on a judge with label probabilities is the direct decision. SmolLM2-135M:
the model's quality is not what is tested (the 1.5B judge took 15-22 s for the first test, SmolLM2 6 s,
and gave "Tie" some probability where the 1.5B gave it none)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.cli.demo import examples_path
from assay.data.datasets import read_jsonl
from assay.judge.backends._llamacpp import LlamaCppBackend
from assay.judge.runner import RunnerConfig

pytestmark = pytest.mark.integration
QUIET = RunnerConfig(progress=False)


def test_a_pair_on_the_embedded_judge_gets_logprob_probabilities() -> None:
    answers = [i for i in read_jsonl(examples_path()) if i.id == "med-amox-dose" and i.system in ("good", "omission")]
    judge = LlamaCppBackend("smollm2", n_ctx=4096, logits_all=True)
    row = assay.evaluate(answers, "dice", judge, runner=QUIET, domain="medical", max_analysis_chars=80,
                         swap=False, verdicts="analysis").records()[0]  # one order: the test's time
    print({k: row.get(k) for k in ("system_a", "system_b", "p_a", "p_b", "p_tie", "margin", "decision", "verdict",
                                   "score_a", "score_b", "unscored_reason")})
    assert row["status"] == "scored", row["unscored_reason"]
    assert row["probability_source"] == "logprobs"
    assert row["p_a"] + row["p_b"] + row["p_tie"] == pytest.approx(1.0)
    assert row["score_a"] + row["score_b"] == pytest.approx(1.0)
    assert row["decision"] in ("hard", "soft") and row["verdict"] in ("A", "B", "Tie")
    assert row["orders"][0]["analysis"]["class_a"] and row["orders"][0]["greedy"] in ("A", "B", "Tie")


def test_assay_pairwise_runs_a_pairwise_record_through_the_executable(tmp_path: Path) -> None:
    assay_exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert assay_exe is not None
    record = {"id": "q1", "query": "What is the capital of France?", "reference": "Paris.",
              "a": {"system": "good", "response": "Paris is the capital of France."},
              "b": {"system": "bad", "response": "The capital of France is Lyon."}, "human": {"winner": "A"}}
    (tmp_path / "pairs.jsonl").write_text(json.dumps(record) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.run([assay_exe, "pairwise", "pairs.jsonl", "--judge-opt", "logits_all=true", "--judge-opt",
                           "n_ctx=4096", "--judge", "llamacpp/smollm2",
                           "--store", "p.db", "--no-progress", "--no-swap"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([assay_exe, "export", "p.db", "-o", "p.jsonl"], cwd=tmp_path, env=env).returncode == 0
    row = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    print({k: row.get(k) for k in ("p_a", "p_b", "p_tie", "verdict", "decision", "score_a")})
    # the default on a judge with label probabilities: one direct decision, no written analysis
    assert row["system_a"] == "good" and row["system_b"] == "bad"
    assert row["probability_source"] == "label probabilities", row
