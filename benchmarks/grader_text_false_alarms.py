"""How often does the guard's detector (:mod:`assay.engine.grader_text`) fire on honest answers, and which
of the injection attacks does it catch? No judge: a pure text pass.

Honest answers: every answer in the human-labelled dev sets of ``../shared/data/`` (RAGChecker,
PandaLM, ExpertQA, HaluQuestQA spans and preferences, MT-RAG); none of them is an attack, so
every flag there is a false alarm that would cost a reviewer's time (and, under the default
``guard=redact``, take a passage away from the judge). Each flagged answer is listed with the
pattern and the text it matched, so a false alarm can be read, not just counted.

Attacks: for every attack and control of :mod:`assay.analysis.injection`, the patterns it triggers and
whether :func:`assay.engine.grader_text.redact` leaves exactly the clean answer when the attack is
appended to (or put before) a two-paragraph answer.
Writes ``results/grader_text_false_alarms.json``.
Usage: python benchmarks/grader_text_false_alarms.py [--data PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from assay.analysis.injection import ATTACK_SETS, inject
from assay.core.types import Item
from assay.data.datasets.adapters import read_expertqa, read_haluquestqa, read_mtrag, read_pandalm, read_ragchecker
from assay.engine.grader_text import PATTERNS, grader_directed, redact

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data"
SETS = {
    "ragchecker": (read_ragchecker, "ragchecker_human_labeled_dev.json"),
    "pandalm": (read_pandalm, "pandalm_testset_dev.json"),
    "expertqa": (read_expertqa, "expertqa_rand_test.jsonl"),
    "haluquestqa": (read_haluquestqa, "haluquestqa_spans_dev.tsv"),
    "haluquestqa_preferences": (read_haluquestqa, "haluquestqa_preferences_dev.tsv"),
    "mtrag": (read_mtrag, "mtrag_human_eval_dev.json"),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "grader_text_false_alarms.json")
    args = parser.parse_args()
    sets: dict[str, Any] = {}
    for name, (reader, filename) in SETS.items():
        answers = sorted({item.response for item in reader(args.data / filename).items})
        flagged = []
        for text in answers:
            found = grader_directed(text)
            if found:
                flagged.append({"patterns": sorted({f["pattern"] for f in found}),
                                "matched": [f["text"] for f in found], "answer_start": text[:200]})
        by_pattern = {p: sum(p in f["patterns"] for f in flagged) for p, _ in PATTERNS}
        sets[name] = {"answers": len(answers), "flagged": len(flagged),
                      "by_pattern": {p: n for p, n in by_pattern.items() if n}, "flagged_answers": flagged}
        print(f"{name}: {len(flagged)} of {len(answers)} distinct answers flagged {sets[name]['by_pattern']}")
    clean = "The limit is three years from the injury.\n\nA notice of claim is due within 90 days."
    attacks: dict[str, Any] = {}
    for set_name, chosen in ATTACK_SETS.items():
        if set_name == "all":
            continue
        for attack in chosen:
            attacked = inject(Item(id="x", query="q", response=clean), attack).response
            patterns = sorted({f["pattern"] for f in grader_directed(attack.text)})
            attacks[attack.name] = {"set": set_name, "patterns": patterns,
                                    "redact_leaves_clean_answer": redact(attacked)[0] == clean}
            print(f"{attack.name} ({set_name}): {attacks[attack.name]}")
    total = sum(s["answers"] for s in sets.values())
    flagged_total = sum(s["flagged"] for s in sets.values())
    out = {"benchmark": "grader_text_false_alarms",
           "what": "distinct answers of the human-labelled dev sets (no attacks) that the detector flags, "
                   "and the attacks it flags",
           "patterns": [p for p, _ in PATTERNS], "answers": total, "flagged": flagged_total,
           "sets": sets, "attacks": attacks}
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{flagged_total} of {total} honest answers flagged; wrote {args.out}")


if __name__ == "__main__":
    main()
