from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from assay.core.errors import InputError
from assay.data.datasets import read_items
from tests.helpers import ITEM


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_reads_jsonl_and_plain_string_reference(tmp_path: Path) -> None:
    rows = [ITEM, {"id": 7, "query": "q", "response": "r", "reference": "all required"}]
    path = write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    items = read_items(path)
    assert [i.id for i in items] == ["q1", "7"]
    assert items[1].reference is not None and items[1].reference.required == "all required"
    assert items[1].reference.helpful == ""


@pytest.mark.parametrize("content, message", [
    ('{"id": "a", "query": "q", "response": "r"}\n{"id": "b", "query": "q"\n', "line 2: malformed JSON"),
    ('{"id": "a", "query": "q"}\n', "line 1, field 'response': required field is missing"),
    ('{"id": "a", "query": "q", "response": 5}\n', "line 1, field 'response': Input should be a valid string"),
    ('["a"]\n', "line 1: expected a JSON object"),
    ("\n\n", "the file holds no items"),
    (b'{"id": "a", "query": "q", "response": "r"}\n{"id": "b", "query": "\xff", "response": "r"}\n',
     "line 2: not UTF-8"),
])
def test_bad_jsonl_gives_one_clear_error(tmp_path: Path, content: str | bytes, message: str) -> None:
    path = write(tmp_path / "bad.jsonl", content)
    with pytest.raises(InputError) as info:
        read_items(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_a_misspelt_field_is_kept_under_metadata_and_named_with_the_field_it_resembles(tmp_path: Path) -> None:
    from assay.data.datasets import input_notes

    path = write(tmp_path / "d.jsonl", '{"id": "a", "query": "q", "response": "r", "refrence": "x"}\n')
    (item,) = read_items(path)
    assert item.reference is None and item.metadata == {"refrence": "x"}
    assert input_notes(str(path)) == ["kept 1 unused field under metadata: refrence (did you mean reference?)"]


def test_reads_csv_with_json_cells_and_reference_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv",
                 'id,query,response,reference_required,reference_helpful,metadata\n'
                 'q1,What?,Answer,Must say X,Could say Y,"{""jurisdiction"": ""NY""}"\n')
    item = read_items(path)[0]
    assert item.reference is not None and item.reference.helpful == "Could say Y"
    assert item.metadata == {"jurisdiction": "NY"}


def test_csv_errors_name_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", 'id,query,response,metadata\nq1,a,b,{}\nq2,a,b,"{oops"\n')
    with pytest.raises(InputError, match="line 3, field 'metadata': cell is not valid JSON"):
        read_items(path)


def test_reads_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame([{"id": "q1", "query": "q", "response": "r",
                           "reference": json.dumps({"required": "x"}), "system": "s"}])
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    item = read_items(path)[0]
    assert item.reference is not None and item.reference.required == "x" and item.system == "s"


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown input format"):
        read_items(write(tmp_path / "d.txt", "x"))
    with pytest.raises(InputError, match="no such file"):
        read_items(tmp_path / "nope.jsonl")


def test_a_pairwise_record_reads_as_two_answers_in_order(tmp_path: Path) -> None:
    from assay.core.errors import InputError
    from assay.core.types import pairs_from_items
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": "q1", "query": "Q?", "a": {"system": "zeta", "response": "A1", "contexts": [{"text": "c"}]},
             "b": {"system": "alpha", "response": "B1"}, "human": {"winner": "A"}},
            {"id": "q2", "query": "Q2?", "response": "x", "system": "s1"},
            {"id": "q2", "query": "Q2?", "response": "y", "system": "s0"},
            {"id": "q2", "query": "Q2?", "response": "z", "system": "s2"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    items = read_items(path)
    assert [(i.id, i.system, i.response) for i in items[:2]] == [("q1", "zeta", "A1"), ("q1", "alpha", "B1")]
    assert items[0].contexts[0].text == "c" and items[0].human == {"winner": "A"}
    pairs = pairs_from_items(items)
    assert [(p.items[0].system, p.items[1].system) for p in pairs] == [("zeta", "alpha"), ("s0", "s1"),
                                                                      ("s0", "s2"), ("s1", "s2")]
    assert pairs[0].kind == "pair" and pairs[0].key == "r0:q1:zeta|alpha"
    path.write_text(json.dumps({"id": "q", "query": "Q", "a": {"response": "x"}, "b": {"system": "A",
                                                                                     "response": "y"}}) + "\n")
    with pytest.raises(InputError, match=r"line 1, field 'b\.system'"):
        read_items(path)
    path.write_text(json.dumps({"id": "q", "query": "Q", "a": {"response": "x"}, "b": {"answer": "y"}}) + "\n")
    with pytest.raises(InputError, match=r"field 'b\.answer'"):
        read_items(path)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_id_in_a_python_record_is_refused(bad: float) -> None:
    # str() made it the id "nan"; a missing id (None) was already refused the same way
    from assay.data.items import load_items

    with pytest.raises(InputError, match=r"data, line 2, field 'id': -?(nan|inf) is not an id"):
        load_items([{**ITEM, "id": 7}, {**ITEM, "id": bad}])
    assert [i.id for i in load_items([{**ITEM, "id": 7}]).items] == ["7"]


def test_numpy_numbers_are_ids_as_python_numbers_are() -> None:
    import numpy as np

    from assay.data.items import load_items

    rows = [{**ITEM, "id": np.int64(3)}, {**ITEM, "id": np.float64(4.5)}, {**ITEM, "id": 5}]
    assert [i.id for i in load_items(rows).items] == ["3", "4.5", "5"]  # np.int64 was refused as not a string


def test_field_names_in_other_capitals_are_read_as_the_names_they_spell(tmp_path: Path) -> None:
    """A spreadsheet's headers: "Query,Response,Ground Truth" was three missing fields. Their cells
    are read as the lowercase columns' are (JSON in Contexts); a column that only looks like a field
    of ours (Case, a ticket number; ID beside id) stays under metadata, as before."""
    from assay.data.datasets import input_notes

    path = write(tmp_path / "d.csv", "ID,Query,Response,Ground Truth,Contexts\nq1,What?,Yes.,No.,\"[\"\"one\"\", "
                                     "\"\"two\"\"]\"\n")
    (item,) = read_items(path)
    assert (item.id, item.query, item.response, item.reference.required if item.reference else None) == \
        ("q1", "What?", "Yes.", "No.")
    assert [c.text for c in item.contexts] == ["one", "two"]
    assert {"read 'Query' as query", "read 'Ground Truth' as ground_truth"} <= set(input_notes(str(path)))
    parts = write(tmp_path / "parts.csv", "query,response,Reference Required,Reference Helpful\na,b,must,may\n")
    (item,) = read_items(parts)
    assert item.reference is not None and (item.reference.required, item.reference.helpful) == ("must", "may")
    kept = write(tmp_path / "kept.csv", "id,ID,query,Query,response,Case,System\na,X-1,q,Q,r,C-12,bot-v2\n")
    (item,) = read_items(kept)
    assert (item.id, item.query, item.system) == ("a", "q", None)
    assert item.metadata == {"ID": "X-1", "Query": "Q", "Case": "C-12", "System": "bot-v2"}


# --- through the installed executable: one line, exit 2, nothing written ----------------------------------
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
GOOD = "id,query,response,reference\n1,q,a,r\n2,q,a,r\n"


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")
@pytest.mark.parametrize(("name", "content", "message"), [
    # the parser stops on line 5; the error named line 4 (the last row read)
    ("bad5.csv", GOOD + "3,q,a,r\n5,\"q\" x,resp,ref\n", "bad5.csv, line 5: malformed CSV: ',' expected after '\"'"),
    # a quoted cell over two lines before it: line 5 is still the fifth line of the file
    ("multi.csv", GOOD[:-8] + "2,\"q\nmore\",a,r\n5,\"q\" x,resp,ref\n",
     "multi.csv, line 5: malformed CSV: ',' expected after '\"'"),
    # the bad quote on the second line of a row's quoted cell
    ("inner.csv", GOOD + "3,q,\"a\nb\" x,r\n", "inner.csv, line 5: malformed CSV: ',' expected after '\"'"),
    # a required field missing from the header: said once, on line 1, naming each one
    ("wrongcols.csv", "prompt,output,expected\nq,a,r\n",
     "wrongcols.csv, line 1: the header has no column for the required fields query and response; its columns: "
     "prompt, output, expected"),
    ("respones.csv", "id,query,respones,reference\n1,q,a,r\n",
     "respones.csv, line 1, field 'response': the header has no column for this required field (found 'respones': "
     "did you mean response?); its columns: id, query, respones, reference"),
    # a misspelt key of a JSON record is named, as the CSV header's is
    ("respones.jsonl", '{"id":"1","query":"q","response":"a","reference":"r"}\n'
                       '{"id":"2","query":"q","respones":"a","reference":"r"}\n',
     "respones.jsonl, line 2, field 'response': required field is missing (found 'respones': did you mean "
     "response?)"),
    ("anwser.json", '[{"id":"1","question":"q","anwser":"a","reference":"r"}]',
     "anwser.json, line 1, field 'response': required field is missing (found 'anwser': did you mean answer?)"),
])
def test_bad_input_through_the_executable_is_one_line_naming_the_line(tmp_path: Path, name: str, content: str,
                                                                      message: str) -> None:
    write(tmp_path / name, content)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")} | {"COLUMNS": "300"}
    proc = subprocess.run([str(ASSAY), "eval", "rougeL", name, "--store", "run.db", "-o", "scores.csv"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [f"error: {message}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no store, no scores file
