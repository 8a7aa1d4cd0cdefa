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

Where the platform has no per-thread CPU clock, the wall budget alone decides (as before).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["BUSY_SHARE", "IDLE_SHARE", "LOAD_FACTOR", "STRETCH_SECONDS", "await_call", "thread_cpu_clock"]

#: the most wall time a call computing under load is given, as a multiple of its budget
LOAD_FACTOR = 5.0
#: how long each look after the budget waits
STRETCH_SECONDS = 0.5
#: at the end of the budget, a thread that had this share of it on the CPU was not kept from it
BUSY_SHARE = 0.8
#: below this share of a stretch's wall time spent on the CPU, the thread counts as waiting
IDLE_SHARE = 0.02


def thread_cpu_clock(thread: threading.Thread) -> Callable[[], float] | None:
    """The thread's CPU seconds as a callable, or None where the platform cannot read them."""
    ident = thread.ident
    getter = getattr(time, "pthread_getcpuclockid", None)
    if ident is None or getter is None:
        return None
    try:
        clock_id = getter(ident)
        time.clock_gettime(clock_id)
    except (OSError, OverflowError, ValueError):
        return None
    return lambda: time.clock_gettime(clock_id)


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
