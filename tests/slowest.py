"""Prints the suite's wall time and its 25 slowest tests at the end of `make test`, from the times
tests/conftest.py appended to the file given (both parts of the suite). The budget: the whole of
`make test` within 30 minutes from a fresh clone on a 2-core machine whose `assay doctor` reads
20 prompt tokens/s, within 15 once the compiled llama.cpp wheel is cached.

Usage: python tests/slowest.py DURATIONS.jsonl START_EPOCH_SECONDS [MODEL_PART_SECONDS WORKERS]

MODEL_PART_SECONDS: the wall time of the part that runs the tests loading a model; WORKERS: how many
ran them at once (tests/model_workers.py), so that the sum of their tests' times is about WORKERS
times that part."""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path


def main() -> None:
    path, start = Path(sys.argv[1]), float(sys.argv[2])
    model_part = float(sys.argv[3]) if len(sys.argv) > 3 else None
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    totals: dict[str, float] = defaultdict(float)
    serial: dict[str, float] = defaultdict(float)
    judge: dict[str, float] = defaultdict(float)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            totals[entry["test"]] += entry["s"]
            if entry.get("model"):
                serial[entry["test"]] += entry["s"]
            for backend, seconds in entry.get("judge_s", {}).items():
                judge[backend] += seconds
    wall = time.time() - start
    print(f"\nmake test: wall time {wall / 60:.1f} min ({wall:.0f} s); budget 30 min on a 2-core machine reading "
          "20 prompt tokens/s (assay doctor), 15 min with the llama.cpp wheel cached")
    model = sum(judge.values())
    # the tests that load a model or start a model server (after the unit tests, WORKERS at a time): the
    # part's wall time, or failing that the sum of their times
    integration = model_part if model_part is not None else sum(serial.values())
    # their judges' calls, waited on in WORKERS workers at once: about 1/WORKERS of their sum is wall time
    speed = doctor_speed()
    if model:
        print(f"real judges' calls in the tests' stores: {model:.0f} s waited (calls in flight together once; "
              + ", ".join(f"{b} {s:.0f} s" for b, s in sorted(judge.items(), key=lambda kv: -kv[1])[:4]) + ")")
    if speed and speed > 20 and (model or integration):
        ratio = speed / 20
        low, high = wall + model / workers * (ratio - 1), wall + integration * (ratio - 1)
        print(f"this machine reads {speed:.0f} prompt tokens/s (assay doctor); where it reads 20 ({ratio:.1f}x "
              f"slower), this run would take about between {low / 60:.1f} min (only the judge calls in the stores "
              f"slower) and {high / 60:.1f} min (the whole {integration / 60:.1f} min of the tests that run a model "
              "slower: model loads, label-probability checks and servers too)")
    print(f"the 25 slowest of {len(totals)} tests (setup + call + teardown):")
    for test, seconds in sorted(totals.items(), key=lambda kv: -kv[1])[:25]:
        print(f"{seconds:8.1f} s  {test}")


def doctor_speed() -> float | None:
    """Prompt tokens/s of the embedded judge as `assay doctor` last measured it here, if it did."""
    import os

    home = Path(os.environ.get("ASSAY_CACHE_DIR") or Path.home() / ".cache" / "assay")
    try:
        return float(json.loads((home / "speed-default.json").read_text(encoding="utf-8"))["prompt_tokens_per_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


if __name__ == "__main__":
    main()
