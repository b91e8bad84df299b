"""Hard verdicts (the paper's): one call judges all of a half's statements, each verdict a 0/1
score citing the judged text's numbered sentences, checked against that text."""

from __future__ import annotations

from typing import Any, ClassVar

from assay.core.types import Completion, Item
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.methods.dece.calls import generate_config
from assay.methods.dece.checks import check_verdicts, grounded
from assay.methods.dece.halves import Half
from assay.methods.dece.schemas import CriterionVerdict, ElementVerdict, verdict_schema
from assay.methods.dece.verdicts.base import Host, Judged, VerdictMode


class Hard(VerdictMode):
    name: ClassVar[str] = "hard"
    logprobs: ClassVar[bool] = False
    """Ask the verdict call for the logprobs a soft verdict reads."""

    async def judge(self, host: Host, half: Half, item: Item, client: JudgeClient,
                    statements: list[str]) -> Judged:
        cfg = host.config
        sentences = half.sentences(item)
        reasoning = cfg.max_reasoning_chars if cfg.reasoning else 0
        # index + evidence + reasoning per verdict, at ~3.5 characters per token, plus framing
        max_tokens = 48 + len(statements) * (32 + reasoning // 3)
        outcome = await generate_structured(
            client, host.render_verdicts(half, item, statements), half.output,
            generate_config(cfg, cfg.verification_temperature, max_tokens,
                            verdict_schema(half.kind, len(statements), len(sentences), cfg.max_evidence, reasoning),
                            self.logprobs),
            check=check_verdicts(half.kind, len(statements), len(sentences)), max_reasks=cfg.max_reasks,
            metric=half.metric)
        if outcome.value is None:
            assert outcome.unscored is not None
            return Judged([], None, keys=outcome.keys, problem=outcome.unscored.model_copy(
                update={"reason": f"{half.what}: {outcome.unscored.reason}"}))
        verdicts: list[CriterionVerdict | ElementVerdict] = list(outcome.value.verdicts)
        records = [grounded(verdict, statement, sentences, half.source, cfg.quote_policy)
                   for verdict, statement in zip(verdicts, statements, strict=True)]
        judged = self.scored(records, outcome.completion, half, cfg.quote_policy)
        judged.keys = outcome.keys
        return judged

    def scored(self, records: list[dict[str, Any]], completion: Completion | None, half: Half,
               quote_policy: str) -> Judged:
        """A verdict counts 1 when the judge said 1 and the evidence checks let it stand."""
        score = sum(bool(r["counts"]) for r in records) / len(records)
        return Judged([(r.pop("counts"), r) for r in records], score)
