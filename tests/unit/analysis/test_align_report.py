"""assay report --alignment: the alignment section, its three inline SVG plots drawn from the
file's cross-validated data, the aligned values beside the raw ones, an older file's missing plot
said in one line, an alignment of another method refused, and assay gate --alignment (scripted
judge; no model)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html

import assay
from assay.analysis import align as al
from assay.core.errors import ConfigError
from assay.engine.results import EvalResult
from assay.store import Store
from assay.view.report import render_report
from tests.unit.analysis.test_align import ASSAY, EXAMPLES, QUIET, Judge, _items, _run, dice_pairs


@pytest.fixture(scope="module")
def aligned_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    folder = tmp_path_factory.mktemp("align_report")
    path = folder / "runs.db"
    result = assay.evaluate(_items(), "dece", Judge(), runner=QUIET, verdicts="direct", store=path)
    store = Store(path, create=False)
    fitted = al.fit(store, result.run_id, al.read_labels(EXAMPLES / "align_labels.jsonl"), resamples=0)
    return path, result.run_id, al.write_alignment(fitted, folder / "alignment.json")


def _section(page: str) -> Any:
    tree = lxml_html.fromstring(page)
    heading = tree.xpath('//h2[@id="alignment"]')
    assert heading, "no alignment section"
    return tree


def test_the_report_shows_the_alignment_section_and_its_three_plots(aligned_run: tuple[Path, str, Path]) -> None:
    path, run_id, file = aligned_run
    store = Store(path, create=False)
    alignment = al.load_for(file, store, run_id)
    assert alignment["version"] == al.VERSION == 2
    tree = _section(render_report(EvalResult(store, run_id), None, alignment))
    figures = tree.xpath('//figure[@class="alignment-plot"]')
    titles = [" ".join(f.xpath(".//figcaption/b//text()")) for f in figures]
    assert titles == [*(f"Reliability of {kind} before and after calibration "
                        f"({alignment['calibration'][kind]['chosen']})" for kind in ("criteria", "elements")),
                      "Aligned score against the reviewers' grades", "Weight of each input in the aligned score"]
    assert all(len(f.xpath(".//svg")) == 1 for f in figures)
    for figure, kind in zip(figures[:2], ("criteria", "elements"), strict=True):
        part = alignment["calibration"][kind]
        for index, name in enumerate(("before", "after_cv")):
            bins = part[name]["reliability"]
            circles = figure.xpath(f'.//circle[@class="bin-{index}"]')
            assert len(circles) == len(bins) and len(bins) >= 2
            counts = [int(t) for t in figure.xpath(f'.//text[@fill="{("#1f77b4", "#d62728")[index]}"]/text()')]
            assert counts == [b["n"] for b in bins] and sum(counts) == part["n"]
    score = alignment["aligned_score"]
    assert len(figures[2].xpath('.//circle[@r="4"][title]')) == score["n"] == len(score["out_of_fold"]["predicted"])
    bars = figures[3].xpath('.//rect[@class="weight"]')
    assert [b.xpath("string(title)").split(":")[0] for b in bars] == score["inputs"]
    widths = [float(b.get("width")) for b in bars]
    top = max(score["shares"], key=score["shares"].get)
    assert widths[score["inputs"].index(top)] == max(widths) > 0
    # beside the raw values: the table of answers and each item's line
    rows = tree.xpath('//table[@class="aligned"]//tr[td]')
    assert len(rows) == len(store.results(run_id))
    fields = al.aligned_fields(alignment, store, run_id)
    first = store.results(run_id)[0]
    assert f"{fields[first.key]['aligned_score']:.3f}" in rows[0].text_content()
    assert len(tree.xpath('//p[@class="aligned"]')) == len(rows)


def test_an_older_file_says_which_plot_it_cannot_draw(aligned_run: tuple[Path, str, Path]) -> None:
    path, run_id, file = aligned_run
    store = Store(path, create=False)
    old = json.loads(file.read_text())
    old["version"] = 1
    del old["aligned_score"]["out_of_fold"]
    del old["calibration"]
    older = file.with_name("v1.json")
    older.write_text(json.dumps(old))
    tree = _section(render_report(EvalResult(store, run_id), None, al.load_for(older, store, run_id)))
    missing = [p.text_content() for p in tree.xpath('//p[contains(@class, "missing-plot")]')]
    assert len(missing) == 2
    assert "no calibration" in missing[0] and "version 1" in missing[1] and "refit" in missing[1]
    assert len(tree.xpath('//figure[@class="alignment-plot"]//svg')) == 1  # the weights still drawn


def test_an_alignment_of_another_method_is_refused(aligned_run: tuple[Path, str, Path], tmp_path: Path) -> None:
    path, run_id, file = aligned_run
    other = json.loads(file.read_text())
    other["fitted_for"]["method"] = "lemaj"
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(ConfigError, match="fitted for method lemaj"):
        al.load_for(tmp_path / "other.json", Store(path, create=False), run_id)


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
def test_report_alignment_on_the_command_line(aligned_run: tuple[Path, str, Path], tmp_path: Path) -> None:
    path, _, file = aligned_run
    with sqlite3.connect(path) as source, sqlite3.connect(tmp_path / "runs.db") as copy:
        source.backup(copy)
    proc = _run("report", "runs.db", "--alignment", file, "-o", "r.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = lxml_html.fromstring((tmp_path / "r.html").read_text())
    assert len(page.xpath('//figure[@class="alignment-plot"]//svg')) == 4
    other = json.loads(file.read_text())
    other["fitted_for"]["method"] = "lemaj"
    (tmp_path / "other.json").write_text(json.dumps(other))
    proc = _run("report", "runs.db", "--alignment", "other.json", "-o", "r2.html", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "fitted for method lemaj" in proc.stderr
    assert not (tmp_path / "r2.html").exists()


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
def test_gate_on_the_aligned_score_and_calibrated_values(aligned_run: tuple[Path, str, Path], tmp_path: Path) -> None:
    path, run_id, file = aligned_run
    with sqlite3.connect(path) as source, sqlite3.connect(tmp_path / "runs.db") as copy:
        source.backup(copy)
    store = Store(tmp_path / "runs.db", create=False)
    values = al.readings(al.load_for(file, store, run_id), store, run_id)
    mean = sum(v["aligned_score"] for v in values.values()) / len(values)  # one answer per conversation here
    proc = _run("gate", "runs.db", "--alignment", file, "--min-aligned", mean - 0.01, "--min-calibrated",
                "criteria=0.05", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"aligned_score = {mean:.3f}" in proc.stdout and "p_calibrated.criteria" in proc.stdout
    proc = _run("gate", "runs.db", "--alignment", file, "--min-aligned", mean + 0.01, cwd=tmp_path)
    assert proc.returncode == 1 and "aligned_score" in proc.stderr and "below the minimum" in proc.stderr
    other = json.loads(file.read_text())
    other["fitted_for"]["method"] = "lemaj"
    (tmp_path / "other.json").write_text(json.dumps(other))
    (tmp_path / "text_version.json").write_text(json.dumps({**json.loads(file.read_text()), "version": "2"}))
    for args, message in ((("--alignment", "other.json", "--min-aligned", "0.5"), "fitted for method lemaj"),
                          (("--alignment", "text_version.json", "--min-aligned", "0.5"),
                           "version '2' is not a version assay align writes"),  # was "newer than this assay reads (2)"
                          (("--min-aligned", "0.5"), "need --alignment"),
                          (("--alignment", file, "--min-calibrated", "claims=0.5"), "calibrates criteria, elements"),
                          (("--alignment", file, "--min-aligned", "nan"), "not a finite number")):
        proc = _run("gate", "runs.db", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, (args, proc.stderr)


def test_a_pairwise_report_shows_the_verdicts_at_the_tie_threshold(tmp_path: Path) -> None:
    result = dice_pairs(tmp_path)
    lines = []
    for row in result.rows:
        fc = row.details["forced_choice_a"]
        lines.append({"id": row.item["id"], "a": "s1", "b": "s2",
                      "winner": "tie" if abs(fc - 0.5) < 0.1 else ("A" if fc > 0.5 else "B")})
    (tmp_path / "winners.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    store = Store(tmp_path / "p.db", create=False)
    alignment = al.fit(store, result.run_id, al.read_labels(tmp_path / "winners.jsonl"), resamples=0)
    from jinja2 import Environment, PackageLoader, select_autoescape

    from assay.view.report import _fmt
    from assay.view.report.alignment import render

    env = Environment(loader=PackageLoader("assay.view", "report"), autoescape=select_autoescape(["j2", "html"]))
    env.filters["fmt"] = _fmt  # as render_report's (its DICE item partial needs the judge's analysis text)
    section, items = render(env, alignment, store, result.run_id, EvalResult(store, result.run_id).records())
    tree = _section(f"<html><body>{section}</body></html>")
    assert sum("at the tie threshold" in str(i) for i in items) == 30
    missing = [p.text_content() for p in tree.xpath('//p[contains(@class, "missing-plot")]')]
    assert len(missing) == 2 and "no calibration" in missing[0] and "no aligned score" in missing[1]
    cells = [r.xpath("./td")[-1].text_content() for r in tree.xpath('//table[@class="aligned"]//tr[td]')]
    fields = al.aligned_fields(alignment, store, result.run_id)
    assert len(cells) == 30 and all(" → " in c for c in cells)
    assert sorted(c.split(" → ")[1] for c in cells) == sorted(v["aligned_verdict"] for v in fields.values())


def test_the_review_ui_shows_the_aligned_values_beside_the_raw_ones(aligned_run: tuple[Path, str, Path],
                                                                      tmp_path: Path) -> None:
    """assay ui --alignment: the run's page has the aligned column and the summary with its plots; an
    item's page lists each calibrated verdict with P(yes) beside calibrated P; a run of another method
    in the same store says why the alignment does not apply; the store is not written."""
    from starlette.testclient import TestClient

    from assay.view.ui import create_app

    path, run_id, file = aligned_run
    copy = tmp_path / "runs.db"
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as target:  # the WAL's pages too
        source.backup(target)
    other = assay.evaluate(_items(), "rougeL", store=copy, runner=QUIET).run_id
    before = sqlite3.connect(copy).execute("SELECT count(*) FROM annotations").fetchone()
    alignment = al.read_alignment(file) | {"_source": "alignment.json"}
    client = TestClient(create_app(copy, "t", allowed_hosts=("testserver",), alignment=alignment))
    client.cookies.set("assay_token", "t")
    store = Store(copy, create=False)
    extra = al.aligned_fields(alignment, store, run_id)
    results = store.results(run_id)

    page = client.get(f"/run/{run_id}")
    assert page.status_code == 200
    tree = lxml_html.fromstring(page.text)
    header = [th.text_content() for th in tree.xpath('//table[@id="items"]//th')]
    assert "aligned" in header
    column = header.index("aligned")
    shown = [tr.xpath("./td")[column].text_content() for tr in tree.xpath('//table[@id="items"]//tr')[1:]]
    assert shown == [f"{extra[r.key]['aligned_score']:.3f}" for r in results]
    assert tree.xpath('//details[@id="aligned-section"]//h2[@id="alignment"]')
    figures = tree.xpath('//details[@id="aligned-section"]//figure[@class="alignment-plot"]')
    assert len(figures) == len(alignment["calibration"]) + 2  # a reliability diagram per kind, score, weights
    assert all(len(f.xpath(".//svg")) == 1 for f in figures)

    item = lxml_html.fromstring(client.get(f"/run/{run_id}/item/0").text)
    tables = item.xpath('//div[@id="aligned"]//table[@class="calibrated"]')
    assert tables and tables[0].get("data-kind") in extra[results[0].key]["p_calibrated"]
    kind = tables[0].get("data-kind")
    cells = [[td.text_content() for td in tr.xpath("./td")] for tr in tables[0].xpath(".//tr")[1:]]
    entries = results[0].details[kind]
    assert [c[3] for c in cells] == [f"{e['p_judge']:.3f}" for e in entries]
    assert [c[4] for c in cells] == [f"{p:.3f}" for p in extra[results[0].key]["p_calibrated"][kind]]
    assert item.xpath('//div[@id="aligned"]//b')[0].text_content() == f"{extra[results[0].key]['aligned_score']:.3f}"

    refused = lxml_html.fromstring(client.get(f"/run/{other}").text)
    note = refused.xpath('//p[@id="not-aligned"]')[0].text_content()
    assert "does not apply to this run" in note and "rougeL" in note
    assert not refused.xpath('//table[@id="items"]//th[text()="aligned"]')
    assert sqlite3.connect(copy).execute("SELECT count(*) FROM annotations").fetchone() == before


def test_assay_ui_refuses_a_bad_alignment_file_in_one_line_before_listening(aligned_run: tuple[Path, str, Path],
                                                                             tmp_path: Path) -> None:
    import subprocess

    from tests.unit.analysis.test_align import ASSAY as exe

    path = aligned_run[0]
    (tmp_path / "not.json").write_text("[1, 2]")
    for bad in ("missing.json", "not.json", "."):
        proc = subprocess.run([exe, "ui", str(path), "--alignment", bad, "--stop-after", "5"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "assay ui on" not in proc.stdout
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and f"--alignment {bad}" in lines[0], proc.stderr


def test_assay_ui_serves_the_aligned_column_over_http(aligned_run: tuple[Path, str, Path]) -> None:
    """The installed command, a real server on 127.0.0.1: the run's page carries the aligned column."""
    import re
    import signal
    import subprocess
    import urllib.request

    from tests.unit.analysis.test_align import ASSAY as exe
    from tests.unit.cli.test_robustness import wait_listening

    path, run_id, file = aligned_run
    proc = subprocess.Popen([exe, "ui", str(path), "--alignment", str(file), "--stop-after", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        match = re.search(r"(http://\S+)/\?token=(\S+)", proc.stdout.readline())
        assert match
        wait_listening(match.group(1))
        request = urllib.request.Request(f"{match.group(1)}/run/{run_id}",
                                         headers={"cookie": f"assay_token={match.group(2)}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            page = response.read().decode()
        tree = lxml_html.fromstring(page)
        assert "aligned" in [th.text_content() for th in tree.xpath('//table[@id="items"]//th')]
        assert tree.xpath('//td[contains(@class, "aligned")]')
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
