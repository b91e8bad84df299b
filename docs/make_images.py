"""Make the pictures of the docs (docs/img/*.png) from runs of the embedded judge.

    python docs/make_images.py            # replays docs/recordings/images.json (offline, seconds)
    python docs/make_images.py --record   # runs the embedded judge (llamacpp/default) and records it

Scores examples/dece_examples.jsonl with DeCE (the default verdicts of the embedded judge) and
examples/answers.jsonl with ROUGE-L in a fresh store; writes the HTML report; and takes whole-page
screenshots, in headless Chromium, of the report and of `assay ui` (the runs, a run with its score
distribution, an item with its contexts and verdicts). The judge's answers come from a recording
of the real embedded judge, replayed call by call (a call the recording lacks stops the script),
so the pictures show what that judge said. Needs chromium (or CHROMIUM=/path).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import assay
from assay.judge.backends import JudgeBackend, get_backend
from assay.judge.backends._recording import Recording, RecordingJudge, ReplayJudge
from assay.judge.runner import RunnerConfig

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
RECORDING = ROOT / "docs" / "recordings" / "images.json"
JUDGE = "llamacpp/default"
TOKEN = "docs-images"


def _chromium() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("make_images: chromium is needed (apt-get install chromium, or CHROMIUM=/path)")
    return found


def shoot(url: str, out: Path, width: int = 1400) -> None:
    """The whole page at ``url``, ``width`` pixels wide, as ``out``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": 600})
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out), full_page=True)
        browser.close()
    print(f"wrote {out.relative_to(ROOT)}")


def judge(record: bool) -> JudgeBackend:
    """The embedded judge, recorded into :data:`RECORDING` (``record``), or replayed from it."""
    recording = Recording(RECORDING)
    if record:
        recording.calls.clear()
        return RecordingJudge(get_backend(JUDGE), recording)
    return ReplayJudge(JUDGE, recording)


def score(store: Path, judge: JudgeBackend) -> tuple[assay.EvalResult, assay.EvalResult]:
    """The runs the pictures show: DeCE on the DeCE examples, ROUGE-L on the answers (read from
    ``examples/`` in the working directory, so the report shows the path a reader would type)."""
    runner = RunnerConfig(progress=False)
    dece = assay.evaluate("examples/dece_examples.jsonl", "dece", judge, store=store, runner=runner)
    if isinstance(judge, RecordingJudge):
        judge.recording.save()
        print(f"recorded {len(judge.recording.calls)} judge calls in {RECORDING.relative_to(ROOT)}")
    elif isinstance(judge, ReplayJudge) and judge.misses:
        sys.exit(f"make_images: {len(judge.misses)} calls are not in {RECORDING.relative_to(ROOT)}: "
                 "the prompts or examples changed; run with --record")
    rouge = assay.evaluate("examples/answers.jsonl", "rougeL", store=store, runner=runner)
    return dece, rouge


def main() -> None:
    from assay.view.ui import serve

    IMG.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="assay-images-"))
    shutil.copytree(ROOT / "examples", work / "examples")
    os.chdir(work)
    store = Path("run.db")
    dece, _ = score(store, judge(record="--record" in sys.argv[1:]))
    subprocess.run([sys.executable, "-m", "assay", "report", str(store), "--run", dece.run_id, "-o", "report.html"],
                   check=True, capture_output=True)
    shoot((work / "report.html").as_uri(), IMG / "report.png")

    urls: list[str] = []
    threading.Thread(target=serve, args=(store,), kwargs={"token": TOKEN, "author": "ana", "ready": urls.append},
                     daemon=True).start()
    while not urls:
        time.sleep(0.1)
    base = urls[0].split("/?")[0]
    time.sleep(0.5)
    shoot(f"{base}/?token={TOKEN}", IMG / "ui-runs.png")
    shoot(f"{base}/run/{dece.run_id}?token={TOKEN}", IMG / "ui-run.png")
    shoot(f"{base}/run/{dece.run_id}/item/0?token={TOKEN}", IMG / "ui-item.png")


if __name__ == "__main__":
    main()
