"""The disk store of the embedded judge's system-message KV states (no model: the store's file
format, keys, damaged files and its size limit)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.judge.backends import _prefixes


def test_a_state_comes_back_only_for_its_tokens_and_identity(tmp_path: Path) -> None:
    tokens = list(range(100, 180))
    _prefixes.save(tmp_path, "model-a|build", tokens, b"\x01\x02state")
    assert _prefixes.load(tmp_path, "model-a|build", tokens) == b"\x01\x02state"
    assert _prefixes.load(tmp_path, "model-b|build", tokens) is None  # another model or build
    assert _prefixes.load(tmp_path, "model-a|build", tokens[:-1]) is None  # other tokens
    assert [p.suffix for p in tmp_path.iterdir()] == [".kv"]  # no temporary file left behind


def test_a_damaged_file_is_removed_and_read_again(tmp_path: Path) -> None:
    tokens = [5] * 70
    _prefixes.save(tmp_path, "m", tokens, b"state")
    (path,) = tmp_path.glob("*.kv")
    path.write_bytes(path.read_bytes()[:20])  # cut short, as by a full disk
    assert _prefixes.load(tmp_path, "m", tokens) is None and not path.exists()


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_in_a_state_file_are_a_miss_never_a_traceback(tmp_path_factory: object, data: bytes) -> None:
    directory = Path(tmp_path_factory.mktemp("kv"))  # type: ignore[attr-defined]
    tokens = [1, 2, 3]
    (directory / _prefixes.state_key("m", tokens)).write_bytes(data)
    assert _prefixes.load(directory, "m", tokens) in (None, data[len(_prefixes.MAGIC) + 4 + 12:])


def test_the_store_keeps_the_most_recently_used_within_its_size(tmp_path: Path) -> None:
    for n in range(4):
        _prefixes.save(tmp_path, "m", [n] * 64, b"x" * 1000)
        os.utime(tmp_path / _prefixes.state_key("m", [n] * 64), (1000 + n, 1000 + n))
    assert _prefixes.load(tmp_path, "m", [0] * 64) is not None  # used now: the newest
    _prefixes.save(tmp_path, "m", [9] * 64, b"x" * 1000, max_bytes=3 * 1400)
    left = {p.name for p in tmp_path.glob("*.kv")}
    assert left == {_prefixes.state_key("m", [n] * 64) for n in (0, 3, 9)}


def test_an_unwritable_store_changes_nothing(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    _prefixes.save(blocked / "kv", "m", [1] * 64, b"state")  # no exception: the next run reads again
    assert _prefixes.load(blocked / "kv", "m", [1] * 64) is None


@settings(max_examples=50, deadline=None)
@given(count=st.integers(0, 2**32 - 1), tokens=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8),
       body=st.binary(max_size=40))
def test_a_state_file_with_any_header_count_and_body_is_read_only_when_it_is_whole(
        tmp_path_factory: object, count: int, tokens: list[int], body: bytes) -> None:
    import struct

    directory = Path(tmp_path_factory.mktemp("kv"))  # type: ignore[attr-defined]
    wanted = [7, 8, 9]
    head = _prefixes.MAGIC + struct.pack("<I", count) + struct.pack(f"<{len(tokens)}i", *tokens)
    (directory / _prefixes.state_key("m", wanted)).write_bytes(head + body)
    got = _prefixes.load(directory, "m", wanted)
    assert got == (body if count == 3 and tokens == wanted and body else None)


def test_a_write_that_never_finished_is_removed_after_ten_minutes(tmp_path: Path) -> None:
    old, new = tmp_path / "a.part", tmp_path / "b.part"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    os.utime(old, (1000, 1000))
    _prefixes.save(tmp_path, "m", [1] * 64, b"state")
    assert not old.exists() and new.exists()


def test_doctor_says_what_the_store_holds(tmp_path: Path) -> None:
    assert _prefixes.describe(tmp_path / "kv").startswith("no method instructions kept yet in ")
    _prefixes.save(tmp_path / "kv", "m", [1] * 64, b"x" * 2_000_000)
    assert _prefixes.describe(tmp_path / "kv") == (f"1 method instruction state(s), 2.0 MB in {tmp_path / 'kv'} "
                                                   "(loaded instead of read again; at most 1 GiB kept)")
