"""llama.cpp's two builds, portable and avx512, are one set of flags each: the Makefile (which chooses
between them from the CPU's flags), the README's install and `assay doctor`'s rebuild command use the
same; none of them turns on AMX or compiles natively, and AVX-512 is on only in the avx512 build, chosen
only where /proc/cpuinfo lists every flag it needs."""

from __future__ import annotations

import re
from pathlib import Path

from assay.judge import cpu_build
from assay.judge.backends._child import signal_text
from assay.judge.cpu_build import (
    AVX512_CMAKE_ARGS,
    AVX512_NEEDS,
    PORTABLE_CMAKE_ARGS,
    WITHOUT_COMMON,
    choose,
    wheel_key,
    without_common_args,
)
from assay.judge.doctor import rebuild_command

ROOT = Path(__file__).resolve().parents[3]


def test_the_flags_are_portable() -> None:
    flags = dict(part.removeprefix("-D").split("=") for part in PORTABLE_CMAKE_ARGS.split())
    assert flags["GGML_NATIVE"] == "OFF"
    assert all(flags[f] == "OFF" for f in ("GGML_AVX512", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"))


def _flags(args: str) -> dict[str, str]:
    return dict(part.removeprefix("-D").split("=") for part in args.split())


def test_the_avx512_build_adds_avx512_and_nothing_else() -> None:
    portable, avx512 = _flags(PORTABLE_CMAKE_ARGS), _flags(AVX512_CMAKE_ARGS)
    assert avx512["GGML_NATIVE"] == "OFF"
    assert all(avx512[f] == "OFF" for f in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"))
    assert all(avx512[f] == "ON" for f in ("GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"))
    changed = {k for k in avx512 if portable.get(k) != avx512[k]}
    assert changed == {"GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"}


def test_makefile_and_readme_use_the_same_flags(tmp_path: Path) -> None:
    for build, args in cpu_build.BUILDS.items():
        planned = _planned(tmp_path, f"LLAMA_BUILD={build}")
        compiled = f"{args} {without_common_args()}"  # the Makefile's compile also leaves out `common`
        assert f'CMAKE_ARGS="{compiled}" ' in planned  # the flags the wheel is compiled with
        assert f"printf '%s\\n' '{compiled}'" in planned  # and the record beside it
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-cache-dir" in makefile
    readme = (ROOT / "README.md").read_text()
    assert f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}"' in readme and f'CMAKE_ARGS="{AVX512_CMAKE_ARGS}"' in readme
    assert f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}"' in (ROOT / "docs" / "quickstart.md").read_text()
    assert f'CMAKE_ARGS: "{PORTABLE_CMAKE_ARGS}"' in (ROOT / "docs" / "ci.md").read_text()


def test_the_rebuild_command_reinstalls_without_the_wheel_cache() -> None:
    command = rebuild_command()
    # with the installed file that leaves out llama.cpp's `common`, as the Makefile compiles
    assert f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS} {without_common_args()}"' in command
    assert "--no-cache-dir" in command and "--force-reinstall" in command and "llama-cpp-python==0.3.36" in command


def test_signals_are_named() -> None:
    assert signal_text(-4) == "signal 4, illegal instruction"
    assert signal_text(-11) == "signal 11, segmentation fault"
    assert signal_text(1) == "exit status 1"


def _planned(cache: Path, *overrides: str, env: dict[str, str] | None = None) -> str:
    """What `make llama-wheel` would run (make's dry run: nothing is built)."""
    import os
    import subprocess

    environ = {k: v for k, v in os.environ.items() if k != cpu_build.ENV}
    proc = subprocess.run(["make", "-n", "-B", "llama-wheel", f"ASSAY_WHEELS={cache}", *overrides], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _planned_wheel_dir(cache: Path, *overrides: str, env: dict[str, str] | None = None) -> str:
    """The folder `make llama-wheel` would build into, read from make's dry run (nothing is built)."""
    planned = _planned(cache, *overrides, env=env)
    found = re.search(re.escape(str(cache)) + r"/([^/' ]+)\.part", planned)
    assert found, planned
    return found.group(1)


def test_the_compiled_wheel_is_cached_under_its_version_and_exact_flags(tmp_path: Path) -> None:
    import hashlib

    from assay.judge.doctor import LLAMA_CPP_VERSION

    included = hashlib.sha256(WITHOUT_COMMON.read_bytes()).hexdigest()[:16]
    text = f"{LLAMA_CPP_VERSION} {PORTABLE_CMAKE_ARGS} without-common:{included}"
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert _planned_wheel_dir(tmp_path, "LLAMA_BUILD=portable") == f"{LLAMA_CPP_VERSION}-{key}"
    # other flags (a native build, AVX-512) live in another folder, never picked up for these
    other = _planned_wheel_dir(tmp_path, "LLAMA_CMAKE_ARGS=-DGGML_NATIVE=ON")
    assert other != f"{LLAMA_CPP_VERSION}-{key}" and other.startswith(f"{LLAMA_CPP_VERSION}-")
    makefile = (ROOT / "Makefile").read_text()
    # installs take the wheel only from that folder: PyPI has only the source, and pip's cache is never read
    assert "--find-links $(LLAMA_WHEELDIR) --only-binary llama-cpp-python" in makefile
    assert re.search(r"^LLAMA_INSTALL = .*--no-cache-dir", makefile, re.M)


def _cpuinfo(tmp_path: Path, flags: str, name: str = "cpuinfo") -> Path:
    path = tmp_path / name
    path.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\n")
    return path


AVX512_CPU = "fpu sse4_2 avx avx2 fma f16c " + " ".join(f for f in AVX512_NEEDS if f not in ("avx2", "fma", "f16c"))
AMX = "amx_tile amx_int8 amx_bf16"


def test_each_build_has_its_own_cache_folder_and_the_override_chooses(tmp_path: Path) -> None:
    portable = _planned_wheel_dir(tmp_path, "LLAMA_BUILD=portable")
    avx512 = _planned_wheel_dir(tmp_path, "LLAMA_BUILD=avx512")
    assert portable == wheel_key(PORTABLE_CMAKE_ARGS) and avx512 == wheel_key(AVX512_CMAKE_ARGS)
    assert portable != avx512
    # the environment's ASSAY_LLAMA_BUILD is the same override, and LLAMA_BUILD on the command line wins
    assert _planned_wheel_dir(tmp_path, env={cpu_build.ENV: "avx512"}) == avx512
    assert _planned_wheel_dir(tmp_path, "LLAMA_BUILD=portable", env={cpu_build.ENV: "avx512"}) == portable


def test_auto_reads_the_cpus_flags(tmp_path: Path) -> None:
    rich = _cpuinfo(tmp_path, AVX512_CPU, "rich")
    assert _planned_wheel_dir(tmp_path, f"CPUINFO={rich}") == wheel_key(AVX512_CMAKE_ARGS)
    for missing in AVX512_NEEDS:  # any one flag missing: portable
        lacking = _cpuinfo(tmp_path, " ".join(f for f in AVX512_CPU.split() if f != missing), "lacking")
        assert choose("auto", cpuinfo=lacking).build == "portable", missing
    lacking = _cpuinfo(tmp_path, AVX512_CPU.replace(" avx512_bf16", ""), "lacking")
    assert _planned_wheel_dir(tmp_path, f"CPUINFO={lacking}") == wheel_key(PORTABLE_CMAKE_ARGS)
    # no /proc/cpuinfo at all: portable, and said so
    nothing = tmp_path / "absent"
    assert _planned_wheel_dir(tmp_path, f"CPUINFO={nothing}") == wheel_key(PORTABLE_CMAKE_ARGS)
    assert choose("auto", cpuinfo=nothing).reason == "auto: no /proc/cpuinfo"


def test_amx_flags_never_enable_anything(tmp_path: Path) -> None:
    avx2_amx = _cpuinfo(tmp_path, f"sse4_2 avx avx2 fma f16c {AMX}")
    assert choose("auto", cpuinfo=avx2_amx).build == "portable"
    assert choose("auto", flags=set(AVX512_CPU.split()) | set(AMX.split())).cmake_args == AVX512_CMAKE_ARGS
    for args in cpu_build.BUILDS.values():
        flags = _flags(args)
        assert flags["GGML_NATIVE"] == "OFF" and all(v == "OFF" for k, v in flags.items() if "AMX" in k)
        assert {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"} <= set(flags)


def test_a_fallback_to_portable_is_said_and_a_bad_name_fails(tmp_path: Path, capsys: object) -> None:
    import subprocess
    import sys

    lacking = _cpuinfo(tmp_path, "sse4_2 avx avx2 fma f16c avx512f")
    script = str(ROOT / "src" / "assay" / "judge" / "cpu_build.py")
    done = subprocess.run([sys.executable, script, "--cpuinfo", str(lacking), "explain", "--build", "auto"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == ""
    assert "llama.cpp build: portable (auto: this CPU lacks avx512bw" in done.stderr
    assert wheel_key(PORTABLE_CMAKE_ARGS) in done.stderr
    # avx512 asked for on a CPU without it: built as asked, with a warning that it will not run here
    done = subprocess.run([sys.executable, script, "--cpuinfo", str(lacking), "cmake-args", "--build", "avx512"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == AVX512_CMAKE_ARGS and "will not run here" in done.stderr
    done = subprocess.run([sys.executable, script, "cmake-args", "--build", "native"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and "auto, portable, avx512" in done.stderr
    import pytest

    with pytest.raises(ValueError):
        choose("native")


def test_the_measured_figures_are_the_benchmarks(tmp_path: Path) -> None:
    import json

    for machine, prompt, generated, path in cpu_build.MEASURED["avx512"]:
        result = json.loads((ROOT / path).read_text())
        summary = result["summary"]
        name = next(n for n, s in summary.items() if "AVX512 = 1" in s.get("system_info", "") and s["ok"])
        assert round(summary[name]["prompt_ratio_to_portable"], 2) == prompt, (machine, path)
        assert round(summary[name]["generate_ratio_to_portable"], 2) == generated, (machine, path)
        assert "AVX512" not in summary["portable"]["system_info"]


PORTABLE_INFO = ["AVX", "AVX2", "BMI2", "F16C", "FMA", "LLAMAFILE", "OPENMP", "REPACK", "SSE3", "SSSE3"]


def test_doctor_names_the_installed_build() -> None:
    from assay.judge.doctor import installed_build_name

    assert installed_build_name(PORTABLE_INFO) == "portable"
    assert installed_build_name([*PORTABLE_INFO, "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"]) == "avx512"
    assert installed_build_name([*PORTABLE_INFO, "AVX512", "AMX_INT8"]) == "other"
    assert installed_build_name(["SSE3", "SSSE3"]) == "other"


def test_doctor_gives_the_command_for_the_chosen_build_when_another_is_installed() -> None:
    from assay.judge.doctor import build_advice

    avx512 = choose("auto", flags=set(AVX512_CPU.split()))
    lines = build_advice("portable", avx512)
    assert lines[0].startswith("installed portable · this CPU would choose avx512")
    assert lines[-1] == f"to install the avx512 build: {rebuild_command(AVX512_CMAKE_ARGS)}"
    assert any("AVX-512 Xeon" in line and "1.5x" in line for line in lines)
    assert any("AVX-512 AMD EPYC" in line and "1.4x" in line for line in lines)
    # the chosen build installed: what the other would give, and no command
    assert build_advice("avx512", avx512) == [lines[0].replace("installed portable", "installed avx512"),
                                              *lines[1:-1]]
    # the portable build where only it fits: one line, whose reason names what the CPU lacks
    assert build_advice("portable", choose("auto", flags={"avx", "avx2", "fma", "f16c"})) == [
        "installed portable · this CPU would choose portable (auto: this CPU lacks avx512f avx512bw avx512vl "
        "avx512dq avx512cd avx512_vnni avx512vbmi avx512_bf16)"]
    portable = choose("auto", flags={"avx", "avx2", "fma", "f16c"})
    assert build_advice("avx512", portable)[-1] == f"to install the portable build: {rebuild_command()}"


def test_a_crash_is_answered_with_the_portable_build_even_on_an_avx512_cpu() -> None:
    from assay.judge.doctor import SelfCheck, crash_advice

    check = SelfCheck(ok=False, message="the embedded judge crashed (signal 4, illegal instruction) on its first call",
                      crashed=True)
    advice = crash_advice(check, set(AVX512_CPU.split()) | set(AMX.split()))
    assert advice.endswith(rebuild_command(PORTABLE_CMAKE_ARGS)) and "GGML_AVX512=ON" not in advice
    # an error the model reported (no crash) is told as it is: rebuilding llama.cpp would not help
    reported = SelfCheck(ok=False, message="Failed to load model from file: mine.gguf")
    assert crash_advice(reported, set(AVX512_CPU.split())) == "error: Failed to load model from file: mine.gguf"


def test_doctor_prints_the_builds(monkeypatch: object) -> None:
    from typer.testing import CliRunner

    from assay.cli import app
    from assay.judge import doctor as doc

    monkeypatch.setattr(doc, "cpu_flags", lambda: set(AVX512_CPU.split()))  # type: ignore[attr-defined]
    monkeypatch.setattr(doc, "llama_build", lambda: {"installed": True, "version": "0.3.36",  # type: ignore[attr-defined]
                                                     "features": PORTABLE_INFO})
    monkeypatch.delenv(cpu_build.ENV, raising=False)  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["doctor", "--skip-run"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    build = next(i for i, line in enumerate(lines) if line.startswith("build "))
    assert "installed portable · this CPU would choose avx512" in lines[build]
    assert "GGML_AVX512=ON" in result.output and "--force-reinstall" in result.output
    assert any(line.startswith("kept       ") and "/kv" in line for line in lines)  # the instructions kept on disk
    monkeypatch.setenv(cpu_build.ENV, "portable")  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["doctor", "--skip-run"], catch_exceptions=False)
    assert "this CPU would choose portable (asked for" in result.output and "GGML_AVX512=ON" not in result.output


def test_the_compile_leaves_out_what_the_python_package_never_loads(tmp_path: Path) -> None:
    """Every build leaves out llama-cpp-python's multimodal library (LLAVA_BUILD=OFF, in the README's
    and doctor's flags too), and the Makefile's compile also llama.cpp's `common` library, through a
    file included by llama.cpp's project() that shadows llama-cpp-python's forced cache variable.
    The cache key names that file by its content: another content is another folder, another path
    to the same content the same folder (one cached wheel for every checkout on a machine)."""
    from assay.judge.doctor import BASELINE_ARGS  # doctor's advice for a CPU without AVX2

    for args in (*cpu_build.BUILDS.values(), BASELINE_ARGS):
        assert _flags(args)["LLAVA_BUILD"] == "OFF"
    assert without_common_args() == f"-DCMAKE_PROJECT_llama.cpp_INCLUDE={WITHOUT_COMMON}"
    assert WITHOUT_COMMON.is_absolute() and WITHOUT_COMMON.parent == ROOT / "src" / "assay" / "judge"
    lines = [line.strip() for line in WITHOUT_COMMON.read_text().splitlines()]
    assert [line for line in lines if line and not line.startswith("#")] == ["set(LLAMA_BUILD_COMMON OFF)"]
    usual = _planned_wheel_dir(tmp_path, "LLAMA_BUILD=portable")
    copy = tmp_path / "copy.cmake"
    copy.write_bytes(WITHOUT_COMMON.read_bytes())
    assert _planned_wheel_dir(tmp_path, "LLAMA_BUILD=portable", f"LLAMA_WITHOUT_COMMON={copy}") == usual
    copy.write_text("set(LLAMA_BUILD_COMMON ON)\n")
    assert _planned_wheel_dir(tmp_path, "LLAMA_BUILD=portable", f"LLAMA_WITHOUT_COMMON={copy}") != usual


def test_an_environment_of_another_build_gets_this_build_s_wheel(tmp_path: Path) -> None:
    """`make setup` on an environment whose llama-cpp-python came from another key (other flags, another
    LLAMA_BUILD) installs this key's wheel in its place (pip alone keeps the installed one: same version);
    an environment of this key is left as it is (make's dry run: nothing is built or installed)."""
    import os
    import subprocess
    import time

    key = wheel_key(PORTABLE_CMAKE_ARGS)
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    (wheels / key).mkdir(parents=True)
    (wheels / key / ".complete").touch()
    venv.mkdir()
    time.sleep(0.05)
    (venv / ".assay-llama-0.3.36-0123456789abcdef").touch()  # installed from another build's wheel
    (venv / ".assay-setup-stamp").touch()
    environ = {k: v for k, v in os.environ.items() if k != cpu_build.ENV}

    def plan() -> str:
        proc = subprocess.run(["make", "-n", "setup", f"ASSAY_WHEELS={wheels}", f"VENV={venv}", "LLAMA_BUILD=portable"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60, env=environ)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    planned = plan()
    assert "pip uninstall --quiet --yes llama-cpp-python" in planned
    assert f"--find-links {wheels / key} --only-binary llama-cpp-python" in planned
    assert f"touch {venv}/.assay-llama-{key}" in planned and "pip wheel" not in planned  # the cached wheel
    (venv / ".assay-llama-0.3.36-0123456789abcdef").unlink()
    (venv / f".assay-llama-{key}").touch()
    time.sleep(0.05)
    (venv / ".assay-setup-stamp").touch()
    assert "llama-cpp-python" not in plan()
