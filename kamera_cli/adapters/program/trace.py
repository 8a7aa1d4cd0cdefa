"""What each thread of a program did between two scheduling points: the segments of its trace.

Why: two orders of a program's threads that differ only by swapping stretches touching no common
synchronisation object leave the program in the same state (docs/semantics.md, "Thread
interleavings: a position as a trace"), yet their input logs differ. To see that, each step records,
for every stretch a green thread ran without the scheduler (a **segment**: from the scheduler's
switch into the thread to the thread's return to it), which thread it was, where in the log its
inputs end, and the synchronisation objects it touched: the locks (and so the conditions, events,
semaphores and queues built on them) the program's own code created, the threads it started, joined
or asked about, the watches it opened or read. ``sim/traces.py`` turns the segments into the
trace's normal form.

Objects are named by who created them and how many that creator had made before (``worker/3``),
never by ``id()`` or a global counter: a replay is a fresh set of objects, and a thread's creations
are the same in every process and under any order of the other threads. A lock a library created
for itself is not named: logging's guard only output (never read back by the program); any other
library's lock that a program's thread touches makes the log's order count again (``untraced``),
since what it guards may be shared by the threads.
"""

from __future__ import annotations

import logging
import os
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.adapters.sandbox.modules import module_state

__all__ = ["Recorder", "Segment", "StepTrace", "module_state"]

#: the standard library's logging package: its handlers' and module's locks guard only output
_LOGGING_DIR = os.path.dirname(os.path.abspath(logging.__file__ or "")) + os.sep


@dataclass(frozen=True, slots=True)
class Segment:
    """One stretch a thread ran alone: its thread's label, the index (in the step's new entries) where
    its inputs end — they start where the previous segment's end —, and the objects it touched."""

    thread: str
    end: int
    sync: frozenset[str]


@dataclass(frozen=True, slots=True)
class StepTrace:
    """What one step's live part was made of; ``untraced`` says why the log's order must be kept."""

    segments: tuple[Segment, ...]
    untraced: str = ""


@dataclass
class Recorder:
    """Collects a step's segments. ``done``: the segments run so far (a replay runs the logged ones
    again, and only those after ``recorded`` are new); ``start``: the log's length when the step's
    live part began."""

    recorded: int = 0
    start: int = 0
    done: int = 0
    created: dict[str, int] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    untraced: str = ""
    #: the program's locks held now, and by which thread
    holders: dict[str, str] = field(default_factory=dict)
    #: the program's own modules, as imported for this run (``factory.py`` sets it)
    modules: Callable[[], Iterable[types.ModuleType]] = tuple
    _open: str | None = None
    _sync: set[str] = field(default_factory=set)
    _before: dict[str, Any] | None = None

    def new_step(self, log_length: int) -> None:
        """A suspended program resumes: everything it ran so far is logged."""
        self.recorded, self.start, self.segments, self.untraced = self.done, log_length, [], ""

    def name(self, creator: str) -> str:
        """A fresh object's name: its creator's label and how many that creator named before."""
        n = self.created.get(creator, 0)
        self.created[creator] = n + 1
        return f"{creator}/{n}"

    def begin(self, thread: str, shared: bool) -> None:
        """``thread`` runs; ``shared``: another thread is alive, so what it changes at module level could
        be seen by another (watched while the segment is new)."""
        self._open = thread
        self._sync = set()
        self._before = module_state(self.modules()) if shared and self.live() else None

    def touch(self, key: str) -> None:
        if self._open is not None:
            self._sync.add(key)

    def foreign(self, where: str) -> None:
        """A lock a library created was touched by a thread: what it guards may be shared."""
        if self._open is not None and not self.untraced and self.done >= self.recorded:
            self.untraced = f"a lock created by {where} is shared by the program's threads"

    def end(self, log_length: int) -> None:
        self._lock_free()
        self._before = None
        thread, self._open = self._open, None
        if thread is None:
            return
        if self.done >= self.recorded:
            self.segments.append(Segment(thread, log_length - self.start, frozenset(self._sync)))
        self.done += 1

    def step(self) -> StepTrace:
        return StepTrace(tuple(self.segments), self.untraced)

    def live(self) -> bool:
        """Whether the segment running now is new (a replay runs the logged ones again)."""
        return self.done >= self.recorded

    def holding(self, name: str, delta: int) -> None:
        """The running thread took (+1) or gave back (-1) a lock of the program's that guards something
        (not a ``Condition``'s private waiter): what it changed at module level since the last such
        point was changed under the locks it held then."""
        if self._open is None:
            return
        self._lock_free()
        if delta > 0:
            self.holders[name] = self._open
        else:
            self.holders.pop(name, None)  # a plain lock may be released by another thread

    def _lock_free(self) -> None:
        """The most common way to break the assumption the trace rests on: a thread changing a
        module-level value while it holds no lock and another thread is alive. The log's order counts
        again from there (``untraced``)."""
        if self._before is None:
            return
        after = module_state(self.modules())
        before, self._before = self._before, after
        if self.untraced or self._open in self.holders.values():
            return
        changed = sorted(name for name in {*before, *after} if before.get(name) != after.get(name))
        if changed:
            self.untraced = (f"thread {self._open} changed the module-level {changed[0]} with no lock held while "
                             "another thread was alive")

    @staticmethod
    def ignored(file: str) -> bool:
        """A library lock whose order no program can observe (logging's)."""
        return file.startswith(_LOGGING_DIR)
