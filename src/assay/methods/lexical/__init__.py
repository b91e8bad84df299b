"""Lexical baselines against the reference: ROUGE-L (rouge-score) and sentence BLEU (sacrebleu).

No judge is involved; they are here so a meta-evaluation can set the LLM judges beside the
overlap metrics the DeCE paper compares with (Table 2: ROUGE-L r = 0.11 with experts).
The reference is its Required plus Helpful Information, without section labels.
"""

from __future__ import annotations

from typing import Any, ClassVar

from assay.core.method import CallEstimate, ItemResult, Method
from assay.core.registry import register_method
from assay.core.types import Item
from assay.judge.runner import JudgeClient


def _reference_text(item: Item) -> str:
    assert item.reference is not None
    return "\n".join(part for part in (item.reference.required, item.reference.helpful) if part.strip())


class _Lexical(Method):
    needs_judge: ClassVar[bool] = False
    version: ClassVar[str] = "2"  # 2: an empty answer scores 0 (1: Unscored)

    def check_item(self, item: Item) -> str | None:
        if item.reference is None or not item.reference.required.strip():
            return f"{self.name} needs a reference answer (field 'reference')"
        return None

    def estimate(self, items: list[Item]) -> CallEstimate:
        return CallEstimate()

    def _empty(self, item: Item) -> ItemResult | None:
        """An empty answer shares nothing with the reference: 0 (its overlap recall is 0, so the
        F-measure is 0 whatever its undefined precision), marked so in the details."""
        if item.response.strip():
            return None
        return ItemResult(scores={self.metrics[0]: 0.0}, details={"empty_answer": True})


@register_method
class RougeL(_Lexical):
    """ROUGE-L F-measure of the answer against the reference (rouge-score, Porter stemming)."""

    name: ClassVar[str] = "rougeL"
    metrics: ClassVar[tuple[str, ...]] = ("rougeL",)
    primary_metric: ClassVar[str | None] = "rougeL"

    def __init__(self) -> None:
        self._scorer = self._new_scorer()

    @staticmethod
    def _new_scorer() -> Any:
        from assay.methods.lexical._rouge import rouge_scorer_module

        return rouge_scorer_module().RougeScorer(["rougeL"], use_stemmer=True)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the scorer, which is built again where it is unpickled (a Ray worker): its
        stemmer's class does not pickle by reference (assay.methods.lexical._rouge)."""
        return {k: v for k, v in self.__dict__.items() if k != "_scorer"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._scorer = self._new_scorer()

    def manifest(self) -> dict[str, Any]:
        from importlib.metadata import version
        return {"package": f"rouge-score {version('rouge-score')}", "measure": "fmeasure", "stemmer": True}

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        empty = self._empty(item)
        if empty is not None:
            return empty
        score = self._scorer.score(_reference_text(item), item.response)["rougeL"]
        return ItemResult(scores={"rougeL": float(score.fmeasure)},
                          details={"rougeL_precision": score.precision, "rougeL_recall": score.recall})


@register_method
class Bleu(_Lexical):
    """Sentence BLEU of the answer against the reference (sacrebleu defaults), scaled to [0, 1]."""

    name: ClassVar[str] = "bleu"
    metrics: ClassVar[tuple[str, ...]] = ("bleu",)
    primary_metric: ClassVar[str | None] = "bleu"

    def manifest(self) -> dict[str, Any]:
        import sacrebleu
        return {"package": f"sacrebleu {sacrebleu.__version__}", "scale": "0-1", "smoothing": "exp"}

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        import sacrebleu

        empty = self._empty(item)
        if empty is not None:
            return empty
        result = sacrebleu.sentence_bleu(item.response, [_reference_text(item)])
        return ItemResult(scores={"bleu": float(result.score) / 100.0},
                          details={"signature": "sacrebleu sentence_bleu", "bp": result.bp})


@register_method
class Semantic(_Lexical):
    """Cosine similarity of the answer's and the reference's sentence embeddings (offline).

    all-MiniLM-L6-v2: what a judge adds beyond similarity shows beside it. Scaled to [0, 1] by
    clipping negative cosines to 0."""

    name: ClassVar[str] = "semantic"
    metrics: ClassVar[tuple[str, ...]] = ("semantic",)
    primary_metric: ClassVar[str | None] = "semantic"
    version: ClassVar[str] = "1"

    def manifest(self) -> dict[str, Any]:
        from assay.judge.embeddings import MODEL_NAME
        return {"model": MODEL_NAME, "measure": "cosine of whole-text embeddings, clipped at 0"}

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        empty = self._empty(item)
        if empty is not None:
            return empty
        from assay.judge.embeddings import similarity

        cosine = float(similarity([item.response], [_reference_text(item)], "embeddings")[0][0])
        return ItemResult(scores={"semantic": max(0.0, min(1.0, cosine))}, details={"cosine": cosine})
