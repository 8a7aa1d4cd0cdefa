"""Coroutines inside a step: a fresh event loop whose time is the step's virtual clock.

Why a loop of our own: ``async def`` reconciles, kopf's processing and kubernetes_asyncio all await
timers (``asyncio.sleep``, backoffs, timeouts).  Inside a step the clock is virtual — ``time.monotonic``
is the sandbox's, so ``loop.time()`` is too — and it only moves when someone moves it; a plain loop
would wait for a timer that never comes due.  This loop jumps the virtual clock to its next timer
whenever nothing else is ready, so ``await asyncio.sleep(30)`` costs no wall-clock time, advances
what ``time.time()`` and ``datetime.now()`` return inside the step, and keeps the run deterministic.
Each step gets a fresh loop, closed (with its default executor) when the step ends.  The loop is
``kamera_cli.virtualtime``'s, waiting by moving the step's clock (``advance_active_clock``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from kamera_cli.adapters.sandbox.fence import advance_active_clock
from kamera_cli.virtualtime import VirtualTimeLoop

__all__ = ["run_async"]

T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh virtual-time loop; cancel whatever it left running."""
    loop = VirtualTimeLoop(advance_active_clock)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    finally:
        with contextlib.suppress(Exception):
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        try:
            asyncio.set_event_loop(None)
        finally:
            loop.close()  # even when a stop (kamera's, for an overrunning step) lands just before it
