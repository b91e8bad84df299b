"""The embedded judge's child process dies with its parent, however the parent dies: a model busy
in a long forward pass would otherwise run on, orphaned, until the pass ends. It does not die when
the thread that started it ends (Linux's parent-death signal would do that)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = """
import multiprocessing, sys, time
from assay.judge.backends._llamacpp import die_with_parent

def child(ready):
    die_with_parent()
    open(ready, "w").close()
    time.sleep(120)  # stands for a long forward pass: it never reads the pipe

if __name__ == "__main__":
    import threading

    def start():  # from a thread that then ends, as the judge's first call may be made
        process = multiprocessing.get_context("spawn").Process(target=child, args=(sys.argv[1],))
        process.start()
        print(process.pid, flush=True)

    starter = threading.Thread(target=start)
    starter.start()
    starter.join()
    time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table under /proc")
def test_the_child_dies_when_its_parent_is_killed(tmp_path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    ready = tmp_path / "ready"
    parent = subprocess.Popen([sys.executable, str(script), str(ready)], stdout=subprocess.PIPE, text=True,
                              env=os.environ)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:  # in its work, past the start-up
            time.sleep(0.1)
        assert ready.exists()
        time.sleep(1.5)
        assert alive(child)  # the thread that started it has ended: the child lives on with its parent
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(child)
    finally:
        parent.kill()
