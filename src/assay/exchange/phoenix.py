"""Arize Phoenix both ways, through its REST API (the endpoints its Python client
``arize-phoenix-client`` calls: ``GET /v1/projects/{project}/spans``, ``POST /v1/span_annotations``):
traces in as items (``assay eval METHOD --from-phoenix URL --project NAME``) and verdicts back as
span annotations (``--phoenix-annotate``, ``assay export RUN.db --phoenix URL``). assay talks to it
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

import os
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from assay.core.errors import ConfigError
from assay.data.traces import Span, span_from_phoenix
from assay.exchange.otel import _ids, failed_verdicts
from assay.store import Store

ANNOTATION_BATCH = 100


def _client(url: str) -> Any:
    import httpx

    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--from-phoenix / --phoenix {url!r}: a URL such as http://127.0.0.1:6006")
    headers = {"accept": "application/json"}
    key = os.environ.get("PHOENIX_API_KEY")
    if key:
        headers["authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=url.rstrip("/") + "/", headers=headers, timeout=30.0)


def _get_spans(client: Any, project: str, params: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """Every page of ``GET /v1/projects/{project}/spans`` up to ``limit`` spans."""
    spans: list[dict[str, Any]] = []
    cursor = None
    while len(spans) < limit:
        page = {**params, "limit": min(1000, limit - len(spans)), **({"cursor": cursor} if cursor else {})}
        response = client.get(f"v1/projects/{quote(project, safe='')}/spans", params=page)
        response.raise_for_status()
        body = response.json()
        spans += body.get("data") or []
        cursor = body.get("next_cursor")
        if not cursor or not body.get("data"):
            break
    return spans[:limit]


def _http_problem(exc: Exception, url: str, project: str | None = None) -> ConfigError:
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status == 404 and project is not None:
            return ConfigError(f"Phoenix at {url} has no project {project!r}")
        return ConfigError(f"Phoenix at {url} answered HTTP {status}: {exc.response.text[:160]}")
    return ConfigError(f"cannot reach Phoenix at {url}: {type(exc).__name__}: {str(exc)[:160]}")


def parse_since(value: str | None) -> datetime | None:
    """``--since``: an ISO 8601 time, or a duration back from now (``30m``, ``6h``, ``2d``)."""
    if not value:
        return None
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    text = value.strip()
    if text[:-1].replace(".", "", 1).isdigit() and text[-1:] in units:
        return datetime.now(UTC) - timedelta(**{units[text[-1]]: float(text[:-1])})
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--since {value!r}: an ISO time (2025-06-01T12:00) or a duration (30m, 6h, 2d)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_phoenix_spans(url: str, project: str, *, since: datetime | None = None,
                       limit: int | None = None) -> list[Span]:
    """The spans of the project's latest ``limit`` traces (all traces when None) started at or
    after ``since``: their root spans first, then every span of those traces."""
    import httpx

    with _client(url) as client:
        try:
            params: dict[str, Any] = {"parent_id": "null"}
            if since is not None:
                params["start_time"] = since.isoformat()
            roots = _get_spans(client, project, params, limit or 1_000_000)
            trace_ids = list(dict.fromkeys(r["context"]["trace_id"] for r in roots))
            spans = []
            for start in range(0, len(trace_ids), 50):
                spans += _get_spans(client, project, {"trace_id": trace_ids[start: start + 50]}, 1_000_000)
        except (httpx.HTTPError, OSError, ValueError) as exc:
            raise _http_problem(exc, url, project) from None
    return [span_from_phoenix(s) for s in spans]


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
    with _client(url) as client:
        try:
            for start in range(0, len(annotations), ANNOTATION_BATCH):
                response = client.post("v1/span_annotations", params={"sync": "true"},
                                       json={"data": annotations[start: start + ANNOTATION_BATCH]})
                response.raise_for_status()
        except (httpx.HTTPError, OSError) as exc:
            raise _http_problem(exc, url) from None
    return len(annotations), len({a["span_id"] for a in annotations})
