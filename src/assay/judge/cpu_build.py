"""Which llama.cpp build to compile for this CPU: ``portable`` or ``avx512``. Never AMX, never native.

Standard library only: the Makefile runs it before assay is installed
(``python3 src/assay/judge/cpu_build.py cmake-args``), and ``assay doctor`` imports it.

The two builds:

- ``portable`` — x86-64 with AVX2, FMA and F16C; no AVX-512, no AMX. Runs on every x86-64 CPU of the
  last decade. Chosen wherever the next build is not.
- ``avx512`` — the same plus AVX-512 F/BW/VL/DQ/CD with VNNI, VBMI and BF16 (``-DGGML_AVX512=ON
  -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON``); AMX still off, native still
  off. Chosen only where ``/proc/cpuinfo`` lists every flag of :data:`AVX512_NEEDS`. On an AVX-512
  Xeon it read prompts 1.5x as fast as the portable build (benchmarks/llama_build.py).

The builds do not compute identical numbers: on a 2-core AMD EPYC their label probabilities agreed
within 0.0005 on the embedded judge's yes/no questions but differed by up to 0.038 on a near-tied
three-way question (benchmarks/llama_build_probs.py, benchmarks/results/llama_build_probs*.json).

``ASSAY_LLAMA_BUILD=portable|avx512|auto`` (``make ... LLAMA_BUILD=...``) overrides the choice; the
default is ``auto``. Each build's flags hash to their own wheel-cache key, so the builds never mix.

Why AVX-512 that the kernel lists is safe where listed AMX was not — what we found, not a proof:

- The kernel's documentation of XSTATE features (Documentation/arch/x86/xstate.rst, "Using XSTATE
  features in user space applications") says that features "up to AVX-512 and PKRU states" are
  enabled by the kernel for every process when available, while AMX TILE_DATA is trapped on first
  use until the process asks for it with ``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``;
  without that permission the first tile instruction gets SIGILL.
- llama.cpp does not ask on every path: ggml-org/llama.cpp PR #26954 ("ggml-cpu/amx: request XFD
  XTILEDATA permission per thread before AMX instructions") reports crashes on new Xeons because
  ``ggml_amx_init()`` calls ``arch_prctl`` from one thread only, and issue #28756 is a SIGILL with an
  AMX_INT8 build. That matches the SIGILL a native build (which enabled AMX) gave on a VM listing AMX.
- The remaining risk for AVX-512 is a machine whose CPUID lists it while the OS has not enabled the
  ZMM state in XCR0 (llama.cpp PRs #20388 and #28329 add that check to its own CPUID-based feature
  detection). We read the kernel's list in /proc/cpuinfo, not CPUID; we did not verify in the
  kernel's source that it drops the avx512 flags whenever XCR0 lacks the ZMM state. ``assay doctor``'s
  forward pass in a child process catches that case anyway and gives the portable rebuild command.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_VERSION = "0.3.36"

PORTABLE_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
                       "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF "
                       "-DLLAVA_BUILD=OFF")
"""x86-64 with AVX2/FMA/F16C, without AVX-512 or AMX; without llama-cpp-python's multimodal library
(``LLAVA_BUILD``: libmtmd, for image and audio chat formats assay never uses; 140 compile steps
instead of 193, 0.77-0.90x the compile time in two runs)."""

AVX512_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
                     "-DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON "
                     "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF")
"""The portable flags plus AVX-512 (F/BW/VL/DQ/CD, VNNI, VBMI, BF16); AMX off, native off."""

BUILDS = {"portable": PORTABLE_CMAKE_ARGS, "avx512": AVX512_CMAKE_ARGS}

WITHOUT_COMMON = Path(__file__).resolve().with_name("llama_without_common.cmake")
"""What the Makefile's compile and ``assay doctor``'s rebuild command add to a build's flags:
llama.cpp's ``common`` library, which llama-cpp-python forces on and never loads, is not compiled
(``-DCMAKE_PROJECT_llama.cpp_INCLUDE`` of this file; the file says how). The README's one-line
``pip install`` commands do not add it (they may run before assay is installed) and still compile
it. Measured on a 2-core Xeon, the portable build's ``pip wheel`` alone, two runs: 450 and 311 s
with llama-cpp-python's defaults, 347 and 279 s without the multimodal library, 148 and 136 s
without it and ``common``; the four libraries the Python package loads have the same machine code
in all three (``benchmarks/llama_compile.py``)."""

AVX512_NEEDS = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd",
                "avx512_vnni", "avx512vbmi", "avx512_bf16")
"""Every flag /proc/cpuinfo must list for the avx512 build to be chosen (the kernel's names)."""

ENV = "ASSAY_LLAMA_BUILD"
CHOICES = ("auto", "portable", "avx512")

MEASURED = {"avx512": [("an AVX-512 Xeon", 1.52, 1.12, "benchmarks/results/llama_build.json"),
                       ("an AVX-512 AMD EPYC", 1.36, 1.03, "benchmarks/results/llama_build_epyc.json")]}
"""What the avx512 build measured against the portable one: (machine, prompt speed ratio, generated
speed ratio, the result file). tests/unit/judge/test_build_flags.py checks each against its file."""


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity set (``taskset``, a container's cpuset, a test
    worker given one core), lowered to a CPU quota's whole CPUs (Docker's ``--cpus``, a Kubernetes CPU
    limit: :func:`cpu_quota`), not every core of the machine. llama.cpp's default thread count: with
    more threads than the CPUs they may use, its threads, which spin while they wait for each other,
    take turns (under a one-CPU quota on 2 cores, the 1.5B judge read 28-30 prompt tokens/s with two
    threads and 35-41 with one)."""
    try:
        cpus = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 2
    quota = cpu_quota()
    return max(1, min(cpus, int(quota))) if quota is not None else cpus


def cpu_quota(mountinfo: Path = Path("/proc/self/mountinfo"),
              cgroups: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPUs' worth of time per period this process's cgroup, or one above it, allows (cgroup v2's
    ``cpu.max``, v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``): the smallest along the path; None
    when there is none or it cannot be read."""
    try:
        # the kernel writes paths as bytes (a mount point may not be UTF-8), spaces as \040
        mounts = [line.split() for line in mountinfo.read_text(errors="surrogateescape").splitlines()]
        memberships = [line.split(":", 2) for line in cgroups.read_text(errors="surrogateescape").splitlines()]
    except OSError:
        return None
    limits: list[float] = []
    for fields in mounts:
        if "-" not in fields or len(fields) < 5:
            continue
        tail = fields[fields.index("-") + 1:]
        if len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2].split(",")
        root, mountpoint = _unescape(fields[3]), Path(_unescape(fields[4]))
        for member in memberships:
            if len(member) != 3:
                continue
            hierarchy, controllers, path = member
            if fstype == "cgroup2" and hierarchy == "0" and controllers == "":
                limits += _limits(mountpoint, root, path, _v2_limit)
            elif fstype == "cgroup" and "cpu" in options and "cpu" in controllers.split(","):
                limits += _limits(mountpoint, root, path, _v1_limit)
    return min(limits) if limits else None


def _limits(mountpoint: Path, root: str, path: str, read: Callable[[Path], float | None]) -> list[float]:
    # the cgroup's folder under the mount (whose root may itself be a cgroup, as in a container); a
    # cgroup outside the mount's root, or seen from outside its namespace (..), has no folder here
    if root != "/":
        if not (path == root or path.startswith(root + "/")):
            return []
        path = path[len(root):]
    parts = [part for part in path.split("/") if part]
    if ".." in parts:
        return []
    folder = mountpoint.joinpath(*parts)
    found = []
    while True:
        limit = read(folder)
        if limit is not None:
            found.append(limit)
        if folder == mountpoint or mountpoint not in folder.parents:
            return found
        folder = folder.parent


def _unescape(field: str) -> str:
    """A mountinfo path field with its octal escapes (``\\040`` for a space) decoded."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match[1], 8)), field)


def _v2_limit(folder: Path) -> float | None:
    try:
        quota, period = (folder / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _v1_limit(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The CPU's feature flags as the kernel lists them; None where there is no /proc/cpuinfo."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def missing_for_avx512(flags: set[str] | None) -> list[str]:
    """The flags of :data:`AVX512_NEEDS` the CPU does not list (all of them without /proc/cpuinfo)."""
    return [flag for flag in AVX512_NEEDS if flags is None or flag not in flags]


def fitting_build(flags: set[str] | None) -> str:
    """``avx512`` where every flag it needs is listed, else ``portable``. AMX flags play no part."""
    return "portable" if missing_for_avx512(flags) else "avx512"


def without_common_args() -> str:
    """The flag the Makefile adds to a build's flags when it compiles (see :data:`WITHOUT_COMMON`;
    the Makefile writes it itself, from the file in its checkout), and ``assay doctor``'s rebuild
    command too, with the installed file. The path is quoted for a shell-like split where it needs it
    (pip's build backend splits ``CMAKE_ARGS`` so)."""
    return f"-DCMAKE_PROJECT_llama.cpp_INCLUDE={shlex.quote(str(WITHOUT_COMMON))}"


def wheel_key(cmake_args: str, version: str = LLAMA_CPP_VERSION) -> str:
    """The wheel cache's folder name for these flags, compiled as the Makefile compiles them:
    ``<version>-<sha256("<version> <flags> without-common:<sha256 of WITHOUT_COMMON>[:16]")[:16]>``
    (the Makefile computes the same with sha256sum). The included file is named by its content, not
    its path, so every checkout on a machine shares one cached wheel."""
    included = hashlib.sha256(WITHOUT_COMMON.read_bytes()).hexdigest()[:16]
    text = f"{version} {cmake_args} without-common:{included}"
    return f"{version}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


@dataclass(frozen=True)
class Choice:
    build: str
    """``portable`` or ``avx512``."""
    requested: str
    """``auto`` or the build that was asked for."""
    reason: str
    warning: str = ""
    """Set when the build asked for will not run on this CPU."""

    @property
    def cmake_args(self) -> str:
        return BUILDS[self.build]

    @property
    def fallback(self) -> bool:
        """``auto`` chose portable (this CPU lacks something the avx512 build needs)."""
        return self.requested == "auto" and self.build == "portable"


def choose(requested: str | None = None, flags: set[str] | None = None, *,
           cpuinfo: Path = Path("/proc/cpuinfo")) -> Choice:
    """The build for this CPU: ``requested`` (else ``$ASSAY_LLAMA_BUILD``, else ``auto``); ``auto``
    reads ``flags`` (else ``cpuinfo``). ValueError for a name that is not a build."""
    asked = (requested or os.environ.get(ENV) or "auto").strip().lower()
    if asked not in CHOICES:
        raise ValueError(f"{ENV}/LLAMA_BUILD must be one of {', '.join(CHOICES)}, not {asked!r}")
    if flags is None:
        flags = cpu_flags(cpuinfo)
    missing = missing_for_avx512(flags)
    where = "no /proc/cpuinfo" if flags is None else f"this CPU lacks {' '.join(missing)}"
    if asked == "auto":
        if missing:
            return Choice("portable", asked, f"auto: {where}")
        return Choice("avx512", asked, "auto: this CPU lists AVX-512 F/BW/VL/DQ/CD, VNNI, VBMI and BF16")
    warning = ""
    if asked == "avx512" and missing:
        warning = (f"the avx512 build was asked for ({ENV}/LLAMA_BUILD) but {where}: "
                   "it will not run here (illegal instruction)")
    return Choice(asked, asked, f"asked for ({ENV}/LLAMA_BUILD={asked})", warning)


def explain(choice: Choice) -> str:
    """One line saying which build and why."""
    return f"llama.cpp build: {choice.build} ({choice.reason}); cache key {wheel_key(choice.cmake_args)}"


def main(argv: list[str] | None = None) -> int:
    """``cmake-args`` prints the chosen build's flags, ``build`` its name, ``explain`` which and why
    (a fallback to portable and a build that will not run here are said on stderr).
    ``--build NAME`` overrides ``$ASSAY_LLAMA_BUILD``; an empty NAME means auto."""
    import argparse

    parser = argparse.ArgumentParser(prog="cpu_build.py", description=main.__doc__)
    parser.add_argument("what", choices=("cmake-args", "build", "explain"))
    parser.add_argument("--build", default=None, help="auto, portable or avx512 (default: $ASSAY_LLAMA_BUILD or auto)")
    parser.add_argument("--cpuinfo", type=Path, default=Path("/proc/cpuinfo"))
    args = parser.parse_args(argv)
    try:
        choice = choose(args.build or None, cpuinfo=args.cpuinfo)
    except ValueError as exc:
        print(f"cpu_build.py: {exc}", file=sys.stderr)
        return 2
    if args.what == "cmake-args":
        print(choice.cmake_args)
    elif args.what == "build":
        print(choice.build)
    else:
        print(explain(choice), file=sys.stderr if choice.fallback else sys.stdout)
    if choice.warning:
        print(f"warning: {choice.warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
