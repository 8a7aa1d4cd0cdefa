"""How long kamera waits for one call: the budget is the controller's, not the machine's.

Why not the wall clock alone: ``timeout`` is meant to catch a busy loop or real blocking, but a wall
clock also counts the time the operating system gave to other work. On a loaded machine (a CI runner
running two suites, a laptop building something) a step that needs 3 s of CPU can take 15 s of wall
time, and the same scenario would then report an overrun here and pass there: a verdict that
depends on the machine. So once the wall budget has passed, kamera looks at what the worker thread
did with it, from the thread's own CPU clock:

- it used ``budget`` seconds of CPU (at the first look, ``BUSY_SHARE`` of it: the machine was not
  what held it back): a busy loop, an overrun, when an idle machine would have reported it;
- it used almost no CPU over the last stretch (``IDLE_SHARE``): it waits for something kamera does
  not control (a real socket, a real lock), an overrun — no later than before, but for one stretch;
- otherwise it is computing and was kept from the CPU: wait another stretch, up to ``LOAD_FACTOR``
  times the budget in wall time, after which it is an overrun whatever it did.

The call's CPU is its worker thread's plus that of every thread seen doing work the call handed over
(``CallClock``): a kopf sync handler, ``asyncio.to_thread`` and ``run_in_executor`` compute on an
executor's thread while the worker's event loop waits, and judged by the worker's clock alone such a
call looked idle at the end of its budget and overran there, however loaded the machine.

Where the platform has no per-thread CPU clock, the wall budget alone decides (as before).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable

__all__ = ["BUSY_SHARE", "IDLE_SHARE", "LOAD_FACTOR", "STRETCH_SECONDS", "CallClock", "await_call", "thread_cpu_clock"]

#: the most wall time a call computing under load is given, as a multiple of its budget
LOAD_FACTOR = 5.0
#: how long each look after the budget waits
STRETCH_SECONDS = 0.5
#: at the end of the budget, a thread that had this share of it on the CPU was not kept from it
BUSY_SHARE = 0.8
#: below this share of a stretch's wall time spent on the CPU, the thread counts as waiting
IDLE_SHARE = 0.02
#: Linux's per-thread CPU clock of a kernel thread id: ``CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED``
_THREAD_SCHED_CLOCK = 6


def thread_cpu_clock(thread: threading.Thread) -> Callable[[], float] | None:
    """The thread's CPU seconds as a callable, or None where the platform cannot read them (or it ended).

    On Linux the clock is named from the thread's kernel id, as glibc's ``pthread_getcpuclockid``
    names it, but without reading the id out of the thread's ``pthread_t``: that is freed memory once
    the thread ended, and ``threading.enumerate()`` goes on listing a ``_DummyThread`` (a thread started
    below ``threading``, such as a program's ``_thread.start_new_thread``, that called into it) after
    its thread ended.  Reading it killed the whole process with SIGSEGV once glibc had unmapped that
    thread's stack (seen in the test suite).  A kernel id of a thread that ended names no clock:
    reading it fails, and the answer is None.
    """
    clock_id: int | None = None
    if sys.platform.startswith("linux"):
        tid = thread.native_id
        if tid is not None:
            clock_id = (((~tid) << 3) | _THREAD_SCHED_CLOCK) & 0xFFFFFFFF
            clock_id -= (clock_id >> 31) << 32  # the kernel's clockid_t is a signed 32-bit int
    else:
        getter = getattr(time, "pthread_getcpuclockid", None)
        if getter is not None and thread.ident is not None and thread.ident in sys._current_frames():
            with contextlib.suppress(OSError, OverflowError, ValueError):
                clock_id = getter(thread.ident)
    if clock_id is None:
        return None
    try:
        time.clock_gettime(clock_id)
    except (OSError, OverflowError, ValueError):
        return None
    chosen = clock_id
    return lambda: time.clock_gettime(chosen)


class CallClock:
    """The CPU seconds one call has used: its worker thread's (``own``), plus those of every thread
    ``helpers`` has named at some reading (the threads running work the call handed over).

    A helper's seconds count from the call's start: every other thread's clock is read when the
    clock is made (a pool thread that existed before the call), and a thread started since counts
    from zero. A helper that ended keeps its last reading, so the total never goes back.
    """

    def __init__(self, own: Callable[[], float], helpers: Callable[[], Iterable[threading.Thread]],
                 skip: Collection[int | None]) -> None:
        self._own = own
        self._helpers = helpers
        self._base: dict[int, float] = {}
        #: ident → [its clock, its reading at the call's start, its last reading]
        self._seen: dict[int, tuple[Callable[[], float], float, list[float]]] = {}
        self._looked = False
        for thread in threading.enumerate():
            if thread.ident is not None and thread.ident not in skip:
                clock = thread_cpu_clock(thread)
                if clock is not None:
                    self._base[thread.ident] = clock()

    def __call__(self) -> float:
        if self._looked:  # the first reading is the call's start: nothing handed over yet
            for thread in self._helpers():
                if thread.ident is not None and thread.ident not in self._seen:
                    clock = thread_cpu_clock(thread)
                    if clock is not None:
                        start = self._base.get(thread.ident, 0.0)
                        self._seen[thread.ident] = (clock, start, [start])
        self._looked = True
        total = self._own()
        for clock, start, last in self._seen.values():
            with contextlib.suppress(OSError):  # it ended: its last reading stands
                last[0] = clock()
            total += max(0.0, last[0] - start)
        return total


def await_call(finished: threading.Lock, budget: float, cpu: Callable[[], float] | None) -> bool:
    """Wait for ``finished`` within ``budget`` (see the module docstring); True when it was released.

    ``cpu`` is the worker thread's CPU clock, read once before the call was handed over (``start``
    below is its first reading).
    """
    budget = max(budget, 0.0)
    start = cpu() if cpu is not None else 0.0
    if finished.acquire(timeout=budget):
        return True
    if cpu is None or budget <= 0.0:
        return False
    waited, last, stretch, busy = budget, start, budget, BUSY_SHARE * budget
    while waited < budget * LOAD_FACTOR:
        now = cpu()
        if now - start >= busy or now - last < IDLE_SHARE * stretch:
            return False
        busy = budget
        stretch = min(STRETCH_SECONDS, budget * LOAD_FACTOR - waited)
        if finished.acquire(timeout=stretch):
            return True
        waited += stretch
        last = now
    return False
