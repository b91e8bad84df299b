"""One loader for every file assay reads.

Items, criteria, weights, rubrics, audits, annotations, preference pairs, meta sets, scripts and
``assay.toml`` all come in through these functions, which turn every way a file can be wrong
into one :class:`~assay.core.errors.InputError` line naming the file, the line and the field:

* **reading**: missing, a directory, unreadable;
* **decoding**: not UTF-8 (the line of the first bad byte);
* **syntax**: JSON (``NaN`` and ``Infinity`` are refused: they are not JSON), JSONL line by line,
  TOML, YAML (the line of the error, never the parser's multi-line excerpt);
* **shape**: the top level is not the table/object (or array) the file must hold;
* **fields**: :func:`validate` turns a pydantic ValidationError into the first wrong field with
  a count of the others.

A parser that gives up on input nested too deeply (RecursionError) is one line too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from assay.core.errors import InputError

M = TypeVar("M", bound=BaseModel)


def reject_constant(name: str) -> float:
    """``parse_constant`` of every JSON read: NaN, Infinity and -Infinity are refused, here only."""
    raise ValueError(f"{name} is not a number assay accepts (not JSON)")


def read_bytes(path: str | Path) -> bytes:
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, not a file", source=str(path))
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", source=str(path)) from None


def decode(raw: bytes, source: str) -> str:
    """UTF-8 (a byte-order mark is dropped); else one line naming the line of the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
        what = "UTF-16 text, not UTF-8" if utf16 else f"not UTF-8 text (byte 0x{raw[exc.start]:02x})"
        raise InputError(f"{what}: save it as UTF-8 (in a spreadsheet: CSV UTF-8; in an editor: encoding UTF-8)",
                         source=source, line=line) from None


def read_text(path: str | Path) -> str:
    """The file's text, or one line: cannot be read, or not UTF-8 (with the line)."""
    return decode(read_bytes(path), str(path))


def parse_json(text: str, source: str, line: int | None = None) -> Any:
    """A JSON value (finite numbers only); one line naming the line (of the file, or ``line``
    for a JSONL record) and column of a syntax error."""
    try:
        return json.loads(text, parse_constant=reject_constant)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", source=source, line=where) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source=source, line=line) from None
    except ValueError as exc:  # NaN / Infinity, or an integer with too many digits
        raise InputError(f"malformed JSON: {str(exc).splitlines()[0][:160]}", source=source, line=line) from None


def load_json(path: str | Path, shape: type | tuple[type, ...] | None = dict, kind: str = "") -> Any:
    """A JSON file whose top level is ``shape`` (an object by default)."""
    source = str(path)
    data = parse_json(read_text(path), source)
    _check_shape(data, shape, source, kind)
    return data


def jsonl_records(path: str | Path, shape: type | tuple[type, ...] | None = dict,
                  kind: str = "") -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-blank line of a JSONL file, each record of ``shape``
    (an object by default). The whole file is read and decoded first."""
    source = str(path)
    text = read_text(path)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = parse_json(line, source, number)
        _check_shape(record, shape, source, kind, number)
        yield number, record


def load_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file (its top level is a table by definition): syntax errors name the line."""
    import re
    import tomllib

    source = str(path)
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        what = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message).strip()
        if found:
            raise InputError(f"not valid TOML: {what} (column {found.group(2)})", source=source,
                             line=int(found.group(1))) from None
        raise InputError(f"not valid TOML: {what}", source=source) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", source=source) from None
    _check_finite(data, source)
    return data


def load_yaml(path: str | Path, shape: type | tuple[type, ...] | None = None, kind: str = "") -> Any:
    """A YAML file (safe loader); syntax errors name the line and column, in one line."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        """The safe loader without aliases: ``*name`` repeats a node by reference, and nine nested
        levels of them (the "billion laughs") are a file of a few lines that no reader can walk."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(None, None, "an alias (*name) repeats a value: write the value "
                                                  "out instead", self.peek_event().start_mark)
            return super().compose_node(parent, index)

    source = str(path)
    text = read_text(path)
    try:
        data = yaml.load(text, Loader=NoAliases)  # a SafeLoader, less its aliases
    except yaml.MarkedYAMLError as exc:  # one line: what and where, not YAML's multi-line excerpt
        mark = exc.problem_mark
        what = " ".join(str(exc.problem or exc.context or "syntax error").split())
        raise InputError(f"not valid YAML: {what}" + (f" (column {mark.column + 1})" if mark else ""),
                         source=source, line=mark.line + 1 if mark else None) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise InputError(f"not valid YAML: {' '.join(str(exc).split())[:200]}", source=source) from None
    _check_finite(data, source)
    _check_shape(data, shape, source, kind)
    return data


_NAMES: dict[type, str] = {dict: "an object (a table)", list: "an array (a list)", str: "text"}


def _check_shape(data: Any, shape: type | tuple[type, ...] | None, source: str, kind: str,
                 line: int | None = None) -> None:
    if shape is None or isinstance(data, shape):
        return
    shapes = shape if isinstance(shape, tuple) else (shape,)
    wanted = " or ".join(_NAMES.get(s, s.__name__) for s in shapes)
    got = "null" if data is None else type(data).__name__
    what = f"{kind}: " if kind else ""
    raise InputError(f"{what}expected {wanted} at the top level, got {got}", source=source, line=line)


def _check_finite(value: Any, source: str, path: str = "") -> None:
    """YAML and TOML can spell ``nan`` and ``inf``; no number assay reads may be one."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{value!r} is not a number assay accepts", source=source, field=path or None)
    if isinstance(value, dict):
        for key, inner in value.items():
            _check_finite(inner, source, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _check_finite(inner, source, f"{path}[{index}]")


def error_field(exc: ValidationError, prefix: str = "") -> tuple[str | None, str]:
    """The first error of a ValidationError as (dotted field, one-line message), with the count
    of the others."""
    errors = exc.errors()
    first = errors[0]
    parts = [prefix] if prefix else []
    for part in first["loc"]:
        if isinstance(part, int):
            parts[-1:] = [f"{parts[-1]}[{part}]"] if parts else [f"[{part}]"]
        else:
            parts.append(str(part))
    field = ".".join(parts) or None
    if first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "extra_forbidden":
        message = "unknown field"
    else:
        message = " ".join(str(first["msg"]).split())
        if "input" in first and first["type"] not in ("model_type", "dict_type", "list_type"):
            shown = repr(first["input"])
            message += f", got {shown if len(shown) <= 60 else shown[:57] + '...'}"
    more = f" ({len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return field, message + more


def validate(model: type[M], data: Any, source: str, line: int | None = None, prefix: str = "") -> M:
    """``model.model_validate(data)``, or one InputError naming the file, line and field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = error_field(exc, prefix)
        raise InputError(message, source=source, line=line, field=field) from None
    except RecursionError:
        raise InputError("nested too deeply", source=source, line=line) from None
