"""`assay ui RUN.db`: a browser app to review and annotate any run, served by uvicorn.

Pages: the runs of a store; a run's items with filters (system, status, a metric's range) and
the reviewers' agreement (as the run's method measures it) once two have annotated; an item with its query,
answer, reference, the method's evidence (the same partials as the HTML report: DeCE criteria
and whatever else the method's report partial shows), the raw output of anything unscored, and the
annotation panel: the answer grades and the method's review panel are views the registry holds
(:mod:`assay.core.views`), so nothing here names a method. Annotations go
to the store append-only (:mod:`assay.store.human`); the judge's output is never changed.

With an alignment file (``assay ui RUN.db --alignment FILE``, from ``assay align``), a run it was
fitted for shows, beside its raw values: the aligned score (or the verdict at the fitted tie
threshold) per answer, the alignment's summary and plots on the run's page, and each verdict's
calibrated probability beside the judge's own on the item's page. A run of another method, judge
or prompt says in one line why the alignment does not apply to it; nothing in the store changes.

Security. Bound to 127.0.0.1 unless told otherwise. Every request needs the session token:
the printed URL carries it once (``?token=``), the server answers with an HttpOnly,
SameSite=Strict cookie and a redirect to the same page without it; a request without a valid
token gets 401. A request whose Host is not the address served is refused (403: DNS
rebinding). A state-changing request must also carry the token in the ``X-Assay-Token`` header
(the page holds it; another site cannot read it), be JSON, and not come from another origin
(``Origin`` / ``Sec-Fetch-Site``): else 403. Every model- or user-written string is escaped by
Jinja's autoescaping, and data handed to the page's script goes through ``tojson``.
The store is opened read-mostly with SQLite WAL, so the UI keeps working while a run writes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hmac
import json
import math
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from assay.core._files import loads_finite
from assay.core.errors import ConfigError, InputError, StoreError
from assay.core.protocols import meta_evaluation, presentation, run_kind, run_presentation
from assay.core.views import grade_scale, review_view
from assay.exchange.export import export_rows
from assay.store import Store
from assay.store.human import latest
from assay.view.report import _fmt

COOKIE = "assay_token"
MAX_BODY = 256 * 1024
"""The largest annotation request accepted (an annotation value itself: 64 KiB)."""


def _env() -> Environment:
    env = Environment(loader=PackageLoader("assay.view.ui", "templates"), autoescape=select_autoescape(["j2", "html"]))
    env.filters["fmt"] = _fmt
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=True)
    env.filters["when"] = lambda t: dt.datetime.fromtimestamp(float(t), tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return env


def _judge_name(manifest: dict[str, Any]) -> str:
    judge = str(manifest.get("judge") or "—")
    return "none (no judge)" if judge in ("none", "none/none") else judge


def _means(records: list[Any]) -> dict[str, dict[str, Any]]:
    """Each metric's mean over a run's scored results, with how many answers it rests on (``n``) of
    how many (``of``): a mean over 10 of 14 answers says so."""
    sums: dict[str, list[float]] = {}
    for record in records:
        for metric, value in record.scores.items():
            sums.setdefault(metric, [])
            if isinstance(value, int | float):
                sums[metric].append(float(value))
    return {m: {"mean": sum(v) / len(v) if v else None, "n": len(v), "of": len(records)} for m, v in sums.items()}


def _failed(cls: Any, row: dict[str, Any], record: Any) -> str:
    """Why an answer failed, in one line: the unscored reason, else the method's explanation of the
    verdicts that failed (its first line)."""
    if row.get("unscored_reason"):
        return f"unscored: {row['unscored_reason']}"
    if cls is None:
        return ""
    try:
        lines = cls.explain(record.scores, record.details)
    except Exception:  # a method's explanation must not take the page down
        return ""
    failed = [line.strip() for line in lines if not line.lstrip().startswith("✓")]
    return "; ".join(failed[:2])


def _histogram(values: list[Any], cls: Any, metric: str | None, bins: int = 10) -> dict[str, Any] | None:
    """Counts of a metric's values in equal bins over its range (0–1 unless the method says)."""
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if metric is None or not numbers:
        return None
    low, high = (cls.metric_ranges.get(metric, (0.0, 1.0)) if cls is not None else (0.0, 1.0))
    counts = [0] * bins
    for v in numbers:
        at = int((v - low) / (high - low) * bins) if high > low else 0
        counts[min(max(at, 0), bins - 1)] += 1
    top = max(counts) or 1
    return {"metric": metric, "low": low, "high": high, "n": len(numbers), "unscored": len(values) - len(numbers),
            "bars": [{"from": low + (high - low) * i / bins, "to": low + (high - low) * (i + 1) / bins, "count": c,
                      "height": round(100 * c / top)} for i, c in enumerate(counts)]}


def _aligned(alignment: dict[str, Any] | None, store: Store, run_id: str) -> tuple[dict[str, Any] | None, str]:
    """The alignment's values for a run (per result key) and, when there are none, why in one line:
    the alignment was fitted for another method, judge or prompt, or its values cannot be
    computed here (e.g. the MiniLM signal's model is not installed)."""
    if alignment is None:
        return None, ""
    from assay.analysis.align import aligned_fields, check_compatible

    try:
        check_compatible(alignment, store.run(run_id).manifest, str(alignment.get("_source", "alignment")))
    except ConfigError as exc:
        return None, f"does not apply to this run: {exc}"
    try:
        return aligned_fields(alignment, store, run_id), ""
    except (ConfigError, InputError, OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"cannot be computed here: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def _calibrated_entries(alignment: dict[str, Any], details: dict[str, Any], extra: dict[str, Any]
                        ) -> list[dict[str, Any]]:
    """Per calibrated kind of verdict: each verdict's text, the judge's label, P(yes) and calibrated P."""
    out = []
    for kind, ps in (extra.get("p_calibrated") or {}).items():
        found = details.get(kind)
        entries: list[Any] = found if isinstance(found, list) else []
        rows = []
        for entry, p in zip(entries, ps, strict=False):
            if not isinstance(entry, dict):
                continue
            text = next((str(entry[k]) for k in ("criterion", "element", "statement", "text", "claim")
                         if entry.get(k) is not None), "")
            counted = next((entry[k] for k in ("satisfied", "supported", "verdict", "judge_score")
                            if entry.get(k) is not None), None)  # the verdict as counted (after any downgrade)
            rows.append({"text": text, "verdict": counted,
                         "p_judge": entry.get("p_judge"), "p_calibrated": p})
        out.append({"kind": kind, "chosen": (alignment.get("calibration") or {}).get(kind, {}).get("chosen"),
                    "rows": rows})
    return out


def create_app(store_path: Path, token: str, *, author: str = "reviewer", allowed_hosts: tuple[str, ...] = (),
               alignment: dict[str, Any] | None = None) -> Starlette:
    """The ASGI app over one store. ``allowed_hosts``: the Host header values accepted (the
    address served, e.g. ``127.0.0.1:8765``); empty accepts any (tests with an in-process client).
    ``alignment`` (read with :func:`assay.analysis.align.read_alignment`) adds the aligned values to the
    runs it was fitted for."""
    store = Store(store_path, create=False)
    env = _env()
    report_env = None
    aligned_cache: dict[str, tuple[int, tuple[dict[str, Any] | None, str]]] = {}

    async def aligned_for(run_id: str) -> tuple[dict[str, Any] | None, str]:
        """The alignment's values for a run, computed once per run and count of results (its
        judge-free signals run their own event loop, and MiniLM is slow: in a worker thread)."""
        if alignment is None:
            return None, ""
        # one entry a run, recomputed when its results change (a run still writing, a re-scored unit)
        version = hash(tuple((r.key, r.status, r.created_at) for r in store.results(run_id)))
        cached = aligned_cache.get(run_id)
        if cached is None or cached[0] != version:
            cached = aligned_cache[run_id] = (version, await run_in_threadpool(_aligned, alignment, store, run_id))
        return cached[1]

    def page(name: str, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(token=token, author=author, **context))

    def authorised(request: Request) -> bool:
        given = request.cookies.get(COOKIE) or request.headers.get("x-assay-token") or ""
        return hmac.compare_digest(given.encode(), token.encode())

    def guard(request: Request, *, writing: bool = False) -> Response | None:
        if allowed_hosts and request.headers.get("host") not in allowed_hosts:
            return JSONResponse({"error": "unknown host"}, status_code=403)
        if not authorised(request):
            return JSONResponse({"error": "a valid token is needed (open the URL assay ui printed)"},
                                status_code=401)
        if writing:
            header = request.headers.get("x-assay-token") or ""
            if not hmac.compare_digest(header.encode(), token.encode()):
                return JSONResponse({"error": "state-changing requests need the X-Assay-Token header"},
                                    status_code=403)
            origin = request.headers.get("origin")
            own = f"{request.url.scheme}://{request.headers.get('host')}"
            if (origin is not None and origin != own) or request.headers.get("sec-fetch-site") == "cross-site":
                return JSONResponse({"error": "cross-site request refused"}, status_code=403)
            if not (request.headers.get("content-type") or "").startswith("application/json"):
                return JSONResponse({"error": "send JSON"}, status_code=415)
        return None

    def token_login(request: Request) -> Response | None:
        """A GET with ?token=: set the cookie and redirect to the page without the token."""
        given = request.query_params.get("token")
        if given is None:
            return None
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse({"error": "wrong token"}, status_code=401)
        rest = {k: v for k, v in request.query_params.items() if k != "token"}
        response = RedirectResponse(request.url.path + (f"?{urlencode(rest)}" if rest else ""), status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    def page_entry(request: Request) -> Response | None:
        """For a page GET: the token login redirect, or the guard's refusal, or None to go on."""
        login = token_login(request)
        return login if login is not None else guard(request)

    async def runs(request: Request) -> Response:
        refused = page_entry(request)
        if refused is not None:
            return refused
        listed = []
        for run in store.list_runs():
            results = store.results(run.run_id)
            listed.append({"run": run, "units": len(results), "planned": len(store.units(run.run_id)),
                           "annotations": len(store.annotations(run.run_id)), "means": _means(results),
                           "data": Path(str(run.manifest.get("data_source") or "—")).name,
                           "data_path": str(run.manifest.get("data_source") or ""),
                           "judge": _judge_name(run.manifest)})
        return page("runs.html.j2", runs=listed, store=store_path.name)

    async def run_page(request: Request) -> Response:
        refused = page_entry(request)
        if refused is not None:
            return refused
        run_id = request.path_params["run_id"]
        if store.get_run(run_id) is None:
            return HTMLResponse("no such run", status_code=404)
        run = store.run(run_id)
        rows = export_rows(store, run_id)
        records = store.results(run_id)
        for row, record in zip(rows, records, strict=True):
            row["idx"], row["unit_key"] = record.idx, record.key
        metrics = list(records[0].scores) if records else []
        q = request.query_params
        systems = sorted({str(r.get("system")) for r in rows if r.get("system") is not None})
        shown = rows
        if q.get("system"):
            shown = [r for r in shown if str(r.get("system")) == q["system"]]
        if q.get("status"):
            shown = [r for r in shown if r["status"] == q["status"]]
        metric = q.get("metric")
        bounds: dict[str, float | None] = {}
        for name in ("min", "max"):  # a bound that is not a number is refused, not ignored (the page said "3 shown")
            text = (q.get(name) or "").strip()
            try:
                bounds[name] = float(text) if text else None
            except ValueError:
                bounds[name] = math.nan
            if bounds[name] is not None and not math.isfinite(bounds[name] or 0.0):
                return HTMLResponse(f"the filter's {name} must be a number, not {text[:40]!r}", status_code=400)
        if metric and metric not in metrics:  # a filter is applied or refused, never ignored ("14 shown")
            return HTMLResponse(f"the filter's metric must be one of this run's: {', '.join(metrics)}; "
                                f"not {metric[:40]!r}", status_code=400)
        if not metric and (bounds["min"] is not None or bounds["max"] is not None):
            return HTMLResponse("the filter's min and max bound a metric: choose the metric", status_code=400)
        if metric in metrics:
            low, high = bounds["min"], bounds["max"]

            def within(value: Any) -> bool:
                if value is None:
                    return low is None and high is None
                return (low is None or value >= low) and (high is None or value <= high)
            shown = [r for r in shown if within(r.get(metric))]
        annotations = store.annotations(run_id)
        annotated = {a.unit_key for a in annotations}
        kind = run_kind(run.method)
        cls = presentation(kind) if kind is not None else None
        iaa = meta_evaluation(kind).agreement(rows, annotations) if kind is not None else None
        for row, record in zip(rows, records, strict=True):
            row["failed"] = _failed(cls, row, record)
        main_metric = (cls.primary_metric if cls is not None and cls.primary_metric in metrics else None) or (
            metrics[0] if metrics else None)
        extra, not_aligned = await aligned_for(run_id)
        aligned_section = Markup("")
        if extra is not None and alignment is not None:
            from assay.view.report import environment as report_environment
            from assay.view.report.alignment import render as render_alignment

            try:
                aligned_section, _ = await run_in_threadpool(render_alignment, report_environment(), alignment, store,
                                                             run_id, rows, extra)
            except (ValueError, KeyError, TypeError) as exc:  # a plot the file's figures cannot draw
                aligned_section = Markup("")
                not_aligned = f"cannot be shown: {exc}"
            for row in rows:
                row["aligned"] = extra.get(row["unit_key"], {})
        return page("run.html.j2", run=run, rows=shown, total=len(rows), metrics=metrics, systems=systems,
                    aligned=extra is not None, aligned_section=aligned_section, not_aligned=not_aligned,
                    aligned_column=extra is not None and any(
                        (alignment or {}).get(part) is not None for part in ("aligned_score", "tie_threshold")),
                    alignment_source=(alignment or {}).get("_source"),
                    query=dict(q), annotated=annotated, iaa=iaa,
                    authors=sorted({a.author for a in annotations}), means=_means(records),
                    histogram=_histogram([r.get(main_metric) for r in rows] if main_metric else [], cls, main_metric),
                    main_metric=main_metric, judge=_judge_name(run.manifest),
                    data=Path(str(run.manifest.get("data_source") or "—")).name)

    async def item_page(request: Request) -> Response:
        nonlocal report_env
        refused = page_entry(request)
        if refused is not None:
            return refused
        run_id, idx = request.path_params["run_id"], int(request.path_params["idx"])
        if store.get_run(run_id) is None:
            return HTMLResponse("no such run", status_code=404)
        run = store.run(run_id)
        units = store.units(run_id)
        if not 0 <= idx < len(units):
            return HTMLResponse("no such item", status_code=404)
        try:
            record = store.result(run_id, units[idx].key)
        except StoreError:
            return HTMLResponse("this item has no result yet", status_code=404)
        row = export_rows(store, run_id, results=[record])[0]
        evidence = Markup("")
        cls = run_presentation(run.method)
        if cls is not None:  # the method's report partial, with the context of this one row
            section = cls.report_section([row])
            if section is not None and section.item:
                if report_env is None:
                    report_env = Environment(autoescape=True)
                    report_env.filters["fmt"] = _fmt
                evidence = Markup(report_env.from_string(section.item).render(row=row, **section.context))
        annotations = store.annotations(run_id, record.key)
        mine = latest(annotations, author)
        values = {k: a.value for k, a in mine.items()}
        panel, script = Markup(""), Markup("")
        view = review_view(run.method)  # the method's own review controls, as the registry has them
        source = view.panel() if view is not None else None
        if view is not None and source:
            panel = Markup(env.from_string(source).render(row=row, mine=values, **view.context(row, mine)))
            script = Markup(view.script)  # shipped with the method, not data: no user text reaches it
        extra, not_aligned = await aligned_for(run_id)
        aligned = None
        if extra is not None and alignment is not None:
            mine_extra = extra.get(record.key, {})
            aligned = {"score": mine_extra.get("aligned_score"), "has_score": "aligned_score" in mine_extra,
                       "verdict": mine_extra.get("aligned_verdict"), "judge_verdict": record.details.get("verdict"),
                       "kinds": _calibrated_entries(alignment, record.details, mine_extra)}
        return page("item.html.j2", run=run, row=row, idx=idx, unit_key=record.key, total=len(units),
                    aligned=aligned, not_aligned=not_aligned, alignment_source=(alignment or {}).get("_source"),
                    evidence=evidence, annotations=annotations, mine=values, review_panel=panel,
                    review_script=script, grades=grade_scale(), metrics=list(record.scores))

    async def annotate(request: Request) -> Response:
        refused = guard(request, writing=True)
        if refused is not None:
            return refused
        run_id, idx = request.path_params["run_id"], int(request.path_params["idx"])
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return JSONResponse({"error": f"request body larger than {MAX_BODY // 1024} KiB"}, status_code=413)
        try:
            body = loads_finite(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return JSONResponse({"error": f"malformed JSON ({str(exc)[:120]})"}, status_code=400)
        if not isinstance(body, dict) or not isinstance(body.get("path"), str) or "value" not in body:
            return JSONResponse({"error": "expected {path, value[, reason, author]}"}, status_code=400)
        records = store.results(run_id) if store.get_run(run_id) is not None else []
        if not 0 <= idx < len(records):
            return JSONResponse({"error": "no such item"}, status_code=404)
        for key, limit in (("author", 80), ("reason", 4000)):  # text, or absent: never a list's repr
            given = body.get(key)
            if given is not None and not isinstance(given, str):
                return JSONResponse({"error": f"{key} is text, got {type(given).__name__}"}, status_code=400)
            if given is not None and len(given) > limit:
                return JSONResponse({"error": f"{key} longer than {limit} characters"}, status_code=400)
        who = str(body.get("author") or author).strip()
        run = store.run(run_id)
        rules = run_presentation(run.method)  # None: a method this installation does not know: generic checks only
        try:
            stored = store.annotate(run_id, records[idx].key, body["path"], body["value"], author=who,
                                    reason=str(body.get("reason") or ""), rules=rules)
        except StoreError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(stored.model_dump(), status_code=201)

    async def annotations_api(request: Request) -> Response:
        refused = guard(request)
        if refused is not None:
            return refused
        run_id = request.path_params["run_id"]
        if store.get_run(run_id) is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        return JSONResponse([a.model_dump() for a in store.annotations(run_id)])

    routes = [Route("/", runs), Route("/run/{run_id}", run_page), Route("/run/{run_id}/item/{idx:int}", item_page),
              Route("/api/run/{run_id}/item/{idx:int}/annotations", annotate, methods=["POST"]),
              Route("/api/run/{run_id}/annotations", annotations_api)]
    return Starlette(routes=routes)


def serve(store_path: Path, *, host: str = "127.0.0.1", port: int = 0, author: str = "reviewer",
          token: str | None = None, ready: Any = None, alignment: dict[str, Any] | None = None,
          stop_after: float | None = None) -> None:
    """Serve the UI until interrupted, or for ``stop_after`` seconds (then it returns, as a normal
    end); print the URL with its token. ``port`` 0 takes a free one."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    token = token or secrets.token_urlsafe(24)
    shown_host = f"[{host}]" if ":" in host else host
    # The Host check stays on whatever the bind address (DNS rebinding): the bound host name and
    # the loopback names are accepted, nothing else (the command warns when binding beyond loopback).
    hosts = tuple(dict.fromkeys((f"{shown_host}:{bound}", f"localhost:{bound}", f"127.0.0.1:{bound}",
                                 f"[::1]:{bound}")))
    app = create_app(store_path, token, author=author, allowed_hosts=hosts, alignment=alignment)
    url = f"http://{shown_host}:{bound}/?token={token}"
    # The socket listens before anything is announced, and the URL is announced only once the
    # server has started on it: a script (or a browser opened by it) that connects as soon as it
    # reads the URL is served, never refused.
    sock.listen(128)

    class _Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if stop_after is not None:  # a planned end, not an interruption: the server shuts down and returns
                asyncio.get_running_loop().call_later(stop_after, setattr, self, "should_exit", True)
            if ready is not None and not self.should_exit:
                ready(url)

    config = uvicorn.Config(app, log_level="warning", access_log=False)
    server = _Server(config)
    server.run(sockets=[sock])
