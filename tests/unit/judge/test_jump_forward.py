"""Where the embedded judge's jump-forward may look for forced text (the sampling itself runs on a
real model in tests/integration/test_llamacpp.py::test_forced_text_is_written_in_one_step)."""

from __future__ import annotations

from typing import Any

from assay.judge.backends._fastgrammar import Probe, jump_safe
from assay.judge.backends._llamacpp import LlamaCppBackend


def test_a_schema_with_a_non_ascii_name_or_a_pattern_never_jumps() -> None:
    plain = {"type": "object", "required": ["verdict"],
             "properties": {"verdict": {"type": "string", "enum": ["supported", "contradicted"]}}}
    assert jump_safe(plain)
    # "très" and "tres" differ only in a character the probe does not try: "tr" + "es" would look forced
    assert not jump_safe({**plain, "properties": {"verdict": {"type": "string", "enum": ["tres", "très"]}}})
    assert not jump_safe({**plain, "properties": {"précis": {"type": "string"}}})
    assert not jump_safe({**plain, "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}})


class _Tokenizer:
    """A stand-in for llama_cpp.Llama's tokenizer calls: each character its own token, except those in
    ``merged`` (written with a leading space, as SentencePiece writes "a" as "▁a"), and an end token."""

    def __init__(self, merged: str = "", eos: int = 2) -> None:
        self.merged, self.eos = merged, eos

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return [1000 + b for b in text]

    def detokenize(self, tokens: list[int]) -> bytes:
        return b"".join((b" " if chr(t - 1000) in self.merged else b"") + bytes([t - 1000]) for t in tokens)

    def token_eos(self) -> int:
        return self.eos


def test_a_tokenizer_that_cannot_write_each_character_alone_never_jumps() -> None:
    probe = Probe.of(_Tokenizer())
    assert probe is not None and len(probe.chars) == 97 and probe.ids[-1] == 2  # the end token last
    assert probe.tokenize("ab") == [1000 + 97, 1000 + 98]
    assert Probe.of(_Tokenizer(merged="a")) is None  # "a" comes back as " a": not probed, so never forced
    assert Probe.of(_Tokenizer(eos=-1)) is None  # no end token: where the reply may end is unknown


def test_jump_forward_is_off_by_default_and_part_of_the_identity_when_on(monkeypatch: Any) -> None:
    off = LlamaCppBackend("smollm2", process="inline")
    on = LlamaCppBackend("smollm2", process="inline", jump_forward=True)
    monkeypatch.setattr(LlamaCppBackend, "_resolve", lambda self: None)  # no model file needed for the key
    off._sha = on._sha = "x"
    assert off.jump_forward is False and "jump_forward" not in off.identity()
    assert on.identity() == {**off.identity(), "jump_forward": True}
