"""What a run ends with, the same for ``assay.evaluate(...)`` and ``assay eval``: the post-run steps
are options of the one call.

* the results file, as ``assay export`` writes it: ``export="scores.csv"`` (and ``force``) /
  ``-o scores.csv`` (and ``--force``);
* an alignment's calibrated readings beside the raw ones in that file: ``alignment="align.json"`` /
  ``--alignment align.json``;
* OpenTelemetry evaluation events: ``otel=True`` / ``--otel``;
* Phoenix span annotations: ``phoenix="http://127.0.0.1:6006"`` / ``--phoenix-annotate`` (the
  Phoenix of ``--from-phoenix``);
* pass/fail labels on those events and annotations: ``gate=["recall=0.5"]`` / ``--gate recall=0.5``.

:func:`plan` checks every option before the run (a refusal costs no judge call and writes
nothing); :meth:`Finish.export` and :func:`send` run after it and say each step in one line
through ``say(line, ok)``. A delivery that fails is said, never raised: the scores are in the
store, and ``assay export RUN.db --otel`` / ``--phoenix URL`` sends them again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.errors import ConfigError
from assay.store import Store

Say = Callable[[str, bool], None]
"""Where a step's line goes: ``say(line, ok)``; ``ok`` is False for a delivery that failed."""


@dataclass(frozen=True)
class Finish:
    """The post-run steps of one run, checked (:func:`plan`)."""

    output: Path | None = None
    output_format: str | None = None
    alignment: dict[str, Any] | None = None
    otel: bool = False
    phoenix: str | None = None
    gate: list[str] | None = None

    @property
    def delivers(self) -> bool:
        """Whether the verdicts are sent anywhere (OpenTelemetry, Phoenix)."""
        return self.otel or self.phoenix is not None

    def export(self, store: Store, run_id: str, say: Say) -> None:
        """Write the results file, if one was asked for (with the alignment's columns)."""
        if self.output is None or self.output_format is None:
            return
        from assay.exchange.export import export_run

        count = export_run(store, run_id, self.output, self.output_format, alignment=self.alignment)
        say(f"wrote {count} row(s) to {self.output}", True)

    def send(self, store: Store, run_id: str, say: Say) -> bool:
        """Send the verdicts out (OpenTelemetry, Phoenix), if asked; False when something was not
        delivered."""
        if not self.delivers:
            return True
        return send(store, Path(store.path), run_id, otel=self.otel, phoenix=self.phoenix, gate=self.gate, say=say)

    def run(self, store: Store, run_id: str, say: Say) -> bool:
        """Every step, in order: the file, then the deliveries."""
        self.export(store, run_id, say)
        return self.send(store, run_id, say)


def results_format(output: Path | None, *, inputs: Iterable[Path | str | None] = (), force: bool = False) -> str | None:
    """The export format of the results file from its extension, checked before anything runs
    (None without one). A store's extension is refused with the flag that names a store; an
    input of the run, or a file assay did not write (without ``force``), is never replaced."""
    if output is None:
        return None
    from assay.core._files import check_output, is_sqlite
    from assay.exchange.export import format_for

    if output.suffix.lower() in (".db", ".sqlite", ".sqlite3") or is_sqlite(output):
        raise ConfigError(f"-o/--output {output}: -o is the results file written (.csv, .jsonl, .json or "
                          f".parquet); the run store is --store {output}")
    fmt = format_for(output, None, format_option=False)
    check_output(output, inputs=[p for p in inputs if p is not None], force=force)
    return fmt


def read_alignment_for(path: str | Path, method: Any) -> dict[str, Any]:
    """An alignment file, checked against the method, its options and prompts before any judge
    call (the judge is checked against the run's manifest when the readings are made)."""
    from assay.analysis.align import check_method, read_alignment

    alignment = read_alignment(path)
    alignment["_source"] = str(path)
    check_method(alignment, method.name, method, str(path))
    return alignment


def check_phoenix_url(phoenix: str | None) -> None:
    """``--phoenix URL``: one line unless it is an http(s) URL (checked before any store is opened)."""
    if phoenix is not None and not phoenix.startswith(("http://", "https://")):
        raise ConfigError(f"--phoenix {phoenix!r}: a URL such as http://127.0.0.1:6006")


def check_delivery(*, otel: bool, phoenix: str | None, gate: list[str] | None,
                   metrics: Iterable[str] | None = None) -> None:
    """The delivery options, before the run: the gates (each a metric of the run, where ``metrics``
    are known, at a finite minimum; only with something they label), the OTLP protocol, Phoenix's URL."""
    from assay.exchange.otel import check_protocol, parse_gates

    parse_gates(gate, metrics)
    if gate and not otel and not phoenix:
        raise ConfigError("--gate labels the verdicts --otel or --phoenix sends as passed or failed: give one "
                          "of them (assay gate checks a stored run's scores)")
    if otel:
        check_protocol()
    check_phoenix_url(phoenix)


def plan(*, output: str | Path | None = None, force: bool = False, alignment: str | Path | None = None,
         method: Any = None, otel: bool = False, phoenix: str | None = None, gate: list[str] | str | None = None,
         inputs: Iterable[Path | str | None] = ()) -> Finish:
    """Check the post-run steps before the run, in the order the command line checks them: the
    results file (``inputs``: the data and the store, never replaced), the alignment (fitted for
    ``method``, a built method), the gates, the OTLP protocol, the Phoenix URL."""
    out = Path(output) if output is not None else None
    fmt = results_format(out, inputs=inputs, force=force)
    fitted = None
    if alignment is not None:
        if method is None:
            raise ConfigError("an alignment is checked against the method: name the method")
        fitted = read_alignment_for(alignment, method)
    gates = [gate] if isinstance(gate, str) else list(gate) if gate else None
    check_delivery(otel=otel, phoenix=phoenix, gate=gates,
                   metrics=getattr(method, "metrics", None) if method is not None else None)
    return Finish(output=out, output_format=fmt, alignment=fitted, otel=otel,
                  phoenix=phoenix.rstrip("/") if phoenix else None, gate=gates)


def send(store: Store, store_path: Path, run_id: str, *, otel: bool, phoenix: str | None,
         gate: list[str] | None, say: Say) -> bool:
    """Send a saved run's verdicts as OpenTelemetry events and/or Phoenix annotations, one line
    each; False when something was not delivered (it can be sent again from the store)."""
    from assay.exchange.otel import check_protocol, parse_gates

    run = store.get_run(run_id)
    gates = parse_gates(gate, (run.manifest.get("metrics") or None) if run is not None else None)
    check_phoenix_url(phoenix)
    ok = True
    if otel:
        from assay.exchange.otel import export_otel

        check_protocol()
        report = export_otel(store, run_id, gates)
        ok = not report.failures
        say(report.line() + ("" if ok else f"; send again with: assay export {store_path} --otel"), ok)
    if phoenix:
        from assay.exchange.phoenix import annotate_phoenix

        url = phoenix.rstrip("/")
        try:
            count, spans = annotate_phoenix(store, run_id, url, gates)
        except ConfigError as exc:
            say(f"phoenix: {exc}; write them again with: assay export {store_path} --phoenix {url}", False)
            return False
        if count == 0:
            say(f"phoenix: no item of run {run_id} carries a span id (items read with --from-phoenix or "
                "--from-traces do); nothing written", False)
            return False
        say(f"phoenix: {count} annotation(s) on {spans} span(s) at {url} (run {run_id})", True)
    return ok
