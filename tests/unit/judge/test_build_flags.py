"""The portable llama.cpp flags are one set: the Makefile, the README's install and `assay doctor`'s
rebuild command use the same, and none of them turns on AMX or AVX-512 or compiles natively."""

from __future__ import annotations

import re
from pathlib import Path

from assay.judge.backends._child import signal_text
from assay.judge.doctor import PORTABLE_CMAKE_ARGS, rebuild_command

ROOT = Path(__file__).resolve().parents[3]


def test_the_flags_are_portable() -> None:
    flags = dict(part.removeprefix("-D").split("=") for part in PORTABLE_CMAKE_ARGS.split())
    assert flags["GGML_NATIVE"] == "OFF"
    assert all(flags[f] == "OFF" for f in ("GGML_AVX512", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"))


def test_makefile_and_readme_use_the_same_flags() -> None:
    makefile = (ROOT / "Makefile").read_text()
    found = re.search(r"^LLAMA_CMAKE_ARGS := (.+)$", makefile, re.M)
    assert found and found.group(1).strip() == PORTABLE_CMAKE_ARGS
    assert "--no-cache-dir" in makefile
    readme = (ROOT / "README.md").read_text()
    assert f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}"' in readme


def test_the_rebuild_command_reinstalls_without_the_wheel_cache() -> None:
    command = rebuild_command()
    assert f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}"' in command
    assert "--no-cache-dir" in command and "--force-reinstall" in command and "llama-cpp-python==0.3.36" in command


def test_signals_are_named() -> None:
    assert signal_text(-4) == "signal 4, illegal instruction"
    assert signal_text(-11) == "signal 11, segmentation fault"
    assert signal_text(1) == "exit status 1"


def _planned_wheel_dir(cache: Path, *overrides: str) -> str:
    """The folder `make llama-wheel` would build into, read from make's dry run (nothing is built)."""
    import subprocess

    proc = subprocess.run(["make", "-n", "-B", "llama-wheel", f"ASSAY_WHEELS={cache}", *overrides], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = re.search(re.escape(str(cache)) + r"/([^/' ]+)\.part", proc.stdout)
    assert found, proc.stdout
    return found.group(1)


def test_the_compiled_wheel_is_cached_under_its_version_and_exact_flags(tmp_path: Path) -> None:
    import hashlib

    from assay.judge.doctor import LLAMA_CPP_VERSION

    key = hashlib.sha256(f"{LLAMA_CPP_VERSION} {PORTABLE_CMAKE_ARGS}".encode()).hexdigest()[:16]
    assert _planned_wheel_dir(tmp_path) == f"{LLAMA_CPP_VERSION}-{key}"
    # other flags (a native build, AVX-512) live in another folder, never picked up for these
    other = _planned_wheel_dir(tmp_path, "LLAMA_CMAKE_ARGS=-DGGML_NATIVE=ON")
    assert other != f"{LLAMA_CPP_VERSION}-{key}" and other.startswith(f"{LLAMA_CPP_VERSION}-")
    makefile = (ROOT / "Makefile").read_text()
    # installs take the wheel only from that folder: PyPI has only the source, and pip's cache is never read
    assert "--find-links $(LLAMA_WHEELDIR) --only-binary llama-cpp-python" in makefile
    assert re.search(r"^LLAMA_INSTALL = .*--no-cache-dir", makefile, re.M)
