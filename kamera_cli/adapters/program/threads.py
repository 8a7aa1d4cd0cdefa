"""The threads of a program, run as green threads that kamera schedules (docs/controllers.md, "Threads").

Why: a real Python controller is often a watch thread that fills a ``queue.Queue`` and worker
threads that take keys from it and reconcile; its bugs live in how these threads interleave.  With
the ``programs`` extra (greenlet), ``main()`` and every thread it starts run as greenlets on the
sandbox's worker thread, so they share its budget, virtual clock, output capture and crash
injection, and only one runs at a time.  A thread runs until a **scheduling point**:

* before each request to the API server, and before each blocking acquire of a lock the program's
  own code created (``threading.Lock``/``RLock`` called from a file of the scenario's, not from a
  library: the locks a library guards its own bookkeeping with block, but do not preempt);
* when it blocks: a lock held by another thread (queues, events, conditions and semaphores block
  on locks), ``Thread.join``, or a point kamera controls — the next event of a watch, ``time.sleep``,
  a wait with a timeout;
* when it ends.

At a scheduling point the **candidates** are the runnable threads and the parked threads that
kamera can wake now (a watch with an event to deliver, a sleep or timeout that is due).  One
candidate runs on; with several, which one runs is an **explored choice**: the step ends with a
``yield`` entry naming them, and each successor's step starts with a ``pick`` of one of them (the
explorer's branch).  A step therefore hands the program one input — a pick, or the one wake-up
there is — and runs until the next choice or until every thread waits.  Every scheduling point
where more than one thread exists leaves an entry in the log (``run`` when nothing was to choose),
so a replay meets the same points in the same order and needs no access to the cluster to know
which one a logged choice belongs to.

Between scheduling points a thread runs alone: shared Python objects that threads change without
a lock are not interleaved (see docs/controllers.md for what this leaves out).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kamera_cli.adapters.program.session import Entry, ProgramParked
from kamera_cli.adapters.program.trace import Recorder

if TYPE_CHECKING:
    from kamera_cli.adapters.program.session import Session

__all__ = ["KAMERA_DIR", "THREAD_TABLE", "GreenThread", "ProgramDeadlocked", "Threads", "thread_key", "user_location"]

#: the trace's name for the program's table of threads (their order, their default names' count)
THREAD_TABLE = "threads"

RUNNABLE, BLOCKED, PARKED, DONE = "runnable", "blocked", "parked", "done"

KAMERA_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


class ProgramDeadlocked(Exception):
    """Every thread of a program waits on something only another of its threads could give, and none
    waits on anything kamera controls (a watch, a sleep, a timeout): nothing would ever wake them."""

    controller_fault = True


@dataclass(eq=False)
class GreenThread:
    """One thread of a program: its greenlet and what it waits on."""

    label: str
    #: the ``threading.Thread`` it runs (the program's main thread has a stand-in of its own)
    thread: Any
    daemon: bool
    owner: Threads
    greenlet: Any = None
    state: str = RUNNABLE
    #: what it waits on, for messages ("Queue.get", "its watch of /api/v1/configmaps")
    where: str = ""
    #: a point kamera controls: ("watch", index), ("sleep", seconds, wake_at) or ("timeout", wake_at)
    point: tuple[Any, ...] | None = None
    #: what its wake-up handed it: the input entry, or "signal" for a wait a release ended
    given: Any = None
    joiners: list[GreenThread] = field(default_factory=list)
    #: it has not run yet: its first segment follows the one that started it (``trace.py``)
    fresh: bool = True


def thread_key(gt: GreenThread) -> str:
    """The trace's name for a thread (its start, its end, a join or ``is_alive`` on it)."""
    return "thread:" + gt.label


def user_location(frame: Any) -> str:
    """Where the innermost frame of the program's own code (or a library's) is, with what it called:
    ``"Queue.get at worker.py:14 (key = work.get())"``."""
    stack = traceback.extract_stack(frame) if frame is not None else []
    codes: list[Any] = []
    f = frame
    while f is not None:
        codes.append(f.f_code)
        f = f.f_back
    codes.reverse()
    for i in range(len(stack) - 1, -1, -1):
        name = stack[i].filename
        if name.startswith(KAMERA_DIR) or os.path.abspath(name).startswith(_STDLIB_DIR):
            continue
        called = getattr(codes[i + 1], "co_qualname", codes[i + 1].co_name) if i + 1 < len(codes) else ""
        line = f" ({stack[i].line})" if stack[i].line else ""
        called = called.replace("GreenRLock.", "RLock.").replace("GreenLock.", "Lock.")
        return f"{called} at {os.path.basename(name)}:{stack[i].lineno}{line}".lstrip()
    return "an unknown place"


class Threads:
    """A program's green threads and their scheduler (the loop runs in the step's own greenlet)."""

    def __init__(self, session: Session, greenlet_module: Any, roots: tuple[str, ...] = ()) -> None:
        self.session = session
        #: the program's own source folders: the locks its code creates are scheduling points
        self.roots = roots
        self._gl = greenlet_module
        self.threads: list[GreenThread] = []
        self.hub: Any = greenlet_module.getcurrent()
        self.killing = False
        self._names = 0
        self.main: GreenThread | None = None
        #: the segments each thread runs and what they touch (``trace.py``)
        self.trace = Recorder()

    # -- threads ----------------------------------------------------------------------------------------------
    def new_name(self) -> int:
        """The next default thread number (``Thread-N``), counted per program so names replay."""
        self._names += 1
        return self._names

    def start_main(self, target: Callable[[], Any], thread: Any) -> None:
        self.main = self._add(thread, lambda gt: self._main_body(gt, target), daemon=False)

    def spawn(self, thread: Any) -> GreenThread:
        """``Thread.start()`` in a program: a runnable green thread (it runs at a scheduling point)."""
        return self._add(thread, self._thread_body, daemon=bool(thread.daemon))

    def _add(self, thread: Any, body: Callable[[GreenThread], Any], *, daemon: bool) -> GreenThread:
        name = str(thread.name)
        label = name if all(t.label != name for t in self.threads) else f"{name} #{len(self.threads) + 1}"
        gt = GreenThread(label, thread, daemon, self)
        gt.greenlet = self._gl.greenlet(lambda: body(gt), parent=self.hub)
        thread._kamera_thread = gt
        self.threads.append(gt)
        return gt

    def _main_body(self, gt: GreenThread, target: Callable[[], Any]) -> None:
        try:
            target()
        finally:
            self._finish(gt)

    def _thread_body(self, gt: GreenThread) -> None:
        """As CPython's ``Thread._bootstrap_inner``: an exception is handed to ``threading.excepthook``
        (which prints it) and ends the thread; ``SystemExit`` ends it silently."""
        import threading

        try:
            gt.thread.run()
        except SystemExit:
            pass
        except Exception:
            if self.killing:  # unwound by kamera where it waited (a lock it never got is released, say)
                return
            exc_type, exc, tb = sys.exc_info()
            threading.excepthook(threading.ExceptHookArgs([exc_type, exc, tb, gt.thread]))
        finally:
            self._finish(gt)

    def _finish(self, gt: GreenThread) -> None:
        self.trace.touch(thread_key(gt))
        gt.state = DONE
        gt.point = None
        for joiner in gt.joiners:
            self.wake(joiner)
        gt.joiners.clear()

    def current(self) -> GreenThread | None:
        g = self._gl.getcurrent()
        return next((t for t in self.threads if t.greenlet is g), None)

    # -- what a thread does at a scheduling point ------------------------------------------------------------------
    def preempt(self, what: str) -> None:
        """A scheduling point in a running thread, before ``what`` it is about to do: it stays runnable,
        and another may run first."""
        me = self.current()
        if me is None or self.killing or len(self.threads) < 2:
            return
        if all(t is me or t.state in (DONE, BLOCKED) for t in self.threads):
            return  # no other thread could run: nothing to choose, nothing to log
        me.where = what
        self._to_hub()
        me.where = ""

    def block(self, where: str, timeout: float | None = None) -> bool:
        """The running thread waits until ``wake`` (True) or, with a timeout, until it is due (False).

        The clock is the session's: a thread suspended across steps wakes under the new step's clock."""
        me = self.current()
        if me is None or self.killing:
            raise ProgramParked()
        me.where = where
        me.given = None
        if timeout is None:
            me.state = BLOCKED
        else:
            me.state, me.point = PARKED, ("timeout", self.session.clock.now + timeout)
        self._to_hub()
        if isinstance(me.given, Entry):  # timed out: the clock is where the wait ended
            self.session.clock.now = max(self.session.clock.now, me.given.clock)
        return bool(me.given == "signal")

    def park(self, point: tuple[Any, ...], where: str) -> Entry:
        """The running thread waits at a point kamera controls; returns the input its wake-up logged."""
        me = self.current()
        assert me is not None
        me.state, me.point, me.where, me.given = PARKED, point, where, None
        self._to_hub()
        assert isinstance(me.given, Entry)
        return me.given

    def wake(self, gt: GreenThread) -> None:
        """A release, a set event or an ended thread lets ``gt`` run (not a wait kamera controls)."""
        if gt.state == BLOCKED or (gt.state == PARKED and gt.point is not None and gt.point[0] == "timeout"):
            gt.state, gt.point, gt.given, gt.where = RUNNABLE, None, "signal", ""

    def _to_hub(self) -> None:
        # an async main's event loop is "running" on this OS thread while it is suspended: other steps
        # run their own loops meanwhile, so it stops being the running loop until it is resumed
        loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        try:
            self.hub.switch()
        finally:
            asyncio.events._set_running_loop(loop)
        if self.killing or self.session.killed or self.session.diverged:
            raise ProgramParked()

    # -- the scheduler ---------------------------------------------------------------------------------------------
    def run(self) -> str:
        """Run until the step ends: ``"quiet"`` (every thread waits, no new input is due in this step),
        ``"yield"`` (several threads could go on: the next step's choice) or ``"ended"``; a deadlock
        raises ProgramDeadlocked, and what the main thread raises propagates."""
        self.hub = self._gl.getcurrent()
        for t in self.threads:
            if not t.greenlet.dead:
                t.greenlet.parent = self.hub
        while True:
            if self.main is not None and self.main.state == DONE and all(
                    t.state == DONE or t.daemon for t in self.threads):
                return "ended"  # the interpreter exits: daemon threads stop where they are
            runnable = [t for t in self.threads if t.state == RUNNABLE]
            parked = [t for t in self.threads if t.state == PARKED]
            if not runnable and not parked:
                raise ProgramDeadlocked(self._deadlock_text())
            if len(runnable) + len(parked) == 1 and runnable:
                chosen: GreenThread | None = runnable[0]  # the only thread: no choice, nothing logged
            else:
                chosen = self.session.schedule(runnable, parked)
            if chosen is None:
                return "yield" if self.session.yielded else "quiet"
            if chosen.state == PARKED:
                continue  # woken with nothing to deliver after all: it waits on
            self.trace.begin(chosen.label, any(t is not chosen and t.state != DONE for t in self.threads))
            if chosen.fresh:
                chosen.fresh = False
                self.trace.touch(thread_key(chosen))
            try:
                chosen.greenlet.switch()
            finally:
                self.trace.end(len(self.session.log))

    def wakeable(self, parked: list[GreenThread]) -> list[GreenThread]:
        """The parked threads kamera could wake now: a watch with an event, a sleep or timeout due."""
        session = self.session
        out = []
        for t in parked:
            assert t.point is not None
            if t.point[0] == "watch":
                if session.watches[t.point[1]].pending(session.live):
                    out.append(t)
            elif t.point[-1] <= session.step_clock:
                out.append(t)
        return out

    def timers(self, parked: list[GreenThread]) -> list[GreenThread]:
        """The parked threads whose sleep or timeout ends first (a step with nothing else to do wakes them)."""
        timed = [t for t in parked if t.point is not None and t.point[0] != "watch"]
        if not timed:
            return []
        first = min(t.point[-1] for t in timed if t.point is not None)
        return [t for t in timed if t.point is not None and t.point[-1] == first]

    def input_for(self, gt: GreenThread) -> Entry:
        """The input a parked thread's wake-up hands it now (live), logged by the caller."""
        session = self.session
        assert gt.point is not None
        session.clock.now = max(session.clock.now, session.step_clock)
        if gt.point[0] == "watch":
            events = session.watches[gt.point[1]].pending(session.live)
            return Entry("event", str(gt.point[1]), session.clock.now, body=events[0] if events else b"")
        wake = max(gt.point[-1], session.step_clock)
        if gt.point[0] == "sleep":
            return Entry("sleep", repr(float(gt.point[1])), wake)
        return Entry("timeout", gt.label, wake)

    def hand(self, gt: GreenThread, entry: Entry) -> None:
        """Give a parked thread its input: it runs on (an empty event: nothing after all, it waits on)."""
        if entry.kind == "event":
            if not entry.body:
                return
            self.session.watches[int(entry.key)].deliver(entry.body)
        gt.state, gt.point, gt.given, gt.where = RUNNABLE, None, entry, ""

    @staticmethod
    def labels(threads: list[GreenThread]) -> str:
        return json.dumps([t.label for t in threads])

    # -- ending ------------------------------------------------------------------------------------------------
    def _deadlock_text(self) -> str:
        waits = [f"{t.label} waits in {user_location(t.greenlet.gr_frame)}" for t in self.threads if t.state == BLOCKED]
        whom = "its threads wait" if len(waits) > 1 else "its only thread waits"
        return (f"deadlock: {'; '.join(waits)}; {whom} for what no thread will give, and nothing kamera controls "
                "(a watch, a sleep, a timeout) can wake them")

    def describe(self) -> str:
        """Where the threads wait, for the step's story line."""
        if len(self.threads) == 1:
            return self.threads[0].where if self.threads[0].state == PARKED else ""
        parts = [f"{t.label} {t.where}" if t.point is not None and t.point[0] in ("watch", "sleep") else
                 f"{t.label} waits in {user_location(t.greenlet.gr_frame).split(' at ')[0]}"
                 for t in self.threads if t.state in (PARKED, BLOCKED)]
        runnable = [f"{t.label} (before {t.where})" if t.where else t.label
                    for t in self.threads if t.state == RUNNABLE]
        if runnable:
            parts.insert(0, "runnable: " + ", ".join(runnable))
        return "; ".join(parts)

    def kill(self) -> None:
        """Unwind every thread where it waits (their ``finally`` blocks run; the session refuses every
        request meanwhile), so that no greenlet outlives its program or is collected elsewhere."""
        self.killing = True
        self.session.killed = True
        here = self._gl.getcurrent()
        for t in self.threads:
            if t.greenlet.dead:
                continue
            t.greenlet.parent = here
            try:
                t.greenlet.throw(ProgramParked())
            except (ProgramParked, Exception):
                pass
            except self._gl.GreenletExit:
                pass
