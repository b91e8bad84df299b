"""Direct verdicts: each statement asked on its own, the label (yes/no) read from one forward
pass as the judge's next token; its probability counts, and a second pass over the lettered
sentences picks the evidence of a positive verdict."""

from __future__ import annotations

from typing import Any, ClassVar

from assay.direct import ask, point_to, record
from assay.methods.dece.halves import Half
from assay.methods.dece.verdicts.base import Host, Judged, VerdictMode
from assay.runner import JudgeClient
from assay.text import unsupported_figures
from assay.types import Item, Unscored


class Direct(VerdictMode):
    name: ClassVar[str] = "direct"
    probabilistic: ClassVar[bool] = True

    def empty_fields(self) -> dict[str, Any]:
        return {"p_judge": None, "soft": 0.0, "decided_by": "deterministic check"}

    async def judge(self, host: Host, half: Half, item: Item, client: JudgeClient,
                    statements: list[str]) -> Judged:
        """One label call per statement (and one evidence call per positive verdict), the judged
        text first so the calls of one answer share their prefix."""
        cfg = host.config
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
            entries.append(record(p_yes, evidence, p_evidence, sentences, unsupported_figures(statement, whole),
                                  cfg.quote_policy, half.source))
        return Judged([(e["soft"], e) for e in entries], sum(e["soft"] for e in entries) / len(statements),
                      hard=sum(bool(e["judge_score"]) and not e["downgraded"] for e in entries) / len(statements),
                      keys=keys)
