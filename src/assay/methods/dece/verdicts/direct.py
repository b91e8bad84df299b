"""Direct verdicts: each statement asked on its own, the label (yes/no) read from one forward
pass as the judge's next token; its probability counts, and a second pass over the lettered
sentences picks the evidence of a positive verdict."""

from __future__ import annotations

from typing import Any, ClassVar

from assay.core.types import Item, Unscored
from assay.judge import calibration as calibrations
from assay.judge.calibration import Calibration, raw_mark
from assay.judge.direct import ask, point_to, record
from assay.judge.runner import JudgeClient
from assay.judge.text import unsupported_figures
from assay.methods.dece.halves import Half
from assay.methods.dece.verdicts.base import Host, Judged, VerdictMode


class Direct(VerdictMode):
    name: ClassVar[str] = "direct"
    probabilistic: ClassVar[bool] = True

    def empty_fields(self) -> dict[str, Any]:
        return {"p_judge": None, "p_calibrated": None, "calibration": None, "shown": "✗", "soft": 0.0,
                "decided_by": "deterministic check"}

    @staticmethod
    def calibration(host: Host, half: Half, client: JudgeClient) -> Calibration | None:
        """The shipped map, where it was measured on this judge and this question; else None."""
        if getattr(host.config, "calibration", "none") != "default":
            return None
        cal = calibrations.default()
        prompt = getattr(host, "prompts", {}).get(half.direct_prompt)
        if cal is None or prompt is None or not cal.fits(client.identity, prompt.sha256):
            return None
        return cal

    async def judge(self, host: Host, half: Half, item: Item, client: JudgeClient,
                    statements: list[str]) -> Judged:
        """One label call per statement (and one evidence call per positive verdict), the judged
        text first so the calls of one answer share their prefix."""
        cfg = host.config
        cal = self.calibration(host, half, client)
        sentences = half.sentences(item)
        whole = " ".join(sentences)
        keys: list[str] = []
        entries: list[dict[str, Any]] = []
        for statement in statements:
            messages = host.render_direct(half, sentences, statement)
            probs, key, problem = await ask(client, messages, metric=half.metric)
            if key:
                keys.append(key)
            if probs is None:
                failed = problem.model_copy(update={"reason": f"{half.kind} verdict: {problem.reason}"}) \
                    if problem else Unscored(reason=f"{half.kind} verdict failed", metric=half.metric)
                return Judged([(e["soft"], e) for e in entries], None, keys=keys,
                              problem=failed.model_copy(update={"metric": half.metric}))
            p_yes = probs["yes"]
            evidence = p_evidence = None
            if p_yes >= 0.5 and cfg.max_evidence > 0:
                evidence, p_evidence, ev_key = await point_to(client, messages, "yes", len(sentences), half.metric)
                if ev_key:
                    keys.append(ev_key)
            entry = record(p_yes, evidence, p_evidence, sentences, unsupported_figures(statement, whole),
                           cfg.quote_policy, half.source)
            # the calibrated P beside the judge's, where the map applies; the shown mark is
            # ✓ / ✗ / ? by the map's bands (raw P: ✓ from 0.5); a verdict not counted shows ✗. The
            # score counts the judge's own P(yes) either way: on RAGChecker dev pairs, precision and
            # F-beta from the mapped values followed the human preferences less closely than from the
            # raw ones (docs/methods/dece.md, "Calibrated out of the box"), so the map changes what is shown,
            # not what is counted.
            q = None if cal is None else cal(p_yes)
            entry.update({"p_calibrated": q, "calibration": None if cal is None else cal.name,
                          "shown": "✗" if entry["downgraded"] else raw_mark(p_yes) if cal is None or q is None
                          else cal.mark(q)})
            entries.append(entry)
        return Judged([(e["soft"], e) for e in entries], sum(e["soft"] for e in entries) / len(statements),
                      hard=sum(bool(e["judge_score"]) and not e["downgraded"] for e in entries) / len(statements),
                      keys=keys)
