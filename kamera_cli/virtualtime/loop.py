"""An asyncio loop whose clock is ``time.monotonic`` and whose idle waits go through ``wait``.

Why: inside a step the sandbox makes ``time.monotonic`` virtual, and it only moves when someone
moves it.  A plain loop would block in ``select`` for a timer that never comes due; this one, when
nothing is ready and a timer is scheduled, hands the time to that timer to ``wait`` first (the
adapters move the step's virtual clock; the kr8s transport calls ``time.sleep``, virtual inside a
step and real outside one), so ``await asyncio.sleep(30)`` costs no wall-clock time and the run stays
deterministic.

It overrides asyncio's private ``_run_once`` and reads ``_ready`` and ``_scheduled``: asyncio has no
public hook for "the loop is about to wait".  Those names have been stable since Python 3.4; this
and ``_close_self_pipe`` (below) are the places kamera touches them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = ["VirtualTimeLoop"]

#: A virtual clock near 1.8e9 s moves in steps of ~2.4e-7 s: a timer closer than this is due now, or
#: moving the clock by the remainder would change nothing and the loop would spin.
CLOCK_RESOLUTION = 1e-6


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop that calls ``wait(seconds)`` before running a timer that is not yet due."""

    def __init__(self, wait: Callable[[float], None]) -> None:
        super().__init__()
        self._wait = wait
        self._clock_resolution = CLOCK_RESOLUTION
        self.restart()

    def restart(self) -> None:
        """Count loop time from now.

        Why relative: at epoch magnitudes (1.7e9 s) a float cannot hold asyncio's clock resolution,
        and a timer due "now" would never fire.
        """
        self._origin = time.monotonic()

    def time(self) -> float:
        return time.monotonic() - self._origin

    def _run_once(self) -> None:
        ready: Any = getattr(self, "_ready", None)
        scheduled: Any = getattr(self, "_scheduled", None)
        if not ready and scheduled:
            due = scheduled[0].when() - self.time()
            if due > self._clock_resolution:
                self._wait(due)
        super()._run_once()  # type: ignore[misc]

    def _close_self_pipe(self) -> None:
        """Close the self-pipe, finishing the job when an earlier ``close()`` was cut short.

        Why: kamera stops an overrunning step by raising an exception in its thread, and asks again
        until the thread ends, so a stop may land inside ``close()`` itself, after the pipe's read end
        was closed and before the loop was marked closed. asyncio's own version would then fail on
        every later ``close()`` (``Invalid file descriptor: -1``), the garbage collector's included,
        and the loop would print an unraisable error when collected. Same private names as asyncio's.
        """
        ssock: Any = getattr(self, "_ssock", None)
        if ssock is not None:
            if ssock.fileno() != -1:
                self._remove_reader(ssock.fileno())  # type: ignore[attr-defined]
                ssock.close()
            self._ssock = None
        csock: Any = getattr(self, "_csock", None)
        if csock is not None:
            csock.close()
            self._csock = None
            self._internal_fds = getattr(self, "_internal_fds", 1) - 1
