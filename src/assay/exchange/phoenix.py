"""Verdicts to Arize Phoenix as span annotations, through its REST API (``POST
/v1/span_annotations``, the endpoint its Python client ``arize-phoenix-client`` calls):
``--phoenix-annotate``, ``assay export RUN.db --phoenix URL``, ``assay.evaluate(..., phoenix=URL)``.
Traces come in as items the other way, in the data layer (:mod:`assay.data.traces`:
``--from-phoenix URL --project NAME``). assay talks to it
with httpx rather than importing the client: with the Phoenix server installed beside it,
``import phoenix.client`` loads the whole server first (15 s on 2 cores).

Annotations on the evaluated span, each with ``metadata.assay_run_id`` (and the store and method),
so a trace in Phoenix and the run in ``assay ui`` point at each other:

* ``assay.METRIC`` — one per metric: ``score``; ``label`` ``pass`` / ``fail`` where a gate applies
  (else ``scored``, or ``unscored`` with the reason as explanation); the failed verdicts as
  explanation.
* ``assay.verdict`` — one per failed verdict (identifier: run id and the verdict's address):
  ``label`` ``not met`` / ``not supported`` / ``no verdict`` / ``failed``, ``score`` 0, and the
  verdict with its reason and quoted evidence as explanation. Filter Phoenix's spans with
  ``annotations['assay.verdict'].label == 'not met'``.

Annotations are upserted by (name, span, identifier): writing one run's annotations again
changes nothing; another run's are added beside them.
"""

from __future__ import annotations

from typing import Any

from assay.data.traces import phoenix_client, phoenix_problem
from assay.exchange.otel import _ids, failed_verdicts
from assay.store import Store

ANNOTATION_BATCH = 100


def annotations_for(store: Store, run_id: str, gates: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """The run's Phoenix span annotations (see the module), for items whose span is known."""
    from assay.core.registry import methods

    gates = gates or {}
    run = store.run(run_id)
    cls = methods().get(run.method)
    kind = "LLM" if cls is None or cls.needs_judge else "CODE"
    out: list[dict[str, Any]] = []
    for result in store.results(run_id):
        if result.kind != "item":
            continue
        _, span_id = _ids(result.item.get("metadata") or {})
        if span_id is None:
            continue
        meta = {"assay_run_id": run_id, "assay_method": run.method, "assay_store": str(store.path),
                "assay_item": result.key}
        verdicts = failed_verdicts(run.method, result.scores, result.details)
        explanation = "\n".join(v.text for v in verdicts)
        unscored = {u.metric: u.model_dump() for u in result.unscored}
        names = list(dict.fromkeys([*(cls.metrics if cls is not None else ()), *result.scores]))
        for metric in names:
            score = result.scores.get(metric)
            body: dict[str, Any]
            if score is None:
                why = unscored.get(metric) or unscored.get(None) or {"reason": "not scored"}
                body = {"label": "unscored", "explanation": str(why.get("reason"))[:4000]}
            else:
                label = ("pass" if score >= gates[metric] else "fail") if metric in gates else "scored"
                body = {"label": label, "score": float(score)}
                if explanation:
                    body["explanation"] = explanation[:4000]
            out.append({"name": f"assay.{metric}", "span_id": span_id, "annotator_kind": kind, "result": body,
                        "metadata": meta, "identifier": run_id})
        for n, verdict in enumerate(verdicts):
            out.append({"name": "assay.verdict", "span_id": span_id, "annotator_kind": kind,
                        "result": {"label": verdict.label, "score": 0.0, "explanation": verdict.text[:4000]},
                        "metadata": {**meta, "assay_path": verdict.path or f"explanation[{n}]"},
                        "identifier": f"{run_id}:{verdict.path or n}"})
    return out


def annotate_phoenix(store: Store, run_id: str, url: str, gates: dict[str, float] | None = None) -> tuple[int, int]:
    """Write the run's annotations to Phoenix; returns (annotations, spans annotated)."""
    import httpx

    annotations = annotations_for(store, run_id, gates)
    if not annotations:
        return 0, 0
    with phoenix_client(url) as client:
        try:
            for start in range(0, len(annotations), ANNOTATION_BATCH):
                response = client.post("v1/span_annotations", params={"sync": "true"},
                                       json={"data": annotations[start: start + ANNOTATION_BATCH]})
                response.raise_for_status()
        except (httpx.HTTPError, OSError) as exc:
            raise phoenix_problem(exc, url) from None
    return len(annotations), len({a["span_id"] for a in annotations})
