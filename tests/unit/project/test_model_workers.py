"""`make test` runs the tests that load a model on two workers only where two of the usable CPUs are
separate physical cores (tests/model_workers.py), and a probe sees both compute at once at full speed;
SMT siblings and an unreadable topology give one."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("model_workers", ROOT / "tests" / "model_workers.py")
assert _spec and _spec.loader
model_workers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(model_workers)


def _topology(root: Path, cpu: int, package: int, core: int) -> None:
    folder = root / f"cpu{cpu}" / "topology"
    folder.mkdir(parents=True)
    (folder / "physical_package_id").write_text(f"{package}\n")
    (folder / "core_id").write_text(f"{core}\n")


def test_separate_cores_count_and_siblings_do_not(tmp_path: Path) -> None:
    _topology(tmp_path, 0, 0, 0)
    _topology(tmp_path, 1, 0, 1)
    _topology(tmp_path, 2, 0, 0)  # cpu0's SMT sibling
    assert model_workers.physical_cores([0, 1], tmp_path) == 2
    assert model_workers.physical_cores([0, 2], tmp_path) == 1
    assert model_workers.physical_cores([0, 1, 2], tmp_path) == 2


def test_an_unreadable_topology_is_one_core(tmp_path: Path) -> None:
    _topology(tmp_path, 0, 0, 0)
    assert model_workers.physical_cores([0, 1], tmp_path) == 1
    assert model_workers.physical_cores([], tmp_path) == 1


def test_the_probe_times_matrix_products_on_the_cpu_it_is_given() -> None:
    cpu = sorted(os.sched_getaffinity(0))[0]
    (rate,) = model_workers.probe([cpu], seconds=0.1)
    assert rate > 0
