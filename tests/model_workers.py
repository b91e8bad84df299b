"""How many pytest-xdist workers `make test` gives the tests that load a model: one per physical core
this process may use, at most two (each worker and what it starts kept to its own core: tests/conftest.py).

Two workers only where the CPUs are separate cores: two one-thread llama.cpp processes on SMT siblings
(two logical CPUs of one core) share that core's execution units. On a 2-core AMD EPYC (machine B of
docs/development.md; its topology was not recorded) a second thread added little to one process (73 ->
77 prompt tokens/s) and two one-thread processes at once read 29 tokens/s each: two workers would lose
there. On a 2-core Xeon whose CPUs are separate cores the tests that run a model took 263 s on two
workers against 302 s one at a time. A topology that cannot be read counts as one core.

Usage: python tests/model_workers.py   (prints 1 or 2)"""

from __future__ import annotations

import os
from pathlib import Path


def physical_cores(cpus: list[int], root: Path = Path("/sys/devices/system/cpu")) -> int:
    """The distinct (package, core) pairs among ``cpus``; 1 when the topology cannot be read."""
    cores = set()
    for cpu in cpus:
        topology = root / f"cpu{cpu}" / "topology"
        try:
            cores.add(((topology / "physical_package_id").read_text().strip(),
                       (topology / "core_id").read_text().strip()))
        except OSError:
            return 1
    return max(1, len(cores))


def main() -> None:
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        print(1)
        return
    print(min(2, physical_cores(cpus)))


if __name__ == "__main__":
    main()
