"""The thread watch on its own: what is recorded, what is refused, what quiescence reports (issue #28)."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.sandbox import threads
from kamera_cli.adapters.sandbox.fence import VirtualClock, sandboxed
from kamera_cli.adapters.sandbox.threads import ThreadOutlived, refuse_thread_request, watching_threads

USER_CODE = """
import random
import threading
import time

def start(release, seen):
    def child():
        try:
            refuse_thread_request("GET", "/api/v1/namespaces/default/pods")
        except BaseException as exc:
            seen.append(exc)

    def parent():
        release.wait(5)
        t = threading.Thread(target=child)
        t.start()
        t.join()

    threading.Thread(target=parent, daemon=True).start()

def sleeper(release, seen):
    def run():
        release.wait(5)
        seen.append(time.time())
        seen.append(random.random())
        try:
            time.sleep(30)
        except BaseException as exc:
            seen.append(exc)
            raise

    threading.Thread(target=run, daemon=True).start()

def helper(seen):
    t = threading.Thread(target=lambda: seen.append(sum(range(10))))
    t.start()
    t.join()
"""


def _user_module(tmp_path: Path) -> dict[str, Any]:
    """``USER_CODE`` compiled as a file of the scenario's folder, so that its frames are the user's."""
    file = tmp_path / "ctrl.py"
    file.write_text(USER_CODE)
    namespace: dict[str, Any] = {"refuse_thread_request": refuse_thread_request}
    exec(compile(USER_CODE, str(file), "exec"), namespace)
    return namespace


def test_a_stray_threads_own_threads_are_refused_after_the_step(tmp_path: Path) -> None:
    code = _user_module(tmp_path)
    release = threading.Event()
    seen: list[Any] = []
    real_start = threading.Thread.start
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["start"](release, seen)
        (stray,) = watch.quiesce(0.05)
    assert stray.outlived and stray.attempts == ()
    # (running.py shows the site relative to the scenario's folder)
    assert stray.describe() == f"a thread started at {tmp_path / 'ctrl.py'}:19: it was still running 0.05 s " \
                               "after the step ended"
    (parent,) = (r.thread for r in watch.records)
    release.set()  # the step is over: the thread now starts a thread of its own, which calls the API
    parent.join(5)
    (refusal,) = seen  # the child inherits its parent's fate: stopped at its first call out
    assert isinstance(refusal, ThreadOutlived)
    assert "GET /api/v1/namespaces/default/pods refused, and the thread stopped: it outlived the step that " \
           "started it (at ctrl.py:19)" in str(refusal)
    with watching_threads((str(tmp_path),), threading.get_ident()):
        pass
    assert threading.Thread.start is real_start  # put back by the next call's end, no stray thread running


def test_a_joined_helper_is_no_finding_and_other_threads_are_never_refused(tmp_path: Path) -> None:
    code = _user_module(tmp_path)
    seen: list[Any] = []
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["helper"](seen)
        assert watch.quiesce(0.05) == ()
    assert seen == [45]
    assert refuse_thread_request("GET", "/api/v1/pods") is None  # kamera's own thread


def test_a_thread_that_outlived_its_step_never_touches_the_step_running_when_it_wakes(tmp_path: Path) -> None:
    """Seen in CI: a reconcile's stray thread slept through its step's end, woke in a later program's
    step and took that step's ``time.sleep`` for its own, which failed the program's search."""
    code = _user_module(tmp_path)
    release = threading.Event()
    seen: list[Any] = []
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["sleeper"](release, seen)
        (stray,) = watch.quiesce(0.05)
    assert stray.outlived
    (thread,) = (r.thread for r in watch.records)
    slept: list[float] = []
    with sandboxed(VirtualClock(1000.0), b"later step") as later:
        later.on_sleep = slept.append
        release.set()
        thread.join(5)
        assert (later.clock.now, later.clock_reads, slept) == (1000.0, 0, [])
    assert not thread.is_alive()
    now, drawn, stop = seen
    assert now > 1_000_000_000  # the real clock, not the later step's
    assert 0 <= drawn < 1
    assert isinstance(stop, ThreadOutlived) and "time.sleep(30) refused" in str(stop)


def test_busy_reads_only_the_innermost_frame_and_an_idle_pool_worker_is_not_busy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11 handed back a ``str`` for a running thread's ``f_back`` (a CI failure in quiescence):
    quiescence reads no further than a thread's innermost frame."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(5,), daemon=True)
    thread.start()
    pool = ThreadPoolExecutor(1)
    pool.submit(int).result()
    (worker,) = pool._threads
    walked: list[object] = []
    monkeypatch.setattr(threads, "_chain", walked.append)
    try:
        assert threads._busy(thread)  # waits on an Event: its own code, not an idle worker
        assert not threads._busy(worker)  # blocked in the work queue's get, called from ``_worker``
        monkeypatch.setattr(threads.sys, "_current_frames", lambda: {thread.ident: "not a frame"})
        assert threads._busy(thread)  # a reading that is not a frame: counted as running
    finally:
        release.set()
        thread.join(5)
        pool.shutdown()
    assert not threads._busy(thread)
    assert walked == []


def test_a_chain_read_as_something_else_than_frames_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = sys._getframe()
    readings = iter(["garbage"])
    real = threads.FrameType

    class Odd:
        """A frame whose ``f_back`` is garbage at first (what CPython 3.11 handed back), then the real one."""

        f_code = frame.f_code

        @property
        def f_back(self) -> object:
            return next(readings, frame)

    monkeypatch.setattr(threads, "FrameType", (real, Odd))
    chain = threads._chain(Odd())
    assert chain[1] is frame and len(chain) > 2
    readings = iter(["garbage"] * 100)
    assert threads._chain(Odd()) == ()


def test_a_failed_quiescence_still_fences_the_threads_still_running(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    code = _user_module(tmp_path)
    release = threading.Event()
    seen: list[Any] = []
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["sleeper"](release, seen)

        def broken(thread: threading.Thread) -> bool:
            raise RuntimeError("the stack could not be read")

        monkeypatch.setattr(threads, "_busy", broken)
        with pytest.raises(RuntimeError):
            watch.quiesce(0.05)
    (record,) = watch.records
    assert record.outlived and record.watch is None
    with sandboxed(VirtualClock(1000.0), b"later step"):
        release.set()
        record.thread.join(5)
    assert isinstance(seen[-1], ThreadOutlived)


def test_a_thread_started_below_threading_reads_the_clock_without_becoming_a_dummy_thread() -> None:
    """``threading.current_thread()`` on such a thread makes a ``_DummyThread`` that ``threading.enumerate()``
    lists for good; the budget once read a freed ``pthread_t`` from one (SIGSEGV). The fence asks
    whether the calling thread is fenced without making one."""
    import _thread

    done = threading.Event()
    seen: list[float] = []

    def run() -> None:
        seen.append(time.time())
        done.set()

    before = {t.ident for t in threading.enumerate()}
    with sandboxed(VirtualClock(1000.0), b"step"):
        _thread.start_new_thread(run, ())
        assert done.wait(5)
    assert seen == [1000.0]  # not fenced: the step's virtual clock
    assert {t.ident for t in threading.enumerate()} - before == set()
