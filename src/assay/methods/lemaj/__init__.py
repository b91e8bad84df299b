"""LeMAJ: reference-free Legal Data Points.

Paper: LeMAJ (Legal LLM-as-a-Judge): Bridging Legal Reasoning and LLM Evaluation, §3–5, App. E.4, H.

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
jurors are matched by sentence embeddings (``matcher``, :mod:`assay.judge.embeddings`); ``majority``
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
supported that states a figure the passage lacks (:func:`assay.judge.text.unsupported_figures`: a
percentage needs the same percentage), or names something the document, gold answer and question
never mention (:func:`assay.judge.text.unsupported_names`: a capitalised word no word there shares four
first letters with — a changed party, an outside statute), is recorded with ``figures_missing`` /
``names_missing`` and ``downgraded`` and, under "require", tagged incorrect (``judge_tag`` keeps
the judge's). Without a document or a gold
answer there is nothing to check against (``figures_missing`` null).

Soft verdicts (``verdicts="soft"``, issue 17). The judge's probabilities of "yes" at each
point's "supported" and "relevant" values (:func:`assay.judge.verdicts.field_label_probs`) give each point
P(incorrect) = 1 − p_s, P(irrelevant) = p_s (1 − p_r), P(correct) = p_s p_r, with p_s = 0 for a point
the evidence check downgraded under "require". Metrics are ratios of expected counts (missing
points count 1 each); a jury averages its members' probabilities per matched point. A parsed
answer whose logprobs do not cover every point is Unscored with that reason, never scored hard.
"""
from __future__ import annotations

from assay.methods.lemaj import review  # registers LeMAJ's review view, grades and annotation checks
from assay.methods.lemaj.evaluate import LeMAJ, aggregate_jurors
from assay.methods.lemaj.prompting import (
    EvidencePassages,
    choose_paragraphs,
    locate,
    paragraph_spans,
    sentence_spans,
)
from assay.methods.lemaj.report import answer_pieces, lemaj_section
from assay.methods.lemaj.review import alignment
from assay.methods.lemaj.schemas import SEVERITY, SOURCE_RULES, STRINGENCY, LeMAJConfig, Tagging
from assay.methods.lemaj.scores import TAGS, bucket, bucketed_accuracy, ldp_scores, percent_agreement
from assay.store.human import grade_score

__all__ = ["SEVERITY", "SOURCE_RULES", "STRINGENCY", "TAGS", "EvidencePassages", "LeMAJ", "LeMAJConfig", "Tagging",
           "aggregate_jurors", "alignment", "answer_pieces", "bucket", "bucketed_accuracy", "choose_paragraphs",
           "grade_score", "ldp_scores", "lemaj_section", "locate", "paragraph_spans", "percent_agreement", "review",
           "sentence_spans"]
