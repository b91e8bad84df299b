"""LeMAJ: spans, citations, metrics, long documents, the jury and triage, on scripted judges."""

from __future__ import annotations

import json
from typing import Any

import pytest

import assay
from assay.core.types import Item
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.methods.lemaj import (
    LeMAJ,
    LeMAJConfig,
    aggregate_jurors,
    answer_pieces,
    bucket,
    ldp_scores,
    locate,
    paragraph_spans,
    sentence_spans,
)
from assay.methods.lemaj.triage import triage
from tests.helpers import WithLogprobs

QUIET = RunnerConfig(progress=False)

CONTRACT = """1. Payment. Customer shall pay each invoice within 45 days of receipt.

2. Late payment. Provider may suspend the Services if an undisputed invoice is more than 30 days overdue.

3. Governing law. This Agreement is governed by the laws of the State of New York."""

ANSWER = ("Payment is due within 60 days of the invoice. The agreement is governed by New York law. "
          "Many companies prefer monthly billing.")


def item(**extra: Any) -> Item:
    return Item(id="c1", query="What are the payment terms?", response=ANSWER, document=CONTRACT, **extra)


def tagging(points: list[dict[str, Any]], missing: list[dict[str, Any]] | None = None) -> str:
    """The judge's JSON: the points (each naming its sentence) grouped by sentence, in order."""
    checks = {"correct": ("yes", "yes"), "incorrect": ("no", "yes"), "irrelevant": ("yes", "no")}
    sentences: dict[int, list[dict[str, Any]]] = {}
    for p in points:
        supported, relevant = checks[p["tag"]]
        entry = {k: v for k, v in p.items() if k not in ("sentence", "tag")}
        sentences.setdefault(p["sentence"], []).append({**entry, "supported": supported, "relevant": relevant})
    return json.dumps({"sentences": [{"sentence": n, "points": v} for n, v in sorted(sentences.items())],
                       "missing": missing or []})


GOOD = tagging([{"sentence": 1, "quote": "payment is due within 60 days", "reason": "¶1 says 45 days",
                 "paragraphs": [1], "tag": "incorrect"},
                {"sentence": 2, "quote": "governed by New York law", "reason": "true but not asked",
                 "paragraphs": [3], "tag": "irrelevant"},
                {"sentence": 3, "quote": "Many companies prefer monthly billing", "reason": "outside the contract",
                 "paragraphs": [], "tag": "incorrect"}],
               [{"text": "Services may be suspended when an invoice is over 30 days overdue", "paragraphs": [2]}])


def test_sentence_and_paragraph_geometry_round_trips() -> None:
    spans = sentence_spans(ANSWER)
    assert [ANSWER[s:e] for s, e in spans] == ["Payment is due within 60 days of the invoice.",
                                              "The agreement is governed by New York law.",
                                              "Many companies prefer monthly billing."]
    paragraphs = paragraph_spans(CONTRACT, 700)
    assert len(paragraphs) == 3 and CONTRACT[paragraphs[1][0]:paragraphs[1][1]].startswith("2. Late payment")
    long = " ".join(f"Clause {n} says something rather long about the obligations." for n in range(40))
    pieces = paragraph_spans(long, 200)
    assert len(pieces) > 5 and all(e - s <= 200 for s, e in pieces)
    assert " ".join(long[s:e] for s, e in pieces) == long  # cut at sentence ends, nothing lost
    lines = "Clause one applies.\nClause two applies.\nClause three applies."
    assert len(paragraph_spans(lines, 700)) == 3  # no blank lines: one paragraph a line


def test_a_quote_is_located_exactly_loosely_or_falls_back_to_its_sentence() -> None:
    spans = sentence_spans(ANSWER)
    start, end, how = locate(ANSWER, spans, 2, "governed by New York law")
    assert (ANSWER[start:end], how) == ("governed by New York law", "exact")
    start, end, how = locate(ANSWER, spans, 2, '"GOVERNED  by new york LAW."')  # case, spacing, quotes, period
    assert (ANSWER[start:end], how) == ("governed by New York law", "exact")
    start, end, how = locate(ANSWER, spans, 1, "Many companies prefer monthly billing")  # wrong sentence given
    assert ANSWER[start:end] == "Many companies prefer monthly billing" and how == "exact"
    start, end, how = locate(ANSWER, spans, 1, "payment falls due after two months")
    assert (ANSWER[start:end], how) == ("Payment is due within 60 days of the invoice.", "sentence")


def test_metrics_by_hand_and_undefined_ones_carry_a_reason() -> None:
    scores, unscored = ldp_scores({"correct": 3, "incorrect": 1, "irrelevant": 1, "missing": 2}, beta=2.0)
    assert scores["correctness"] == 0.75 and scores["precision"] == 0.75 and scores["recall"] == 0.6
    assert scores["f1"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert scores["relevance"] == pytest.approx(5 * 0.75 * 0.6 / (4 * 0.75 + 0.6))  # F2
    assert unscored == []
    scores, unscored = ldp_scores({"irrelevant": 2, "missing": 1})
    assert scores["correctness"] is None and scores["precision"] == 0.0 and scores["recall"] == 0.0
    assert scores["f1"] == 0.0
    assert [(u.metric, u.reason) for u in unscored] == [("correctness", "undefined: no correct or incorrect point")]
    assert [bucket(x) for x in (0.0, 0.24, 0.25, 0.74, 0.999, 1.0)] == [0, 0, 0.25, 0.5, 0.75, 1.0]


def test_one_call_gives_ldps_with_spans_citations_and_scores() -> None:
    judge = ScriptedBackend([GOOD])
    row = assay.evaluate([item()], "lemaj", judge, runner=QUIET).records()[0]
    assert len(judge.calls) == 1
    ldps = row["ldps"]
    assert [d["tag"] for d in ldps] == ["incorrect", "irrelevant", "incorrect", "missing"]
    for d in ldps[:3]:
        assert ANSWER[d["start"]:d["end"]] == d["text"] and d["located"] == "exact"
    assert ldps[0]["text"] == "Payment is due within 60 days" and ldps[0]["citation"] == [1]
    assert ldps[3]["start"] is None and ldps[3]["end"] is None and ldps[3]["citation"] == [2]
    assert row["correctness"] == 0.0 and row["precision"] == 0.0 and row["recall"] == 0.0 and row["f1"] == 0.0
    assert row["counts"] == {"correct": 0, "incorrect": 2, "irrelevant": 1, "missing": 1}
    assert row["document_view"]["strategy"] == "all"
    prompt = judge.calls[0][-1].content
    assert "[2] 2. Late payment" in prompt and "[3] Many companies prefer monthly billing." in prompt
    assert "no gold answer given" in prompt


def test_citations_outside_the_shown_paragraphs_are_re_asked_then_unscored() -> None:
    bad = tagging([{"sentence": n, "quote": "Payment", "reason": "r", "paragraphs": [1 if n < 3 else 9],
                    "tag": "correct"} for n in (1, 2, 3)])  # paragraph 9 does not exist
    judge = ScriptedBackend([bad, bad, bad])
    row = assay.evaluate([item()], "lemaj", judge, runner=QUIET).records()[0]
    assert row["status"] == "unscored" and "paragraph(s) [9] were not shown" in row["unscored_reason"]
    assert row["correctness"] is None and len(judge.calls) == 3


def test_a_long_document_shows_the_relevant_paragraphs_and_says_so() -> None:
    filler = "\n\n".join(f"{n}. Schedule {n}. The supplier delivers widgets of type {n} to the depot."
                         for n in range(4, 120))
    document = CONTRACT + "\n\n" + filler
    long_item = Item(id="c2", query="When must the customer pay an invoice?", response=ANSWER, document=document)
    method = LeMAJ(LeMAJConfig(max_document_chars=600))
    view = method.view(long_item)
    assert view["strategy"] == "retrieve" and 1 in view["shown"] and view["chars_shown"] <= 600
    assert len(view["paragraphs"]) == 119 and view["chars_total"] == len(document)
    text = "\n".join(m.content for m in method.render(long_item, view))
    assert "[…]" in text and "[1] 1. Payment." in text
    refusing = LeMAJ(LeMAJConfig(max_document_chars=600, long_documents="refuse"))
    assert "over max_document_chars" in (refusing.check_item(long_item) or "")
    assert LeMAJ().check_item(Item(id="x", query="q", response="A b.")) is not None  # no document at all


def test_a_jury_of_samples_aggregates_per_ldp() -> None:
    def ldp(text: str, tag: str, start: int | None = 0) -> dict[str, Any]:
        return {"text": text, "tag": tag, "start": start, "end": None if start is None else start + len(text)}

    jurors = [[ldp("payment within 60 days", "correct"), ldp("New York law governs", "irrelevant", 40),
               ldp("suspension after 30 days overdue", "missing", None)],
              [ldp("payment within 60 days", "incorrect"), ldp("New York law governs", "irrelevant", 40)],
              [ldp("payment within 60 days", "correct"), ldp("New York law governs", "correct", 40),
               ldp("suspension after 30 days overdue", "missing", None), ldp("an odd extra", "incorrect", 80)]]
    majority = aggregate_jurors(jurors, "majority", "lexical")
    assert [(d["text"], d["tag"]) for d in majority] == [
        ("payment within 60 days", "correct"), ("New York law governs", "irrelevant"),
        ("suspension after 30 days overdue", "missing")]  # "an odd extra": one juror of three, dropped
    assert majority[0]["votes"] == {"correct": 2, "incorrect": 1}
    both = aggregate_jurors(jurors, "majority+rule", "lexical")
    assert [(d["text"], d["tag"]) for d in both][:2] == [("payment within 60 days", "incorrect"),
                                                          ("New York law governs", "irrelevant")]
    assert ("an odd extra", "incorrect") in [(d["text"], d["tag"]) for d in both]  # any incorrect is kept
    rule = aggregate_jurors(jurors, "rule", "lexical")
    assert rule[1]["tag"] == "irrelevant"  # the most severe of irrelevant, irrelevant, correct


def test_samples_run_as_a_jury_through_the_method() -> None:
    other = tagging([{"sentence": 1, "quote": "Payment is due within 60 days", "reason": "wrong days",
                      "paragraphs": [1], "tag": "incorrect"},
                     {"sentence": 2, "quote": "The agreement is governed by New York law", "reason": "ok",
                      "paragraphs": [3], "tag": "correct"},
                     {"sentence": 3, "quote": "Many companies prefer monthly billing", "reason": "aside",
                      "paragraphs": [], "tag": "irrelevant"}])
    judge = ScriptedBackend([GOOD, other, "not json", "not json", "not json"])
    row = assay.evaluate([item()], "lemaj", judge, runner=QUIET, samples=3, matcher="lexical").records()[0]
    assert row["jury"] == {"jurors": 3, "parsed": 2, "aggregate": "majority+rule", "matcher": "lexical"}
    tags = {d["text"]: d["tag"] for d in row["ldps"]}
    assert tags["Payment is due within 60 days"] == "incorrect"
    assert {d["jurors"] for d in row["ldps"]} >= {2}
    assert len(judge.calls) == 5  # jurors 1 and 2, then juror 3's answer and its two re-asks


def test_triage_by_hand_and_from_the_executable(tmp_path) -> None:
    rows = [{"id": "a", "correctness": 1.0, "relevance": 0.9}, {"id": "b", "correctness": 1.0, "relevance": 0.7},
            {"id": "c", "correctness": 0.5, "relevance": 1.0}, {"id": "d", "correctness": None, "relevance": 0.9}]
    result = triage(rows, minutes_per_item=4)
    assert [r["id"] for r in result["cleared"]] == ["a"]
    assert [r["why"] for r in result["needs_review"]] == ["relevance 0.70 < 0.8", "correctness 0.50 < 1",
                                                          "correctness undefined or unscored"]
    assert result["minutes_saved"] == 4 and result["minutes_without_triage"] == 16 and result["share_saved"] == 0.25
    assert [r["id"] for r in triage(rows, min_correctness=0.5, min_relevance=0.7)["cleared"]] == ["a", "b", "c"]

    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.run([exe, "triage", "run.jsonl", "--min-relevance", "0.7", "--minutes-per-item", "3",
                           "--output", "t.json"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    written = json.loads((tmp_path / "t.json").read_text())
    assert [r["id"] for r in written["cleared"]] == ["a", "b"] and written["minutes_saved"] == 6
    assert "2 of 4 answer(s) cleared" in proc.stdout
    (tmp_path / "other.jsonl").write_text(json.dumps({"id": "x", "f_beta": 0.3}) + "\n")
    bad = subprocess.run([exe, "triage", "other.jsonl"], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=60)
    assert bad.returncode == 2 and "not a LeMAJ run" in bad.stderr


def test_the_report_colours_ldps_in_place_and_escapes_the_answer(tmp_path) -> None:
    hostile = "Payment is due within 60 days <script>alert(1)</script>. The agreement is governed by New York law."
    judge = ScriptedBackend([tagging([{"sentence": 1, "quote": "Payment is due within 60 days", "reason": "<b>x</b>",
                                       "paragraphs": [1], "tag": "incorrect"},
                                      {"sentence": 2, "quote": "governed by New York law", "reason": "true",
                                       "paragraphs": [3], "tag": "irrelevant"}])])
    result = assay.evaluate([Item(id="h", query="Terms?", response=hostile, document=CONTRACT, system="s")], "lemaj",
                            judge, runner=QUIET, store=tmp_path / "l.db")
    html = result.report(tmp_path / "r.html").read_text()
    assert "Legal Data Points (LeMAJ)" in html and '<span class="ldp-incorrect"' in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>x</b>" not in html
    assert '<span class="ldp-irrelevant"' in html
    overlapping = [{"start": 1, "end": 3, "tag": "correct"}, {"start": 2, "end": 5, "tag": "missing"}]
    pieces = answer_pieces("abcdef", overlapping)
    assert [(p["text"], p["tag"]) for p in pieces] == [("a", None), ("bc", "correct"), ("de", "missing"), ("f", None)]


def test_statements_are_matched_by_meaning_with_the_packaged_embedding_model() -> None:
    from assay.judge.embeddings import match, similarity

    left = ["The customer must pay invoices within 45 days.", "New York law governs the agreement."]
    right = ["The contract is governed by the laws of New York.", "Invoices are payable 45 days after receipt.",
             "The supplier delivers widgets."]
    pairs = match(left, right, "embeddings")
    assert [(i, j) for i, j, _ in pairs] == [(0, 1), (1, 0)]
    sims = similarity(left, right, "embeddings")
    assert sims.shape == (2, 3) and sims[0, 2] < 0.6 and all(s >= 0.6 for _, _, s in pairs)
    # TF-IDF sees shared words only: the paraphrase of the payment term shares too few of them
    assert (0, 1) not in [(i, j) for i, j, _ in match(left, right, "lexical")]


def test_alignment_grades_and_agreement_by_hand() -> None:
    from assay.methods.lemaj import alignment, bucketed_accuracy, grade_score, percent_agreement

    judge = [{"text": "payment is due within 45 days of receipt", "tag": "correct"},
             {"text": "the agreement is governed by new york law", "tag": "correct"},
             {"text": "widgets are shipped monthly to the depot", "tag": "irrelevant"},
             {"text": "an unrelated remark about golf courses", "tag": "correct"}]
    human = [{"text": "payment is due within 45 days of receipt of the invoice", "tag": "correct"},
             {"text": "the agreement is governed by new york law", "tag": "irrelevant"},
             {"text": "services may be suspended for late payment", "tag": "missing"},
             {"text": "late fees accrue at two percent per month", "tag": "correct"}]
    result = alignment(judge, human, "lexical")
    # matched: payment (agree), governing law (disagree); judge-only: widgets (irrelevant → agree),
    # golf (correct → disagree); human-only: suspension (missing → agree), late fees (correct → disagree)
    assert (result["matched"], result["judge_only"], result["human_only"]) == (2, 2, 2)
    assert result["accuracy"] == pytest.approx(3 / 6)
    assert result["confusion"]["irrelevant"] == {"correct": 1} and result["confusion"]["missing"] == {"unmatched": 1}
    assert alignment([], [], "lexical")["accuracy"] is None
    assert [grade_score(g) for g in (1, 2, 3, 4, 5)] == [0, 0.25, 0.5, 0.75, 1]
    with pytest.raises(ValueError):
        grade_score(0)
    assert bucketed_accuracy([0.8, 0.3, 1.0], [0.75, 0.5, 1.0]) == pytest.approx(2 / 3)
    assert percent_agreement([1.0, 0.5, 0.75, 0.2], [1.0, 0.25, 0.8, 0.0]) == 0.75


def test_without_a_document_the_judge_uses_established_knowledge_when_asked() -> None:
    bare = Item(id="k", query="Why is the sky blue?", response="Rayleigh scattering. Blue light scatters more.")
    assert LeMAJ().check_item(bare) is not None
    method = LeMAJ(LeMAJConfig(without_document="knowledge"))
    assert method.check_item(bare) is None
    view = method.view(bare)
    assert view["source"] == "knowledge" and view["shown"] == []
    text = "\n".join(m.content for m in method.render(bare, view))
    assert "(no document given)" in text and "well established in the field" in text
    schema = method.schema(2, [])
    assert schema["properties"]["missing"]["items"]["properties"]["paragraphs"]["maxItems"] == 0
    canned = tagging([{"sentence": 1, "quote": "Rayleigh scattering", "reason": "right", "paragraphs": [],
                       "tag": "correct"},
                      {"sentence": 2, "quote": "Blue light scatters more", "reason": "right", "paragraphs": [],
                       "tag": "correct"}], [{"text": "shorter wavelengths scatter more strongly", "paragraphs": []}])
    row = assay.evaluate([bare], method, ScriptedBackend([canned]), runner=QUIET).records()[0]
    assert row["correctness"] == 1.0 and row["recall"] == pytest.approx(2 / 3)
    skipping = json.dumps({"sentences": [{"sentence": 2, "points": json.loads(canned)["sentences"][1]["points"]}],
                           "missing": []})
    row = assay.evaluate([bare], method, ScriptedBackend([skipping] * 3), runner=QUIET).records()[0]
    assert row["status"] == "unscored" and "give every sentence 1–2 once, in order (got [2])" in row["unscored_reason"]


def test_a_jury_of_judges_through_the_executable(tmp_path) -> None:
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    (tmp_path / "items.jsonl").write_text(json.dumps(item().model_dump(exclude_none=True)) + "\n")
    lenient = tagging([{"sentence": n, "quote": q, "reason": "fine", "paragraphs": [1], "tag": "correct"}
                       for n, q in ((1, "Payment is due within 60 days"), (2, "governed by New York law"),
                                    (3, "Many companies prefer monthly billing"))])
    (tmp_path / "a.json").write_text(json.dumps({"responses": [GOOD]}))
    (tmp_path / "b.json").write_text(json.dumps({"responses": [lenient]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    jury = "jury/scripted/a.json+scripted/b.json"
    # the evidence check would overrule juror b's "60 days: correct" (the contract says 45): flag
    # only, so that the votes are the jurors' own
    proc = subprocess.run([exe, "eval", "lemaj", "items.jsonl", "--judge", jury, "--matcher", "lexical",
                           "--evidence-check", "flag", "--store", "j.db", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([exe, "export", "j.db", "-o", "j.jsonl"], cwd=tmp_path, env=env).returncode == 0
    row = json.loads((tmp_path / "j.jsonl").read_text())
    assert row["jury"]["judges"] == ["scripted/a", "scripted/b"] and row["jury"]["parsed"] == 2
    tags = [(d["text"], d["tag"], d["votes"]) for d in row["ldps"]]
    # majority+rule: any juror's "incorrect" wins; a 1–1 split otherwise goes to the more severe tag
    assert tags[0] == ("Payment is due within 60 days", "incorrect", {"incorrect": 1, "correct": 1})
    assert tags[1] == ("governed by New York law", "irrelevant", {"irrelevant": 1, "correct": 1})
    assert ("Services may be suspended when an invoice is over 30 days overdue", "missing", {"missing": 1}) not in tags
    bad = subprocess.run([exe, "eval", "pointwise", "items.jsonl", "--judge", jury, "--reference-free", "--store",
                          "p.db"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "cannot use a jury" in bad.stderr and not (tmp_path / "p.db").exists()


LENIENT = tagging([{"sentence": 1, "quote": "Payment is due within 60 days", "reason": "fine", "paragraphs": [1],
                    "tag": "correct"},
                   {"sentence": 2, "quote": "governed by New York law", "reason": "fine", "paragraphs": [3],
                    "tag": "correct"},
                   {"sentence": 3, "quote": "Many companies prefer monthly billing", "reason": "fine",
                    "paragraphs": [], "tag": "correct"}])


def test_the_evidence_check_overrules_a_supported_point_whose_figure_its_passage_lacks() -> None:
    rows = {}
    for policy in ("require", "flag"):
        method = LeMAJ(LeMAJConfig(evidence_check=policy))
        rows[policy] = assay.evaluate([item()], method, ScriptedBackend([LENIENT]), runner=QUIET).records()[0]
    first = rows["require"]["ldps"][0]
    assert first["text"] == "Payment is due within 60 days" and first["tag"] == "incorrect"
    assert first["judge_tag"] == "correct" and first["figures_missing"] == ["60"]
    assert first["evidence_paragraphs"] == [1] and "60" in first["downgraded"]
    assert rows["require"]["correctness"] == pytest.approx(2 / 3)
    # a figure-free point has nothing to check; the uncited one still gets its closest paragraph
    assert rows["require"]["ldps"][1]["figures_missing"] == [] and rows["require"]["ldps"][1]["downgraded"] is None
    flagged = rows["flag"]["ldps"][0]
    assert flagged["tag"] == "correct" and flagged["downgraded"] and "judge_tag" not in flagged
    assert rows["flag"]["correctness"] == 1.0


def test_soft_verdicts_score_expected_counts_from_the_judges_probabilities() -> None:
    backend = WithLogprobs(ScriptedBackend([LENIENT]), {"supported": ("yes", "no"), "relevant": ("yes", "no")},
                           {"supported": [0.9, 0.8, 0.6], "relevant": [0.95, 0.7, 0.5]})
    row = assay.evaluate([item()], LeMAJ(LeMAJConfig(verdicts="soft")), backend, runner=QUIET).records()[0]
    first, second, third = row["ldps"]
    assert first["p_supported"] == pytest.approx(0.9) and first["tag"] == "incorrect"
    # the evidence check downgraded the first point: it counts as unsupported whatever its probability
    assert first["p_tags"] == pytest.approx({"correct": 0.0, "incorrect": 1.0, "irrelevant": 0.0})
    assert second["p_tags"] == pytest.approx({"correct": 0.56, "incorrect": 0.2, "irrelevant": 0.24})
    assert third["p_tags"] == pytest.approx({"correct": 0.3, "incorrect": 0.4, "irrelevant": 0.3})
    correct, incorrect, irrelevant = 0.86, 1.6, 0.54
    assert row["correctness"] == pytest.approx(correct / (correct + incorrect))
    assert row["precision"] == pytest.approx(correct / (correct + irrelevant))
    assert row["recall"] == pytest.approx(1.0)  # no missing point
    assert row["verdicts"] == "soft"
    # a judge without logprobs on the values: Unscored with the reason, never a hard score
    plain = assay.evaluate([item()], LeMAJ(LeMAJConfig(verdicts="soft")), ScriptedBackend([LENIENT]),
                           runner=QUIET).records()[0]
    assert plain["status"] == "unscored" and "soft verdicts" in plain["unscored_reason"]


def test_a_changed_party_name_or_an_outside_entity_is_not_supported_by_the_document() -> None:
    from assay.judge.text import unsupported_names

    assert unsupported_names("Payment goes to Southwind Ltd. The Customer pays under English law.",
                             "Northwind Ltd (Provider) and the Customer; the laws of England apply.") == ["Southwind"]
    answer = "Under the UCC, payment is due promptly. The agreement is governed by New York law."
    lenient = tagging([{"sentence": 1, "quote": "Under the UCC, payment is due promptly", "reason": "ok",
                        "paragraphs": [1], "tag": "correct"},
                       {"sentence": 2, "quote": "governed by New York law", "reason": "ok", "paragraphs": [3],
                        "tag": "correct"}])
    bare = Item(id="c1", query="What are the payment terms?", response=answer, document=CONTRACT)
    row = assay.evaluate([bare], LeMAJ(), ScriptedBackend([lenient]), runner=QUIET).records()[0]
    first, second = row["ldps"]
    assert first["tag"] == "incorrect" and first["names_missing"] == ["UCC"] and "UCC" in first["downgraded"]
    assert second["tag"] == "correct" and second["names_missing"] == []
