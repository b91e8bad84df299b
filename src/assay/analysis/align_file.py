"""The alignment file's shape, parsed once where it enters (:func:`assay.analysis.align.read_alignment`).

Only what assay reads back is typed: the identity it is checked against, the calibration maps and
the figures shown beside them, the tie threshold and the aligned score. Anything else a file
holds is kept as it is. A file that does not fit is one ConfigError line naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assay.core.errors import ConfigError

Number = float
Share = float
Interval = Annotated[list[float], Field(min_length=2, max_length=2)]
"""A 95% confidence interval: [low, high]."""


class _Open(BaseModel):
    # strict: the file is returned as it was read, so a number must be a number, not a string that
    # would convert to one
    model_config = ConfigDict(extra="allow", strict=True)


class FittedFor(_Open):
    method: str
    judge: str
    judge_identity: Any = None
    method_version: Any = None
    prompts: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)


class Bin(_Open):
    bin: list[float] = Field(min_length=2, max_length=2)
    n: int = Field(ge=0)
    mean_p: float = Field(ge=0, le=1)
    agree_share: float = Field(ge=0, le=1)


class ProbabilityFigures(_Open):
    n: int = Field(ge=0)
    base_rate: float
    mean_p: float
    ece: float | None
    ece_ci: Interval | None
    brier: float | None
    auroc: float | None
    reliability: list[Bin] | None = None


class CalibrationMap(_Open):
    kind: Literal["platt", "isotonic"]
    slope: float | None = None
    intercept: float | None = None
    x: list[float] | None = None
    y: list[float] | None = None

    @model_validator(mode="after")
    def _complete(self) -> CalibrationMap:
        if self.kind == "platt" and (self.slope is None or self.intercept is None):
            raise ValueError("a Platt map needs a slope and an intercept")
        if self.kind == "isotonic" and (not self.x or self.y is None or len(self.x) != len(self.y)):
            raise ValueError("an isotonic map needs x and y of one length")
        return self


class Calibration(_Open):
    map: CalibrationMap
    chosen: str
    n: int = Field(ge=0)
    items: int = Field(ge=0)
    before: ProbabilityFigures
    after_cv: ProbabilityFigures


class Accuracy(_Open):
    accuracy: float | None
    accuracy_ci: Interval | None = None


class Correlation(_Open):
    pearson: float | None
    pearson_ci: Interval | None


class TieThreshold(_Open):
    threshold: float = Field(ge=0, le=0.5)
    n: int = Field(ge=0)
    after_cv: Accuracy
    judge_verdict: Accuracy
    forced_choice: Accuracy


class OutOfFold(_Open):
    predicted: list[float]
    target: list[float]
    items: list[str]

    @model_validator(mode="after")
    def _one_entry_each(self) -> OutOfFold:
        if not len(self.predicted) == len(self.target) == len(self.items):
            raise ValueError("predicted, target and items differ in length")
        return self


class AlignedScore(_Open):
    inputs: list[str]
    weights: dict[str, float]
    shares: dict[str, Share]
    intercept: float
    fitted_to: Literal["grades", "preferences"]
    n: int = Field(ge=0)
    signals: list[str] = Field(default_factory=list)
    combine: Literal["equal", "ridge"] = "ridge"  # files before this key were all ridge
    standardised_shares: dict[str, Share] | None = None
    other_combiners_after_cv: dict[str, float | None] | None = None
    out_of_fold: OutOfFold | None = None
    before: dict[str, Correlation]
    after_cv: Correlation

    @field_validator("shares", "weights", "standardised_shares")
    @classmethod
    def _every_input(cls, value: dict[str, float] | None, info: Any) -> dict[str, float] | None:
        if value is None:
            return value
        missing = [name for name in info.data.get("inputs") or [] if name not in value]
        if missing:
            raise ValueError(f"no entry for input {missing[0]!r}")
        return value


class AlignmentFile(_Open):
    format: Literal["assay-alignment"]
    version: int
    fitted_for: FittedFor
    calibration: dict[str, Calibration] | None = None
    tie_threshold: TieThreshold | None = None
    aligned_score: AlignedScore | None = None
    not_fitted: list[str] = Field(default_factory=list)


def parse(value: Any, source: str) -> dict[str, Any]:
    """``value`` (a file's JSON) checked against :class:`AlignmentFile` and returned as it was read
    (every key the code subscripts is required by the models; optional ones are read with .get)."""
    try:
        AlignmentFile.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the file)"
        raise ConfigError(f"--alignment {source}: not an alignment file assay can use: {where}: "
                          f"{first['msg']}") from None
    return dict(value)
