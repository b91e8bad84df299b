"""The optional protocols of a method, beside its contract with the engine
(:class:`assay.core.method.Method`). A method class inherits the ones it implements and overrides
what it needs; every default here is what a method that does not implement the protocol gets.

* :class:`Presents` — how its runs are shown: the report section, the review panel of ``assay
  ui``, the explanation of a result, the compact export's columns, the end-of-run summary lines,
  the labels a reviewer may give.
* :class:`MetaEvaluated` — how meta-evaluation and the reviewers' agreement read its results:
  each answer's scores of a unit, a pairwise verdict, whether it is the reference of ``assay meta``.
* :class:`HasCommands` — what it adds to the command line: options beyond its config, the
  options ``-h`` lists, ``assay eval NAME`` or not, commands of its own and their renamed flags.

A generic caller never reads these attributes off a class: it asks one helper per protocol
(:func:`presentation`, :func:`meta_evaluation`, :func:`command_line`), which returns the class
itself when it inherits the protocol and otherwise a stand-in holding the protocol's defaults and
whatever hooks the class defines under the protocol's names (a plug-in written against the single
``Method`` class of 0.2, where every hook lived, keeps working). :func:`run_presentation` finds the
presentation of a stored run by the name it is stored under: a method's, or a workflow's (a
command that stores runs of its own kind, such as the rubric audit; see
:func:`assay.core.registry.register_workflow`).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar, cast

from assay.core.method import CliOption, ReportSection, RunKind

__all__ = ["HasCommands", "MetaEvaluated", "Presents", "command_line", "meta_evaluation", "presentation",
           "run_kind", "run_presentation"]


class Presents(RunKind):
    """How runs of this kind are shown (export, report, review UI, explanations)."""

    compact_columns: ClassVar[tuple[str, ...]] = ()
    """Columns the compact export keeps besides id, system, status, query, response and reasons
    (default: the metrics)."""
    annotation_labels: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Per field name of the evidence (``tag``), the labels a reviewer's override may take."""

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        """The kind's part of the HTML report (from the exported rows of a run), or None."""
        return None

    @classmethod
    def explain(cls, scores: dict[str, Any], details: dict[str, Any]) -> list[str]:
        """A few lines a person reads to see why a result scored what it did (the verdicts that
        failed, with their reasons): printed by ``assay demo`` as each answer finishes and by the
        pytest helper when a threshold fails. Empty: nothing beyond the scores."""
        return []

    @classmethod
    def review_panel(cls) -> str | None:
        """The kind's review panel in ``assay ui``: Jinja source (autoescaped) rendered on an
        item's page with ``row`` (the exported row), ``mine`` (the reviewer's latest values by
        address) and :meth:`review_context`; its controls carry ``data-path`` addresses the
        page posts. None: only the generic controls (grades, score overrides, comment)."""
        return None

    @classmethod
    def review_context(cls, row: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
        """Extra context of :meth:`review_panel` (``mine``: address → the reviewer's latest
        annotation)."""
        return {}

    @classmethod
    def summary_lines(cls, rows: list[dict[str, Any]]) -> list[str]:
        """Lines ``assay eval`` prints under the summary table, from the run's exported rows."""
        return []

    @classmethod
    def compact(cls) -> tuple[str, ...]:
        """The compact export's own columns: :attr:`compact_columns`, else the metrics."""
        return cls.compact_columns or cls.metrics


class MetaEvaluated:
    """How meta-evaluation (``assay meta``) and the reviewers' agreement read a method's results."""

    unit_kind: ClassVar[str] = "item"
    meta_reference: ClassVar[bool] = False
    """Whether ``assay meta`` compares the other metrics against this method's primary metric by
    default (DeCE: the method the other baselines are measured against)."""

    @classmethod
    def agreement(cls, rows: list[dict[str, Any]], annotations: list[Any]) -> dict[str, Any] | None:
        """Agreement between reviewers as the method's paper measures it, shown on the run's
        page (``{"title", "reviewers", "table"}``), or None."""
        return None

    @classmethod
    def per_answer_scores(cls, scores: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The scores of each answer of one unit, in the unit's order, from the unit's scores:
        what meta-evaluation correlates with the humans' labels of each answer. An item method's
        unit is its one answer; a method of pairs or groups overrides this (DICE: its two
        answers' scores). None: the method's scores belong to the unit, not to its answers
        (meta-evaluation refuses such a method before any judge call)."""
        return [dict(scores)] if cls.unit_kind == "item" else None

    @classmethod
    def pair_verdict(cls, details: dict[str, Any]) -> tuple[str, float | None, str | None, str | None] | None:
        """A pairwise method's verdict on one pair from its evidence: (``A`` | ``B`` | ``Tie``,
        its confidence, the kind of decision, what decided it), or None (no verdict: not a
        pairwise method, or this pair was not decided)."""
        return None

    @classmethod
    def splits_units(cls) -> bool:
        """Whether meta-evaluation can give each answer of a unit its own scores: an item method
        always, a method of pairs or groups when it overrides :meth:`per_answer_scores`."""
        own = getattr(cls.per_answer_scores, "__func__", None)
        return cls.unit_kind == "item" or own is not MetaEvaluated.per_answer_scores.__func__  # type: ignore[attr-defined]


class HasCommands:
    """What a method (or a workflow) adds to the ``assay`` command line."""

    eval_command: ClassVar[bool] = True
    """Whether ``assay eval NAME`` is generated; False for a method whose own command does the job
    (the tournament's ``assay tournament``), so one job has one command."""
    cli_main: ClassVar[tuple[str, ...] | None] = None
    """The config fields (and :meth:`cli_options`) that ``assay eval NAME -h`` lists; the others
    are expert options, listed by ``--help-all``. None: every option is listed."""
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {}
    """Flags of its own commands that were renamed, by command: ``{"triage": {"--out":
    "--output"}}``. The old spelling keeps working for one release, with a one-line notice."""
    flag_aliases: ClassVar[dict[str, dict[str, str]]] = {}
    """Old flags of its own commands kept as silent aliases, by command."""

    @classmethod
    def cli_options(cls) -> list[CliOption]:
        """Options beyond the config fields (e.g. ``--criteria FILE``), on the command line and in
        :func:`assay.core.registry.build_method`; their values reach :meth:`options_from_cli`."""
        return []

    @classmethod
    def options_from_cli(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Turn the values of :meth:`cli_options` (and config fields) into build options."""
        return values

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        """Add commands of its own to the ``assay`` command line (``app``, a Typer app), as
        simonw/llm's ``register_commands(cli)`` hook does. ``kit`` is the command line's kit
        (:data:`assay.cli.kit.KIT`): ``kit.panels`` names the help groups (``evaluate``,
        ``inspect``, ``compare``, ``rubrics``, ``tools``), and the run options and helpers are its
        attributes (``kit.JUDGE``, ``kit.runner_config``, ``kit.make_command``, ...). A module that
        defines commands at import imports :mod:`assay.cli.kit` itself, never :mod:`assay.cli`.
        Called once, when the ``assay`` command tree is built, for built-in methods and plug-ins
        alike. Every method also gets ``assay eval NAME`` without doing anything here."""
        return None


P = TypeVar("P", bound=type)


def _names(protocol: type) -> set[str]:
    """The attributes a protocol declares (with its bases'), values and annotations alike."""
    found: set[str] = set()
    for klass in protocol.__mro__[:-1]:
        found |= {n for n in vars(klass) if not n.startswith("_")} | set(getattr(klass, "__annotations__", {}))
    return found


def _implementation(cls: Any, protocol: P) -> P:
    """``cls`` itself when it inherits ``protocol``; else a stand-in: the protocol's defaults with
    whatever ``cls`` has under the protocol's names (bound to ``cls``)."""
    if isinstance(cls, type) and issubclass(cls, protocol):
        return cast(P, cls)
    own = {name: getattr(cls, name) for name in _names(protocol) if hasattr(cls, name)}
    namespace = {"__module__": getattr(cls, "__module__", __name__), "__doc__": getattr(cls, "__doc__", None), **own}
    stand_in = type(getattr(cls, "__name__", protocol.__name__), (protocol,), namespace)
    return cast(P, stand_in)


def presentation(kind: Any) -> type[Presents]:
    """How runs of ``kind`` (a method or workflow class, or a method object) are shown."""
    return _implementation(kind if isinstance(kind, type) else type(kind), Presents)


def meta_evaluation(method: Any) -> type[MetaEvaluated]:
    """How meta-evaluation reads ``method``'s results (a method class or object)."""
    return _implementation(method if isinstance(method, type) else type(method), MetaEvaluated)


def command_line(kind: Any) -> type[HasCommands]:
    """What ``kind`` (a method or workflow class) adds to the command line."""
    return _implementation(kind, HasCommands)


def run_kind(name: str) -> type[RunKind] | None:
    """What made a stored run whose method is ``name``: the registered method, else the registered
    workflow, else None (a run of a plug-in that is not installed here)."""
    from assay.core.registry import _core as registry

    found: type[RunKind] | None = registry.find("method", name) or registry.find("workflow", name)
    return found


def run_presentation(name: str) -> type[Presents] | None:
    """How a stored run whose method is ``name`` is shown (see :func:`run_kind`), or None."""
    kind = run_kind(name)
    return presentation(kind) if kind is not None else None
