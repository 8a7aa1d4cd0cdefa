"""A virtual clock that notes which code read it.

Why: partial-order reduction may move a step that depends on the time only over instants at which
it does the same thing (sim/timing.py). Finding that out by running the step again at each later
instant costs a kopf operator most of its search: kopf's own steps read the clock hundreds of times,
almost all of them in asyncio's scheduling, its credential vault and its log records, none of which
can change what the step does. Knowing *who* read it lets the framework's adapter say when no read
could matter (``KopfOperator.clock_blind``), and the step is then the same at every instant without
being run again.

A reader is the source file of the first frame outside the clock's own plumbing (the sandbox's time
functions and ``datetime`` stand-ins, and the virtual-time loop's ``time``), so ``loop.time()``
called by asyncio's ``_run_once`` is asyncio's read and ``datetime.now()`` in a handler is the
handler's.
"""

from __future__ import annotations

import sys
from types import FrameType

from kamera_cli.adapters.sandbox.fence import VirtualClock

#: frames that only hand the time on: (file suffix, function or "" for any)
_PLUMBING = (("kamera_cli/adapters/sandbox/fence.py", ""), ("kamera_cli/virtualtime/loop.py", "time"))


def _reader(frame: FrameType | None) -> str:
    while frame is not None:
        code = frame.f_code
        path = code.co_filename.replace("\\", "/")
        if not any(path.endswith(suffix) and (not fn or code.co_name == fn) for suffix, fn in _PLUMBING):
            return path
        frame = frame.f_back
    return ""


class WatchedClock(VirtualClock):
    """``VirtualClock`` whose reads of ``now`` record the reading file in ``readers``."""

    __slots__ = ("_at", "readers")

    def __init__(self, now: float) -> None:
        self.readers: set[str] = set()
        self._at = float(now)

    @property
    def now(self) -> float:
        self.readers.add(_reader(sys._getframe(1)))
        return self._at

    @now.setter
    def now(self, value: float) -> None:
        self._at = float(value)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self._at += seconds  # moving the clock is not reading it
