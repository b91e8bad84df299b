"""How many of the embedded judge's generated tokens spell text its grammar forced (JSON keys).

A structured reply is generated under a grammar built from the method's JSON schema, and the
schema fixes each key (``"hallucination_justification": ``). The grammar refuses the tokens the
model would normally use for a key, so the model spells it in smaller pieces, one decoding step
per piece. This counts, over the real embedded judge's replies recorded for the docs
(``docs/recordings/*.json``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M through llama.cpp, each reply's
text with its ``completion_tokens``), per page and over all calls once each:

* the generated tokens (as the judge counted them) against the same text tokenized normally by the
  judge's own tokenizer (``canonical``): the excess is steps spent on non-canonical spelling;
* the keys' canonical tokens (``"key": `` as written in the reply), i.e. tokens a generator that
  appends forced text in one step (as the canonical tokens) would not generate one at a time.

``steps_spared_bound`` = excess + key tokens − keys (a key appended in one step still costs one):
an upper bound of the decoding steps such an appender would spare; the share is of generated
tokens. No model runs: the tokenizer is loaded alone (``vocab_only``). Replies that are not JSON
objects, and label-probability calls (no generated text), are left out.

Usage: python benchmarks/forced_tokens.py   (writes benchmarks/results/forced_tokens.json)
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from assay.judge.model import resolve_model

HERE = Path(__file__).parent
RECORDINGS = HERE.parent / "docs" / "recordings"
KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*')


def _keys(value: Any) -> int:
    """The number of object keys anywhere in a parsed JSON value."""
    if isinstance(value, dict):
        return len(value) + sum(_keys(v) for v in value.values())
    if isinstance(value, list):
        return sum(_keys(v) for v in value)
    return 0


def count(calls: list[dict[str, Any]], tokenize: Any) -> dict[str, Any]:
    replies = generated = canonical = key_tokens = keys = 0
    for call in calls:
        text = call.get("text") or ""
        if call.get("label_probs") is not None or not text.strip().startswith("{"):
            continue
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            continue
        found = KEY.findall(text)
        if len(found) != _keys(parsed):  # a ": inside a string would be miscounted: leave the reply out
            continue
        replies += 1
        generated += int(call["usage"]["completion_tokens"])
        canonical += len(tokenize(text))
        keys += len(found)
        key_tokens += sum(len(tokenize(m.group(0))) for m in KEY.finditer(text))
    excess = generated - canonical
    spared = excess + key_tokens - keys
    return {"replies": replies, "generated": generated, "canonical": canonical, "excess": excess, "keys": keys,
            "key_tokens": key_tokens, "steps_spared_bound": spared,
            "share_spared_bound": round(spared / generated, 3) if generated else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "forced_tokens.json")
    args = parser.parse_args()
    from llama_cpp import Llama

    vocab = Llama(str(resolve_model().path), vocab_only=True, verbose=False)

    def tokenize(text: str) -> list[int]:
        return list(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    every: dict[str, dict[str, Any]] = {}  # pages share calls (the CI page replays the case-aware one's)
    pages = {}
    for path in sorted(RECORDINGS.glob("*.json")):
        calls = json.loads(path.read_text(encoding="utf-8"))["calls"]
        every.update(calls)
        row = count(list(calls.values()), tokenize)
        if row["replies"]:
            pages[path.stem] = row
    total = count(list(every.values()), tokenize)  # each recorded call once
    for name, row in [*pages.items(), ("all", total)]:
        print(f"{name:12} {row['replies']:4} replies  {row['generated']:6} generated  {row['canonical']:6} canonical  "
              f"{row['keys']:4} keys ({row['key_tokens']} tokens)  spared at most {row['steps_spared_bound']} "
              f"({row['share_spared_bound']:.0%})")
    args.out.write_text(json.dumps({"judge": "llamacpp/default (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)",
                                    "source": "docs/recordings/*.json", "pages": pages, "all": total},
                                   indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
