"""`assay doctor` notices other processes using the CPU before it times the judge, and says so
(its speeds feed --dry-run's time estimates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.judge import doctor


def _stat(path: Path, user: int, idle: int) -> None:
    # user nice system idle iowait irq softirq steal
    path.write_text(f"cpu  {user} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n", encoding="ascii")


def test_cpu_busy_is_the_share_of_time_not_idle_between_two_readings(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    stat = tmp_path / "stat"
    _stat(stat, 1000, 1000)
    monkeypatch.setattr(doctor.time, "sleep", lambda s: _stat(stat, 1000 + 150, 1000 + 50))
    assert doctor.cpu_busy(stat=stat) == pytest.approx(0.75)
    _stat(stat, 1000, 1000)
    monkeypatch.setattr(doctor.time, "sleep", lambda s: _stat(stat, 1000, 1000 + 200))
    assert doctor.cpu_busy(stat=stat) == 0.0


@pytest.mark.parametrize("text", [None, "", "cpu  1 2\n", "cpu  a b c d e f g h\n", "\xff\xfe"])
def test_cpu_busy_is_unknown_when_the_file_says_nothing_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               text: str | None) -> None:
    monkeypatch.setattr(doctor.time, "sleep", lambda s: None)
    stat = tmp_path / "stat"
    if text is not None:
        stat.write_bytes(text.encode("latin-1"))
    assert doctor.cpu_busy(stat=stat) is None  # and no time passed: nothing moved between the readings


def test_an_estimate_from_a_busy_measurement_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    check = doctor.SelfCheck(ok=True, prompt_tokens=100, seconds=2.0, generated_tokens=32, generation_seconds=4.0,
                             busy_before=0.9)
    doctor.record_speed("default", check)
    assert json.loads(doctor.speed_file("default").read_text())["cpu_busy_before"] == 0.9
    prompt, generated, where = doctor.measured_speed("default") or (0, 0, "")
    assert (prompt, generated) == (50.0, 8.0) and "90% busy" in where
    doctor.record_speed("default", doctor.SelfCheck(ok=True, prompt_tokens=100, seconds=1.0, generated_tokens=32,
                                                    generation_seconds=1.0, busy_before=0.05))
    assert "busy" not in (doctor.measured_speed("default") or (0, 0, "busy"))[2]
