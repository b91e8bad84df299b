"""DeCE's verdict modes, one per value of ``DeCEConfig.verdicts``: hard (the paper's), soft
(the judge's probability of each hard verdict) and direct (one question per statement)."""

from __future__ import annotations

from assay.methods.dece.verdicts.base import Host, Judged, VerdictMode
from assay.methods.dece.verdicts.direct import Direct
from assay.methods.dece.verdicts.hard import Hard
from assay.methods.dece.verdicts.soft import Soft

MODES: dict[str, VerdictMode] = {mode.name: mode for mode in (Hard(), Soft(), Direct())}

__all__ = ["MODES", "Direct", "Hard", "Host", "Judged", "Soft", "VerdictMode"]
