"""The alignment file's shape, parsed once where it enters (:func:`assay.align.read_alignment`).

Only what assay reads back is typed: the identity it is checked against, the calibration maps and
the figures shown beside them, the tie threshold and the aligned score. Anything else a file
holds is kept as it is. A file that does not fit is one ConfigError line naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.errors import ConfigError

Number = float
Share = float


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FittedFor(_Open):
    method: str
    judge: str
    judge_identity: Any = None
    method_version: Any = None
    prompts: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)


class Bin(_Open):
    bin: tuple[float, float]
    n: int = Field(ge=0)
    mean_p: float = Field(ge=0, le=1)
    agree_share: float = Field(ge=0, le=1)


class ProbabilityFigures(_Open):
    n: int = Field(ge=0)
    base_rate: float
    mean_p: float
    ece: float | None
    ece_ci: list[float] | None
    brier: float | None
    auroc: float | None
    reliability: list[Bin] | None = None


class CalibrationMap(_Open):
    kind: Literal["platt", "isotonic"]
    slope: float | None = None
    intercept: float | None = None
    x: list[float] | None = None
    y: list[float] | None = None

    @field_validator("y")
    @classmethod
    def _same_length(cls, y: list[float] | None, info: Any) -> list[float] | None:
        x = info.data.get("x")
        if y is not None and x is not None and len(x) != len(y):
            raise ValueError("x and y differ in length")
        return y


class Calibration(_Open):
    map: CalibrationMap
    chosen: str
    n: int = Field(ge=0)
    items: int = Field(ge=0)
    before: ProbabilityFigures
    after_cv: ProbabilityFigures


class Accuracy(_Open):
    accuracy: float | None
    accuracy_ci: list[float] | None = None


class Correlation(_Open):
    pearson: float | None
    pearson_ci: list[float] | None


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

    @field_validator("shares", "weights")
    @classmethod
    def _every_input(cls, value: dict[str, float], info: Any) -> dict[str, float]:
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
