"""The fast path of program steps: programs suspended where their step ended, by input-log digest.

Why: a program step replays the program's whole input log (``program_session``), so an execution of
n steps costs O(n²) replayed inputs.  When the explorer extends a log it has just produced — the
usual case: the next program step along the same execution — the program that produced it can
simply go on.  With greenlet installed, ``main()`` and the threads it starts run as greenlets on the
sandbox's worker thread (``program_threads``); where a step ends they are left suspended and kept
here under the digest of the log they consumed.  A later step from a state with that digest takes
them (once: a resumed program is consumed), and any other step replays as before, so results never
depend on what is cached.  Everything stays on one OS thread, so the sandbox's budget, virtual
clock, output capture and crash injection reach the program exactly as during a replay.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from typing import Any

from kamera_cli.adapters.program import primitives as program_primitives
from kamera_cli.adapters.program.session import Session
from kamera_cli.adapters.program.threads import Threads

_greenlet: Any
try:  # optional: kamera-cli[programs]; without it every program step replays, on one thread
    _greenlet = importlib.import_module("greenlet")
except ImportError:  # pragma: no cover - exercised where greenlet is missing
    _greenlet = None

__all__ = ["Parking", "available", "greenlets"]

#: how many suspended programs one program controller keeps (each holds Python stacks)
LIMIT = 64
#: tests and benchmarks turn the fast path off to compare with pure replay
ENABLED = True


def greenlets() -> Any:
    """The greenlet module, or None: programs then run on one thread, and their threads are not scheduled."""
    return _greenlet


def available() -> bool:
    """Whether suspended programs are kept (the fast path)."""
    return ENABLED and _greenlet is not None


class Parking:
    """Suspended programs of one controller: digest -> (their threads, their session, the OS thread)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[Threads, Session, int]] = OrderedDict()

    def take(self, digest: str) -> tuple[Threads, Session] | None:
        """The program suspended at ``digest``, if one is kept for this OS thread (it is removed)."""
        found = self._kept.pop(digest, None)
        if found is None:
            return None
        threads, session, thread = found
        if thread != threading.get_ident():
            return None  # the worker thread was replaced (a timeout): its greenlets cannot be resumed
        return threads, session

    def keep(self, digest: str, threads: Threads, session: Session, containment: Any) -> None:
        old = self._kept.pop(digest, None)
        if old is not None:
            self._kill(old, containment)
        self._kept[digest] = (threads, session, threading.get_ident())
        while len(self._kept) > LIMIT:
            self._kill(self._kept.popitem(last=False)[1], containment)

    def clear(self, containment: Any) -> None:
        """End every suspended program this thread can reach (the scenario is over)."""
        while self._kept:
            self._kill(self._kept.popitem(last=False)[1], containment)

    def __contains__(self, digest: str) -> bool:
        return digest in self._kept

    def __bool__(self) -> bool:
        return bool(self._kept)

    @staticmethod
    def _kill(entry: tuple[Threads, Session, int], containment: Any) -> None:
        """Unwind a suspended program's threads where they wait, its session refusing everything (their
        ``finally`` blocks reach nothing), with the transport bound to that session meanwhile."""
        threads, session, thread = entry
        if thread != threading.get_ident():
            return
        session.killed = True
        previous = containment.server
        containment.bind(session)
        try:
            with program_primitives.installed(threads):
                threads.kill()
        finally:
            containment.bind(previous)
