"""How many pytest-xdist workers `make test` gives the tests that load a model: two where two of the CPUs
this process may use are separate cores that each compute at full speed while the other does, else one
(each worker and what it starts is then kept to its own CPU: tests/conftest.py).

Why it asks: two one-thread llama.cpp processes on two CPUs that share one core's execution units (SMT
siblings, or a VM whose second virtual CPU is one) slow each other down. On a 2-core AMD EPYC (machine B
of docs/development.md) a second thread added little to one process (73 -> 77 prompt tokens/s) and two
one-thread processes at once read 29 tokens/s each: two workers would lose there. On a 2-core Xeon whose
CPUs are separate cores the tests that run a model took 263 s on two workers against 302 s one at a time.
So: the topology must name two cores (/sys/devices/system/cpu/cpuN/topology), and a probe must see it —
a float32 matrix product (the kind of work llama.cpp does) timed on the first CPU alone, then on both
at once, each process kept to its CPU; the slower of the two at once must keep 80% of the lone rate.
Tried on machines of exactly two usable CPUs (each worker is kept to one; more CPUs: one worker, as
before). A topology that cannot be read, a probe that fails, or a machine busy with other work gives
one worker; a probe under 80% is tried once more. The decision and its figures are printed on stderr.

Usage: python tests/model_workers.py   (prints 1 or 2)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

KEEP = 0.8
"""The share of its lone rate each CPU must keep while the other computes."""
ATTEMPTS = 2
"""Probes before one worker is chosen: on a 2-core Xeon VM one probe in eight saw 66% kept (two, then one,
in the same hour's runs), the others 88-126%."""

_PROBE = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
import numpy as np
a = np.random.default_rng(0).standard_normal((192, 192), dtype=np.float32)
start = float(sys.argv[2])
while time.time() < start:
    a @ a
began = time.time()
count, end = 0, began + float(sys.argv[3])
while time.time() < end:
    a @ a
    count += 1
print(count / (time.time() - began))
"""


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


def probe(cpus: list[int], seconds: float = 1.0) -> list[float]:
    """Matrix products a second, over ``seconds``, of one process per CPU of ``cpus``, all at once
    (each starts timing at a common moment, or when it is ready if later, and times its own window)."""
    start = time.time() + 1.0  # every process imported numpy and warmed up by then
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _PROBE, str(cpu), repr(start), repr(seconds)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for cpu in cpus]
    try:
        return [float(proc.communicate(timeout=60)[0]) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def decide() -> tuple[int, str]:
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return 1, "no CPU affinity on this platform"
    if len(cpus) != 2:  # each worker is kept to one CPU: measured, and worth it, on two-CPU machines only
        return 1, f"{len(cpus)} usable CPU(s); two workers are tried on machines of two"
    if physical_cores(cpus) < 2:
        return 1, "two CPUs of one core, or a topology that cannot be read"
    tries = []
    for _ in range(ATTEMPTS):  # a VM's CPU can be slowed for a moment from outside: one more try
        try:
            alone = probe(cpus[:1])[0]
            both = probe(cpus)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            return 1, f"the probe failed ({type(exc).__name__})"
        kept = min(both) / alone if alone else 0.0
        tries.append(f"{alone:.0f} on CPU {cpus[0]} alone, {both[0]:.0f} and {both[1]:.0f} on both at once: "
                     f"{kept:.0%} kept")
        if kept >= KEEP:
            return 2, "matrix products a second: " + "; then ".join(tries)
    return 1, "matrix products a second: " + "; then ".join(tries) + f", under {KEEP:.0%}"


def main() -> None:
    workers, why = decide()
    print(f"tests that run a model: {workers} worker(s) ({why})", file=sys.stderr)
    print(workers)


if __name__ == "__main__":
    main()
