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
