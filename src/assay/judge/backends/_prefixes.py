"""The embedded judge's instructions, read once per machine: a disk store of llama.cpp KV states.

A method's system message (its instructions; assay's prompt files put no evaluated text there) is
the same in every run. Reading it is much of a short run on a slow CPU: of the 2,522 new prompt
tokens the demo's three answers read (DeCE direct), 1,242 are its four system messages. The embedded
judge therefore reads a system message of at least :data:`MIN_TOKENS` tokens in a step of its own,
keeps the KV state after it here, and a later run (another process, another day) loads it instead
of reading it again.

Cold and warm give the same numbers: a prompt is always read as its system message, then the rest
(the state loaded from disk is the bytes the cold read left in the cache). A state is keyed by
everything that shapes those bytes: the model file, llama-cpp-python's version and the build's
CPU features (``llama_print_system_info``), and the tokens themselves (checked again on load).
The directory is ``<cache dir>/kv`` (``ASSAY_CACHE_DIR``, default ``~/.cache/assay``) and keeps at
most :data:`MAX_BYTES`, the least recently used removed first. ``--judge-opt prefix_cache=false``
turns it off (a plug-in method that puts evaluated text in its system message should).

File layout: ``ASSAYKV1``, the token count (uint32), the tokens (int32 each), the state's bytes.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from pathlib import Path

MAGIC = b"ASSAYKV1"
MIN_TOKENS = 64
"""A system message shorter than this is read with the rest of its prompt (nothing worth keeping)."""
MAX_BYTES = 1 << 30
"""The store's size limit (1 GiB: ~70 system messages of 500 tokens for the 1.5B model)."""


def prefix_dir() -> Path:
    from assay.judge.model import cache_dir

    return cache_dir() / "kv"


def state_key(identity: str, tokens: list[int]) -> str:
    """The file name of a state: a hash of what made it (``identity``: model and build) and its tokens."""
    digest = hashlib.sha256(identity.encode("utf-8"))
    digest.update(struct.pack(f"<{len(tokens)}i", *tokens))
    return digest.hexdigest()[:40] + ".kv"


def load(directory: Path, identity: str, tokens: list[int]) -> bytes | None:
    """The stored state after ``tokens``, or None (none stored, or a file that is not one: a
    truncated or foreign file is removed and read again from the model)."""
    path = directory / state_key(identity, tokens)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 4
    if len(data) >= head and data[:len(MAGIC)] == MAGIC:
        (count,) = struct.unpack_from("<I", data, len(MAGIC))
        body = head + 4 * count
        if count == len(tokens) and len(data) > body and list(struct.unpack_from(f"<{count}i", data, head)) == tokens:
            try:
                os.utime(path)  # recently used: kept when the store is trimmed
            except OSError:
                pass
            return data[body:]
    try:
        path.unlink()
    except OSError:
        pass
    return None


def save(directory: Path, identity: str, tokens: list[int], state: bytes, max_bytes: int = MAX_BYTES) -> None:
    """Store a state (atomically: another process reads the whole file or none), then trim the
    store to ``max_bytes``. A store that cannot be written is left alone: the next run reads the
    instructions again, nothing else changes."""
    part: str | None = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, suffix=".part", delete=False) as out:
            part = out.name
            out.write(MAGIC + struct.pack("<I", len(tokens)) + struct.pack(f"<{len(tokens)}i", *tokens))
            out.write(state)
        os.replace(part, directory / state_key(identity, tokens))
        part = None
        trim(directory, max_bytes)
    except OSError:
        if part is not None:
            try:
                os.unlink(part)
            except OSError:
                pass


def describe(directory: Path) -> str:
    """What the store holds, for ``assay doctor``."""
    sizes = [size for _, size, _ in _kept(directory)]
    if not sizes:
        return (f"no method instructions kept yet in {directory} (the embedded judge keeps each the first time it "
                "reads it)")
    return (f"{len(sizes)} method instruction state(s), {sum(sizes) / 1e6:.1f} MB in {directory} (loaded instead of "
            f"read again; at most {MAX_BYTES / 2**30:.0f} GiB kept)")


def _kept(directory: Path) -> list[tuple[float, int, Path]]:
    """Each stored state's last use, size and path."""
    entries = []
    for path in directory.glob("*.kv"):
        try:
            stat = path.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    return entries


def trim(directory: Path, max_bytes: int) -> None:
    """Remove the least recently used states until the store holds at most ``max_bytes``, and the
    partial files of writes that never finished (a process killed while saving) after ten minutes."""
    import time

    for part in directory.glob("*.part"):
        try:
            if time.time() - part.stat().st_mtime > 600:
                part.unlink()
        except OSError:
            pass
    entries = _kept(directory)
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        try:
            path.unlink()
            total -= size
        except OSError:
            pass
