"""Make the pictures of the docs (docs/img/*.png) from real runs: python docs/make_images.py

Scores examples/dece_examples.jsonl with DeCE and examples/answers.jsonl with ROUGE-L in a fresh
store, with an offline judge that answers every structured call with a valid reply (its verdicts
vary from call to call, so the pages show passes and failures); then writes the HTML report and
takes screenshots, with headless Chromium, of the report and of `assay ui` (the runs, a run with
its score distribution, an item with its contexts and verdicts). Needs chromium on PATH (or
CHROMIUM=/path). The judge is not a model: the pictures show the pages, not a model's quality.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import assay
from assay.core.types import Completion, GenerateConfig, Message, Usage
from assay.judge.backends import JudgeBackend
from assay.judge.backends._base import Capabilities
from assay.judge.runner import RunnerConfig

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
TOKEN = "docs-images"


def _pick(seed: str, n: int) -> int:
    return int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) % n


def _instance(schema: dict[str, Any], defs: dict[str, Any], seed: str, index: int | None = None) -> Any:
    """A value valid under ``schema``; ``index``: the position in a list (numbers items 1, 2, ...)."""
    if "$ref" in schema:
        return _instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, seed, index)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return _instance(options[0], defs, seed, index)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][_pick(seed, len(schema["enum"]))]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        return {name: _instance(sub, defs, seed + name, index) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        count = max(1, schema.get("minItems", 1), min(schema.get("maxItems", 3), 3))
        items = schema.get("prefixItems") or [schema.get("items", {})] * count
        return [_instance(sub, defs, f"{seed}[{i}]", i) for i, sub in enumerate(items[:count])]
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 1)
        if kind == "integer" and index is not None and ("maximum" not in schema or high > 1):
            return min(max(index + 1, low), schema.get("maximum", index + 1))  # numbered in order
        value = low + _pick(seed, int(high - low) + 1) if kind == "integer" else float(_pick(seed, 2))
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return _pick(seed, 3) > 0
    text = ["The answer gives the refund window.", "The answer names the governing law.",
            "The answer states the delivery time.", "The answer cites the notice period."][_pick(seed, 4)]
    return text[: schema.get("maxLength", len(text))]


class OfflineJudge(JudgeBackend):
    """A judge for pictures: a schema-valid reply to every call, its choices drawn from a hash of
    the prompt (the same prompt, the same reply)."""

    name = "offline/pictures"

    def __init__(self) -> None:
        self.capabilities = Capabilities(json_schema=True, grammar=False, logprobs=False, seed=True,
                                         label_probs=False, max_context=32768)
        self.max_concurrency = 4

    def identity(self) -> dict[str, Any]:
        return {"backend": "offline", "name": self.name}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        seed = "".join(m.content for m in messages)
        schema = config.json_schema or {"type": "string"}
        reply = _instance(schema, schema.get("$defs", {}), seed)
        text = json.dumps(reply) if config.json_schema else str(reply)
        return Completion(text=text, finish_reason="stop", backend="offline", model=self.name,
                          usage=Usage(prompt_tokens=len(seed) // 4, completion_tokens=len(text) // 4))


def _chromium() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("make_images: chromium is needed (apt-get install chromium, or CHROMIUM=/path)")
    return found


def shoot(url: str, out: Path, size: str = "1400,1000") -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--disable-background-networking", f"--user-data-dir={profile}", f"--screenshot={out}",
                        f"--window-size={size}", url], check=True, capture_output=True, timeout=120)
    print(f"wrote {out.relative_to(ROOT)}")


def main() -> None:
    from assay.view.ui import serve

    IMG.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="assay-images-"))
    store = work / "run.db"
    runner = RunnerConfig(progress=False)
    dece = assay.evaluate(str(ROOT / "examples" / "dece_examples.jsonl"), "dece", OfflineJudge(), store=store,
                          runner=runner)
    assay.evaluate(str(ROOT / "examples" / "answers.jsonl"), "rougeL", store=store, runner=runner)
    subprocess.run([sys.executable, "-m", "assay", "report", str(store), "--run", dece.run_id, "-o",
                    str(work / "report.html")], check=True, capture_output=True)
    shoot((work / "report.html").as_uri(), IMG / "report.png")

    urls: list[str] = []
    threading.Thread(target=serve, args=(store,), kwargs={"token": TOKEN, "author": "ana", "ready": urls.append},
                     daemon=True).start()
    while not urls:
        time.sleep(0.1)
    base = urls[0].split("/?")[0]
    time.sleep(0.5)
    shoot(f"{base}/?token={TOKEN}", IMG / "ui-runs.png", "1400,420")
    shoot(f"{base}/run/{dece.run_id}?token={TOKEN}", IMG / "ui-run.png")
    shoot(f"{base}/run/{dece.run_id}/item/0?token={TOKEN}", IMG / "ui-item.png", "1400,1400")


if __name__ == "__main__":
    main()
