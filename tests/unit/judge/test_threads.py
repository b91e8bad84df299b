"""The embedded judge's default thread count is the CPUs the process may run on (taskset, a cpuset,
a test worker kept to one core), not every core of the machine; prompts are read with as many."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.judge.backends._llamacpp import LlamaCppBackend
from assay.judge.cpu_build import cpu_quota, usable_cpus


def test_the_default_follows_the_affinity_set() -> None:
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from assay.judge.backends._llamacpp import LlamaCppBackend; "
            "print(LlamaCppBackend('smollm2', process='inline').n_threads)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "1"
    assert LlamaCppBackend("smollm2", process="inline").n_threads == usable_cpus() >= 1


def test_an_explicit_thread_count_is_kept() -> None:
    assert LlamaCppBackend("smollm2", n_threads=3, process="inline").n_threads == 3


def _tree(tmp: Path, mount_line: str, cgroup_lines: str, files: dict[str, str]) -> tuple[Path, Path]:
    for name, text in files.items():
        target = tmp / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (tmp / "mountinfo").write_text(mount_line.replace("TMP", str(tmp)) + "\n")
    (tmp / "cgroup").write_text(cgroup_lines)
    return tmp / "mountinfo", tmp / "cgroup"


def test_a_cgroup_v2_quota_is_read_along_the_path(tmp_path: Path) -> None:
    mount = "30 23 0:26 / TMP/fs rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"
    paths = _tree(tmp_path, mount, "0::/app/job\n", {"fs/cpu.max": "max 100000\n", "fs/app/cpu.max": "150000 100000\n",
                                                        "fs/app/job/cpu.max": "max 100000\n"})
    assert cpu_quota(*paths) == 1.5  # the parent's limit holds for the child
    (tmp_path / "fs/app/cpu.max").write_text("max 100000\n")
    assert cpu_quota(*paths) is None


def test_a_cgroup_v1_quota_and_a_mount_rooted_in_a_cgroup(tmp_path: Path) -> None:
    # a container: its cgroup is the mount's root, so its path maps to the mount point itself
    mount = "40 30 0:33 /docker/abc TMP/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct"
    paths = _tree(tmp_path, mount, "3:cpu,cpuacct:/docker/abc\n2:memory:/docker/abc\n",
                  {"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"})
    assert cpu_quota(*paths) == 1.0
    (tmp_path / "cpu/cpu.cfs_quota_us").write_text("-1\n")  # no limit
    assert cpu_quota(*paths) is None


def test_no_cgroup_files_is_no_quota(tmp_path: Path) -> None:
    assert cpu_quota(tmp_path / "missing", tmp_path / "missing") is None
    paths = _tree(tmp_path, "garbage line", "not:a\n", {})
    assert cpu_quota(*paths) is None


def test_a_cgroup_outside_the_mounts_root_and_a_quota_under_one_cpu(tmp_path: Path) -> None:
    mount = "40 30 0:33 /docker/other TMP/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct"
    paths = _tree(tmp_path, mount, "3:cpu,cpuacct:/docker/abc\n",
                  {"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"})
    assert cpu_quota(*paths) is None  # another cgroup's limit is not ours
    (tmp_path / "cgroup").write_text("3:cpu,cpuacct:/docker/other\n")
    assert cpu_quota(*paths) == 0.5  # half a CPU: one thread (usable_cpus never gives 0)


def test_escaped_and_undecodable_mount_paths(tmp_path: Path) -> None:
    (tmp_path / "my cg").mkdir()
    (tmp_path / "my cg" / "cpu.max").write_text("200000 100000\n")
    escaped = str(tmp_path).replace(" ", "\\040") + "/my\\040cg"
    (tmp_path / "mountinfo").write_bytes(
        b"1 0 0:1 / /media/\xe9t\xe9 rw - ext4 /dev/sda1 rw\n"
        + f"30 23 0:26 / {escaped} rw - cgroup2 cgroup2 rw\n".encode())
    (tmp_path / "cgroup").write_text("0::/\n")
    assert cpu_quota(tmp_path / "mountinfo", tmp_path / "cgroup") == 2.0
    (tmp_path / "mountinfo").write_bytes(b"1 0 0:1 / /x rw -\n")  # cut short: skipped, not a crash
    assert cpu_quota(tmp_path / "mountinfo", tmp_path / "cgroup") is None
