"""The layout of ``assay ... -h``; it lives in :mod:`assay._help` (a leaf that :mod:`assay.clikit`
imports too) and is re-exported here, where it was first defined."""

from __future__ import annotations

from assay._help import EXPERT, HELP_ALL_SEP, NAME_WIDTH, help_all_option, install, show_all

__all__ = ["EXPERT", "HELP_ALL_SEP", "NAME_WIDTH", "help_all_option", "install", "show_all"]
