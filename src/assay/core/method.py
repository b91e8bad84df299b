"""What every evaluation method provides to the engine."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from assay.core.errors import ConfigError
from assay.core.types import Item, Unit, Unscored

if TYPE_CHECKING:  # the contract names the judge client a method is handed; the judge package stands above
    from assay.judge.runner import JudgeClient


class CliOption(BaseModel):
    """A method-specific command-line option that is not a config field."""

    model_config = ConfigDict(frozen=True)
    name: str
    """Python name of the value (``criteria``); the flag is ``--criteria``."""
    type: str = "str"
    """``str``, ``path``, ``float``, ``int``, ``bool``, or ``list`` (repeatable string)."""
    default: Any = None
    help: str = ""
    env: bool = True
    """Also read ``ASSAY_<NAME>``."""


class ItemResult(BaseModel):
    """One item's scores, the unscored metrics with their reasons, and the evidence."""

    scores: dict[str, float | None]
    unscored: list[Unscored] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    call_keys: list[str] = Field(default_factory=list)

    @property
    def status(self) -> str:
        values = list(self.scores.values())
        if values and all(v is None for v in values):
            return "unscored"
        if any(v is None for v in values):
            return "partial"
        return "scored"


OPENAI_CACHE_MIN = 1024
"""OpenAI caches a prompt's start only in prompts of at least this many tokens ..."""
OPENAI_CACHE_STEP = 128
"""... and bills it in steps of this many tokens, at least 1,024 of them."""


def openai_cached(prompt_tokens: int, shared_tokens: int) -> int:
    """The prompt tokens OpenAI would bill as cached of a prompt of ``prompt_tokens`` tokens whose
    first ``shared_tokens`` it has read recently: none below 1,024 prompt tokens, else the shared
    start rounded down to a multiple of 128, when that is 1,024 or more."""
    if prompt_tokens < OPENAI_CACHE_MIN:
        return 0
    cached = max(0, min(shared_tokens, prompt_tokens)) // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
    return cached if cached >= OPENAI_CACHE_MIN else 0


class CallEstimate(BaseModel):
    """A dry-run estimate for one item (tokens are approximate: ~4 characters per token)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int | None = None
    """Prompt tokens a local judge must read where calls of one answer share their start (llama.cpp
    keeps it): what its time depends on. None: every prompt token is read."""
    instruction_tokens: int | None = None
    """Of the tokens a local judge reads, those of system messages (a method's instructions) read for
    the first time: the embedded judge keeps their state on disk, so it reads them on a machine's
    first run and loads them on later ones. None: not estimated."""
    cached_tokens: int | None = None
    """Prompt tokens OpenAI's automatic prompt cache would bill as cached (:func:`openai_cached`
    of each call's start shared with recent calls). None: the estimate does not say which calls
    share a start (counted as none)."""
    assumes: str | None = None
    """What the estimate assumes that only the judge decides (DeCE: how many criteria and elements
    it extracts), shown beside the figures. None: nothing of the kind."""

    def __add__(self, other: CallEstimate) -> CallEstimate:
        evaluated = (None if self.evaluated_tokens is None and other.evaluated_tokens is None else
                     self.read_tokens + other.read_tokens)
        cached = (None if self.cached_tokens is None and other.cached_tokens is None else
                  (self.cached_tokens or 0) + (other.cached_tokens or 0))
        instructions = (None if self.instruction_tokens is None and other.instruction_tokens is None else
                        (self.instruction_tokens or 0) + (other.instruction_tokens or 0))
        return CallEstimate(calls=self.calls + other.calls,
                            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                            completion_tokens=self.completion_tokens + other.completion_tokens,
                            evaluated_tokens=evaluated, cached_tokens=cached, instruction_tokens=instructions,
                            assumes=self.assumes or other.assumes)

    @property
    def read_tokens(self) -> int:
        return self.prompt_tokens if self.evaluated_tokens is None else self.evaluated_tokens


class ReportSection(BaseModel):
    """What a method adds to the HTML report: templates (Jinja source, autoescaped) rendered with
    ``context``. ``section`` goes once under the summary; ``item`` once per row, with ``row``."""

    section: str | None = None
    item: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)


class RunKind:
    """What the readers of a stored run (export, report, review UI, meta-evaluation) need of
    whatever made it, a method or a workflow: the name the run is stored under and its metrics."""

    name: ClassVar[str]
    metrics: ClassVar[tuple[str, ...]]
    primary_metric: ClassVar[str | None] = None
    """The metric that stands for the kind in comparisons (meta-evaluation's Δr reference, the
    review UI's main column)."""
    metric_ranges: ClassVar[dict[str, tuple[float, float]]] = {}
    """(low, high) of a metric whose scale is not 0–1 (the pointwise baseline's 0–4): what a
    threshold "of the range" is taken of (DICE's thresholded-scalar verdicts, injection audit) and
    what a reviewer's override must lie within."""

    @classmethod
    def metric_range(cls, metric: str) -> tuple[float, float]:
        """The scale of ``metric``: 0–1 unless ``metric_ranges`` says otherwise."""
        return cls.metric_ranges.get(metric, (0.0, 1.0))


class Method(RunKind, ABC):
    """An evaluation method as the engine runs it: I/O-free rendering and parsing plus one
    coroutine per unit.

    The contract is small: ``name``, ``metrics``, ``config_model``, :meth:`manifest`,
    :meth:`check_item`, :meth:`estimate` and :meth:`evaluate` (or, for pairs and groups,
    :meth:`units` / :meth:`next_units` and :meth:`evaluate_unit`). What a method shows (the report,
    the review UI, explanations), how meta-evaluation reads it and what it adds to the command
    line are optional protocols of :mod:`assay.core.protocols` (``Presents``, ``MetaEvaluated``,
    ``HasCommands``) that a method class also inherits when it implements them; the readers ask
    for them through one helper each and get the defaults otherwise.
    :func:`assay.core.registry.register_method` makes a method known by its name: ``assay eval
    NAME`` (one option per field of ``config_model``, with its docstring as help, an ``ASSAY_*``
    variable and a TOML key), the run manifest and run id (``version``)."""

    version: ClassVar[str] = "1"
    """Bump when the method's behaviour changes in a way its manifest does not show (parsing,
    scoring rules, request schemas): it enters the manifest and the run id, and ``--resume``
    refuses a run made by another version."""
    config_model: ClassVar[type[BaseModel] | None] = None
    """The options, as a Pydantic model whose field docstrings are the CLI help."""
    needs_judge: ClassVar[bool] = True
    """False for methods that make no judge call (lexical baselines)."""
    supports_jury: ClassVar[bool] = False
    """Whether the method can use a jury backend (``jury/A+B``): it asks each member itself."""

    unit_kind: ClassVar[str] = "item"
    """What one evaluation scores: ``item`` (one answer), ``pair`` (two answers to one query),
    ``group``. A method of pairs or groups overrides :meth:`units` and :meth:`evaluate_unit`."""

    def units(self, items: list[Item]) -> list[Unit]:
        """The units known before anything is evaluated: by default one per item."""
        return [Unit.of(item) for item in items]

    def next_units(self, items: list[Item], history: list[tuple[Unit, ItemResult | None]]) -> list[Unit]:
        """The scheduler: the next batch of units to evaluate, given every unit proposed so far
        with its result (None while pending), in the order proposed; ``[]`` when the run is done.
        The engine calls it whenever no unit is pending. It must be a function of its arguments
        (a resumed run replays it from the stored results), and may not repeat a unit's key.
        By default every unit is known up front (:meth:`units`) and there is no further round."""
        return self.units(items) if not history else []

    async def evaluate_unit(self, unit: Unit, client: JudgeClient) -> ItemResult:
        """Score one unit; for item methods, :meth:`evaluate` of its item."""
        if unit.kind != "item":
            raise ConfigError(f"{self.name} evaluates items, not {unit.kind}s")
        return await self.evaluate(unit.item, client)

    @classmethod
    def from_options(cls, config: BaseModel | None, **extras: Any) -> Method:
        """Build the method from its validated config and the options that are not config
        fields (e.g. DeCE's frozen criteria); a method with extras overrides this."""
        if extras:
            raise TypeError(f"unexpected options {', '.join(extras)}")
        return cls(config) if config is not None else cls()  # type: ignore[call-arg]

    @abstractmethod
    def manifest(self) -> dict[str, Any]:
        """Options and prompt hashes; stored in the run manifest and part of the run id."""

    @abstractmethod
    def check_item(self, item: Item) -> str | None:
        """Why the item cannot be evaluated by this method (naming the field), or None."""

    def reads_label_probs(self) -> bool:
        """Whether the method as configured reads the judge's label probabilities (direct
        verdicts): it then needs a judge that gives them, and its calls of one unit share a long
        prefix. A method with such an option overrides this."""
        return False

    def units_in_flight(self, concurrency: int) -> int | None:
        """How many units the engine evaluates at once (None: its default, several per call slot,
        so consecutive calls share their instructions). A method whose calls of one unit share a
        long prefix (direct verdicts) asks for one unit per call slot, so they follow each other."""
        return concurrency if self.reads_label_probs() else None

    def for_judge(self, capabilities: Any) -> Method:
        """The method as it runs on this judge: options whose default depends on the judge (DeCE's
        verdicts: direct where the judge gives label probabilities) are settled here, before the
        run id is computed. The default returns the method unchanged."""
        return self

    def earlier_defaults(self) -> list[tuple[Method, str]]:
        """When a default of this method changed in a release and this method runs at the new
        default: the method as earlier releases ran the same command, each with what differs (one
        phrase). A store holding such an earlier run continues it instead of starting a new one, so
        old stores keep resuming their runs. Empty by default."""
        return []

    def check_judge(self, capabilities: Any, name: str) -> str | None:
        """Why this judge (its ``Capabilities``) cannot serve the method as configured, or None:
        refused before the run starts, naming the alternatives."""
        if self.reads_label_probs() and not capabilities.label_probs:
            return (f"--verdicts direct reads label probabilities, which {name} does not give; use the embedded "
                    "judge or an OpenAI-compatible server with logprobs, or --verdicts hard")
        return None

    def check_all(self, items: list[Item]) -> str | None:
        """Why these items together cannot be evaluated (a comparison with nothing to compare,
        answers to one id under different questions), or None. Called before any store is
        touched, after :meth:`check_item` has accepted each item."""
        return None

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        """Score one item (item methods implement this; others :meth:`evaluate_unit`)."""
        raise ConfigError(f"{self.name} evaluates {self.unit_kind}s, not single items")

    @abstractmethod
    def estimate(self, items: list[Item]) -> CallEstimate:
        """Dry-run estimate of judge calls and tokens for these items."""

    def order_key(self, item: Item) -> Any:
        """Items are evaluated in this order (results still come back in input order), so
        that consecutive calls share prompt prefixes."""
        return item.id


def method_template(name: str, package: str = "assay.methods") -> str:
    """The text of a report template partial shipped in ``package``'s ``templates/`` folder (a
    plug-in passes its own package)."""
    from importlib.resources import files

    return files(package).joinpath("templates", name).read_text(encoding="utf-8")
