"""Which of kopf's own reads of the clock can change what a step does.

Why a list of files: a step that reads the clock is keyed by the instant it ran at (its memo entry
and its footprint's window), which keeps steps at different instants apart. Most of kopf's reads are
bookkeeping (asyncio's loop, log records, credentials' expiry, event posting) whose values never reach
what the step writes; naming those files lets ``KopfOperator.clock_blind`` and the timers' ``clock_blind``
say "this step's outcome does not depend on the instant" when every reader is one of them.
"""

from __future__ import annotations

__all__ = ["EVENT_ONLY", "PROGRESSION", "blind_readers"]

#: readers of the clock that never change what a kopf step does (``KopfOperator.clock_blind``)
_CLOCK_BLIND = ("/asyncio/", "kamera_cli/virtualtime/", "/logging/__init__.py", "kopf/_cogs/structs/credentials.py",
                "kopf/_cogs/clients/events.py")


#: readers of the clock in an event step whose reads go nowhere (``KopfOperator.clock_blind``)
EVENT_ONLY = ("kopf/_core/engines/daemons.py", "kopf/_core/reactor/processing.py")

#: kopf's handler progression: compares stored instants with the clock, or makes new ones from it
#: (``KopfOperator.steady_for``)
PROGRESSION = ("kopf/_core/actions/progression.py", "kopf/_core/actions/execution.py")


def blind_readers(readers: frozenset[str], also: tuple[str, ...] = ()) -> bool:
    """Whether every file in ``readers`` is one whose reads of the clock cannot change what a kopf step
    does (``_CLOCK_BLIND``, or ``also``)."""
    return all(any(part in path for part in (*_CLOCK_BLIND, *also)) for path in readers)
