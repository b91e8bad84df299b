"""What several benchmarks share: the installed ``assay`` command and the demo's first answers."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from assay.cli.demo import examples_path


def assay_exe() -> str:
    """The ``assay`` command installed beside this Python."""
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    if exe is None:
        raise SystemExit("the assay command is not installed beside this Python (make setup)")
    return exe


def demo_items(folder: Path, answers: int) -> Path:
    """The demo's first ``answers`` answers, as ``folder/items.jsonl``."""
    items = folder / "items.jsonl"
    items.write_text("\n".join(examples_path().read_text(encoding="utf-8").splitlines()[:answers]) + "\n")
    return items
