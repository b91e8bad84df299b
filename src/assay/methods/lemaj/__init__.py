"""LeMAJ: reference-free Legal Data Points (``../shared/papers/lemaj.txt`` §3–5, App. E.4, H).

One judge call (§3.2) reads the document, the question, the answer (its sentences numbered) and
— when the item has one — a gold answer, splits the answer into Legal Data Points and tags each
``correct`` / ``incorrect`` / ``irrelevant``, and adds ``missing`` points for critical omissions
found in the document. The judge answers §3.2's two checks for each LDP — is it supported by the
source, is it relevant to the question — and the tag follows by the paper's order (unsupported →
incorrect; supported, not relevant → irrelevant; else correct): on a planted outside-knowledge
sentence the 1.5B judge, asked for the tag directly, wrote "not explicitly stated in the
document" and tagged it irrelevant. Metrics (§3.2): Correctness C/(C+I), Precision C/(C+Irr), Recall C/(C+M),
F1, and Relevance = F_beta (``beta``; 1 gives the paper's F1 — the emphasis knob). A metric
whose denominator is zero is null, with the reason in ``unscored``.

Coverage. The judge goes through the answer sentence by sentence — the output has one entry per
numbered sentence, in order, each with one to three LDPs (the schema enforces it) — so no part of
the answer escapes the review (the paper's error analysis, Table 7, counts "data points missing
from the evaluation"; a 1.5B judge asked for a free list returned one LDP per answer).

Spans. Each LDP belongs to its sentence and quotes the answer; the quote is located in that sentence
(exactly, then ignoring case and spacing; then anywhere in the answer) and the LDP's ``text`` is
the located span, so ``response[start:end] == text`` always. A quote that cannot be found falls
back to its whole sentence (``located: "sentence"``, the judge's words kept in ``judge_quote``).
Missing points have no span (``start``/``end`` null).

Citations. The document is shown as numbered paragraphs (blank-line separated; long ones cut at
sentence ends into ``paragraph_chars`` pieces); an LDP's ``citation`` lists the paragraph numbers
the judge gave, constrained to the ones it was shown. ``document_view`` records what the judge
saw: every paragraph's character offsets in the document and which were shown.

Long documents (``long_documents``). When the document is longer than ``max_document_chars``:
``retrieve`` (default) shows the paragraphs most similar to the question and the answer (TF-IDF
cosine), best first until the budget is spent, in document order with their original numbers —
missing points can then only come from what was shown, which ``document_view`` makes explicit;
``refuse`` rejects the item before any call. Never silent truncation.

Jury (App. E.4, Table 16). ``samples`` > 1 asks the one judge that many times at
``sample_temperature`` (seeds ``seed``, ``seed``+1, …) and aggregates per LDP: LDPs of different
jurors are matched by sentence embeddings (``matcher``, :mod:`assay.embeddings`); ``majority``
takes the most common tag, ``rule`` the most severe tag any juror gave (incorrect > irrelevant >
correct: the paper's red, grey, …, green order), ``majority+rule`` (default) is incorrect if any
juror said so, else the majority. An answer LDP is kept when most jurors found it, or under the
rule modes when any juror called it incorrect; a missing point is kept when most jurors listed it
(``rule``: any juror). Ties between tags go to the more severe one. Each LDP keeps its ``votes``.
A jury of different judges is the backend ``jury/JUDGE1+JUDGE2+…``: each member answers once
(at ``temperature``), the same aggregation applies, and the row names the judges.

Evidence check (``evidence_check``; our addition, as DeCE's figure check: the paper's Table 13
plants changed values, and the 1.5B judge called "payable within 90 days" supported by a clause
that says 30). A point's source passage is the paragraphs it cites plus the shown paragraph most
similar to it (TF-IDF cosine), and the gold answer when one is given; a point the judge called
supported that states a figure the passage lacks (:func:`assay.text.unsupported_figures`: a
percentage needs the same percentage), or names something the document, gold answer and question
never mention (:func:`assay.text.unsupported_names`: a capitalised word no word there shares four
first letters with — a changed party, an outside statute), is recorded with ``figures_missing`` /
``names_missing`` and ``downgraded`` and, under "require", tagged incorrect (``judge_tag`` keeps
the judge's). Without a document or a gold
answer there is nothing to check against (``figures_missing`` null).

Soft verdicts (``verdicts="soft"``, issue 17). The judge's probabilities of "yes" at each
point's "supported" and "relevant" values (:func:`assay.verdicts.field_label_probs`) give each point
P(incorrect) = 1 − p_s, P(irrelevant) = p_s (1 − p_r), P(correct) = p_s p_r, with p_s = 0 for a point
the evidence check downgraded under "require". Metrics are ratios of expected counts (missing
points count 1 each); a jury averages its members' probabilities per matched point. A parsed
answer whose logprobs do not cover every point is Unscored with that reason, never scored hard.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.direct import ask
from assay.embeddings import Matcher, match
from assay.errors import ConfigError
from assay.human import grade_score
from assay.methods._base import CallEstimate, ItemResult, Method, ReportSection, method_template
from assay.methods.lemaj import review as _review  # noqa: F401 - registers LeMAJ's review view and grades
from assay.methods.lemaj.scores import TAGS, bucket, bucketed_accuracy, ldp_scores, percent_agreement
from assay.prompts import defuse, fence, load_domain, load_prompt
from assay.registry import register_method
from assay.runner import JudgeClient
from assay.structured import OutputInvalid, generate_structured
from assay.text import split_sentences, unsupported_figures, unsupported_names
from assay.types import GenerateConfig, Item, Unscored
from assay.verdicts import field_label_probs

SEVERITY = {"incorrect": 3, "irrelevant": 2, "missing": 1, "correct": 0}
"""The rule-based jury's order (App. E.4: red, grey, orange, green — our reading: incorrect,
irrelevant, missing, correct)."""
SOURCE_RULES = {
    "document": ("the document (or the gold answer, when one is given) states it, with the same figures, dates, "
                 "parties and conditions; knowledge from outside the document does not count.",
                 "is in the document (cite the paragraphs it comes from)"),
    "knowledge": ("it is right by the gold answer, when one is given, and by what is well established in the field "
                  "(no document is given; leave \"paragraphs\" empty); a claim you cannot stand behind does not "
                  "count.",
                  "a complete expert answer would give (leave \"paragraphs\" empty)"),
}
STRINGENCY = {
    "lenient": "Be generous: only clearly off-topic assertions are irrelevant.",
    "standard": "Judge relevance as an experienced lawyer answering this client would.",
    "strict": "Be strict: anything the question did not ask for is irrelevant, however true.",
}


class LeMAJConfig(BaseModel):
    """LeMAJ options."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    domain: str = "legal"
    """Domain pack (the expert named in the prompt): legal, general, medical, financial."""
    beta: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Relevance = F_beta of precision and recall; beta > 1 weighs omissions more (1: the paper's F1)."""
    stringency: Literal["lenient", "standard", "strict"] = "standard"
    """How strictly relevance is judged (a knob of the prompt)."""
    max_document_chars: int = Field(default=6000, ge=500)
    """Document characters shown to the judge (the embedded judge has a 4,096-token context)."""
    without_document: Literal["refuse", "knowledge"] = "refuse"
    """An item with no document (nor contexts): refuse it, or judge against the gold answer, if any, and
    established knowledge of the field (for open-domain sets; the row says which source was used)."""
    long_documents: Literal["retrieve", "refuse"] = "retrieve"
    """A longer document: show the paragraphs most relevant to the question and answer, or refuse the item."""
    paragraph_chars: int = Field(default=700, ge=100)
    """Longest paragraph shown as one numbered unit (longer ones are cut at sentence ends)."""
    samples: int = Field(default=1, ge=1, le=15)
    """Jurors: >1 samples the judge that many times and aggregates per data point."""
    sample_temperature: float = Field(default=0.7, gt=0, le=2)
    """Temperature of the jurors' samples."""
    aggregate: Literal["majority", "rule", "majority+rule"] = "majority+rule"
    """How the jurors' tags of one data point are combined (majority+rule did best in the paper)."""
    matcher: Literal["embeddings", "lexical"] = "embeddings"
    """How LDPs of different jurors are matched: sentence embeddings, or TF-IDF cosine."""
    match_threshold: float | None = Field(default=None, ge=0, le=1)
    """Similarity at or above which two LDPs are the same (default 0.6 embeddings, 0.3 lexical)."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_reason_chars: int = Field(default=160, ge=20)
    max_quote_chars: int = Field(default=300, ge=20)
    """Longest quote of the answer or the document a data point may carry, in characters."""
    max_missing: int = Field(default=5, ge=0, le=20)
    """Most points the answer missed that one call may list."""
    seed: int = 0
    max_reasks: int = Field(default=2, ge=0)
    evidence_check: Literal["require", "flag"] = "require"
    """A point the judge called supported that states a figure its source passage lacks (the
    paragraphs it cites and the shown paragraph closest to it; the gold answer when given):
    "require" counts it incorrect, "flag" only records it."""
    verdicts: Literal["hard", "soft", "direct"] = "hard"
    """"soft": read the judge's probability of "supported" and "relevant" for each point from its
    logprobs and score the expected metrics (the tags stay the greedy ones); needs a backend
    with logprobs (llamacpp with logits_all=true, openai). "direct": the points are still listed
    by the tagging call, then each point's two checks are asked on their own (the document first,
    so the calls share their prefix), each label read from one forward pass; the tag follows from
    those answers (unsupported first), and the figure and name checks apply as with hard verdicts."""
    top_logprobs: int = Field(default=5, ge=2, le=20)


class _Point(BaseModel):
    quote: str
    reason: str
    paragraphs: list[int] = Field(default_factory=list)
    supported: Literal["yes", "no"]
    relevant: Literal["yes", "no"]

    @property
    def tag(self) -> str:
        """§3.2's order of checks: an unsupported point is incorrect whatever its relevance."""
        if self.supported == "no":
            return "incorrect"
        return "correct" if self.relevant == "yes" else "irrelevant"


class _Sentence(BaseModel):
    sentence: int
    points: list[_Point]


class _Missing(BaseModel):
    text: str
    paragraphs: list[int] = Field(default_factory=list)


class Tagging(BaseModel):
    sentences: list[_Sentence]
    missing: list[_Missing] = Field(default_factory=list)


# --- text geometry ---------------------------------------------------------------------------------
def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each citable sentence of ``text`` (:func:`assay.text.split_sentences`)."""
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


def _document(item: Item) -> str:
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
        document = _document(item)
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
def _decide(tags: list[str], aggregate: str) -> str:
    if aggregate == "rule" or (aggregate == "majority+rule" and "incorrect" in tags):
        return max(tags, key=lambda t: SEVERITY[t])
    counts = Counter(tags)
    return max(counts, key=lambda t: (counts[t], SEVERITY[t]))


def aggregate_jurors(jurors: list[list[dict[str, Any]]], aggregate: str = "majority+rule",
                     matcher: Matcher = "embeddings", threshold: float | None = None) -> list[dict[str, Any]]:
    """One LDP list from several jurors' (App. E.4). Answer LDPs and missing points are matched
    across jurors by text similarity (each juror's LDP joins the cluster of its best match among
    the earlier jurors', one-to-one), then kept and tagged as the module docstring says. Each
    kept LDP is the first juror's version with the decided tag, plus ``votes``."""
    n = len(jurors)
    out: list[dict[str, Any]] = []
    for missing in (False, True):
        clusters: list[list[dict[str, Any]]] = []
        for ldps in jurors:
            mine = [d for d in ldps if (d["tag"] == "missing") == missing]
            heads = [c[0]["text"] for c in clusters]
            pairs = {j: i for i, j, _ in match(heads, [d["text"] for d in mine], matcher, threshold)}
            for j, ldp in enumerate(mine):
                if j in pairs:
                    clusters[pairs[j]].append(ldp)
                else:
                    clusters.append([ldp])
        for cluster in clusters:
            tags = [d["tag"] for d in cluster]
            majority = len(cluster) * 2 > n
            if missing:
                keep = majority or aggregate == "rule"
            else:
                keep = majority or (aggregate != "majority" and "incorrect" in tags)
            if not keep:
                continue
            tag = _decide(tags, aggregate)
            chosen = next((d for d in cluster if d["tag"] == tag), cluster[0])
            kept = {**chosen, "tag": tag, "votes": dict(Counter(tags)), "jurors": len(cluster)}
            soft = [d["p_tags"] for d in cluster if "p_tags" in d]
            if soft:
                kept["p_tags"] = {t: sum(p[t] for p in soft) / len(soft) for t in soft[0]}
            out.append(kept)
    return sorted(out, key=lambda d: (d["start"] is None, d["start"] or 0, d["end"] or 0))


@register_method
class LeMAJ(Method):
    """LeMAJ: the answer split into Legal Data Points, each tagged against the document."""

    name: ClassVar[str] = "lemaj"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"triage": {"--out": "--output"}}
    metrics: ClassVar[tuple[str, ...]] = ("correctness", "precision", "recall", "f1", "relevance")
    version: ClassVar[str] = "1"
    config_model: ClassVar[type[BaseModel] | None] = LeMAJConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'beta', 'stringency',
                                                  'without_document', 'long_documents', 'samples', 'verdicts')
    primary_metric: ClassVar[str | None] = "relevance"
    supports_jury: ClassVar[bool] = True
    annotation_labels: ClassVar[dict[str, tuple[str, ...]]] = {"tag": TAGS, "judge_tag": TAGS}
    compact_columns: ClassVar[tuple[str, ...]] = ("correctness", "precision", "recall", "f1", "relevance", "ldps")
    config: LeMAJConfig

    @classmethod
    def agreement(cls, rows: list[dict[str, Any]], annotations: list[Any]) -> dict[str, Any] | None:
        from assay.methods.lemaj.review import agreement

        found = agreement(rows, annotations)
        return {**found, "title": "Inter-annotator agreement (LeMAJ Table 4)"} if found else None

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        from assay.methods.lemaj import cli

        app.command("triage", rich_help_panel=kit.panels["inspect"])(cli.triage_command)

    def __init__(self, config: LeMAJConfig | None = None) -> None:
        self.config = config or LeMAJConfig()
        self.domain = load_domain(self.config.domain)
        self.prompt = load_prompt("lemaj/tagging")
        self.direct_prompt = load_prompt("lemaj/point_direct") if self.config.verdicts == "direct" else None

    def reads_label_probs(self) -> bool:
        return self.config.verdicts == "direct"  # --verdicts direct

    def manifest(self) -> dict[str, Any]:
        prompts = {"tagging": self.prompt.sha256}
        if self.direct_prompt is not None:
            prompts["point_direct"] = self.direct_prompt.sha256
        return {"config": self.config.model_dump(), "prompt_sha256": prompts, "domain_sha256": self.domain["sha256"]}

    def _document_block(self, item: Item, view: dict[str, Any]) -> str:
        document = _document(item)
        lines = [f"[{n}] {document[view['paragraphs'][n - 1][0]:view['paragraphs'][n - 1][1]]}" for n in view["shown"]]
        return fence("document", "\n\n".join(lines) if lines else "(no document given)")

    async def _direct_checks(self, item: Item, client: JudgeClient, view: dict[str, Any],
                             ldps: list[dict[str, Any]], keys: list[str]) -> Unscored | None:
        """Each listed point's two checks asked on their own; tags follow by §3.2's order."""
        assert self.direct_prompt is not None
        rules = SOURCE_RULES["knowledge" if view["source"] == "knowledge" else "document"]
        document = self._document_block(item, view)
        checks = {"supported": "Is this data point supported by the document, with the same facts and figures?",
                  "relevant": "Is this data point relevant to answering the question asked?"}
        for ldp in ldps:
            if ldp["tag"] == "missing":
                continue
            found: dict[str, float] = {}
            for field, check in checks.items():
                messages = self.direct_prompt.render(
                    expert=str(self.domain["expert"]), support_rule=rules[0],
                    stringency=STRINGENCY[self.config.stringency], document=document, query=item.query.strip(),
                    point=defuse(ldp["text"]), check=check)
                probs, key, problem = await ask(client, messages, metric="correctness")
                if key:
                    keys.append(key)
                if probs is None:
                    return problem or Unscored(reason="a direct check failed", metric="correctness")
                found[field] = probs["yes"]
            ps, pr = found["supported"], found["relevant"]
            blocked = bool(ldp.get("downgraded")) and self.config.evidence_check == "require"
            tag = "incorrect" if ps < 0.5 or blocked else "correct" if pr >= 0.5 else "irrelevant"
            ldp.update(listed_tag=ldp.get("judge_tag", ldp["tag"]), tag=tag, p_supported=ps, p_relevant=pr,
                       supported="yes" if ps >= 0.5 else "no", relevant="yes" if pr >= 0.5 else "no",
                       decided_by="deterministic check" if blocked and ps >= 0.5 else "judge (direct)")
            effective = 0.0 if blocked else ps
            ldp["p_tags"] = {"correct": effective * pr, "incorrect": 1.0 - effective,
                             "irrelevant": effective * (1 - pr)}
        return None

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        return ReportSection(section=method_template("section.html.j2", __name__),
                             item=method_template("item.html.j2", __name__), context=lemaj_section(rows))

    def check_item(self, item: Item) -> str | None:
        document = _document(item)
        if not document.strip() and self.config.without_document == "refuse":
            return ("LeMAJ checks the answer against a document: give 'document' (or 'contexts'), or set "
                    "without_document=knowledge (field 'document')")
        if not split_sentences(item.response):
            return "the answer has no sentence to split into data points (field 'response')"
        if self.config.long_documents == "refuse" and len(document) > self.config.max_document_chars:
            return (f"the document has {len(document):,} characters, over max_document_chars "
                    f"({self.config.max_document_chars:,}) with long_documents=refuse (field 'document')")
        return None

    # the judge's view -------------------------------------------------------------------------
    def view(self, item: Item) -> dict[str, Any]:
        """What the judge is shown of the document: every paragraph's offsets, the shown ones."""
        document = _document(item)
        spans = paragraph_spans(document, self.config.paragraph_chars)
        shown = choose_paragraphs(document, spans, item.query, item.response, self.config.max_document_chars)
        source = ("document" if item.document and item.document.strip() else "contexts" if spans else "knowledge")
        return {"strategy": "all" if len(shown) == len(spans) else "retrieve", "paragraphs": [list(s) for s in spans],
                "shown": [i + 1 for i in shown], "chars_total": len(document),
                "chars_shown": sum(spans[i][1] - spans[i][0] for i in shown), "source": source}

    def render(self, item: Item, view: dict[str, Any]) -> list[Any]:
        document = _document(item)
        lines, previous = [], 0
        for number in view["shown"]:
            start, end = view["paragraphs"][number - 1]
            if number != previous + 1:
                lines.append("[…]")
            lines.append(f"[{number}] {document[start:end]}")
            previous = number
        if previous != len(view["paragraphs"]):
            lines.append("[…]")
        spans = sentence_spans(item.response)
        answer = "\n".join(f"[{n}] {item.response[s:e]}" for n, (s, e) in enumerate(spans, 1))
        reference = (fence("reference", item.reference.full_text()) if item.reference is not None
                     else "<reference>\n(no gold answer given: judge against the document)\n</reference>")
        rules = SOURCE_RULES["knowledge" if view["source"] == "knowledge" else "document"]
        shown_document = "\n\n".join(lines) if lines else "(no document given)"
        return self.prompt.render(expert=str(self.domain["expert"]), stringency=STRINGENCY[self.config.stringency],
                                  support_rule=rules[0], missing_rule=rules[1], query=item.query.strip(),
                                  document=fence("document", shown_document), reference=reference,
                                  answer=defuse(answer))

    def schema(self, sentences: int, shown: list[int]) -> dict[str, Any]:
        cfg = self.config
        cite: dict[str, Any] = ({"type": "array", "maxItems": 3, "items": {"type": "integer", "enum": shown}}
                                if shown else {"type": "array", "maxItems": 0, "items": {"type": "integer"}})
        yes_no = {"type": "string", "enum": ["yes", "no"]}
        point = {"type": "object", "additionalProperties": False,
                 "required": ["quote", "reason", "paragraphs", "supported", "relevant"],
                 "properties": {"quote": {"type": "string", "minLength": 1, "maxLength": cfg.max_quote_chars},
                                "reason": {"type": "string", "minLength": 1, "maxLength": cfg.max_reason_chars},
                                "paragraphs": cite, "supported": yes_no, "relevant": yes_no}}
        sentence = {"type": "object", "additionalProperties": False, "required": ["sentence", "points"],
                    "properties": {"sentence": {"type": "integer", "enum": list(range(1, sentences + 1))},
                                   "points": {"type": "array", "minItems": 1, "maxItems": 3, "items": point}}}
        missing = {"type": "object", "additionalProperties": False, "required": ["text", "paragraphs"],
                   "properties": {"text": {"type": "string", "minLength": 1, "maxLength": cfg.max_quote_chars},
                                  "paragraphs": {**cite, "minItems": 1} if shown else cite}}
        return {"type": "object", "additionalProperties": False, "required": ["sentences", "missing"],
                "properties": {"sentences": {"type": "array", "minItems": sentences, "maxItems": sentences,
                                             "items": sentence},
                               "missing": {"type": "array", "maxItems": cfg.max_missing, "items": missing}}}

    def _max_tokens(self, sentences: int) -> int:
        """Room for two LDPs a sentence of half-length quotes and reasons, and the missing points."""
        per_point = (self.config.max_quote_chars // 2 + self.config.max_reason_chars) // 3 + 30
        return 64 + sentences * (12 + 2 * per_point) + self.config.max_missing * 60

    # evaluation ---------------------------------------------------------------------------------
    async def _juror(self, item: Item, client: JudgeClient, view: dict[str, Any], n: int,
                     spans: list[tuple[int, int]], sampled: bool) -> tuple[list[dict[str, Any]] | Unscored, list[str]]:
        shown = view["shown"]

        def check(out: Tagging) -> None:
            numbers = [s.sentence for s in out.sentences]
            if numbers != list(range(1, len(spans) + 1)):
                raise OutputInvalid(f"give every sentence 1–{len(spans)} once, in order (got {numbers})")
            points = [p for s in out.sentences for p in s.points]
            for cited in [*(p.paragraphs for p in points), *(m.paragraphs for m in out.missing)]:
                wrong = [c for c in cited if c not in shown]
                if wrong:
                    raise OutputInvalid(f"paragraph(s) {wrong} were not shown")

        soft = self.config.verdicts == "soft"
        out = await generate_structured(
            client, self.render(item, view), Tagging,
            GenerateConfig(temperature=self.config.sample_temperature if sampled else self.config.temperature,
                           max_tokens=self._max_tokens(len(spans)), seed=self.config.seed + n,
                           json_schema=self.schema(len(spans), shown), logprobs=soft,
                           top_logprobs=self.config.top_logprobs if soft else 0),
            check=check, max_reasks=self.config.max_reasks, metric="correctness")
        if out.value is None:
            assert out.unscored is not None
            return out.unscored, out.keys
        points = [(s.sentence, p) for s in out.value.sentences for p in s.points]
        probs: dict[str, list[float]] = {}
        if soft:
            assert out.completion is not None
            for field in ("supported", "relevant"):
                found = field_label_probs(out.completion, field, ("yes", "no")) or []
                if [f.greedy for f in found] != [getattr(p, field) for _, p in points]:
                    return Unscored(reason=f"soft verdicts: the judge's logprobs cover {len(found)} of {len(points)} "
                                           f"'{field}' values (or disagree with the parsed ones)",
                                    raw_output=out.completion.text, metric="correctness"), out.keys
                probs[field] = [f.p["yes"] for f in found]
        passages = EvidencePassages(item, view)
        ldps: list[dict[str, Any]] = []
        for k, (sentence, p) in enumerate(points):
            start, end, how = locate(item.response, spans, sentence, p.quote)
            text = item.response[start:end]
            citation = sorted(set(p.paragraphs))
            ldp = {"text": text, "tag": p.tag, "start": start, "end": end, "citation": citation,
                   "sentence": sentence, "reason": p.reason, "located": how, "supported": p.supported,
                   "relevant": p.relevant, **passages.check(text, citation)}
            if how != "exact":
                ldp["judge_quote"] = p.quote
            counts_supported = p.supported == "yes"
            problems = []
            if ldp["figures_missing"]:
                figures = ", ".join(ldp["figures_missing"])
                problems.append(f"states {figures}, which its source passage does not contain")
            if ldp["names_missing"]:
                problems.append(f"names {', '.join(ldp['names_missing'])}, which the document never mentions")
            if problems and p.supported == "yes":
                ldp["downgraded"] = "called supported, but " + " and ".join(problems)
                if self.config.evidence_check == "require":
                    ldp["judge_tag"], ldp["tag"] = p.tag, "incorrect"
                    counts_supported = False
            if soft:
                ps = probs["supported"][k] if counts_supported else 0.0
                pr = probs["relevant"][k]
                ldp.update(p_supported=probs["supported"][k], p_relevant=pr,
                           p_tags={"correct": ps * pr, "incorrect": 1.0 - ps, "irrelevant": ps * (1.0 - pr)})
            ldps.append(ldp)
        for m in out.value.missing:
            ldps.append({"text": m.text.strip(), "tag": "missing", "start": None, "end": None,
                         "citation": sorted(set(m.paragraphs)), "sentence": None, "reason": None, "located": None})
        keys = list(out.keys)
        if self.config.verdicts == "direct":
            problem = await self._direct_checks(item, client, view, ldps, keys)
            if problem is not None:
                return problem, keys
        return ldps, keys

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        view = self.view(item)
        spans = sentence_spans(item.response)
        keys: list[str] = []
        jurors: list[list[dict[str, Any]]] = []
        failures: list[Unscored] = []
        members = getattr(client.backend, "members", None)
        if members is not None and self.config.samples > 1:
            raise ConfigError("a jury of judges answers once each: use samples=1 with jury/…")
        clients = ([client.member(k) for k in range(len(members))] if members is not None
                   else [client] * self.config.samples)
        for n, juror in enumerate(clients):
            result, used = await self._juror(item, juror, view, 0 if members is not None else n, spans,
                                             sampled=members is None and self.config.samples > 1)
            keys += used
            if isinstance(result, Unscored):
                failures.append(result)
            else:
                jurors.append(result)
        details: dict[str, Any] = {"document_view": view, "sentences": [list(s) for s in spans]}
        enough = bool(jurors) if len(clients) == 1 else len(jurors) * 2 > len(clients)
        if not enough:
            reason = "; ".join(dict.fromkeys(f.reason for f in failures))
            if len(clients) > 1:
                reason = f"{len(failures)} of {len(clients)} jurors unparseable: {reason}"
            return ItemResult(scores=dict.fromkeys(self.metrics), call_keys=keys, details=details,
                              unscored=[Unscored(reason=reason, raw_output=failures[0].raw_output, metric=m)
                                        for m in self.metrics])
        if len(jurors) == 1:
            ldps = sorted(jurors[0], key=lambda d: (d["start"] is None, d["start"] or 0, d["end"] or 0))
        else:
            ldps = aggregate_jurors(jurors, self.config.aggregate, self.config.matcher, self.config.match_threshold)
            details["jury"] = {"jurors": len(clients), "parsed": len(jurors), "aggregate": self.config.aggregate,
                               "matcher": self.config.matcher,
                               **({"judges": [m.name for m in members]} if members is not None else {})}
        counts = {t: sum(1 for d in ldps if d["tag"] == t) for t in TAGS}
        if self.config.verdicts in ("soft", "direct"):
            expected = {t: sum(d["p_tags"][t] for d in ldps if d["tag"] != "missing") for t in TAGS[:3]}
            expected["missing"] = float(counts["missing"])
            scores, unscored = ldp_scores(expected, self.config.beta)
            details["expected_counts"] = expected
        else:
            scores, unscored = ldp_scores(counts, self.config.beta)
        details.update(ldps=ldps, counts=counts, verdicts=self.config.verdicts)
        return ItemResult(scores=scores, unscored=unscored, details=details, call_keys=keys)

    def estimate(self, items: list[Item]) -> CallEstimate:
        total = CallEstimate()
        for item in items:
            view = self.view(item)
            prompt = (len(self.prompt.system) + len(item.query) + view["chars_shown"] + len(item.response)) // 4 + 80
            n = len(sentence_spans(item.response))
            total += CallEstimate(calls=self.config.samples, prompt_tokens=prompt * self.config.samples,
                                  completion_tokens=self.config.samples * min(self._max_tokens(n), 60 * n + 120))
        return total


def lemaj_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Tag counts per system, the triage split at the paper's thresholds, and each answer cut
    into its LDPs for colouring in place."""
    from assay.methods.lemaj.triage import triage

    per_system: dict[str, Counter[str]] = {}
    for r in rows:
        tally = per_system.setdefault(str(r.get("system") or "—"), Counter())
        for d in r.get("ldps") or []:
            tally[d["tag"]] += 1
    pieces = {}
    for r in rows:
        pieces[f"{r.get('id')}::{r.get('system')}"] = answer_pieces(str(r.get("response") or ""), r.get("ldps") or [])
    split = triage(rows)
    return {"tags": TAGS, "per_system": {s: {t: c[t] for t in TAGS} for s, c in sorted(per_system.items())},
            "triage": split, "pieces": pieces}


def answer_pieces(response: str, ldps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answer as consecutive pieces, each plain or one LDP's span with its tag (overlapping
    spans: the earlier wins), for colouring in place."""
    spans = sorted((d for d in ldps if d.get("start") is not None), key=lambda d: (d["start"], -d["end"]))
    pieces, cursor = [], 0
    for d in spans:
        start, end = max(d["start"], cursor), d["end"]
        if end <= start:
            continue
        if start > cursor:
            pieces.append({"text": response[cursor:start], "tag": None})
        pieces.append({"text": response[start:end], "tag": d["tag"], "reason": d.get("reason"),
                       "citation": d.get("citation")})
        cursor = end
    if cursor < len(response):
        pieces.append({"text": response[cursor:], "tag": None})
    return pieces



# --- agreement with experts (§4.2.2, §4.3, App. B) -------------------------------------------------
def alignment(judge: list[dict[str, Any]], human: list[dict[str, Any]], matcher: Matcher = "embeddings",
              threshold: float | None = None) -> dict[str, Any]:
    """LeMAJ Alignment (§4.2.2): the judge's LDPs are matched one-to-one to a human's by text
    similarity and their tags compared; an unmatched judge LDP counts as if the human had tagged
    it ``irrelevant``, an unmatched human LDP as if the judge had tagged it ``missing``. Accuracy
    is the share of agreeing tags over matched + unmatched LDPs; the confusion matrix is human
    tag → judge tag (``unmatched`` where one side has none)."""
    pairs = match([d["text"] for d in judge], [d["text"] for d in human], matcher, threshold)
    matched_j = {i for i, _, _ in pairs}
    matched_h = {k for _, k, _ in pairs}
    confusion: dict[str, Counter[str]] = {}
    agree = 0
    for i, k, _ in pairs:
        agree += judge[i]["tag"] == human[k]["tag"]
        confusion.setdefault(human[k]["tag"], Counter())[judge[i]["tag"]] += 1
    only_judge = [judge[i] for i in range(len(judge)) if i not in matched_j]
    only_human = [human[k] for k in range(len(human)) if k not in matched_h]
    agree += sum(d["tag"] == "irrelevant" for d in only_judge) + sum(d["tag"] == "missing" for d in only_human)
    for d in only_judge:
        confusion.setdefault("unmatched", Counter())[d["tag"]] += 1
    for d in only_human:
        confusion.setdefault(d["tag"], Counter())["unmatched"] += 1
    total = len(pairs) + len(only_judge) + len(only_human)
    return {"accuracy": agree / total if total else None, "matched": len(pairs), "judge_only": len(only_judge),
            "human_only": len(only_human), "confusion": {h: dict(c) for h, c in confusion.items()}}




__all__ = ["TAGS", "LeMAJ", "LeMAJConfig", "bucket", "bucketed_accuracy", "grade_score", "ldp_scores",
           "percent_agreement"]
