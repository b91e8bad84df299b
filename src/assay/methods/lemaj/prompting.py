"""What LeMAJ's prompt shows the judge: the answer's sentences, the document as numbered
paragraphs (the most relevant ones when it is long), a quote located in its sentence, and the
source passage of a point for the evidence check."""

from __future__ import annotations

import re
from typing import Any

from assay.core.types import Item
from assay.judge.text import split_sentences, unsupported_figures, unsupported_names


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each citable sentence of ``text`` (:func:`assay.judge.text.split_sentences`)."""
    spans, cursor = [], 0
    for sentence in split_sentences(text):
        start = text.find(sentence, cursor)
        if start < 0:  # cannot happen for pieces of the text; keep going rather than misplace
            continue
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans


def paragraph_spans(document: str, max_chars: int) -> list[tuple[int, int]]:
    """(start, end) of each numbered paragraph: blank-line blocks (single lines when the text
    has no blank lines), long ones cut after a sentence end into pieces of at most ``max_chars``
    where the sentences allow."""
    blocks = [(m.start(), m.end()) for m in re.finditer(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*$)", document, re.S)]
    if len(blocks) <= 1 and document.count("\n") >= 2:
        blocks = [(m.start(), m.end()) for m in re.finditer(r"\S[^\n]*", document)]
    spans = []
    for start, end in blocks:
        while end - start > max_chars:
            cut = None
            for m in re.finditer(r"[.;!?](?=\s)", document[start:start + max_chars]):
                cut = start + m.end()
            if cut is None or cut <= start:
                break
            spans.append((start, cut))
            start = cut
            while start < end and document[start].isspace():
                start += 1
        spans.append((start, end))
    return spans


def locate(answer: str, sentences: list[tuple[int, int]], sentence: int, quote: str) -> tuple[int, int, str]:
    """Where an LDP's quote is in the answer: (start, end, how) with how ``exact`` (found in its
    sentence or, failing that, anywhere) or ``sentence`` (not found: its whole sentence)."""
    words = quote.strip().strip("\"'“”‘’").strip().rstrip(".;,:").split()
    s_start, s_end = sentences[sentence - 1]
    if words:
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.I)
        for lo, hi in ((s_start, s_end), (0, len(answer))):
            found = pattern.search(answer, lo, hi)
            if found:
                return found.start(), found.end(), "exact"
    return s_start, s_end, "sentence"


def item_document(item: Item) -> str:
    if item.document and item.document.strip():
        return item.document
    return "\n\n".join(c.text.strip() for c in item.contexts if c.text.strip())


def choose_paragraphs(document: str, spans: list[tuple[int, int]], query: str, answer: str,
                      budget: int) -> list[int]:
    """Indices of the paragraphs to show: all when they fit, else the most similar to the
    question and answer (TF-IDF cosine, the better of the two) until ``budget`` characters."""
    if sum(e - s for s, e in spans) <= budget:
        return list(range(len(spans)))
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    texts = [document[s:e] for s, e in spans]
    matrix = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform([*texts, query, answer])
    sims = cosine_similarity(matrix[: len(texts)], matrix[len(texts):]).max(axis=1)
    chosen: list[int] = []
    used = 0
    for i in sorted(range(len(texts)), key=lambda i: (-sims[i], i)):
        if used + len(texts[i]) > budget and chosen:
            continue
        chosen.append(i)
        used += len(texts[i])
    return sorted(chosen)


class EvidencePassages:
    """The source passage of each point of one answer, for the evidence check (module docstring)."""

    def __init__(self, item: Item, view: dict[str, Any]) -> None:
        document = item_document(item)
        self.numbers = list(view["shown"])
        self.texts = {n: document[slice(*view["paragraphs"][n - 1])] for n in self.numbers}
        self.reference = item.reference.full_text() if item.reference is not None else ""
        self.everything = " ".join((document, self.reference, item.query)) if document.strip() or self.reference else ""

    def closest(self, statement: str) -> int | None:
        """The shown paragraph most similar to ``statement`` (TF-IDF cosine), None if none shares a word."""
        if not self.numbers:
            return None
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics.pairwise import cosine_similarity

        texts = [self.texts[n] for n in self.numbers]
        try:
            matrix = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform([*texts, statement])
        except ValueError:  # nothing but stop words
            return None
        sims = cosine_similarity(matrix[: len(texts)], matrix[len(texts):]).ravel()
        best = int(sims.argmax())
        return self.numbers[best] if sims[best] > 0 else None

    def check(self, statement: str, citation: list[int]) -> dict[str, Any]:
        """``evidence_paragraphs`` (cited + closest), ``figures_missing`` (against those) and
        ``names_missing`` (against the whole document, gold answer and question); null: nothing
        to check against."""
        closest = self.closest(statement)
        used = sorted(set(citation) | ({closest} if closest is not None else set()))
        source = " ".join([*(self.texts[n] for n in used if n in self.texts), self.reference]).strip()
        missing = unsupported_figures(statement, source) if source else None
        names = unsupported_names(statement, self.everything) if self.everything else None
        return {"evidence_paragraphs": used, "figures_missing": missing, "names_missing": names, "downgraded": None}


# --- scores ----------------------------------------------------------------------------------------

# --- jury ------------------------------------------------------------------------------------------
