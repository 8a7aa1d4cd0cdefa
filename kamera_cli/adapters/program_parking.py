"""The fast path of program steps: programs suspended at their blocking points, by input-log digest.

Why: a program step replays the program's whole input log (``program_session``), so an execution of
n steps costs O(n²) replayed inputs.  When the explorer extends a log it has just produced — the
usual case: the next program step along the same execution — the program that produced it can
simply go on.  With greenlet installed, ``main()`` runs in a greenlet on the sandbox's worker thread;
at a blocking point it switches back to the step instead of unwinding, and is kept here under the
digest of the log it has consumed.  A later step from a state with that digest takes it (once: a
resumed program is consumed), and any other step replays as before, so results never depend on what
is cached.  Everything stays on one thread, so the sandbox's budget, virtual clock, output capture
and crash injection reach the program exactly as during a replay.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from kamera_cli.adapters.program_session import ProgramParked, Session

_greenlet: Any
try:  # optional: kamera-cli[programs]; without it every program step replays
    _greenlet = importlib.import_module("greenlet")
except ImportError:  # pragma: no cover - exercised where greenlet is missing
    _greenlet = None

__all__ = ["Parking", "available"]

#: how many suspended programs one program controller keeps (each holds a Python stack)
LIMIT = 16
#: tests and benchmarks turn the fast path off to compare with pure replay
ENABLED = True

_PARKED = object()


def available() -> bool:
    return ENABLED and _greenlet is not None


class Parking:
    """Suspended programs of one controller: digest -> (greenlet, its session, its thread)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[Any, Session, int]] = OrderedDict()

    def take(self, digest: str) -> tuple[Any, Session] | None:
        """The program suspended at ``digest``, if one is kept for this thread (it is removed)."""
        found = self._kept.pop(digest, None)
        if found is None:
            return None
        g, session, thread = found
        if thread != threading.get_ident() or g.dead:
            return None  # the worker thread was replaced (a timeout): it cannot be resumed
        return g, session

    def start(self, target: Callable[[], Any], session: Session) -> Any:
        """A greenlet that will run ``target`` with ``session`` suspending it at blocking points."""
        assert _greenlet is not None
        g = _greenlet.greenlet(target)
        session.pause = lambda: g.parent.switch(_PARKED)
        return g

    @staticmethod
    def resume(g: Any) -> bool:
        """Run the program until it is suspended (False) or ``main()`` returned (True); what it raises
        (an error, a crash the simulator injected, the budget) propagates to the caller."""
        return g.switch() is not _PARKED

    def keep(self, digest: str, g: Any, session: Session, containment: Any) -> None:
        old = self._kept.pop(digest, None)
        if old is not None:
            self._kill(old, containment)
        self._kept[digest] = (g, session, threading.get_ident())
        while len(self._kept) > LIMIT:
            self._kill(self._kept.popitem(last=False)[1], containment)

    def clear(self, containment: Any) -> None:
        """End every suspended program this thread can reach (the scenario is over)."""
        while self._kept:
            self._kill(self._kept.popitem(last=False)[1], containment)

    def __bool__(self) -> bool:
        return bool(self._kept)

    @staticmethod
    def _kill(entry: tuple[Any, Session, int], containment: Any) -> None:
        """Unwind a suspended program where it waits, its session refusing everything (its ``finally``
        blocks reach nothing), with the transport bound to that session meanwhile."""
        g, session, thread = entry
        if g.dead or thread != threading.get_ident():
            return
        session.killed = True
        previous = containment.server
        containment.bind(session)
        try:
            with contextlib.suppress(ProgramParked, Exception):
                g.switch()
        finally:
            containment.bind(previous)
