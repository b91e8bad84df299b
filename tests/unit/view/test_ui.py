"""`assay ui` request rules (token, host, cross-site, JSON) and the human layer, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import assay
from assay.core.types import Item
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.methods.lemaj.review import reviewed_ldps
from assay.store import Store
from assay.store.human import latest
from assay.view.ui import create_app

TOKEN = "t0ken-for-tests"
RESPONSE = "Invoices are payable within 60 days. New York law governs."


@pytest.fixture
def app(tmp_path: Path) -> tuple[TestClient, Store, str]:
    canned = json.dumps({"sentences": [
        {"sentence": 1, "points": [{"quote": "Invoices are payable within 60 days", "reason": "r", "paragraphs": [1],
                                    "supported": "yes", "relevant": "yes"}]},
        {"sentence": 2, "points": [{"quote": "New York law governs", "reason": "r", "paragraphs": [],
                                    "supported": "yes", "relevant": "no"}]}], "missing": []})
    run = assay.evaluate([Item(id="c1", query="Terms?", response=RESPONSE, document="Pay in 60 days.")], "lemaj",
                         ScriptedBackend([canned]), runner=RunnerConfig(progress=False), store=tmp_path / "s.db",
                         evidence_check="flag")  # the judge's tags stand: "New York" stays irrelevant, not downgraded
    client = TestClient(create_app(tmp_path / "s.db", TOKEN, allowed_hosts=("testserver",)))
    return client, Store(tmp_path / "s.db", create=False), run.run_id


def test_every_request_needs_the_token_and_writes_need_the_header(app) -> None:
    client, store, run_id = app
    assert client.get("/").status_code == 401
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 403
    login = client.get(f"/?token={TOKEN}", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/"
    cookie = login.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/?token=wrong", follow_redirects=False).status_code == 401
    client.cookies.set("assay_token", TOKEN)
    assert client.get("/").status_code == 200 and client.get(f"/run/{run_id}").status_code == 200
    assert client.get(f"/run/{run_id}/item/0").status_code == 200
    assert client.get(f"/run/{run_id}/item/7").status_code == 404 and client.get("/run/nope").status_code == 404
    url = f"/api/run/{run_id}/item/0/annotations"
    body = {"path": "ldps[0].tag", "value": "incorrect", "author": "ann"}
    assert client.post(url, json=body).status_code == 403  # the cookie alone does not write
    headers = {"X-Assay-Token": TOKEN}
    assert client.post(url, json=body, headers={**headers, "Origin": "http://evil.example"}).status_code == 403
    assert client.post(url, json=body, headers={**headers, "Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert client.post(url, content=json.dumps(body), headers={**headers, "Content-Type": "text/plain"}
                       ).status_code == 415
    assert client.post(url, json={"path": "no.such[2]", "value": 1}, headers=headers).status_code == 400
    created = client.post(url, json=body, headers=headers)
    assert created.status_code == 201 and created.json()["author"] == "ann"
    assert [a.path for a in store.annotations(run_id)] == ["ldps[0].tag"]
    assert client.get(f"/api/run/{run_id}/annotations").json()[0]["value"] == "incorrect"


def test_filters_narrow_the_items(app) -> None:
    client, _, run_id = app
    client.cookies.set("assay_token", TOKEN)
    page = client.get(f"/run/{run_id}?metric=correctness&min=0.5").text
    assert "1 shown." in page
    assert "0 shown." in client.get(f"/run/{run_id}?metric=precision&min=0.9").text
    assert "0 shown." in client.get(f"/run/{run_id}?status=unscored").text
    # a bound that is not a number is refused in one line, not ignored (the page said every item was shown)
    for bad in ("abc", "nan", "inf", "1e999"):
        refused = client.get(f"/run/{run_id}?metric=correctness&min={bad}")
        assert refused.status_code == 400 and refused.text == f"the filter's min must be a number, not {bad!r}"
    assert client.get(f"/run/{run_id}?metric=correctness&max=").status_code == 200  # an empty bound is no bound
    # a bound without a metric, or a metric the run does not have, is refused (the page said "14 shown.")
    unbound = client.get(f"/run/{run_id}?min=0.5")
    assert unbound.status_code == 400 and "choose the metric" in unbound.text
    bogus = client.get(f"/run/{run_id}?metric=bogus&min=0.5")
    assert bogus.status_code == 400 and "not 'bogus'" in bogus.text
    assert client.get(f"/run/{run_id}?metric=&min=&max=").status_code == 200  # the form's empty submission


def test_a_reviewer_splits_merges_retags_and_adds_points(app) -> None:
    _, store, run_id = app
    key = "c1"
    store.annotate(run_id, key, "ldps[1].tag", "correct", author="ann")
    store.annotate(run_id, key, "human.split[0]", {"ldp": 0, "at": 12}, author="ann")
    store.annotate(run_id, key, "human.missing[0]", {"text": "payable in 45 days"}, author="ann")
    store.annotate(run_id, key, "human.merge[0]", {"ldps": [0, 1]}, author="bob")
    ldps = store.result(run_id, key).details["ldps"]
    mine = reviewed_ldps(RESPONSE, ldps, latest(store.annotations(run_id, key), "ann"))
    assert [(d["text"], d["tag"], d["origin"]) for d in mine] == [
        ("Invoices are", "correct", "split"), ("payable within 60 days", "correct", "split"),
        ("New York law governs", "correct", "judge"), ("payable in 45 days", "missing", "human")]
    for d in mine[:3]:
        assert RESPONSE[d["start"]:d["end"]] == d["text"]
    bobs = reviewed_ldps(RESPONSE, ldps, latest(store.annotations(run_id, key), "bob"))
    assert [(d["text"], d["origin"]) for d in bobs] == [(RESPONSE[:-1], "merge")]


def test_the_human_layer_feeds_export_and_meta(app, tmp_path: Path) -> None:
    from assay.data.datasets.adapters import read_labelled
    from assay.exchange.export import export_rows

    _, store, run_id = app
    store.annotate(run_id, "c1", "human.grade_correctness", 4, author="ann")
    store.annotate(run_id, "c1", "human.grade_correctness", 5, author="ann")  # a correction: the latest counts
    store.annotate(run_id, "c1", "human.grade_correctness", 2, author="bob")
    store.annotate(run_id, "c1", "precision", 0.25, author="bob", reason="the aside matters")
    row = export_rows(store, run_id, annotations=True)[0]
    assert row["annotations"] == {"ann": {"human.grade_correctness": 5},
                                  "bob": {"human.grade_correctness": 2, "precision": 0.25}}
    metaset = read_labelled("annotations", tmp_path / "s.db")
    assert metaset.labels == ["grade_correctness", "precision"]
    assert metaset.units[0].human == {"grade_correctness": [1.0, 0.25], "precision": [0.25]}
    with pytest.raises(Exception, match="no reviewer grades"):
        store2 = tmp_path / "empty.db"
        assay.evaluate([Item(id="x", query="q", response="A b.", document="d")], "lemaj", ScriptedBackend([json.dumps(
            {"sentences": [{"sentence": 1, "points": [{"quote": "A b", "reason": "r", "paragraphs": [],
                                                       "supported": "yes", "relevant": "yes"}]}], "missing": []})]),
                       runner=RunnerConfig(progress=False), store=store2)
        read_labelled("annotations", store2)


def test_the_ui_reads_a_store_while_a_run_writes_to_it(tmp_path: Path) -> None:
    import threading

    canned = json.dumps({"reasoning": "r", "issues": [], "score": 3, "justification": "j"})
    judge = ScriptedBackend(rules=[{"match": ".", "responses": [canned], "repeat": True}], latency=0.05)
    path = tmp_path / "live.db"
    items = [Item(id=f"q{i:02d}", query="Q?", response=f"A{i}.", reference="A.") for i in range(30)]
    assay.evaluate(items[:1], "pointwise", judge, runner=RunnerConfig(progress=False), store=path)  # the store exists
    client = TestClient(create_app(path, TOKEN, allowed_hosts=("testserver",)))
    client.cookies.set("assay_token", TOKEN)
    run = threading.Thread(target=lambda: assay.evaluate(items, "pointwise", judge, store=path,
                                                         runner=RunnerConfig(progress=False, concurrency=1)))
    run.start()
    seen = []
    while run.is_alive():
        page = client.get("/")
        assert page.status_code == 200
        seen.append(page.text.count("<tr>"))
    run.join()
    assert client.get("/").text.count("pointwise") >= 2 and len(seen) >= 2


def test_pages_say_what_a_run_was_and_show_the_answers_and_contexts(tmp_path: Path) -> None:
    items = [Item(id="q1", query="What is the refund window?", response="30 days from delivery.",
                  reference="Refunds are accepted within 30 days of purchase.",
                  contexts=[{"id": "1", "text": "Refund policy: purchases can be refunded within 30 days."}]),
             Item(id="q2", query="Do you ship to Canada?", response="No, we only ship within the EU.",
                  reference="Yes, we ship to Canada and the US.")]
    (tmp_path / "answers.jsonl").write_text("\n".join(i.model_dump_json() for i in items), encoding="utf-8")
    run = assay.evaluate(items, "rougeL", store=tmp_path / "r.db", runner=RunnerConfig(progress=False),
                         data_source=str(tmp_path / "answers.jsonl"))
    client = TestClient(create_app(tmp_path / "r.db", TOKEN, author="ann", allowed_hosts=("testserver",)))
    client.cookies.set("assay_token", TOKEN)
    runs = client.get("/").text
    assert "answers.jsonl" in runs and "rougeL <b>" in runs and "none (no judge)" in runs and " UTC" in runs
    assert "reviewer reviewer" not in runs and "signed in as" in runs
    page = client.get(f"/run/{run.run_id}").text
    assert "What is the refund window?" in page and "we only ship within the EU" in page
    assert 'id="distribution"' in page and 'class="hist"' in page
    item = client.get(f"/run/{run.run_id}/item/0").text
    assert "Retrieved contexts (1)" in item and "Refund policy: purchases can be refunded" in item
    # a reference given as a plain string is shown as given (it was "Required: " and nothing)
    assert "<pre>Refunds are accepted within 30 days of purchase.</pre>" in item


def test_a_mean_over_some_answers_says_how_many(tmp_path: Path) -> None:
    """The runs page and the run page said "pointwise 3.000" for a mean over 1 of 2 answers."""
    from assay.core.types import Unscored
    from assay.methods import ItemResult

    store = Store(tmp_path / "s.db")
    store.create_run("r1", "pointwise", {"metrics": ["pointwise"]},
                     [(k, {"id": k, "query": "q", "response": "r"}) for k in ("a", "b")])
    store.put_result("r1", 0, "a", ItemResult(scores={"pointwise": 3.0}))
    store.put_result("r1", 1, "b", ItemResult(scores={"pointwise": None},
                                              unscored=[Unscored(metric="pointwise", reason="unparseable")]))
    client = TestClient(create_app(tmp_path / "s.db", TOKEN, allowed_hosts=("testserver",)))
    client.cookies.set("assay_token", TOKEN)
    for path in ("/", "/run/r1"):
        page = client.get(path)
        assert page.status_code == 200 and "(1 of 2; 1 unscored)" in page.text, path
