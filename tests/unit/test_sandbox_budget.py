"""The call budget: busy loops and real blocking overrun, a call kept from the CPU by load does not."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kamera_cli.adapters.sandbox.budget import LOAD_FACTOR, await_call, thread_cpu_clock


def _released_after(seconds: float) -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    timer = threading.Timer(seconds, lock.release)
    timer.daemon = True
    timer.start()
    return lock


def _fake_cpu(share: float, until: float = float("inf")) -> Callable[[], float]:
    """A thread that gets ``share`` of a CPU for ``until`` seconds of wall time, then waits."""
    began = time.monotonic()
    return lambda: share * min(time.monotonic() - began, until)


def test_a_call_that_finishes_within_the_budget() -> None:
    assert await_call(_released_after(0.05), 2.0, _fake_cpu(1.0))


def test_a_call_kept_from_the_cpu_gets_more_wall_time() -> None:
    # a fifth of a CPU (a loaded machine): at 0.2 s it has used 0.04 s, and it ends at 0.5 s
    began = time.monotonic()
    assert await_call(_released_after(0.5), 0.2, _fake_cpu(0.2))
    assert time.monotonic() - began < 0.2 * LOAD_FACTOR


def test_a_call_computing_under_load_still_overruns_at_the_limit() -> None:
    began = time.monotonic()
    assert not await_call(_released_after(30.0), 0.2, _fake_cpu(0.1))
    assert 0.2 * LOAD_FACTOR - 0.05 <= time.monotonic() - began < 0.2 * LOAD_FACTOR + 0.5


def test_a_busy_call_overruns_at_its_budget() -> None:
    began = time.monotonic()
    assert not await_call(_released_after(30.0), 0.5, _fake_cpu(1.0))
    assert time.monotonic() - began < 0.5 * LOAD_FACTOR - 1.0  # not granted the loaded machine's wait


def test_a_blocked_call_overruns_at_its_budget() -> None:
    began = time.monotonic()
    assert not await_call(_released_after(30.0), 0.5, _fake_cpu(0.0))
    assert time.monotonic() - began < 0.5 * LOAD_FACTOR - 1.0


def test_a_call_that_computed_then_blocked_overruns_one_stretch_later() -> None:
    began = time.monotonic()
    assert not await_call(_released_after(30.0), 0.5, _fake_cpu(0.5, until=0.1))
    assert time.monotonic() - began < 0.5 * LOAD_FACTOR - 0.5  # one stretch past the budget, not the load limit


def test_without_a_cpu_clock_the_wall_budget_decides() -> None:
    began = time.monotonic()
    assert not await_call(_released_after(2.0), 0.2, None)
    assert time.monotonic() - began < 1.0


def test_the_cpu_clock_of_a_real_thread_counts_its_work_only() -> None:
    stop = threading.Event()
    go = threading.Event()

    def spin() -> None:
        go.wait()
        while not stop.is_set():
            sum(range(1000))

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    clock = thread_cpu_clock(thread)
    if clock is None:
        pytest.skip("this platform has no per-thread CPU clock (time.pthread_getcpuclockid)")
    idle = clock()
    time.sleep(0.1)
    assert clock() - idle < 0.05  # waiting on an Event uses no CPU
    go.set()
    time.sleep(0.3)
    spent = clock() - idle
    stop.set()
    thread.join()
    assert spent > 0.02  # spinning does (shared with this thread and the machine's load)


ENDED_DUMMY = """
import _thread, sys, threading, time
from kamera_cli.adapters.sandbox.budget import CallClock, thread_cpu_clock

threading.stack_size(64 << 20)  # beyond glibc's stack cache: unmapped once the next thread starts
done = _thread.allocate_lock()
done.acquire()
seen = []
def below_threading():
    seen.append(threading.current_thread())  # a _DummyThread, listed for good
    done.release()
_thread.start_new_thread(below_threading, ())
done.acquire()
time.sleep(0.2)
threading.stack_size(0)
for _ in range(3):
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
if seen[0] not in threading.enumerate():
    # glibc gave its pthread_t to a filler thread, whose end unlisted it: list it again, as a
    # program's thread whose ident no later thread took stays listed
    threading._active[-1] = seen[0]
print("listed", seen[0] in threading.enumerate(), flush=True)
print("clock", thread_cpu_clock(seen[0]), flush=True)
CallClock(time.thread_time, lambda: [], {threading.get_ident()})  # reads every listed thread's clock
print("read every clock", flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's pthread_t of an ended thread")
def test_a_listed_thread_that_ended_has_no_clock_and_reading_it_crashes_nothing() -> None:
    """Seen in the suite: a program's ``_thread.start_new_thread`` thread, ended, stays listed as a
    ``_DummyThread``; ``pthread_getcpuclockid`` on it read the unmapped stack and killed the process (SIGSEGV)."""
    proc = subprocess.run([sys.executable, "-c", ENDED_DUMMY], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout.split("\n")[:3] == ["listed True", "clock None", "read every clock"]
