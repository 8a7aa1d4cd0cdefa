"""The one virtual-time event loop: timers are reached by ``wait``, never by blocking in ``select``."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kamera_cli.virtualtime import VirtualTimeLoop


def _run_with_fake_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> tuple[float, list[float]]:
    """``asyncio.sleep(seconds)`` on a loop whose clock only moves when the loop calls ``wait``."""
    now = [1.8e9]  # epoch magnitude: the loop must count from its start to keep asyncio's resolution
    waits: list[float] = []

    def wait(due: float) -> None:
        waits.append(due)
        now[0] += due

    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    result: list[float] = []

    def run() -> None:
        loop = VirtualTimeLoop(wait)
        try:
            async def main() -> float:
                await asyncio.sleep(seconds)
                return loop.time()

            result.append(loop.run_until_complete(main()))
        finally:
            loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    assert result, "the loop blocked instead of waiting through its wait function"
    return result[0], waits


def test_a_timer_comes_due_by_waiting_through_the_given_function(monkeypatch: pytest.MonkeyPatch) -> None:
    at, waits = _run_with_fake_clock(monkeypatch, 30)
    assert at == pytest.approx(30, abs=1e-5)
    assert sum(waits) == pytest.approx(30, abs=1e-5)


def test_a_timer_closer_than_the_clock_resolution_is_due_now(monkeypatch: pytest.MonkeyPatch) -> None:
    _at, waits = _run_with_fake_clock(monkeypatch, 1e-7)
    assert waits == []


def test_restart_counts_loop_time_from_now(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [500.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    loop = VirtualTimeLoop(lambda _s: None)
    try:
        now[0] += 7
        assert loop.time() == 7
        loop.restart()
        assert loop.time() == 0
    finally:
        loop.close()


class _Cut(Exception):
    """Stands for kamera's stop, raised in a step's thread wherever it happens to be."""


def test_a_close_cut_short_anywhere_can_be_finished_and_leaves_nothing_unraisable() -> None:
    # kamera stops an overrunning step by raising in its thread, again and again until it ends, so a
    # stop can land on any line of loop.close(); the next close (or the collector's) must still work.
    import gc
    import sys
    from types import FrameType
    from typing import Any

    unraisable: list[Any] = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        cut_at = 0
        while True:
            loop = VirtualTimeLoop(lambda seconds: None)
            lines = 0

            def tracer(frame: FrameType, event: str, arg: object, cut_at: int = cut_at) -> Any:
                nonlocal lines
                file = frame.f_code.co_filename
                if event == "line" and ("asyncio" in file or "virtualtime" in file):
                    lines += 1
                    if lines == cut_at:
                        raise _Cut
                return tracer

            sys.settrace(tracer)
            try:
                loop.close()
            except _Cut:
                pass
            finally:
                sys.settrace(None)
            loop.close()
            assert loop.is_closed()
            del loop
            gc.collect()
            if lines < cut_at:  # the close ran to its end without being cut: every line has been tried
                break
            cut_at += 1
        assert cut_at > 5
        assert unraisable == []
    finally:
        sys.unraisablehook = previous_hook
