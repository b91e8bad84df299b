"""What the embedded judge runs on, and a real forward pass that proves it runs here.

``assay doctor`` and ``assay model install`` use :func:`self_check`: the model reads a prompt of
at least 64 tokens in a child process (the same child the judge runs in), so an instruction the
CPU refuses kills the child, not assay, and the user is told what happened and how to rebuild.

Why a prompt of 64 tokens: llama.cpp's matrix kernels for a batch of a few tokens are not the
ones for a longer batch (a one-word prompt ran on a CPU where any real prompt died with SIGILL in
the AMX kernel), so a check with a short prompt proves nothing.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.judge.cpu_build import AVX512_CMAKE_ARGS as AVX512_CMAKE_ARGS
from assay.judge.cpu_build import (
    BUILDS,
    LLAMA_CPP_VERSION,
    MEASURED,
    PORTABLE_CMAKE_ARGS,
    Choice,
    without_common_args,
)

BASELINE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_AVX512=OFF "
                 "-DLLAVA_BUILD=OFF")
"""For an x86-64 CPU without AVX2 (rare; much slower)."""

REQUIRED_FLAGS = ("avx", "avx2", "fma", "f16c")
"""CPU features the portable build uses."""

WATCHED_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16",
                 "amx_tile", "amx_int8", "amx_bf16")


def installed_build_name(features: list[str]) -> str:
    """Which of assay's builds llama.cpp's system info describes: ``avx512`` (AVX512 = 1, no AMX),
    ``portable`` (AVX2 = 1, no AVX-512, no AMX), else ``other`` (a native build with AMX, a build
    without AVX2, ...)."""
    listed = set(features)
    if any(f.startswith("AMX") for f in listed):
        return "other"
    if "AVX512" in listed and {"AVX2", "FMA", "F16C"} <= listed:
        return "avx512"
    if {"AVX2", "FMA", "F16C"} <= listed and not any(f.startswith("AVX512") for f in listed):
        return "portable"
    return "other"


def build_advice(installed: str, choice: Choice) -> list[str]:
    """What `assay doctor` says about the build: which is installed, which this CPU would choose, what
    the avx512 build measured against the portable one where either of them is the avx512 build (what
    the other would give) and, if they differ, the one command that installs the chosen one."""
    lines = [f"installed {installed} · this CPU would choose {choice.build} ({choice.reason})"]
    if choice.warning:
        lines.append(f"warning: {choice.warning}")
    if "avx512" in (installed, choice.build):
        for machine, prompt, generated, _ in MEASURED.get("avx512", []):
            lines.append(f"measured on {machine}: the avx512 build read prompts {prompt:.1f}x and generated "
                         f"{generated:.1f}x as fast as the portable build")
    if installed != choice.build:
        lines.append(f"to install the {choice.build} build: {rebuild_command(BUILDS[choice.build])}")
    return lines


def rebuild_command(cmake_args: str = PORTABLE_CMAKE_ARGS) -> str:
    """The exact command that rebuilds llama.cpp with these flags (portable unless given) in the
    current environment (no cached wheel: pip caches a compiled wheel under a generic tag whatever
    CPU built it). With the installed ``llama_without_common.cmake`` included, as ``make`` compiles:
    llama.cpp's ``common`` library, which the Python package never loads, is not compiled (0.41-0.43
    of the compile time; the same machine code)."""
    pip = f"{sys.executable} -m pip"
    return (f'CMAKE_ARGS="{cmake_args} {without_common_args()}" {pip} install --force-reinstall --no-cache-dir '
            f"--no-deps llama-cpp-python=={LLAMA_CPP_VERSION}")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The CPU's feature flags as the kernel lists them; None where there is no /proc/cpuinfo."""
    from assay.judge import cpu_build

    return cpu_build.cpu_flags(cpuinfo)


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def llama_build() -> dict[str, Any]:
    """The installed llama-cpp-python: version, its library folder, and the CPU features llama.cpp
    says it was compiled with (``llama_print_system_info``)."""
    try:
        import llama_cpp
    except ImportError as exc:
        return {"installed": False, "error": str(exc)}
    info = llama_cpp.llama_print_system_info()
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    parts = [part.split(":")[-1] for part in text.split("|")]  # "CPU : SSE3 = 1 | AVX = 1 | ..."
    features = sorted({part.split("=")[0].strip() for part in parts if part.strip().endswith("= 1")})
    return {"installed": True, "version": getattr(llama_cpp, "__version__", "?"),
            "library": str(Path(llama_cpp.__file__).parent / "lib"), "features": features,
            "system_info": " ".join(text.split())}


@dataclass
class SelfCheck:
    ok: bool
    prompt_tokens: int = 0
    seconds: float = 0.0
    message: str = ""
    load_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    generated_tokens: int = 0
    generation_seconds: float = 0.0
    busy_before: float | None = None
    """The share of the CPUs' time other processes used just before the check (None: unknown)."""
    crashed: bool = False
    """The model's process was killed by a signal (an instruction the CPU refuses, say), as opposed
    to an error it reported (a file that is not a model): only a crash gets the rebuild advice."""

    @property
    def tokens_per_s(self) -> float:
        return self.prompt_tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def generated_per_s(self) -> float:
        return self.generated_tokens / self.generation_seconds if self.generation_seconds > 0 else 0.0


CHECK_TEXT = ("The tenant must give written notice of at least thirty days before the end of the lease term. "
              "The landlord returns the security deposit within fourteen days after the keys are handed back, "
              "minus the cost of repairing damage beyond normal wear and tear, itemised in writing. ")


BUSY_WARNING = 0.25
"""Above this share of the CPUs' time used by other processes just before the check, its speeds are
not this machine's own: other work sharing 2 cores cut the judge's generation to a third."""


def cpu_busy(interval_s: float = 0.5, stat: Path = Path("/proc/stat")) -> float | None:
    """The share of all CPUs' time spent not idle over ``interval_s`` (two readings of /proc/stat's
    first line: user, nice, system, idle, iowait, irq, softirq, steal), or None where unknown."""

    def reading() -> tuple[int, int]:
        values = [int(v) for v in stat.read_text(encoding="ascii").splitlines()[0].split()[1:9]]
        if len(values) < 5:
            raise ValueError("too few fields")
        return sum(values), values[3] + values[4]

    try:
        total, idle = reading()
        time.sleep(interval_s)
        total_after, idle_after = reading()
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None
    spent = total_after - total
    if spent <= 0:
        return None
    return min(1.0, max(0.0, 1.0 - (idle_after - idle) / spent))


def self_check(model: str = "default", *, n_threads: int | None = None) -> SelfCheck:
    """Load the embedded model in a child process and read a prompt of at least 64 tokens (one
    label call, so nothing is generated). A child killed by a signal is reported, not raised."""
    import asyncio

    from assay.core.errors import AssayError, JudgeCrashed
    from assay.core.types import GenerateConfig, Message
    from assay.judge.backends._llamacpp import LlamaCppBackend

    backend = LlamaCppBackend(model, n_ctx=1024, n_threads=n_threads, process="child")
    question = [Message(role="user", content=f"{CHECK_TEXT * 2}\nDoes the tenant have to give notice? "
                                             "Answer yes or no.")]

    busy = cpu_busy()  # before the model loads: what other processes are doing, not this check

    async def run() -> SelfCheck:
        started = time.perf_counter()
        try:
            await asyncio.to_thread(backend.check)
            loaded = time.perf_counter() - started
            completion = await backend.generate(question, GenerateConfig(labels=["yes", "no"], max_tokens=1))
            # then a short generation (the text is kept in the KV cache): the generated tokens/s
            copy = [Message(role="user", content=f"{CHECK_TEXT * 2}\nCopy the first sentence above, word for word.")]
            written = await backend.generate(copy, GenerateConfig(max_tokens=GENERATED, temperature=0.0))
        except JudgeCrashed as exc:
            return SelfCheck(ok=False, message=str(exc).removesuffix("; run `assay doctor`"), crashed=True)
        except AssayError as exc:
            return SelfCheck(ok=False, message=str(exc))
        finally:
            await backend.aclose()
        # the generation call first reads its prompt's new tail (after the kept shared start): that
        # reading, at the speed just measured, is not generation time
        reading = (written.usage.prompt_tokens - written.usage.cached_prompt_tokens) * completion.latency_s / max(
            1, completion.usage.prompt_tokens)
        generating = written.latency_s - reading if written.latency_s > reading > 0 else written.latency_s
        check = SelfCheck(ok=True, prompt_tokens=completion.usage.prompt_tokens, seconds=completion.latency_s,
                          load_seconds=loaded, extra={"label_probs": completion.label_probs},
                          generated_tokens=written.usage.completion_tokens, generation_seconds=generating,
                          busy_before=busy)
        record_speed(model, check)
        return check

    return asyncio.run(run())


GENERATED = 32
"""Tokens generated by the self-check to time generation (a longer run weighs the first token less)."""


def speed_file(model: str) -> Path:
    from assay.judge.model import cache_dir

    return cache_dir() / f"speed-{model.replace('/', '_')}.json"


def speed_basis(model: str) -> dict[str, str]:
    """What a speed measured for ``model`` holds for, known without loading or hashing anything: the
    file assay reads for that name (the embedded judge's sha256, the name of the file SmolLM2 is made
    into, or the path given) and the installed llama.cpp CPU library (the sha256 of its ~1.5 MB: another
    build's differs, the same build installed again does not). A record of another basis — an earlier
    SmolLM2 file, the other build — is not this machine's speed for the judge that would run, and is
    not used."""
    import hashlib
    import importlib.util

    from assay.judge.model import MODEL_SHA256, SMOLLM_FILENAME

    basis = {"model_file": {"default": MODEL_SHA256, "smollm2": SMOLLM_FILENAME}.get(model, model)}
    try:
        spec = importlib.util.find_spec("llama_cpp")  # where it is, without importing it
        origin = spec.origin if spec is not None else None
        library = Path(origin).parent / "lib" / "libggml-cpu.so" if origin else None
        digest = hashlib.sha256(library.read_bytes()).hexdigest()[:16] if library is not None else "none"
    except (ImportError, OSError, ValueError):
        digest = "none"
    basis["llama_cpp_cpu_library"] = digest
    return basis


def record_speed(model: str, check: SelfCheck) -> None:
    """Keep this machine's measured speed for ``--dry-run``'s estimates (the cache folder; a failure
    to write is not an error: the estimate then says the speed was not measured)."""
    import json

    if check.tokens_per_s <= 0 or check.generated_per_s <= 0:
        return
    record = {"model": model, "prompt_tokens_per_s": round(check.tokens_per_s, 2),
              "generated_tokens_per_s": round(check.generated_per_s, 2), "cpu": cpu_model(),
              "llama_cpp": LLAMA_CPP_VERSION, "measured_at": time.time(),
              "cpu_busy_before": None if check.busy_before is None else round(check.busy_before, 3),
              "basis": speed_basis(model)}
    try:
        path = speed_file(model)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    except OSError:
        pass


def measured_speed(model: str) -> tuple[float, float, str] | None:
    """(prompt tokens/s, generated tokens/s, where from) as `assay doctor` last measured them here."""
    import json
    import math

    if stale_speed(model):  # another model file or llama.cpp build: not this one's speed
        return None
    try:
        record = json.loads(speed_file(model).read_text(encoding="utf-8"))
        prompt, generated = float(record["prompt_tokens_per_s"]), float(record["generated_tokens_per_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (math.isfinite(prompt) and math.isfinite(generated) and prompt > 0 and generated > 0):
        return None
    where = f"measured here by assay doctor ({record.get('cpu') or 'this CPU'})"
    busy = record.get("cpu_busy_before")
    if isinstance(busy, int | float) and math.isfinite(busy) and busy > BUSY_WARNING:
        where += f" while other processes kept the CPU {busy:.0%} busy: slower than this machine's own"
    return prompt, generated, where


def stale_speed(model: str) -> bool:
    """Whether `assay doctor` left a speed for ``model`` here that holds for another model file or
    llama.cpp build (or does not say which: made by an earlier assay)."""
    import json

    try:
        record = json.loads(speed_file(model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return not isinstance(record, dict) or record.get("basis") != speed_basis(model)


def crash_advice(check: SelfCheck, flags: set[str] | None) -> str:
    """One line: what happened and, where the model's process crashed, the command that rebuilds
    llama.cpp so that it runs here (an error the model reported, such as a file that is not a
    model, is told as it is: rebuilding would not help)."""
    if not check.crashed:
        return f"error: {check.message}"
    missing = [f for f in REQUIRED_FLAGS if flags is not None and f not in flags]
    args = BASELINE_ARGS if missing else PORTABLE_CMAKE_ARGS
    why = (f"this CPU lacks {', '.join(missing)}" if missing
           else "llama.cpp was probably compiled for another CPU, or with instructions this machine refuses (AMX)")
    return f"{check.message} ({why}); rebuild llama.cpp for this machine: {rebuild_command(args)}"
