"""Prompt-injection audit with the embedded judge: score inflation per attack.

The flawed answers of the bundled DeCE examples (planted errors and omissions: room to inflate)
are scored clean and with each attack of ``assay.analysis.injection.ATTACKS`` added; the table gives,
per attack and metric, the paired difference attacked − clean with a bootstrap CI.

Calls go to ``benchmarks/results/injection.db`` (resumable; a larger ``--items`` re-uses them).
Writes benchmarks/results/injection_<method>.json and prints the markdown table.
``--plain-fence`` scores with the fence the holistic judges used before the sealed one
(``<answer>`` tags, no seal, no data declaration), for the before/after table; ``--with-good``
adds the examples' good answers after the flawed ones (14 in all).
``--guard flag`` leaves passages aimed at the grader in the answer (default ``redact``: the
shipped guard removes them); ``--attack all`` runs the default and the held-out attacks.

The case-aware judge grades a support turn, not a free answer: with ``--method caseaware`` the
answers are the first ``--items`` rated responses of the seeded MT-RAG dev subset of
``meta_mtrag.py`` (earlier turns, passages). DICE judges pairs: with ``--method dice`` they are
the first ``--items`` pairs of the seeded PandaLM dev subset of ``meta_pandalm.py``, the attack
goes into response1 (answer A) and Δ is read on score_a, with logprobs as in that benchmark.
LeMAJ judges an answer against a document; the bundled answers have none, so ``--method lemaj``
runs with ``without_document=knowledge`` (the gold answer and the field's established knowledge
are the source, as on open-domain sets; each row records which source was used) and the general
domain pack (the examples span legal, medical, financial and general questions).
Usage: python benchmarks/injection.py [--method pointwise] [--items 4] [--attack NAME|SET ...] [--plain-fence]
       [--guard redact|flag] [--with-good]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from importlib import resources
from pathlib import Path

from assay import get_backend
from assay.analysis.injection import ainjection_audit, markdown_table
from assay.analysis.meta import write_meta
from assay.core.types import Item
from assay.data.datasets.adapters import read_mtrag, read_pandalm
from assay.judge.runner import RunnerConfig

HERE = Path(__file__).parent
DATA = HERE.parents[1] / "shared" / "data"


def flawed_examples(with_good: bool = False) -> list[Item]:
    text = resources.files("assay.examples").joinpath("dece_examples.jsonl").read_text(encoding="utf-8")
    items = [Item.model_validate(json.loads(line)) for line in text.splitlines() if line.strip()]
    flawed = [i for i in items if i.metadata.get("variant") in ("error", "omission")]
    return flawed + ([i for i in items if i.metadata.get("variant") == "good"] if with_good else [])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--method", default="pointwise")
    parser.add_argument("--items", type=int, default=4)
    parser.add_argument("--attack", action="append", default=[])
    parser.add_argument("--store", type=Path, default=HERE / "results" / "injection.db")
    parser.add_argument("--plain-fence", action="store_true")
    parser.add_argument("--with-good", action="store_true")
    parser.add_argument("--guard", choices=["redact", "flag"], default="redact",
                        help="flag: no redaction (the judge and fence alone), for the before/after table")
    parser.add_argument("--tag", default="", help="suffix of the JSON result's name")
    parser.add_argument("--verdicts", choices=["hard", "soft", "direct"], default=None,
                        help="the method's verdict mode (dece, lemaj), e.g. direct")
    args = parser.parse_args()
    if args.plain_fence:
        import assay.methods.caseaware as caseaware
        from assay.judge.prompts import fence
        from assay.methods.baselines import base, claims, geval, pointwise

        def plain(tag: str, text: str, *, sealed: bool = False) -> str:
            return fence(tag, text)

        for module in (base, claims, geval, pointwise, caseaware):
            module.fence = plain  # type: ignore[attr-defined]
        if args.store == HERE / "results" / "injection.db":  # the run id does not see the patch: keep apart
            args.store = HERE / "results" / "injection_plain.db"
    if args.method == "caseaware":
        items = read_mtrag(DATA / "mtrag_human_eval_dev.json").subset(args.items, 0).items
    elif args.method == "dice":
        items = read_pandalm(DATA / "pandalm_testset_dev.json").subset(args.items, 0).items
    else:
        items = flawed_examples(args.with_good)[:args.items]
    # G-Eval weighs the digits by their probabilities when the judge gives logprobs, as in the
    # validity table, and DICE reads its label probabilities from them: load with logits_all
    judge = get_backend("llamacpp/default", n_ctx=8192 if args.method == "caseaware" else 4096,
                            logits_all=args.method in ("geval", "dice"))
    start = time.perf_counter()
    options = {"without_document": "knowledge", "domain": "general"} if args.method == "lemaj" else None
    if args.verdicts is not None:
        options = {**(options or {}), "verdicts": args.verdicts}
    result = asyncio.run(ainjection_audit(items, args.method, judge, attacks=args.attack, store=args.store,
                                          runner=RunnerConfig(progress=True), guard=args.guard,
                                          method_options=options)).to_dict()
    result["wall_s"] = time.perf_counter() - start
    result["judge_model"] = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama.cpp, CPU)"
    result["fence"] = "plain" if args.plain_fence else "sealed"
    suffix = ("_plain" if args.plain_fence else "") + ("_flag" if args.guard == "flag" else "") + args.tag
    out = write_meta(result, HERE / "results" / f"injection_{args.method}{suffix}.json")
    print(markdown_table(result))
    print(f"wrote {out} in {result['wall_s']:.0f} s ({result['judge_calls']} judge calls)")


if __name__ == "__main__":
    main()
