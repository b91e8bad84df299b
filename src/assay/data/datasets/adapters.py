"""Adapters for public human-labelled sets, read in their original formats (the files as their authors publish them).

Each adapter returns a :class:`MetaSet`: the answers to score, as assay items, and the units the
humans labelled. A unit is one answer (pointwise) or two answers to the same question
(pairwise: ``keys[0]`` is the first response, ``keys[1]`` the second), with each label's values
as given by each annotator, in file order.

Kinds: ``ragchecker`` (amazon-science/RAGChecker meta-evaluation pairs), ``mtrag`` (IBM MT-RAG
human evaluations), ``pandalm`` (PandaLM pairwise test set), ``expertqa`` (ExpertQA claim
labels), ``haluquestqa`` (HaluQuestQA spans or preferences), and ``assay`` (our own JSONL with a
``human`` field). Point an adapter at the full upstream file to use all of it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core._load import parse_json
from assay.core.errors import InputError
from assay.core.types import Item, Reference
from assay.data.datasets._io import _decode, read_jsonl


@dataclass(frozen=True)
class MetaUnit:
    """What humans labelled: one answer or a pair, with each label's per-annotator values."""

    id: str
    keys: tuple[str, ...]
    human: dict[str, list[float]]


@dataclass
class MetaSet:
    kind: str
    source: str
    pairwise: bool
    labels: list[str]
    items: list[Item]
    units: list[MetaUnit]
    notes: list[str] = field(default_factory=list)

    def subset(self, limit: int | None, seed: int = 0) -> MetaSet:
        """A reproducible random subset of ``limit`` units (in file order) and their items. Subsets
        of one seed are nested (the first ``limit`` of one seeded shuffle), so growing ``limit``
        re-uses every judge call already made for the smaller one."""
        if limit is None or limit >= len(self.units):
            return self
        if limit < 1:
            raise InputError(f"--limit must be at least 1, got {limit}")
        order = list(range(len(self.units)))
        random.Random(seed).shuffle(order)
        chosen = sorted(order[:limit])
        units = [self.units[i] for i in chosen]
        wanted = {k for u in units for k in u.keys}
        items = [i for i in self.items if i.key in wanted]
        return MetaSet(self.kind, self.source, self.pairwise, self.labels, items, units,
                       [*self.notes, f"subset of {limit} of {len(self.units)} units, seed {seed}"])


def _load_json(path: Path) -> Any:
    from assay.core._load import load_json

    return load_json(path, None)


def _need(record: Any, name: str, source: str, where: int, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(record, dict) or name not in record:
        raise InputError(f"record {where} has no '{name}'", source=source, field=name)
    value = record[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"record {where}: expected {getattr(kind, '__name__', kind)}, got "
                         f"{type(value).__name__}", source=source, field=name)
    return value


RAGCHECKER_LABELS = ["correctness", "completeness", "overall"]


def read_ragchecker(path: str | Path) -> MetaSet:
    """RAGChecker's human meta-evaluation file: a JSON list with one record per (pair,
    annotator); records of the same pair share ``instance_id``. Labels in −2…2, positive when
    model2's response is better. The ground-truth answer becomes each item's reference."""
    path = Path(path)
    source = str(path)
    data = _load_json(path)
    if not isinstance(data, list) or not data:
        raise InputError("expected a non-empty JSON list of labelled pairs", source=source)
    items: dict[str, Item] = {}
    units: dict[str, MetaUnit] = {}
    empty: list[str] = []
    for n, record in enumerate(data, 1):
        instance = str(_need(record, "instance_id", source, n, (int, str)))
        query = _need(record, "query", source, n, str)
        gt = _need(record, "gt_answer", source, n, str)
        keys = []
        for side in ("model1", "model2"):
            model = _need(record, side, source, n, dict)
            name = _need(model, "model_name", source, n, str)
            if model.get("response", "") is None:  # a system that gave no answer: scored as empty, and said so
                model = {**model, "response": ""}
                empty.append(f"record {n} {side}")
            response = _need(model, "response", source, n, str)
            item = Item(id=f"rc{instance}", query=query, response=response, reference=Reference(required=gt),
                        system=name, metadata={"dataset": record.get("dataset"), "query_id": record.get("query_id"),
                                               "side": side})
            if item.key in items and items[item.key].response != response:
                raise InputError(f"record {n}: pair {instance} has a different {side} response than before",
                                 source=source, field=f"{side}.response")
            items.setdefault(item.key, item)
            keys.append(item.key)
        labels = {}
        for label in RAGCHECKER_LABELS:
            value = _need(record, f"{label}_label", source, n, (int, float))
            labels[label] = float(value)
        unit = units.get(instance)
        if unit is None:
            unit = MetaUnit(id=f"rc{instance}", keys=tuple(keys), human={k: [] for k in RAGCHECKER_LABELS})
            units[instance] = unit
        elif unit.keys != tuple(keys):
            raise InputError(f"record {n}: pair {instance} names other systems than before", source=source)
        for label, value in labels.items():
            unit.human[label].append(value)
    notes = [f"{len(empty)} null response(s) read as empty text: {', '.join(empty[:5])}"] if empty else []
    return MetaSet("ragchecker", source, True, RAGCHECKER_LABELS, list(items.values()), list(units.values()), notes)


def read_assay_labelled(path: str | Path) -> MetaSet:
    """Our JSONL  where each item carries ``human``: ``{"label": value}`` or
    ``{"label": [value per annotator]}`` with numeric values."""
    path = Path(path)
    items = read_jsonl(path)
    units = []
    labels: list[str] = []
    for n, item in enumerate(items, 1):
        if not item.human:
            raise InputError(f"item {item.id!r} has no human labels", source=str(path), line=n, field="human")
        human: dict[str, list[float]] = {}
        for label, value in item.human.items():
            values = value if isinstance(value, list) else [value]
            if not values or any(not isinstance(v, int | float) or isinstance(v, bool) for v in values):
                raise InputError(f"item {item.id!r}: label {label!r} must be a number or a list of numbers",
                                 source=str(path), line=n, field=f"human.{label}")
            if not all(math.isfinite(v) for v in values):  # 1e999 is read as infinity: no correlation holds
                raise InputError(f"item {item.id!r}: label {label!r} is not a finite number",
                                 source=str(path), line=n, field=f"human.{label}")
            human[label] = [float(v) for v in values]
            if label not in labels:
                labels.append(label)
        units.append(MetaUnit(id=item.key, keys=(item.key,), human=human))
    return MetaSet("assay", str(path), False, labels, items, units)


MTRAG_LABELS = ["faithfulness", "appropriateness", "completeness", "naturalness", "win_rate"]


def read_mtrag(path: str | Path) -> MetaSet:
    """IBM MT-RAG human evaluations (``reference_subset_with_human_evaluations.json``): tasks
    (one conversation turn each, ``<conversation>::<turn>``) with their passages, and for each
    of 3 responses per task (reference, Llama-3.1-405B, GPT-4o) the 1–4 ratings of 3 annotators
    on faithfulness, appropriateness, completeness and naturalness, plus win-rate (0–100).
    Each response becomes an item: earlier turns as history, the task's passages as contexts,
    the task's target answer as reference, ``metadata.conversation_id`` from the task id."""
    path = Path(path)
    source = str(path)
    data = _load_json(path)
    if not isinstance(data, dict):
        raise InputError("expected the MT-RAG evaluation object (with tasks, documents, evaluations)", source=source)
    documents = {str(_need(d, "document_id", source, n, str)): _need(d, "text", source, n, str)
                 for n, d in enumerate(_need(data, "documents", source, 0, list), 1)}
    scales: dict[str, dict[str, float]] = {}
    for metric in _need(data, "metrics", source, 0, list):
        if isinstance(metric, dict) and metric.get("type") == "categorical":
            scales[str(metric.get("name"))] = {str(v["value"]): float(v["numeric_value"])
                                              for v in metric.get("values", [])}
    tasks: dict[str, dict[str, Any]] = {}
    for n, task in enumerate(_need(data, "tasks", source, 0, list), 1):
        task_id = str(_need(task, "task_id", source, n, str))
        turns = _need(task, "input", source, n, list)
        if not turns or turns[-1].get("speaker") != "user":
            raise InputError(f"task {n} ({task_id}): the last input turn is not the user's", source=source,
                             field="input")
        contexts = []
        for ref in task.get("contexts") or []:
            doc_id = str(ref.get("document_id"))
            if doc_id not in documents:
                raise InputError(f"task {n} ({task_id}) cites unknown document {doc_id}", source=source,
                                 field="contexts")
            contexts.append({"id": doc_id, "text": documents[doc_id]})
        targets = task.get("targets") or []
        tasks[task_id] = {"query": str(turns[-1].get("text", "")),
                          "history": [{"role": "user" if t.get("speaker") == "user" else "assistant",
                                       "content": str(t.get("text", ""))} for t in turns[:-1]],
                          "contexts": contexts,
                          "reference": str(targets[0].get("text", "")) if targets else None,
                          "metadata": {"conversation_id": task_id.split("<::>")[0], "turn": task.get("Turn"),
                                       "answerability": (task.get("Answerability") or [None])[0],
                                       "collection": task.get("Collection")}}
    items, units = [], []
    for n, ev in enumerate(_need(data, "evaluations", source, 0, list), 1):
        task_id = str(_need(ev, "task_id", source, n, str))
        if task_id not in tasks:
            raise InputError(f"evaluation {n} names unknown task {task_id}", source=source, field="task_id")
        model = str(_need(ev, "model_id", source, n, str))
        task = tasks[task_id]
        item = Item(id=task_id, query=task["query"], response=str(ev.get("model_response") or ""), system=model,
                    history=task["history"], contexts=task["contexts"],
                    reference=Reference(required=task["reference"]) if task["reference"] else None,
                    metadata=dict(task["metadata"]))
        annotations = _need(ev, "annotations", source, n, dict)
        human: dict[str, list[float]] = {}
        for label in MTRAG_LABELS:
            raw = annotations.get(label.replace("_", "-"), {})
            values = []
            for annotator in sorted(raw):
                value = raw[annotator].get("value") if isinstance(raw[annotator], dict) else None
                if value is None:
                    continue
                scale = scales.get(label)
                if scale is not None:
                    if str(value) not in scale:
                        raise InputError(f"evaluation {n}: {label} value {value!r} is not on its scale",
                                         source=source, field=f"annotations.{label}")
                    values.append(scale[str(value)])
                else:
                    values.append(float(value))
            if values:
                human[label] = values
        items.append(item)
        units.append(MetaUnit(id=item.key, keys=(item.key,), human=human))
    return MetaSet("mtrag", source, False, MTRAG_LABELS, items, units)


def read_pandalm(path: str | Path) -> MetaSet:
    """PandaLM test set: pairs of responses to an instruction (+ input), each judged by three
    annotators as 0 tie, 1 response1 better, 2 response2 better. Label ``preference`` is per
    annotator −1 (first better), 0 (tie), +1 (second better). There is no reference answer."""
    path = Path(path)
    source = str(path)
    data = _load_json(path)
    if not isinstance(data, list) or not data:
        raise InputError("expected a non-empty JSON list of PandaLM records", source=source)
    mapping = {0: 0.0, 1: -1.0, 2: 1.0}
    items, units = [], []
    coerced: list[str] = []
    for n, record in enumerate(data, 1):
        idx = str(_need(record, "idx", source, n, (int, str)))
        instruction = _need(record, "instruction", source, n, str)
        extra = record.get("input") or ""
        query = f"{instruction}\n\n{extra}".strip()
        systems = str(_need(record, "cmp_key", source, n, str)).split("_", 1)
        if len(systems) != 2:
            raise InputError(f"record {n}: cmp_key {record['cmp_key']!r} does not name two models", source=source,
                             field="cmp_key")
        keys = []
        for side, system in zip(("response1", "response2"), systems, strict=True):
            response = record.get(side) if isinstance(record, dict) else None
            if response is None or isinstance(response, list | dict):
                raise InputError(f"record {n} has no text in '{side}'", source=source, field=side)
            if not isinstance(response, str):  # the upstream file has a few JSON booleans/numbers as responses
                coerced.append(f"record {n} {side}: {response!r}")
                response = str(response)
            item = Item(id=f"pandalm{idx}", query=query, response=response,
                        system=system if systems[0] != systems[1] else f"{system}-{side}",
                        metadata={"motivation_app": record.get("motivation_app"), "side": side,
                                  "pair_position": "a" if side == "response1" else "b"})
            items.append(item)
            keys.append(item.key)
        labels = []
        for annotator in ("annotator1", "annotator2", "annotator3"):
            value = record.get(annotator)
            if value is None:
                continue
            if value not in mapping:
                raise InputError(f"record {n}: {annotator} is {value!r}, expected 0, 1 or 2", source=source,
                                 field=annotator)
            labels.append(mapping[value])
        units.append(MetaUnit(id=f"pandalm{idx}", keys=tuple(keys), human={"preference": labels}))
    notes = [f"{len(coerced)} non-text response(s) read as text: {', '.join(coerced[:5])}"] if coerced else []
    return MetaSet("pandalm", source, True, ["preference"], items, units, notes)


_CORRECT = {"Definitely correct", "Probably correct"}
_USEFUL = {"Useful": 2.0, "Partially useful": 1.0, "Not useful at all": 0.0}


def read_expertqa(path: str | Path) -> MetaSet:
    """ExpertQA (``rand_test.jsonl``): long-form answers whose claims an expert labelled for
    correctness (5 levels), support by the cited evidence, worthiness and informativeness, plus
    the answer's usefulness. Labels per answer: ``correct_share`` (claims judged definitely or
    probably correct / claims with a correctness label), ``supported_share`` (claims with
    complete support / claims with a support label other than N/A) and ``usefulness`` (0–2).
    The expert's revised answer is the reference: it is an edit of the same answer, so it shares
    its wording (lexical baselines profit). Claim labels are kept in ``metadata.claims``. The
    evidence passages of the answer's claims (deduplicated, in order of first citation) are the
    item's ``document`` (LeMAJ checks the answer against them); an answer without evidence has
    none."""
    path = Path(path)
    source = str(path)
    try:
        lines = _decode(path.read_bytes(), source).splitlines()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source) from exc
    items, units = [], []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = parse_json(line, source, n)
        question = _need(record, "question", source, n, str)
        for system, answer in _need(record, "answers", source, n, dict).items():
            text = _need(answer, "answer_string", source, n, str)
            claims = answer.get("claims") or []
            judged = [c for c in claims if c.get("correctness")]
            supported = [c for c in claims if c.get("support") and c.get("support") != "N/A"]
            human: dict[str, list[float]] = {}
            if judged:
                human["correct_share"] = [sum(c["correctness"] in _CORRECT for c in judged) / len(judged)]
            if supported:
                human["supported_share"] = [sum(c["support"] == "Complete" for c in supported) / len(supported)]
            if answer.get("usefulness") in _USEFUL:
                human["usefulness"] = [_USEFUL[answer["usefulness"]]]
            revised = answer.get("revised_answer_string") or ""
            passages: dict[str, str] = {}
            for claim in claims:
                evidence = claim.get("evidence") or []
                for passage in [evidence] if isinstance(evidence, str) else evidence:
                    if isinstance(passage, str) and passage.strip():
                        passages.setdefault(passage.strip(), passage.strip())
            item = Item(id=f"expertqa{n}", query=question, response=text, system=system,
                        document="\n\n".join(passages) or None,
                        reference=Reference(required=revised) if revised.strip() else None,
                        metadata={**(record.get("metadata") or {}),
                                  "claims": [{k: c.get(k) for k in ("claim_string", "correctness", "support",
                                                                    "worthiness", "informativeness")}
                                             for c in claims]})
            items.append(item)
            units.append(MetaUnit(id=item.key, keys=(item.key,), human=human))
    if not items:
        raise InputError("no ExpertQA record", source=source)
    return MetaSet("expertqa", source, False, ["correct_share", "supported_share", "usefulness"], items, units)


def _read_tsv(path: Path) -> list[dict[str, str]]:
    import csv
    import io

    source = str(path)
    try:
        text = _decode(path.read_bytes(), source)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source) from exc
    csv.field_size_limit(1 << 30)
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    if not rows:
        raise InputError("no rows", source=source)
    return rows


HALU_CRITERIA = ["factuality", "relevance", "completeness", "reference", "overall"]


def read_haluquestqa(path: str | Path) -> MetaSet:
    """HaluQuestQA, either file. The span file (``HaluQuestQA.csv``, tab-separated): a question
    with a human and a GPT-4 answer, the experts' preference, error spans with reasons, and
    per-criterion scores of each answer; pairwise labels are ``preference`` (−1 answer 1
    preferred, +1 answer 2) and, per criterion, score(answer 2) − score(answer 1). Spans and
    reasons are kept in each pair's first item's ``metadata.expert_spans``. The preference file
    (``preference_data.csv``): preferred and rejected answers; the order of each pair is set by
    a seeded coin (seed 0) so that the label is not constant, and ``preference`` is +1 when the
    second is the preferred one."""
    path = Path(path)
    source = str(path)
    rows = _read_tsv(path)
    items, units = [], []
    if "preferred_response" in rows[0]:
        coin = random.Random(0)
        for n, row in enumerate(rows, 2):
            for column in ("question_text", "preferred_response", "rejected_response"):
                if not (row.get(column) or "").strip():
                    raise InputError(f"row {n}: empty {column}", source=source, line=n, field=column)
            pid = f"hqpref{row.get('') or n}"
            swap = coin.random() < 0.5
            order = [("rejected", row["rejected_response"]), ("preferred", row["preferred_response"])]
            if swap:
                order.reverse()
            keys = []
            for position, (role, text) in enumerate(order, 1):
                item = Item(id=pid, query=row["question_text"], response=text, system=f"answer{position}",
                            metadata={"role": role, "source_file": row.get("source_file")})
                items.append(item)
                keys.append(item.key)
            units.append(MetaUnit(id=pid, keys=tuple(keys), human={"preference": [-1.0 if swap else 1.0]}))
        return MetaSet("haluquestqa", source, True, ["preference"], items, units)
    for n, row in enumerate(rows, 2):
        for column in ("question_text", "ans1_text", "ans2_text", "ans_preference", "ans1_label", "ans2_label"):
            if not (row.get(column) or "").strip():
                raise InputError(f"row {n}: empty {column}", source=source, line=n, field=column)
        pid = f"hq{row.get('') or n}"
        keys = []
        for k in (1, 2):
            metadata: dict[str, Any] = {"answer_label": row[f"ans{k}_label"], "category": row.get("category"),
                                        "annotator": row.get("annotator")}
            if k == 1:
                metadata["expert_spans"] = {c: {"label": row.get(f"{c}_label"), "span": row.get(f"{c}_span"),
                                                "reason": row.get(f"{c}_reason")}
                                            for c in ("factuality", "irrelevance", "incomplete_ans",
                                                      "ques_misconception", "reference_example")}
            item = Item(id=pid, query=row["question_text"], response=row[f"ans{k}_text"].strip().strip('"'),
                        system=row[f"ans{k}_label"], metadata=metadata)
            items.append(item)
            keys.append(item.key)
        preference = row["ans_preference"].strip()
        if preference not in ("Answer 1", "Answer 2"):
            raise InputError(f"row {n}: ans_preference {preference!r}", source=source, line=n, field="ans_preference")
        human = {"preference": [-1.0 if preference == "Answer 1" else 1.0]}
        for criterion in HALU_CRITERIA:
            try:
                first = float(row[f"{criterion}_{row['ans1_label'].split('_')[0]}_score"])
                second = float(row[f"{criterion}_{row['ans2_label'].split('_')[0]}_score"])
            except (KeyError, ValueError):
                continue
            human[criterion] = [second - first]
        units.append(MetaUnit(id=pid, keys=tuple(keys), human=human))
    return MetaSet("haluquestqa", source, True, ["preference", *HALU_CRITERIA], items, units)


def read_annotated(path: str | Path) -> MetaSet:
    """The human layer of a run store (``assay ui``) as labels: the items of the store's latest
    run (``STORE.db#RUN_ID`` picks another), each with its reviewers' annotations — LeMAJ grades
    as Table 8 scores (``grade_correctness``, ``grade_relevance``: 0, 0.25 … 1) and score
    overrides under the metric's name — one value per reviewer (latest annotation each). Items no
    reviewer labelled are left out."""
    from assay.store import Store
    from assay.store.annotation_rules import valid_grade, valid_number
    from assay.store.human import grade_score, latest

    text = str(path)
    store_path, _, run_id = text.partition("#")
    store = Store(Path(store_path), create=False)
    rid = store.resolve_run(run_id or None)
    annotations = store.annotations(rid)
    authors = list(dict.fromkeys(a.author for a in annotations))
    items, units, labels = [], [], []
    for record in store.results(rid):
        if record.kind != "item":
            continue
        mine = [a for a in annotations if a.unit_key == record.key]
        human: dict[str, list[float]] = {}
        for author in authors:
            for a in latest(mine, author).values():
                # annotations stored before they were validated may be off-scale or not numbers: skipped
                if a.path.startswith("human.grade_") and valid_grade(a.value):
                    label, value = a.path.removeprefix("human."), grade_score(a.value)
                elif a.path in record.scores and valid_number(a.value):
                    label, value = a.path, float(a.value)
                else:
                    continue
                human.setdefault(label, []).append(value)
                if label not in labels:
                    labels.append(label)
        if human:
            item = Item.model_validate(record.item)
            items.append(item)
            units.append(MetaUnit(id=item.key, keys=(item.key,), human=human))
    if not units:
        raise InputError(f"run {rid} has no reviewer grades or score overrides to use as labels", source=store_path)
    return MetaSet("annotations", text, False, labels, items, units)


def adapters() -> dict[str, Any]:
    """The human-labelled dataset readers by kind (the registry's ``reader`` entries): the
    built-in ones and those plug-ins declare in the ``assay.data.datasets`` (or ``assay.readers``)
    entry-point group (``kind = "package:reader"``, a function of a path returning a
    :class:`MetaSet`). A plug-in that fails to load is named on stderr and left out."""
    from assay.core.registry import _core as registry

    return registry.entries("reader")


def read_labelled(kind: str, path: str | Path) -> MetaSet:
    """Read a human-labelled set with the adapter called ``kind``."""
    from assay.core.registry import _core as registry

    adapter = registry.get("reader", kind, error=InputError)
    found = adapter(path)
    if not isinstance(found, MetaSet):
        raise InputError(f"the {kind!r} dataset adapter returned {type(found).__name__}, not a MetaSet")
    return found
