"""LeMAJ's review: a reviewer's edits of the Legal Data Points, read back, and the agreement of two reviewers.

Annotations are append-only (:meth:`assay.store.Store.annotate`); the layer a reviewer sees is
the latest annotation per address and author. Addresses are either a verdict of the judge's
result (``ldps[2].tag``, ``criteria[0].satisfied``, ``recall``) — an override — or something
the reviewer adds, under ``human.``:

- ``human.grade_correctness``, ``human.grade_relevance``: the 1–5 grades of LeMAJ Table 8;
- ``human.missing[k]``: a missing point (``{"text": ...}``) the judge did not list;
- ``human.split[k]``: ``{"ldp": i, "at": n}`` cuts LDP i after its n-th character;
- ``human.merge[k]``: ``{"ldps": [i, j]}`` joins LDPs i and j (the span from the first start to
  the last end);
- ``human.comment``: free text.

LDP indices always refer to the judge's list, so edits stay addressable however many are made.
:func:`reviewed_ldps` applies one reviewer's edits; :func:`agreement` compares two reviewers per
LeMAJ Table 4 (manual grades, and scores derived from their LDP tags).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from assay.core.records import Edit
from assay.core.registry import add
from assay.core.views import GradeScale, ReviewView
from assay.judge.embeddings import Matcher, match
from assay.store.annotation_rules import AnnotationRefused, is_int
from assay.store.human import GRADES, grade_score, latest

GRADE_SCALE = GradeScale(
    questions={"human.grade_correctness": ("correctness", "your grade of the whole answer, 1–5 (the expert scale of "
                                                          "the LeMAJ paper, Table 8)"),
               "human.grade_relevance": ("relevance", "")},
    levels={"human.grade_correctness": ((5, "completely correct"), (4, "mostly correct"),
                                        (3, "equally correct and incorrect"), (2, "mostly incorrect"),
                                        (1, "completely incorrect")),
            "human.grade_relevance": ((5, "completely relevant"), (4, "mostly relevant"),
                                      (3, "equally relevant and irrelevant"), (2, "mostly irrelevant"),
                                      (1, "completely irrelevant"))})
"""The reviewer's grades of a whole answer (LeMAJ Table 8), offered on every item's page of
``assay ui`` (the ``grades`` view)."""

REVIEW_SCRIPT = """
  document.querySelectorAll("select.ldp-tag").forEach(sel => sel.onchange = async () => {
    if (await post(sel.dataset.path, sel.value)) done();
  });
  document.querySelectorAll("button.split").forEach(b => b.onclick = async () => {
    const at = Number(prompt(`split after which character (1–${Number(b.dataset.len) - 1})?`));
    if (at > 0 && await post(`human.split[${count("human.split")}]`, {ldp: Number(b.dataset.ldp), at})) done();
  });
  document.querySelectorAll("button.merge").forEach(b => b.onclick = async () => {
    if (await post(`human.merge[${count("human.merge")}]`, {ldps: JSON.parse(b.dataset.ldps)})) done();
  });
  const add = document.getElementById("add-missing");
  if (add) add.onclick = async () => {
    const text = document.getElementById("missing-text").value.trim();
    if (text && await post(`human.missing[${count("human.missing")}]`, {text})) done();
  };
"""
"""What wires the LDP controls of the review panel: a tag changed, a point split or merged, a
missing point added (each posted as the annotation checked by :func:`check_edit`)."""


def reviewed_ldps(response: str, ldps: list[dict[str, Any]],
                  annotations: dict[str, Edit]) -> list[dict[str, Any]]:
    """One reviewer's version of the judge's LDPs: tag overrides, splits, merges, added missing
    points. Each LDP says where it came from (``origin``: judge, split, merge, human)."""
    edited = [{**d, "origin": "judge", "index": i} for i, d in enumerate(ldps)]
    for path, a in annotations.items():
        found = re.fullmatch(r"ldps\[(\d+)\]\.tag", path)
        if found and int(found.group(1)) < len(edited):
            edited[int(found.group(1))]["tag"] = a.value
            edited[int(found.group(1))]["reviewed"] = True
    gone: set[int] = set()
    added: list[dict[str, Any]] = []
    for path, a in sorted(annotations.items(), key=lambda kv: kv[1].id):
        value = a.value if isinstance(a.value, dict) else {}
        if path.startswith("human.split[") and isinstance(value.get("ldp"), int):
            i, at = value["ldp"], int(value.get("at") or 0)
            if i in gone or not 0 <= i < len(edited) or edited[i]["start"] is None:
                continue
            d = edited[i]
            cut = d["start"] + at
            if not d["start"] < cut < d["end"]:
                continue
            gone.add(i)
            for lo, hi in ((d["start"], cut), (cut, d["end"])):
                text = response[lo:hi]
                strip = len(text) - len(text.lstrip())
                added.append({**d, "start": lo + strip, "end": hi - (len(text) - len(text.rstrip())),
                              "text": text.strip(), "origin": "split"})
        elif path.startswith("human.merge[") and isinstance(value.get("ldps"), list):
            parts = [i for i in value["ldps"] if isinstance(i, int) and 0 <= i < len(edited) and i not in gone
                     and edited[i]["start"] is not None]
            if len(parts) < 2:
                continue
            lo = min(edited[i]["start"] for i in parts)
            hi = max(edited[i]["end"] for i in parts)
            gone.update(parts)
            added.append({**edited[parts[0]], "start": lo, "end": hi, "text": response[lo:hi], "origin": "merge"})
        elif path.startswith("human.missing[") and str(value.get("text") or "").strip():
            added.append({"text": str(value["text"]).strip(), "tag": "missing", "start": None, "end": None,
                          "citation": value.get("citation") or [], "origin": "human"})
    kept = [d for i, d in enumerate(edited) if i not in gone] + added
    return sorted(kept, key=lambda d: (d["start"] is None, d["start"] or 0, d["end"] or 0))


def review_panel() -> str:
    from assay.core.method import method_template

    return method_template("review.html.j2", "assay.methods.lemaj")


def review_context(row: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    from assay.methods.lemaj.scores import TAGS

    reviewed = (reviewed_ldps(str(row.get("response") or ""), row.get("ldps") or [], mine)
                if row.get("ldps") is not None else None)
    return {"reviewed": reviewed, "tags": TAGS}


def check_edit(path: str, value: Any) -> None:
    """A reviewer's edit of the LDPs, before it is stored: ``human.missing[k]`` takes
    ``{"text": ...}``, ``human.split[k]`` ``{"ldp": i, "at": n}``, ``human.merge[k]``
    ``{"ldps": [i, j]}`` (integers ≥ 0); None withdraws an earlier one."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise AnnotationRefused(f"{path} takes an object, got {type(value).__name__}")
    kind = path.removeprefix("human.").split("[", 1)[0]
    if kind == "missing" and not isinstance(value.get("text"), str):
        raise AnnotationRefused(f"{path} takes {{\"text\": ...}}")
    if kind == "split" and not (is_int(value.get("ldp")) and is_int(value.get("at"))
                                and value["ldp"] >= 0 and value["at"] >= 0):
        raise AnnotationRefused(f"{path} takes {{\"ldp\": i, \"at\": n}} with integers ≥ 0")
    if kind == "merge":
        ldps = value.get("ldps")
        if not (isinstance(ldps, list) and len(ldps) == 2 and all(is_int(i) and i >= 0 for i in ldps)):
            raise AnnotationRefused(f"{path} takes {{\"ldps\": [i, j]}} with integers ≥ 0")


def reviewer_scores(response: str, ldps: list[dict[str, Any]], annotations: dict[str, Edit],
                    beta: float = 1.0) -> dict[str, Any]:
    """What one reviewer's annotations of one answer say: Table 8 grades as 0–1 scores, and —
    when the reviewer touched the LDPs — LeMAJ scores from the reviewed tags."""
    from assay.methods.lemaj.scores import TAGS, ldp_scores
    from assay.store.annotation_rules import valid_grade

    out: dict[str, Any] = {}
    for path in GRADES:
        if path in annotations and valid_grade(annotations[path].value):
            out[path.removeprefix("human.grade_") + "_grade"] = grade_score(annotations[path].value)
    if any(p.startswith(("ldps[", "human.split", "human.merge", "human.missing")) for p in annotations):
        reviewed = reviewed_ldps(response, ldps, annotations)
        scores, _ = ldp_scores({t: sum(d["tag"] == t for d in reviewed) for t in TAGS}, beta)
        out["correctness_ldp"], out["relevance_ldp"] = scores["correctness"], scores["relevance"]
    return out


def agreement(rows: list[dict[str, Any]], annotations: list[Edit]) -> dict[str, Any] | None:
    """Inter-annotator agreement per LeMAJ Table 4 between the first two reviewers who annotated
    the same answers: the share of answers they scored the same, from their 5-point grades
    ("manual") and from scores derived from their LDP tags, floored to the quarter ("LeMAJ")."""
    from assay.methods.lemaj.scores import percent_agreement

    authors = list(dict.fromkeys(a.author for a in annotations))
    if len(authors) < 2:
        return None
    first, second = authors[:2]
    by_unit: dict[str, list[Edit]] = {}
    for a in annotations:
        by_unit.setdefault(a.unit_key, []).append(a)
    pairs: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        key = str(row.get("unit_key") or (f"{row['id']}::{row['system']}" if row.get("system") else row["id"]))
        mine = by_unit.get(key, [])
        views = [reviewer_scores(str(row.get("response") or ""), row.get("ldps") or [], latest(mine, who))
                 for who in (first, second)]
        for name in ("correctness_grade", "relevance_grade", "correctness_ldp", "relevance_ldp"):
            one, two = views[0].get(name), views[1].get(name)
            if one is not None and two is not None:
                pairs.setdefault(name, []).append((one, two))
    table = {name: {"answers": len(v), "agreement": percent_agreement([x for x, _ in v], [y for _, y in v])}
             for name, v in pairs.items()}
    return {"reviewers": [first, second], "table": table}


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


def register_views() -> None:
    """LeMAJ's contributions to the generic pages: its review panel (``review:lemaj``), the answer
    grades (``grades``) and the checks of its LDP edits (``annotation`` entries)."""
    add("view", "review:lemaj", ReviewView(panel=review_panel, context=review_context, script=REVIEW_SCRIPT))
    add("view", "grades", GRADE_SCALE)
    for kind in ("missing", "split", "merge"):
        add("annotation", kind, check_edit)


register_views()
