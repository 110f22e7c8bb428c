"""``fileio.file_lock``: one holder at a time across threads and processes, a clear timeout, the lock file kept."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from sss_viewer.fileio import LockTimeout, file_lock
from tests.fixtures.threads import run_threads


def test_a_second_holder_in_the_same_process_times_out_naming_the_lock(tmp_path):
    lock = tmp_path / "sub" / "x.lock"
    with file_lock(lock):
        with pytest.raises(LockTimeout, match=rf"^{lock} is locked by another session; try again\.$"):
            with file_lock(lock, timeout_s=0.0):
                pass
    with file_lock(lock, timeout_s=0.0):  # released: free again at once
        pass
    assert lock.is_file()  # left in place (another process may be opening it)


def test_threads_take_turns(tmp_path):
    lock, inside, overlaps = tmp_path / "x.lock", [], []

    def work():
        for _ in range(5):
            with file_lock(lock, timeout_s=30.0):
                inside.append(1)
                overlaps.append(len(inside))
                time.sleep(0.002)
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(overlaps) == 20 and max(overlaps) == 1


def test_a_lock_held_by_another_process_is_waited_for_then_taken(tmp_path):
    lock, ready = tmp_path / "x.lock", tmp_path / "held"
    code = (
        "import sys, time, pathlib\nfrom sss_viewer.fileio import file_lock\n"
        f"with file_lock({str(lock)!r}):\n    pathlib.Path({str(ready)!r}).touch()\n    time.sleep(1.0)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder process did not take the lock"
            time.sleep(0.02)
        with pytest.raises(LockTimeout):
            with file_lock(lock, timeout_s=0.0):
                pass
        with file_lock(lock, timeout_s=60.0):  # waits for the holder to finish
            assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_reading_the_umask_without_proc_leaves_it_as_it_was_under_many_threads(monkeypatch):
    """Where /proc is missing (macOS) the umask is read by setting it and putting it back: threads doing so at once
    must leave the process's umask as it was (a site's 077 kept, so patient files stay private)."""
    import builtins
    import os
    import threading

    from sss_viewer.fileio import current_umask

    real_open = builtins.open

    def open_without_proc(file, *args, **kwargs):
        if str(file).startswith("/proc/"):
            raise FileNotFoundError(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_without_proc)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two calls, as on a busy machine
    before = os.umask(0o077)
    try:
        seen, start = [], threading.Barrier(8)

        def read_many():
            start.wait(10)
            seen.extend(current_umask() for _ in range(2000))

        run_threads(*[read_many] * 8)
        assert set(seen) == {0o077}
        assert os.umask(0o077) == 0o077
    finally:
        os.umask(before)
        sys.setswitchinterval(switch)
