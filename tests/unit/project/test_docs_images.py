"""The docs' pictures come from the embedded judge's recorded answers, replayed whole.

``docs/make_images.py`` scores the examples with a replay of ``docs/recordings/images.json`` (the
embedded judge's answers, recorded with ``--record``). If a prompt or an example changes, the
replay lacks answers and the pictures would no longer be what the judge said: this test fails
then, naming the command that records them again. (The screenshots themselves are taken by the
script in Chromium; fonts differ between machines, so they are not compared pixel by pixel.)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]


def load_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_images", ROOT / "docs" / "make_images.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pictures_runs_replay_the_recorded_embedded_judge_whole(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    script = load_script()
    judge = script.judge(record=False)
    assert judge.name == "llamacpp/default"
    assert judge.identity()["backend"] == "llamacpp", judge.identity()
    try:
        dece, rouge = script.score(tmp_path / "run.db", judge)
    except SystemExit as exc:  # the script's own message names the fix
        pytest.fail(f"{exc}: python docs/make_images.py --record")
    assert not judge.misses
    rows = dece.records()
    assert len(rows) == 14 and all(not r.get("unscored") for r in rows), rows
    assert rouge.run_id != dece.run_id


def test_a_replay_refuses_a_call_it_has_no_answer_for(tmp_path: Path) -> None:
    import asyncio

    from assay.core.errors import BackendError
    from assay.core.types import GenerateConfig, Message
    from assay.judge.backends._recording import Recording, ReplayJudge

    recording = Recording(ROOT / "docs" / "recordings" / "images.json")
    judge = ReplayJudge("llamacpp/default", recording)
    with pytest.raises(BackendError, match="no recorded answer"):
        asyncio.run(judge.generate([Message(role="user", content="a prompt nobody recorded")], GenerateConfig()))
    assert len(judge.misses) == 1
    with pytest.raises(BackendError, match="no calls of the judge"):
        ReplayJudge("openai/gpt-4o", recording)
