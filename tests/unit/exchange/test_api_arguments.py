"""`assay.evaluate` called from code with an argument of the wrong kind: one ConfigError naming the
argument, before anything runs or any file is made (a number as the judge failed deep in the judge
registry, a dict as the runner inside the call runner, a string as `methods` was read letter by
letter, an int as the store made a file named after it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assay
from assay.core.errors import ConfigError

ITEMS = [{"id": "a", "query": "What is it?", "response": "It is red.", "reference": "It is red."}]


@pytest.mark.parametrize(("call", "message"), [
    ({"method": "geval", "judge": 5}, "judge must be a judge's name such as 'llamacpp/default'"),
    ({"method": "geval", "judge": None}, "geval asks a judge: give one, such as 'llamacpp/default'"),
    ({"method": "rougeL", "runner": 3}, "runner must be an assay.RunnerConfig (or a dict of its fields), not int"),
    ({"method": "rougeL", "runner": {"timeout": 1}}, "runner: timeout: no such field (its fields: concurrency,"),
    ({"method": "rougeL", "runner": {"timeout_s": -1}}, "runner: timeout_s: Input should be greater than 0"),
    ({"methods": "rougeL"}, "methods must be a list of method names, not the string 'rougeL' (one method: "
                            "method='rougeL')"),
    ({"method": "rougeL", "store": 5}, "store must be a path (str or pathlib.Path) or an assay Store, not int"),
])
def test_an_argument_of_the_wrong_kind_is_one_error_naming_it(call: dict[str, Any], message: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        assay.evaluate(ITEMS, **call)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing was made


def test_a_runner_given_as_a_dict_of_its_fields_is_used(tmp_path: Path) -> None:
    result = assay.evaluate(ITEMS, "rougeL", runner={"timeout_s": 5, "progress": False}, store=tmp_path / "r.db")
    assert result.records()[0]["status"] == "scored"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(st.text(max_size=3), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.binary(max_size=4)))
def test_any_judge_that_is_not_a_name_or_a_backend_is_refused(judge: Any) -> None:
    with pytest.raises(ConfigError, match="judge must be a judge's name"):
        assay.evaluate(ITEMS, "rougeL", judge=judge)
