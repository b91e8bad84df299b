"""Writing output files without destroying anything (issue: export overwrote its input data).

Rules every command that writes a file follows (README "Output files"):

1. Never write onto one of the command's inputs (the data file, the run store, meta.json) or onto
   any assay run store, even with ``--force``: paths are compared after resolving symlinks, and a
   file that starts with SQLite's header counts as a store.
2. An existing file is replaced only when assay recognisably wrote it (an export, report or JSON
   result of ours; see :func:`written_by_assay`) or the user passed ``--force``.
3. The content goes to a temporary file created exclusively (``O_EXCL``, mode 0600 then the
   umask's mode) in the target's directory, so an attacker's symlink at a predictable
   ``OUT.tmp`` is never followed; then it is renamed over the target in one step. A failed write
   leaves the target as it was and removes the temporary file.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from assay.core._load import reject_constant
from assay.core.errors import ConfigError

SQLITE_HEADER = b"SQLite format 3\x00"
GENERATOR_MARK = '<meta name="generator" content="assay'
"""Every HTML report carries this tag; it is how a report is recognised as ours."""
YAML_MARK = "# written by assay"
"""The first line of every YAML file assay writes (a rubric)."""


def is_sqlite(path: Path) -> bool:
    """True when ``path`` is a file that starts with SQLite's header."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _head(path: Path, size: int = 65536) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def written_by_assay(path: Path, recognise: Callable[[dict[str, Any]], bool] | None = None) -> bool:
    """Whether an existing file is one assay wrote, judged from its content (not its name):
    a report carries the generator tag; an export's rows start with ``run_id``; a JSON Lines
    file's first record has a ``run_id`` or is one ``recognise`` (the command's own check, e.g.
    DeCE's criteria files) takes for its own; a
    JSON result carries assay's ``signature`` or a comparison's ``rows``; a Parquet export has a
    ``run_id`` column."""
    try:
        head = _head(path)
    except OSError:
        return False
    if not head:
        return True  # an empty file holds nothing to lose
    if GENERATOR_MARK.encode() in head:
        return True
    if head.startswith(b'{\n  "generator": "assay ') or head.startswith(YAML_MARK.encode()):
        return True
    if head.startswith(b"PAR1"):
        try:
            import pyarrow.parquet as pq
            return "run_id" in pq.read_schema(path).names
        except Exception:
            return False
    text = head.decode("utf-8", errors="replace")
    first = text.splitlines()[0] if text.splitlines() else ""
    if first.startswith("run_id,"):
        return True
    try:
        record = json.loads(first)
    except ValueError:
        record = None
    if isinstance(record, dict) and ("run_id" in record or (recognise is not None and recognise(record))):
        return True
    try:
        whole = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return False
    if isinstance(whole, list):  # a JSON export: an array of rows, each with its run id
        return bool(whole) and all(isinstance(row, dict) and "run_id" in row for row in whole)
    return isinstance(whole, dict) and ("signature" in whole or ("rows" in whole and "unpaired" in whole))


def loads_finite(text: str | bytes) -> object:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` (Python's json accepts
    them; they are not JSON and no number assay reads or writes may be one). Raises ValueError."""
    return json.loads(text, parse_constant=reject_constant)


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file (after symlinks)."""
    return _same(Path(a), Path(b))


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_output(path: Path, *, inputs: Iterable[Path | str | None] = (), force: bool = False,
                 option: str = "--output", recognise: Callable[[dict[str, Any]], bool] | None = None) -> Path:
    """Refuse an output path that would destroy something; returns the path. Call it before any
    work is done, so a refusal costs nothing. ``recognise``: the command's own test of a JSON
    Lines record it writes (such a file is replaced without ``--force``)."""
    for source in inputs:
        if source is None or str(source) in ("", ":memory:"):
            continue
        if _same(path, Path(source)):
            raise ConfigError(f"{option} {path}: that is an input of this command ({source}); "
                              "choose another output path")
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a directory")
    if path.exists() and not path.is_file():
        # a device, FIFO or socket (/dev/stdout, /dev/full, a named pipe): reading it to see who
        # wrote it could block, and replacing it would destroy a device node
        raise ConfigError(f"{option} {path}: not a regular file (a device, pipe or socket); give a file path")
    if path.exists() or path.is_symlink():
        if is_sqlite(path):
            raise ConfigError(f"{option} {path}: is an SQLite database (a run store?); assay never "
                              "overwrites one with an export — choose another output path")
        if not force and not written_by_assay(path, recognise):
            raise ConfigError(f"{option} {path}: the file exists and was not written by assay; "
                              "pass --force to replace it")
    _check_writable(path, option)
    return path


def _check_writable(path: Path, option: str) -> None:
    """Refuse, before any work, an output path that cannot be written: the file is written beside
    itself and renamed (:func:`atomic_write`), its missing folders made, so the nearest folder that
    exists must take a new file — tried with an empty temporary file, removed at once. (A read-only
    folder was found only after the run: the judge called, the store written.)"""
    folder = path.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"{option} {path}: cannot write there ({folder} is not a folder)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".assay-write-check.", dir=folder)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    Path(probe).unlink(missing_ok=True)


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> Path:
    """Write through ``write(handle)`` into an exclusively created temporary file beside
    ``path``, then rename it over ``path``. Nothing is left behind on failure."""
    if path.exists() and not path.is_file():
        raise ConfigError(f"cannot write {path}: not a regular file (a device, pipe or socket)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


GENERATOR_KEY = "generator"


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (undefined): JSON has no NaN,
    and no output of assay contains one."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_document(value: Any) -> str:
    """A JSON document assay writes: finite numbers only, and (for an object) a first key
    ``"generator": "assay VERSION"`` by which a re-run recognises its own file."""
    from assay._version import __version__

    if callable(getattr(value, "to_dict", None)):  # a typed report (assay.core.report_models)
        value = value.to_dict()
    value = finite(value)
    if isinstance(value, dict):
        value = {GENERATOR_KEY: f"assay {__version__}", **{k: v for k, v in value.items() if k != GENERATOR_KEY}}
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False, default=_plain) + "\n"


def _plain(value: Any) -> Any:
    """A value JSON has no type for: a typed report (or a part of one) as its dict, else its text."""
    to_dict = getattr(value, "to_dict", None)
    return finite(to_dict()) if callable(to_dict) else str(value)


def write_json(path: Path, value: Any) -> Path:
    """Write :func:`json_document` atomically."""
    return atomic_write_text(path, json_document(value))


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))
