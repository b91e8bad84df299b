"""Adapters for public human-labelled sets, read in their original formats (../shared/data).

Each adapter returns a :class:`MetaSet`: the answers to score, as assay items, and the units the
humans labelled. A unit is one answer (pointwise) or two answers to the same question
(pairwise: ``keys[0]`` is the first response, ``keys[1]`` the second), with each label's values
as given by each annotator, in file order.

Kinds: ``ragchecker`` (amazon-science/RAGChecker meta-evaluation pairs) and ``assay`` (our own
JSONL with a ``human`` field). Point an adapter at the full upstream file to use all of it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.datasets._io import _decode, read_jsonl
from assay.errors import InputError
from assay.types import Item, Reference


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
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from exc
    text = _decode(raw, str(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", source=str(path), line=exc.lineno) from exc


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
    for n, record in enumerate(data, 1):
        instance = str(_need(record, "instance_id", source, n, (int, str)))
        query = _need(record, "query", source, n, str)
        gt = _need(record, "gt_answer", source, n, str)
        keys = []
        for side in ("model1", "model2"):
            model = _need(record, side, source, n, dict)
            name = _need(model, "model_name", source, n, str)
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
    return MetaSet("ragchecker", source, True, RAGCHECKER_LABELS, list(items.values()), list(units.values()))


def read_assay_labelled(path: str | Path) -> MetaSet:
    """Our JSONL (SPEC §2.6) where each item carries ``human``: ``{"label": value}`` or
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


ADAPTERS = {"ragchecker": read_ragchecker, "mtrag": read_mtrag, "assay": read_assay_labelled}


def read_labelled(kind: str, path: str | Path) -> MetaSet:
    """Read a human-labelled set with the adapter called ``kind``."""
    try:
        adapter = ADAPTERS[kind]
    except KeyError:
        raise InputError(f"unknown dataset kind {kind!r}; known: {', '.join(sorted(ADAPTERS))}") from None
    return adapter(path)
