"""`assay ui` end to end: the installed command serves a LeMAJ run on 127.0.0.1, a real headless
Chromium (Debian's, driven by Playwright) opens it with the token, annotates as two reviewers,
and the store holds the annotations; hostile answer text renders as text; no token, no entry."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import assay
from assay.core.types import Item
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store
from tests.helpers import NO_MODEL

pytestmark = [pytest.mark.integration, *NO_MODEL]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
HOSTILE = 'Evil "><img src=x onerror=alert(1)> here. The <script>alert(2)</script> tail.'
CONTRACT = "1. Payment. Invoices are payable within 45 days.\n\n2. Law. New York law governs."


def _tagging(*points: tuple[str, str]) -> str:
    checks = {"correct": ("yes", "yes"), "incorrect": ("no", "yes"), "irrelevant": ("yes", "no")}
    return json.dumps({"sentences": [{"sentence": n, "points": [{"quote": q, "reason": "<i>why</i>", "paragraphs": [1],
                                                                 "supported": checks[t][0], "relevant": checks[t][1]}]}
                                     for n, (q, t) in enumerate(points, 1)], "missing": []})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, str]]:
    store_path = tmp_path / "review.db"
    items = [Item(id="c1", query="When are invoices payable?", response="Invoices are payable within 60 days. "
                  "New York law governs.", document=CONTRACT, system="s1"),
             Item(id="c2", query="Q <b>bold</b>?", response=HOSTILE, document=CONTRACT, system="s2")]
    judge = ScriptedBackend([_tagging(("payable within 60 days", "correct"), ("New York law governs", "irrelevant")),
                             _tagging(("Evil", "incorrect"), ("tail", "irrelevant"))])
    # evidence_check=flag: the judge's "60 days: correct" stands (the reviewer is the one who catches it)
    run = assay.evaluate(items, "lemaj", judge, runner=RunnerConfig(progress=False), store=store_path,
                         evidence_check="flag")
    with ui_of(store_path) as url:
        yield url, store_path, run.run_id


def _exe() -> tuple[str, dict[str, str]]:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    return exe, {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}


@contextlib.contextmanager
def ui_of(store_path: Path) -> Iterator[str]:
    """`assay ui STORE` (reviewer ann) on a free port of 127.0.0.1: its URL with the token."""
    exe, env = _exe()
    proc = subprocess.Popen([exe, "ui", str(store_path), "--port", "0", "--author", "ann", "--stop-after", "240"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        yield line.split(" on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_review_and_annotate_a_run_in_chromium(served: tuple[str, Path, str], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, store_path, run_id = served
    base = url.split("/?")[0]
    assert Path(CHROMIUM).exists(), "Chromium is installed by `make setup` (apt-get install chromium)"
    # no token: refused, page and API alike
    assert httpx.get(base + "/").status_code == 401
    assert httpx.get(f"{base}/api/run/{run_id}/annotations").status_code == 401
    assert httpx.post(f"{base}/api/run/{run_id}/item/0/annotations", json={"path": "ldps[0].tag",
                                                                            "value": "incorrect"}).status_code == 401
    dialogs: list[str] = []
    shots = Path(os.environ.get("UI_SCREENSHOTS") or tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url)
            assert page.url == base + "/"  # the token moved into a cookie
            page.click(f"text={run_id}")
            # waits for the page the click opens (count() read it once, mid-load, and saw 0 rows once under load)
            expect(page.locator("#items tr")).to_have_count(3)
            page.screenshot(path=str(shots / "ui-run.png"), full_page=True)
            # the hostile answer is text, not markup
            page.click("text=c2")
            assert "<script>alert(2)</script>" in page.inner_text("#answer")
            assert page.locator("img[src=x]").count() == 0 and dialogs == []
            assert "Q <b>bold</b>?" in page.inner_text("#query")
            page.screenshot(path=str(shots / "ui-item-hostile.png"), full_page=True)
            # reviewer ann: the judge called "payable within 60 days" correct; the contract says 45
            page.goto(f"{base}/run/{run_id}/item/0")
            # the document with the cited paragraph marked, and why the verdict stands: the judge's
            # reason and what the figure check found (under evidence_check=flag it flags, not retags)
            assert page.locator("#evidence [data-cited]").count() == 1
            assert "Invoices are payable within 45 days" in page.inner_text("#evidence .document")
            assert "evidence check: called supported, but states 60" in page.inner_text("#evidence")
            with page.expect_navigation():
                page.select_option('select[data-path="ldps[0].tag"]', "incorrect")
            page.select_option("#grade-correctness", "2")
            page.select_option("#grade-relevance", "4")
            with page.expect_navigation():
                page.click("#save-grades")
            # a blank override is not a score (it once stored 0), and a score override says why
            metric = page.locator("#score-metric option").first.inner_text()
            page.click("#save-score")
            assert "enter the new score as a number" in page.inner_text("#status")
            for typed in ("abc", "0x1", " "):  # JavaScript's Number() read "0x1" as 1
                page.fill("#score-value", typed)
                page.fill("#score-reason", "checked")
                page.click("#save-score")
                assert "enter the new score as a number" in page.inner_text("#status"), typed
            page.fill("#score-reason", "")
            page.fill("#score-value", "0.5")
            page.click("#save-score")
            assert "say why you override the score" in page.inner_text("#status")
            assert metric  # nothing was stored: the history count below is unchanged
            page.fill("#missing-text", "Invoices are payable within 45 days, not 60")
            with page.expect_navigation():
                page.click("#add-missing")
            expect(page.locator("#history tr")).to_have_count(1 + 4)
            assert "missing" in page.inner_text("#ldps")
            page.screenshot(path=str(shots / "ui-item-annotated.png"), full_page=True)
            # reviewer bob grades the same answer
            page.fill("#author", "bob")
            page.select_option("#grade-correctness", "2")
            page.select_option("#grade-relevance", "5")
            with page.expect_navigation():
                page.click("#save-grades")
            page.goto(f"{base}/run/{run_id}")
            iaa = page.inner_text("#iaa")
            assert "ann vs bob" in iaa and "correctness_grade" in iaa
            page.screenshot(path=str(shots / "ui-run-iaa.png"), full_page=True)
        finally:
            browser.close()
    store = Store(store_path, create=False)
    stored = store.annotations(run_id)
    assert [(a.author, a.path, a.value) for a in stored] == [
        ("ann", "ldps[0].tag", "incorrect"), ("ann", "human.grade_correctness", 2),
        ("ann", "human.grade_relevance", 4), ("ann", "human.missing[0]", {"text": "Invoices are payable within 45 "
                                                                                 "days, not 60"}),
        ("bob", "human.grade_correctness", 2), ("bob", "human.grade_relevance", 5)]
    assert store.result(run_id, "c1::s1").details["ldps"][0]["tag"] == "correct"  # the judge's output is untouched
    from assay.exchange.export import export_rows
    from assay.methods.lemaj.review import agreement

    table = agreement(export_rows(store, run_id), stored)
    assert table is not None and table["table"]["correctness_grade"] == {"answers": 1, "agreement": 1.0}
    assert table["table"]["relevance_grade"]["agreement"] == 0.0


def test_a_rubric_audit_and_a_dece_run_are_reviewed_and_overridden_in_chromium(tmp_path: Path) -> None:
    """One store holds a DeCE run and a rubric audit (made by the installed command): export and
    report cover the audit's criteria, and in Chromium a reviewer overrides a DeCE verdict and
    an audit's design-property verdict; the store keeps both, typed as the verdicts are."""
    from playwright.sync_api import expect, sync_playwright

    from tests.helpers import ITEM, dece_rules

    store_path = tmp_path / "both.db"
    dece = assay.evaluate([ITEM], "dece", ScriptedBackend(rules=dece_rules(["Three years", "Notice"], ["Three years"],
                                                                           [1, 1], [1])),
                          runner=RunnerConfig(progress=False), store=store_path)
    exe, env = _exe()
    (tmp_path / "r.yaml").write_text("criteria:\n  - {id: cites, description: Cites the statute it relies on.}\n"
                                     "  - {id: short, description: Is short and to the point.}\n")
    script = {"rules": [{"match": "Design property — Atomic", "responses": ['{"reasoning": "r", "verdict": "FAIL"}'],
                         "repeat": True},
                        {"match": ".", "responses": ['{"reasoning": "r", "verdict": "PASS"}'], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(script))
    audited = subprocess.run([exe, "rubric", "audit", "r.yaml", "--axes", "structure", "--judge", "scripted/judge.json",
                              "--store", str(store_path)], cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=120)
    assert audited.returncode == 0, audited.stderr
    runs = {r.method: r.run_id for r in Store(store_path, create=False).list_runs()}
    assert set(runs) == {"dece", "rubric-audit"}
    audit_id = runs["rubric-audit"]
    exported = subprocess.run([exe, "export", str(store_path), "--run", audit_id, "-o", "audit.jsonl"], cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=60)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(r["id"], r["structure"]) for r in rows] == [("cites", 4.0), ("short", 4.0)]
    assert rows[0]["flags"]["atomic"] is False
    report = subprocess.run([exe, "report", str(store_path), "--run", audit_id, "-o", "audit.html"], cwd=tmp_path,
                            capture_output=True, text=True, env=env, timeout=60)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "audit.html").read_text()
    assert "Cites the statute it relies on." in html
    assert "Runs in this store" in html and dece.run_id in html  # the report lists every run of the store

    with ui_of(store_path) as url:
        base = url.split("/?")[0]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url)
                assert audit_id in page.inner_text("body") and dece.run_id in page.inner_text("body")
                # the audit: a criterion per row; the judge failed "atomic"; the reviewer says it passes
                page.goto(f"{base}/run/{audit_id}")
                expect(page.locator("#items tr")).to_have_count(3)
                page.goto(f"{base}/run/{audit_id}/item/0")
                assert "fail" in page.inner_text("#properties")
                with page.expect_navigation():
                    page.select_option('select[data-path="flags.atomic"]', "true")
                assert "flags.atomic" in page.inner_text("#history")
                page.screenshot(path=str(tmp_path / "ui-audit-item.png"), full_page=True)
                # the DeCE run: the reviewer withdraws the first criterion's "satisfied"
                page.goto(f"{base}/run/{dece.run_id}/item/0")
                with page.expect_navigation():
                    page.select_option('select[data-path="criteria[0].satisfied"]', "false")
                assert "criteria[0].satisfied" in page.inner_text("#history")
            finally:
                browser.close()
    store = Store(store_path, create=False)
    audit_notes = [(a.path, a.value, a.author) for a in store.annotations(audit_id)]
    assert audit_notes == [("flags.atomic", True, "ann")]
    assert [(a.path, a.value) for a in store.annotations(dece.run_id)] == [("criteria[0].satisfied", False)]
