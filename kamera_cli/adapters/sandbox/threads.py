"""Threads a reconcile starts: recorded with their start site, their API calls refused, quiesced at the step's end.

Why: kamera runs a reconcile as one step on its worker thread and explores the order of steps, never
the order in which the OS schedules threads.  A thread the reconcile starts runs on its own clock:
whether its API call lands while the reconcile still runs, after it returned, or in another
controller's step is the scheduler's choice, so applying the call would make what kamera explores
depend on timing, and dropping it silently would hide a bug.  The rule, which is deterministic
whatever the scheduler does (docs/controllers.md, "Threads a reconcile starts"):

* while a reconcile (or a watch mapper) runs, every ``threading.Thread`` its code starts — directly,
  or through the standard library's ``Timer``, executors, ``asyncio.to_thread`` — is recorded with
  its start site, the stack down to the scenario's frame that called ``start()``.  Threads an
  installed library starts on its own behalf (kopf's executor, kr8s's loop) are not recorded; the
  threads a recorded thread starts are;
* a call from a recorded thread while the reconcile is blocked in ``Future.result``/``Thread.join``
  waiting for exactly that thread's work (or a chain of such waits) is the step's own and goes through;
  one made before the reconcile reaches that wait is held until it does (``_waited_for``);
* any other API request (or a request to a service faked by URL) from a recorded thread is refused, at any
  time and whatever step runs then: it raises :class:`ThreadCallRefused` in the thread, nothing
  reaches the simulated cluster, and the attempt is kept on the thread's record (network and process
  attempts too, through the fence);
* when the reconcile returns, kamera waits (``QUIESCE_SECONDS`` of wall-clock time at most, with the
  step's virtual clock still in place, so ``time.sleep`` costs nothing) for the threads it started to
  end; an executor's worker waiting for work counts as ended.  A thread still running after that
  outlived its step: it is a finding, and its next call out raises :class:`ThreadOutlived` (no
  ``except Exception`` catches it), so that it unwinds there.  A thread that tried anything is a
  finding whenever it tried.

A program (``program`` shape) runs its threads as green threads kamera schedules; its ``Thread.start``
stand-in replaces this one for the program's own threads, so none of this applies to them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType

from kamera_cli.adapters.sandbox.modules import is_user_file

__all__ = ["QUIESCE_SECONDS", "StrayThread", "ThreadCallRefused", "ThreadOutlived", "ThreadWatch", "fence_thread",
           "fenced_here", "is_fenced", "note_thread_attempt", "refuse_thread_request", "stop_if_outlived",
           "unfenced_threads", "watching_threads"]

#: how long, in wall-clock seconds, kamera waits at a step's end for the threads it started to end
QUIESCE_SECONDS = 0.25
#: how many of a thread's refused calls are kept (a thread that retries in a loop makes thousands)
_KEPT_ATTEMPTS = 4

#: how often the quiescence looks again at threads it cannot join (an idle executor's workers)
_POLL_SECONDS = 0.005
_POOL_FILE = os.path.join("concurrent", "futures", "thread.py")
#: how many times a thread's stack is read before a reading that is not a stack counts as busy
_STACK_READS = 8
#: the interpreter's switch interval while a thread's stack is read (seconds)
_READ_SWITCH_SECONDS = 1.0
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_KAMERA_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep

_real_start = threading.Thread.start
#: the threads ``threading`` knows by ident (its own ``_active``; read, never written)
_ACTIVE_THREADS: dict[int, threading.Thread] = getattr(threading, "_active", {})
_real_monotonic = time.monotonic
_real_sleep = time.sleep
_THREADING_FILE = os.path.join(_STDLIB_DIR, "threading.py")
_FUTURE_FILE = os.path.join("concurrent", "futures", "_base.py")
#: how many threads a chain of waits may pass through (the step waits for A, which waits for B, ...)
_WAIT_HOPS = 8


class ThreadCallRefused(ConnectionRefusedError):
    """Raised inside a thread a reconcile started when it calls the API: its order is the OS's, not kamera's."""

    #: raised inside kamera's transport on purpose: the controller's doing, not a kamera bug
    controller_fault = True


class ThreadOutlived(BaseException):
    """Raised in a thread that outlived its step at its next call out: kamera's request that it end there."""


class _Record:
    """What kamera knows of one thread user code started (mutable: its attempts accumulate)."""

    __slots__ = ("attempts", "outlived", "shown", "site", "thread", "watch")

    def __init__(self, thread: threading.Thread, site: tuple[traceback.FrameSummary, ...], shown: str,
                 watch: ThreadWatch | None) -> None:
        self.thread = thread
        self.site = site
        #: ``at file:line`` of the start call, relative to the scenario's folder (what the thread is told)
        self.shown = shown
        self.watch: ThreadWatch | None = watch
        self.attempts: list[str] = []
        #: reported as still running at its step's end: its later calls are refused without a record
        self.outlived = False


@dataclass(frozen=True, slots=True)
class StrayThread:
    """A thread of one step that called the API, or outlived the step, as its finding reports it."""

    #: the ``start()`` stack, from the outermost frame to the start call
    site: tuple[traceback.FrameSummary, ...]
    #: the API requests it tried (``POST /api/v1/namespaces/default/configmaps``), first ones only
    attempts: tuple[str, ...]
    #: still running when the step's quiescence ended
    outlived: bool
    #: how long the quiescence waited, in wall-clock seconds
    waited: float = QUIESCE_SECONDS

    def describe(self) -> str:
        where = self.site[-1] if self.site else None
        started = f"a thread started at {where.filename}:{where.lineno}" if where is not None else "a thread"
        parts = []
        if self.attempts:
            parts.append(f"it tried {'; '.join(self.attempts)}")
        if self.outlived:
            parts.append(f"it was still running {self.waited:g} s after the step ended")
        return f"{started}: {', and '.join(parts)}"


class ThreadWatch:
    """The threads one sandboxed call started; see the module docstring for what kamera does with them."""

    def __init__(self, roots: tuple[str, ...], owner: int) -> None:
        self.roots = roots
        #: the OS thread the call runs on: only threads started from it (or from its threads) are recorded
        self.owner = owner
        self.records: list[_Record] = []
        #: set when the step's call returned: a thread's call no longer waits to be the step's own
        self.closing = False

    def start(self, thread: threading.Thread) -> bool:
        """Record ``thread`` if user code on the call's thread starts it.

        The caller of ``start()`` must be the scenario's code, or the standard library's thread machinery
        (an executor, a ``Timer``, ``asyncio.to_thread``) called from it: a thread an installed library
        starts on its own behalf (kr8s's event loop, a client's pool) is the library's design, not the
        controller's, even when the controller's call made the library start it.
        """
        if threading.get_ident() != self.owner:
            return False
        stack = traceback.extract_stack()[:-2]
        caller = len(stack) - 1
        while caller >= 0 and _is_machinery(stack[caller].filename):
            caller -= 1
        if caller < 0 or not is_user_file(stack[caller].filename, self.roots):
            return False
        site = stack[caller]
        base = self.roots[0]
        shown = os.path.relpath(site.filename, base) if site.filename.startswith(base) else site.filename
        self.records.append(_attach(thread, _Record(thread, tuple(stack[: caller + 1]), f"at {shown}:{site.lineno}",
                                                    self)))
        return True

    def quiesce(self, seconds: float) -> tuple[StrayThread, ...]:
        """Wait for the call's threads to end; report those that called the API or still run.

        An executor's worker waiting for its next work item counts as ended (the pool outlives the
        step by design and runs nothing until a later step submits to it).  A thread still running is
        stopped at its next call out (``note_thread_attempt``): a loop left calling would eat the explorer's CPU.
        Not with an asynchronous exception, which lands at any bytecode — in a ``gc`` callback too.
        """
        self.closing = True
        deadline = _real_monotonic() + seconds
        found = []
        alive: dict[int, bool] = {}
        try:
            while True:
                busy = [r.thread for r in self.records if _busy(r.thread)]
                left = deadline - _real_monotonic()
                if not busy or left <= 0:
                    break
                busy[0].join(min(left, _POLL_SECONDS))
            for i, record in enumerate(self.records):
                alive[i] = _busy(record.thread)
                if alive[i] or record.attempts:
                    found.append(StrayThread(record.site, tuple(record.attempts), alive[i], seconds))
        finally:
            # whatever happened above, no thread of this step may act in a later one: one still running is
            # fenced (its next call out, or sleep, stops it), the others' later calls are refused unrecorded
            for i, record in enumerate(self.records):
                record.watch = None
                record.outlived = record.outlived or alive.get(i, record.thread.is_alive())
        return tuple(found)


def _is_machinery(file: str) -> bool:
    """The standard library's, or kamera's own (a program's ``Thread.start`` stand-in calls this one's)."""
    return file.startswith(_KAMERA_DIR) or (file.startswith(_STDLIB_DIR) and "-packages" not in file)


def _busy(thread: threading.Thread) -> bool:
    """Alive, and not an executor's worker waiting for work (``concurrent.futures``, asyncio's default).

    Only the thread's innermost frame is read (an idle worker blocks in the queue's C ``get`` called
    from ``_worker``): a running thread's outer frames are never walked, since CPython 3.11 was seen
    handing back a ``str`` as the ``f_back`` of a thread that ran meanwhile (a CI failure in quiescence).
    """
    if not thread.is_alive():
        return False
    frame = sys._current_frames().get(thread.ident or -1)
    if not isinstance(frame, FrameType):
        return thread.is_alive()
    code = frame.f_code
    return not (code.co_filename.endswith(_POOL_FILE) and code.co_name == "_worker")


def _chain(frame: object) -> tuple[FrameType, ...]:
    """``frame`` and the frames it was called from, innermost first, read with no other thread let run
    meanwhile (the walk is short) and re-read when what came back is not a frame; empty if never clean.

    For the stacks of threads blocked in a wait, whose frames only change once they wake.
    """
    for _ in range(_STACK_READS):
        interval = sys.getswitchinterval()
        sys.setswitchinterval(_READ_SWITCH_SECONDS)
        try:
            chain: list[FrameType] = []
            current = frame
            while isinstance(current, FrameType):
                chain.append(current)
                current = current.f_back
            if current is None:
                return tuple(chain)
        finally:
            sys.setswitchinterval(interval)
    return ()


_WATCH: ThreadWatch | None = None


def _quiet_after_step(record: _Record, run: Callable[[], None]) -> Callable[[], None]:
    """The thread's ``run``, silent about what kamera raised in it (a refusal, its request to stop) and
    about anything once its step is over: kamera reports the thread itself, and a traceback printed by
    ``threading.excepthook`` would carry the machine's paths into the step's log, or into kamera's output."""

    def quiet() -> None:
        try:
            run()
        except ThreadCallRefused:
            pass
        except BaseException:
            if record.watch is not None:
                raise

    return quiet


def _record_of(thread: threading.Thread) -> _Record | None:
    record = getattr(thread, "_kamera_stray", None)
    return record if isinstance(record, _Record) else None


def _attach(thread: threading.Thread, record: _Record, *, running: bool = False) -> _Record:
    thread._kamera_stray = record  # type: ignore[attr-defined]
    if not running:  # a thread that runs already keeps the ``run`` it started with
        thread.run = _quiet_after_step(record, thread.run)  # type: ignore[method-assign]
    _OUTSTANDING.append(record)
    return record


def fence_thread(thread: threading.Thread, shown: str) -> None:
    """Treat the running ``thread`` as one that outlived its step: its next call out raises
    :class:`ThreadOutlived`, the threads it starts share its fate, and what it prints or leaves
    unraisable belongs to no step (``is_fenced``).

    For kamera's own worker thread abandoned at its budget (``calls.py``): a call that swallows the
    budget's stop, or is stuck in C code when it is asked to stop, must never reach the simulated
    cluster in whichever later step runs when it wakes.
    """
    record = _Record(thread, (), shown, None)
    record.outlived = True
    _attach(thread, record, running=True)
    if threading.Thread.start is _real_start:
        threading.Thread.start = _start  # type: ignore[method-assign]


def is_fenced(thread: threading.Thread) -> bool:
    """True for a thread whose step is over and which was still running at its end (or was abandoned)."""
    record = _record_of(thread)
    return record is not None and record.outlived


#: records whose thread may still run: while one does, ``Thread.start`` stays patched (a stray
#: thread's own threads are stray too, whenever they are started)
_OUTSTANDING: list[_Record] = []


def unfenced_threads() -> tuple[threading.Thread, ...]:
    """Threads user code started that run on, unfenced, with no step collecting them: none, between steps.

    Every step's end fences what it left running (``ThreadWatch.quiesce``); what is left alive unfenced is
    an executor's worker idle for its next work item.  A thread found here had its step never quiesce, or
    runs outside any step: when it wakes it acts in whichever step runs then (seen in CI: a reconcile's
    thread slept through its test and woke in a later test's program step).  ``tests/conftest.py`` asks
    after every test, so that the test that leaked it fails, not the one it wakes in.
    """
    return tuple(r.thread for r in _OUTSTANDING
                 if not is_fenced(r.thread) and r.thread.is_alive() and (r.watch is not None or _busy(r.thread)))


def _start(self: threading.Thread) -> None:
    parent = _record_of(threading.current_thread())
    if parent is not None:  # started by a stray thread: the same site, the same step, the same fate
        child = _attach(self, _Record(self, parent.site, parent.shown, parent.watch))
        child.outlived = parent.outlived
        if parent.watch is not None:
            parent.watch.records.append(child)
    else:
        watch = _WATCH
        if watch is not None:
            watch.start(self)
    _real_start(self)


@contextlib.contextmanager
def watching_threads(roots: tuple[str, ...], owner: int) -> Iterator[ThreadWatch]:
    """Record the threads user code starts on the OS thread ``owner`` for the duration of the block.

    ``Thread.start`` is patched only where it is the real one: a program's stand-in (``program/primitives.py``)
    may be in place across steps — a program step abandoned at its budget never takes it out — and the
    threads it starts are green threads kamera schedules, never stray ones.  That stand-in hands every
    other thread to what ``Thread.start`` was when it went in: this module's ``_start``.
    """
    global _WATCH
    watch = ThreadWatch(roots, owner)
    _WATCH = watch
    if threading.Thread.start is _real_start:
        threading.Thread.start = _start  # type: ignore[method-assign]
    try:
        yield watch
    finally:
        _WATCH = None
        _OUTSTANDING[:] = [r for r in _OUTSTANDING if r.thread.is_alive()]
        # a program's stand-in, installed inside, restores on its own; a stray thread still alive keeps
        # the patch, so that the threads it starts are refused too (put back by a later call's end)
        if threading.Thread.start is _start and not _OUTSTANDING:
            threading.Thread.start = _real_start  # type: ignore[method-assign]


def note_thread_attempt(what: str) -> str | None:
    """On a recorded thread: keep ``what`` it tried (while its step collects) and say where it was started.

    None on any other thread.  The fence calls it for network and process attempts too, so that a
    thread's attempt is its own step's finding, never that of whichever step runs when it tries.
    """
    record = _record_of(threading.current_thread())
    if record is None:
        return None
    if record.outlived:
        raise ThreadOutlived(f"kamera: {what} refused, and the thread stopped: it outlived the step that started it "
                             f"({record.shown})")
    watch = _WATCH
    if record.watch is None and not record.outlived and watch is not None:
        # an executor's worker the step submitted to (it was idle at its own step's end): this step's
        record.watch = watch
        record.attempts = []
        watch.records.append(record)
    if record.watch is not None and _waited_for(record.watch):
        return None  # the step waits for this very work: the call is the step's own
    if record.watch is not None and len(record.attempts) < _KEPT_ATTEMPTS and what not in record.attempts:
        record.attempts.append(what)
    return record.shown


def stop_if_outlived(what: str) -> None:
    """Raise :class:`ThreadOutlived` on a thread that outlived its step (or was abandoned at the budget).

    For the fence's ``time.sleep``: such a thread must never move the clock of, or be suspended in,
    whichever step runs when it wakes (one used to sleep in a later program's step, which took the
    sleep for its own thread's, parked it and failed the program).
    """
    record = _fenced_record()
    if record is not None:
        raise ThreadOutlived(f"kamera: {what} refused, and the thread stopped: it outlived the step that started "
                             f"it ({record.shown})")


def fenced_here() -> bool:
    """``is_fenced`` of the calling thread (asked at every clock read and random draw of a step)."""
    return _fenced_record() is not None


def _fenced_record() -> _Record | None:
    """The calling thread's record when it is fenced.  Without ``threading.current_thread()``: on a thread
    started below ``threading`` (``_thread.start_new_thread``, a C extension's) that would make a
    ``_DummyThread``, which ``threading.enumerate()`` lists for good once its thread ended (such a thread
    carries no record); and nothing at all while no recorded thread may still run."""
    if not _OUTSTANDING:
        return None
    thread = _ACTIVE_THREADS.get(threading.get_ident())
    record = _record_of(thread) if thread is not None else None
    return record if record is not None and record.outlived else None


def _waited_for(watch: ThreadWatch) -> bool:
    """True once the step's thread waits for the current thread's work; False once it cannot.

    Why wait: the step blocked in ``future.result()`` or ``thread.join()`` for this work runs nothing
    else, so a call made now lands at one place in the step's order, whatever the scheduler does.  A
    call made while the step still runs its own code (between ``submit`` and ``result``), or waits for
    another of its threads, is held until the step waits for this one, so that where it lands never
    depends on who ran first.  Refused as before once the step returned, or when it blocks on anything
    else (an event loop awaiting ``asyncio.to_thread``, an ``Event``, a queue): kamera cannot tell
    what that wait needs, and holding the call could hold the step to its budget.
    """
    me = threading.current_thread()
    while not watch.closing:
        state = _wait_state(watch.owner, me)
        if state != "running":
            return state == "mine"
        _real_sleep(_POLL_SECONDS)
    return False


#: innermost standard-library functions in which a thread is blocked on something (not computing)
_BLOCKING = frozenset({"wait", "select", "poll", "get", "acquire", "sleep", "_wait_for_tstate_lock"})


def _wait_state(owner: int, me: threading.Thread) -> str:
    """``mine`` when the thread ``owner`` waits (directly, or through threads it waits for) for ``me``'s
    work, ``running`` while it computes or waits for another thread that runs, ``blocked`` otherwise."""
    frames = sys._current_frames()
    chain = _waiting_chain(frames.get(owner))
    for _ in range(_WAIT_HOPS):
        waited = _waited_object(chain)
        if waited is None:
            return "blocked" if _blocked(chain) else "running"
        thread = waited if isinstance(waited, threading.Thread) else _running(waited, frames, me)
        if _ended(waited, thread):
            return "running"  # what it waits for is done: it returns at once
        if thread is None:
            running = getattr(waited, "running", None)  # run by a thread that computes: not walked
            return "running" if callable(running) and running() else "blocked"
        if thread is me:
            return "mine"
        chain = _waiting_chain(frames.get(thread.ident or -1))
    return "blocked"


def _waiting_chain(frame: object) -> tuple[FrameType, ...]:
    """A thread's stack when its innermost frame is the standard library's (it may be waiting); empty
    when it runs code of its own (it computes: its stack is not walked while it changes)."""
    if not isinstance(frame, FrameType) or not frame.f_code.co_filename.startswith(_STDLIB_DIR):
        return ()
    return _chain(frame)


#: standard-library functions that wait only for a moment (``Thread.start`` waits for the new thread
#: to run, which may first be the very thread asking)
_PASSING = frozenset({"start", "submit", "_adjust_thread_count", "__enter__", "__exit__"})


def _ended(waited: object, thread: threading.Thread | None) -> bool:
    if isinstance(waited, threading.Thread):
        return not waited.is_alive()
    done = getattr(waited, "done", None)
    return thread is None and callable(done) and bool(done())


def _blocked(chain: tuple[FrameType, ...]) -> bool:
    """In a blocking wait of the standard library (not one that returns as soon as it started a thread)."""
    names = [f.f_code.co_name for f in _stdlib_frames(chain)]
    return not _PASSING.intersection(names) and bool(_BLOCKING.intersection(names))


def _stdlib_frames(chain: tuple[FrameType, ...]) -> list[FrameType]:
    """The innermost run of the standard library's frames (what the thread is blocked in now)."""
    inner = []
    for frame in chain:
        if not frame.f_code.co_filename.startswith(_STDLIB_DIR):
            break
        inner.append(frame)
    return inner


def _waited_object(chain: tuple[FrameType, ...]) -> object | None:
    """The ``Thread`` a thread joins or the ``Future`` whose result it waits for (its innermost standard
    library frames only: a wait further out is not what it is blocked on now)."""
    for frame in _stdlib_frames(chain):
        code = frame.f_code
        if (code.co_filename == _THREADING_FILE and code.co_name == "join") or (
                code.co_filename.endswith(_FUTURE_FILE) and code.co_name == "result"):
            return frame.f_locals.get("self")
    return None


def _running(future: object | None, frames: dict[int, FrameType], me: threading.Thread) -> threading.Thread | None:
    """The executor thread whose work item is ``future`` now: the asking thread's own stack first (read
    safely: it is the one running); another thread's only while it waits (``_waiting_chain``)."""
    if future is None:
        return None
    own = _chain(sys._getframe())
    if any(_runs(frame, future) for frame in own):
        return me
    for thread in threading.enumerate():
        if thread is me:
            continue
        if any(_runs(frame, future) for frame in _waiting_chain(frames.get(thread.ident or -1))):
            return thread
    return None


def _runs(frame: FrameType, future: object) -> bool:
    return (frame.f_code.co_filename.endswith(_POOL_FILE) and frame.f_code.co_name == "run"
            and getattr(frame.f_locals.get("self"), "future", None) is future)


def refuse_thread_request(method: str, path: str) -> BaseException | None:
    """The refusal of an API request made on a recorded thread (None on any other thread).

    Bound by the simulator as the client transport's guard (``apiserver.transports`` cannot import the
    sandbox).
    """
    what = f"{method} {path}"
    site = note_thread_attempt(what)
    if site is None:
        return None
    return ThreadCallRefused(
        111, f"kamera: {what} refused: it comes from a thread the reconcile started ({site}); kamera runs a "
             "reconcile as one step and cannot order calls the OS schedules (make them from the reconcile "
             "itself, or write the controller as a program)")
