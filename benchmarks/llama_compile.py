"""How long llama-cpp-python takes to compile, with what assay leaves out, and whether what it
loads is the same machine code.

Three flag sets for one build (``--build portable`` or ``avx512``, the flags of
``assay.judge.cpu_build.BUILDS``), compiled one after another with ``pip wheel --no-cache-dir``
from the same source, each in a fresh temporary folder:

- ``defaults``: the build's flags without ``-DLLAVA_BUILD=OFF`` (llama-cpp-python's own defaults:
  its multimodal library and llama.cpp's ``common`` library are compiled);
- ``no-multimodal``: the build's flags as the README and ``assay doctor`` give them;
- ``makefile``: those plus ``without_common_args()``, as ``make setup`` compiles.

For each: wall time, the CPU time of the compile (user + system of pip and its children), the
number of compile steps Ninja ran (from pip's verbose log), and the libraries in the wheel's
``llama_cpp/lib``. Then, for each library the Python package loads (libllama, libggml, libggml-base,
libggml-cpu), whether its ``.text`` section is byte for byte the same in every wheel (``objcopy``
from binutils; without it the comparison is skipped and said so). Run it alone on the machine.

Usage: python benchmarks/llama_compile.py [--build portable] [--variants defaults,no-multimodal,makefile]
       [--out benchmarks/results/llama_compile.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from assay.judge.cpu_build import BUILDS, LLAMA_CPP_VERSION, without_common_args
from assay.judge.doctor import cpu_model

HERE = Path(__file__).parent
LOADED = ("libllama.so", "libggml.so", "libggml-base.so", "libggml-cpu.so")


def variant_args(build: str, variant: str) -> str:
    flags = BUILDS[build]
    if variant == "defaults":
        return " ".join(f for f in flags.split() if f != "-DLLAVA_BUILD=OFF")
    if variant == "no-multimodal":
        return flags
    if variant == "makefile":
        return f"{flags} {without_common_args()}"
    raise SystemExit(f"unknown variant {variant!r}: defaults, no-multimodal or makefile")


def compile_once(args: str, folder: Path) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-cache-dir", "--no-deps",
                           "--no-binary", "llama-cpp-python", "-w", str(folder),
                           f"llama-cpp-python=={LLAMA_CPP_VERSION}"],
                          env={**os.environ, "CMAKE_ARGS": args}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pip wheel failed with CMAKE_ARGS={args!r}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    steps = [int(total) for _, total in re.findall(r"\[(\d+)/(\d+)\]", done.stdout + done.stderr)]
    (wheel,) = folder.glob("llama_cpp_python-*.whl")
    return {"cmake_args": args, "wall_s": round(wall, 1),
            "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
            "ninja_steps": max(steps) if steps else None, "wheel": str(wheel)}


def text_section(library: Path, scratch: Path) -> str | None:
    """sha256 of the library's .text section, or None without objcopy."""
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        return None
    out = scratch / f"{library.name}.text"
    subprocess.run([objcopy, "-O", "binary", "--only-section=.text", str(library), str(out)], check=True)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="portable", choices=sorted(BUILDS))
    parser.add_argument("--variants", default="defaults,no-multimodal,makefile")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "llama_compile.json")
    opts = parser.parse_args()
    variants = [v.strip() for v in opts.variants.split(",") if v.strip()]
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="llama-compile-") as tmp:
        root = Path(tmp)
        for variant in variants:
            folder = root / variant
            folder.mkdir()
            print(f"compiling {variant} ...", file=sys.stderr, flush=True)
            result = compile_once(variant_args(opts.build, variant), folder)
            unpacked = folder / "unpacked"
            with zipfile.ZipFile(str(result.pop("wheel"))) as wheel:
                wheel.extractall(unpacked)
            lib = unpacked / "llama_cpp" / "lib"
            result["libraries"] = sorted(p.name for p in lib.iterdir() if p.suffix == ".so")
            result["text_sha256"] = {name: text_section((lib / name).resolve(), folder) for name in LOADED}
            results[variant] = result
            print(f"  {result['wall_s']} s wall, {result['cpu_s']} s CPU, {result['ninja_steps']} steps",
                  file=sys.stderr, flush=True)
    first = variants[0]
    same: dict[str, bool | None] = {}
    for name in LOADED:
        hashes = [results[v]["text_sha256"][name] for v in variants]  # type: ignore[index]
        same[name] = None if None in hashes else len(set(hashes)) == 1
    report = {
        "benchmark": "llama_compile", "machine": cpu_model(), "python": platform.python_version(),
        "cpus": os.cpu_count(), "llama_cpp_python": LLAMA_CPP_VERSION, "build": opts.build,
        "variants": results,
        "wall_ratio_to_first": {v: round(float(results[v]["wall_s"]) / float(results[first]["wall_s"]), 3)  # type: ignore[arg-type]
                                for v in variants},
        "same_text_section": same,
        "note": "one compile each, one after another, alone on the machine; same text section: the four "
                "libraries the Python package loads have the same machine code in every variant "
                "(None: objcopy missing)",
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("wall_ratio_to_first", "same_text_section")}, indent=2))


if __name__ == "__main__":
    main()
