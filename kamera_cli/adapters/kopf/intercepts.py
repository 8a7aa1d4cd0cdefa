"""Where kopf would wait or spawn inside an event step, and what a step does instead.

Why: a step is one event processed to its end. kopf's processing sleeps out a handler's backoff and
spawns a task per timer and daemon; inside a step the first would stop the search's clock at the
wrong place, the second would run a first tick at an arbitrary point. Both are swapped for the
duration of one ``process_resource_event`` call, and restored after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["no_spawning", "retries_instead_of_sleeps"]


@contextlib.contextmanager
def no_spawning() -> Iterator[None]:
    """Timers and daemons are controllers of their own (``kopf_spawning``): an event step does not start them.

    kopf would spawn a task per timer and daemon here; inside one step such a task would run a
    first tick at an arbitrary point and be cancelled at the step's end.
    """
    from kopf._core.engines import daemons

    real = daemons.spawn_daemons

    async def spawn(**_: Any) -> list[float]:
        return []

    daemons.spawn_daemons = spawn  # type: ignore[assignment, unused-ignore]
    try:
        yield
    finally:
        daemons.spawn_daemons = real  # type: ignore[assignment, unused-ignore]


@contextlib.contextmanager
def retries_instead_of_sleeps() -> Iterator[list[float]]:
    """kopf sleeps out a delayed handler's backoff: end the step and record the delay instead.

    When the step also patched the object (the handler's first failure stores its ``delayed``
    instant), kopf skips the sleep — the patch's own event wakes the object, and the processing of
    that event sleeps the rest of the backoff. The delay is recorded then too: the step's retry is
    due at the instant kopf stored, and the simulator keeps that instant with the object's pending
    event (``PendingItem.retry_due``), since the fingerprint holds the stored instant but not the clock.
    """
    from kopf._cogs.aiokits import aiotime
    from kopf._core.actions import application

    delays: list[float] = []
    real: Callable[..., Any] = aiotime.sleep
    real_apply: Callable[..., Any] = application.apply

    async def apply(**kwargs: Any) -> Any:
        waits = [float(d) for d in kwargs.get("delays") or () if d is not None]
        if kwargs.get("patch") and waits and min(waits) > 0:
            delays.append(min(waits))
        return await real_apply(**kwargs)

    async def sleep(delay: float | list[float], wakeup: Any = None) -> float | None:
        value = min(delay) if isinstance(delay, list) else delay
        if value and value > 0:
            delays.append(float(value))
            return float(value)  # "unslept": kopf then writes no touch-patch; kamera delivers the retry
        return None

    aiotime.sleep = sleep  # type: ignore[assignment, unused-ignore]
    application.apply = apply  # type: ignore[assignment, unused-ignore]
    try:
        yield delays
    finally:
        aiotime.sleep = real  # type: ignore[assignment, unused-ignore]
        application.apply = real_apply  # type: ignore[assignment, unused-ignore]
