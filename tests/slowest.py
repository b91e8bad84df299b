"""Prints the suite's wall time and its 25 slowest tests at the end of `make test`, from the times
tests/conftest.py appended to the file given (both parts of the suite). The budget: the whole of
`make test` within 30 minutes from a fresh clone on a 2-core machine whose `assay doctor` reads
20 prompt tokens/s, within 15 once the compiled llama.cpp wheel is cached.

Usage: python tests/slowest.py DURATIONS.jsonl START_EPOCH_SECONDS"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path


def main() -> None:
    path, start = Path(sys.argv[1]), float(sys.argv[2])
    totals: dict[str, float] = defaultdict(float)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            totals[entry["test"]] += entry["s"]
    wall = time.time() - start
    print(f"\nmake test: wall time {wall / 60:.1f} min ({wall:.0f} s); budget 30 min on a 2-core machine reading "
          "20 prompt tokens/s (assay doctor), 15 min with the llama.cpp wheel cached")
    print(f"the 25 slowest of {len(totals)} tests (setup + call + teardown):")
    for test, seconds in sorted(totals.items(), key=lambda kv: -kv[1])[:25]:
        print(f"{seconds:8.1f} s  {test}")


if __name__ == "__main__":
    main()
