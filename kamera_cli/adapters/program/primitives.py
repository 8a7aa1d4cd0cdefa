"""``threading`` and ``queue`` as a program's green threads see them (see ``program_threads``).

Why patch so little: CPython's ``Condition``, ``Event``, ``Semaphore``, ``Barrier`` and
``queue.Queue`` are written in Python on top of ``threading.Lock``/``RLock`` and
``threading._allocate_lock``; give them locks that block by switching green threads, and they all
block cooperatively, timeouts included, with their own semantics unchanged.  So while a program
step runs, these names (and ``Thread.start``/``join``/``is_alive``, ``current_thread``, the default
thread names, ``queue.SimpleQueue`` and the clocks ``threading`` and ``queue`` time their waits
with) are replaced by stand-ins that act for the program's own threads only: called from any other
OS thread — kamera's workers, watchdogs, the explorer — they are the real thing, and a ``Thread``
that was not started by a program is joined and asked for liveness as usual.  Everything is put
back when the step ends (a count of active steps keeps an abandoned worker's late exit from
undoing a later step's patches).
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Iterator
from typing import Any

from kamera_cli.adapters.program.threads import KAMERA_DIR, THREAD_TABLE, GreenThread, Threads, thread_key
from kamera_cli.adapters.program.trace import Recorder
from kamera_cli.adapters.sandbox.modules import is_user_file

__all__ = ["GreenLock", "GreenRLock", "installed"]

_real_allocate = threading._allocate_lock  # type: ignore[attr-defined]
_real_lock = threading.Lock
_real_rlock = threading.RLock
_real_start = threading.Thread.start
_real_join = threading.Thread.join
_real_is_alive = threading.Thread.is_alive
_real_current = threading.current_thread
_real_newname = threading._newname  # type: ignore[attr-defined]
_real_simple_queue = queue.SimpleQueue
_real_threading_time = threading._time  # type: ignore[attr-defined]
_real_queue_time = queue.time  # type: ignore[attr-defined]

#: what ``Thread.start`` was when the stand-ins went in — the real one, or the sandbox's own stand-in
#: (``sandbox/threads.py``, which records the threads a reconcile starts): what a thread started by
#: anyone but a program runs, and what is put back
_start_before: list[Any] = [_real_start]

#: the program whose step runs on each OS thread (a sandbox runs one step at a time per thread)
_local = threading.local()
_guard = _real_allocate()
_depth = 0


def _program() -> Threads | None:
    return getattr(_local, "threads", None)


def _me(threads: Threads | None) -> Any:
    """Who holds an RLock: the running green thread, or the program's own step (its imports, its end)."""
    if threads is None:
        return None
    return threads.current() or threads


def _now() -> float:
    """The program's virtual time (the step's clock: a suspended thread resumes under a new one)."""
    from kamera_cli.adapters.sandbox.fence import active_run

    run = active_run()
    return run.clock.now if run is not None else _real_threading_time()


class GreenLock:
    """A ``threading.Lock`` of a program: ``acquire`` blocks by letting another thread run.

    ``visible``: created by the program's own code (not by a library, nor by ``threading``/``queue``
    internals), so a blocking acquire is a scheduling point: who takes it first is explored.  A
    release frees it and makes every waiter runnable; the first of them the schedule runs takes it.
    """

    __slots__ = ("__weakref__", "_guards", "_locked", "_name", "_visible", "_waiters")

    def __init__(self, visible: bool = False, name: str = "", guards: bool = True) -> None:
        self._locked = False
        self._visible = visible
        #: a lock that guards data (not one ``Condition.wait`` allocates to park its waiter on, which the
        #: notifying thread releases): held by whoever took it
        self._guards = guards
        #: its name in the program's trace (``trace.py``): ``creator/n``, ``?file`` for a library's, or
        #: "" for one whose order nobody observes
        self._name = name
        self._waiters: list[GreenThread] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        threads = _program()
        if blocking and self._visible and threads is not None:
            threads.preempt("acquiring a lock")
        _touch(threads, self._name)  # in the segment that goes on after the preemption
        deadline = None if timeout == -1 else _now() + timeout
        while self._locked:
            me = threads.current() if threads is not None else None
            if not blocking or timeout == 0:
                return False
            if threads is None or me is None:
                raise RuntimeError("kamera: a lock of the program is held by one of its threads, and cannot be "
                                   "waited for outside them (while its module is imported, or by kamera)")
            self._waiters.append(me)
            try:
                left = None if deadline is None else max(deadline - _now(), 0.0)
                signalled = threads.block(f"{type(self).__name__}.acquire", left)
            finally:
                if me in self._waiters:
                    self._waiters.remove(me)
            _touch(threads, self._name)  # a thread that blocked goes on in a new segment
            if not signalled and self._locked:
                return False
        self._locked = True
        if self._guards:
            _holding(threads, self._name, 1)
        return True

    def release(self) -> None:
        if not self._locked:
            raise RuntimeError("release unlocked lock")
        threads = _program()
        _touch(threads, self._name)
        if self._guards:
            _holding(threads, self._name, -1)
        self._locked = False
        for waiter in self._waiters:
            waiter.owner.wake(waiter)

    def locked(self) -> bool:
        return self._locked

    def _at_fork_reinit(self) -> None:
        self._locked = False
        self._waiters = []

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<{'locked' if self._locked else 'unlocked'} kamera green lock at {id(self):#x}>"


class GreenRLock:
    """A ``threading.RLock`` of a program: owned by a green thread, reentrant, usable by ``Condition``."""

    __slots__ = ("__weakref__", "_block", "_count", "_owner")

    def __init__(self, visible: bool = False, name: str = "") -> None:
        self._block = GreenLock(visible, name)
        self._owner: Any = None
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        threads = _program()
        me = _me(threads)
        if self._count and self._owner is me:
            _touch(threads, self._block._name)
            self._count += 1
            return True
        if not self._block.acquire(blocking, timeout):
            return False
        self._owner, self._count = me, 1
        return True

    def release(self) -> None:
        threads = _program()
        if not self._count or self._owner is not _me(threads):
            raise RuntimeError("cannot release un-acquired lock")
        _touch(threads, self._block._name)
        self._count -= 1
        if not self._count:
            self._owner = None
            self._block.release()

    def _is_owned(self) -> bool:
        return bool(self._count) and self._owner is _me(_program())

    def _release_save(self) -> tuple[int, Any]:
        if not self._count:
            raise RuntimeError("cannot release un-acquired lock")
        state = (self._count, self._owner)
        self._count, self._owner = 0, None
        self._block.release()
        return state

    def _acquire_restore(self, state: tuple[int, Any]) -> None:
        self._block.acquire()
        self._count, self._owner = state

    def _at_fork_reinit(self) -> None:
        self._block._at_fork_reinit()
        self._owner, self._count = None, 0

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _touch(threads: Threads | None, name: str) -> None:
    """A lock operation, in the running segment's footprint (``trace.py``)."""
    if threads is None or not name:
        return
    if name[0] == "?":
        threads.trace.foreign(name[1:])
    else:
        threads.trace.touch(name)


def _holding(threads: Threads | None, name: str, delta: int) -> None:
    """A lock of the program's taken or given back (``Recorder.holding``)."""
    if threads is not None and name and name[0] != "?":
        threads.trace.holding(name, delta)


def _made_by_user(threads: Threads) -> bool:
    """Whether the caller of ``threading.Lock()`` (the first frame outside this module) is the
    program's own code."""
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame is not None and is_user_file(frame.f_code.co_filename, threads.roots)


#: the modules whose locks act for their caller: ``Condition``, ``Event``, ``Queue``, ``Thread``
_ON_BEHALF = (__file__, threading.__file__, queue.__file__)


def _trace_name(threads: Threads) -> str:
    """A new lock's name in the trace: named for its creator when the program's own code (or kamera's,
    which makes the main thread's stand-in) made it, directly or through ``threading``/``queue``;
    ``?file`` when a library made it for itself; "" for logging's (``Recorder.ignored``)."""
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _ON_BEHALF:
        frame = frame.f_back
    file = frame.f_code.co_filename if frame is not None else ""
    if Recorder.ignored(file):
        return ""
    if frame is None or file.startswith(KAMERA_DIR) or is_user_file(file, threads.roots):
        me = threads.current()
        return threads.trace.name(me.label if me is not None else "")
    return "?" + os.path.basename(file)


def _lock() -> Any:
    threads = _program()
    return GreenLock(_made_by_user(threads), _trace_name(threads)) if threads is not None else _real_allocate()


def _allocate_lock() -> Any:
    threads = _program()
    return GreenLock(False, _trace_name(threads), guards=False) if threads is not None else _real_allocate()


def _rlock(*args: Any, **kwargs: Any) -> Any:
    threads = _program()
    if threads is None:
        return _real_rlock(*args, **kwargs)
    return GreenRLock(_made_by_user(threads), _trace_name(threads))


def _simple_queue() -> Any:
    """``queue.SimpleQueue`` is C code that would block the OS thread: its Python twin blocks green."""
    return queue._PySimpleQueue() if _program() is not None else _real_simple_queue()  # type: ignore[attr-defined]


def _newname(name_template: str = "Thread-%d") -> str:
    threads = _program()
    if threads is None:
        return str(_real_newname(name_template))
    threads.trace.touch(THREAD_TABLE)  # the program's count of threads, shared by whoever names one
    return name_template % threads.new_name()


def _monotonic() -> float:
    return _now() if _program() is not None else _real_threading_time()


def _current_thread() -> Any:
    threads = _program()
    me = threads.current() if threads is not None else None
    return me.thread if me is not None else _real_current()


def _start(self: threading.Thread) -> None:
    threads = _program()
    if threads is None:
        _start_before[0](self)
        return
    if not getattr(self, "_initialized", False):
        raise RuntimeError("thread.__init__() not called")
    if getattr(self, "_kamera_thread", None) is not None:
        raise RuntimeError("threads can only be started once")
    threads.trace.touch(THREAD_TABLE)
    threads.trace.touch(thread_key(threads.spawn(self)))


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    gt: GreenThread | None = getattr(self, "_kamera_thread", None)
    if gt is None:
        _real_join(self, timeout)
        return
    threads = gt.owner
    threads.trace.touch(thread_key(gt))
    me = threads.current()
    if me is gt:
        raise RuntimeError("cannot join current thread")
    deadline = None if timeout is None else _now() + max(timeout, 0.0)
    while gt.state != "done":
        if me is None:
            raise RuntimeError("kamera: a thread of the program cannot be joined outside its threads")
        left = None if deadline is None else max(deadline - _now(), 0.0)
        gt.joiners.append(me)
        try:
            if not threads.block("Thread.join", left):
                return
        finally:
            if me in gt.joiners:
                gt.joiners.remove(me)


if sys.version_info >= (3, 11):  # as a deadlock message names it
    _join.__code__ = _join.__code__.replace(co_name="join", co_qualname="Thread.join")


def _is_alive(self: threading.Thread) -> bool:
    gt: GreenThread | None = getattr(self, "_kamera_thread", None)
    if gt is None:
        return _real_is_alive(self)
    gt.owner.trace.touch(thread_key(gt))
    return gt.state != "done"


class _Builtin:
    """A stand-in for a builtin function: like one, it does not bind as a method when a class keeps it
    as an attribute (``lock_type = threading.Lock``, then ``self.lock_type()``)."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


_PATCHES: tuple[tuple[Any, str, Any, Any], ...] = (
    (threading, "_allocate_lock", _real_allocate, _Builtin(_allocate_lock)),
    (threading, "Lock", _real_lock, _Builtin(_lock)),
    (threading, "RLock", _real_rlock, _rlock),
    (threading, "_newname", _real_newname, _newname),
    (threading, "_time", _real_threading_time, _Builtin(_monotonic)),
    (threading, "current_thread", _real_current, _current_thread),
    (threading.Thread, "start", _real_start, _start),
    (threading.Thread, "join", _real_join, _join),
    (threading.Thread, "is_alive", _real_is_alive, _is_alive),
    (queue, "SimpleQueue", _real_simple_queue, _simple_queue),
    (queue, "time", _real_queue_time, _Builtin(_monotonic)),
)


@contextlib.contextmanager
def installed(threads: Threads) -> Iterator[None]:
    """The stand-ins, for ``threads``' program on this OS thread, for the duration of the block."""
    global _depth
    with _guard:
        if _depth == 0:
            _start_before[0] = threading.Thread.start
            for owner, attr, _real, stand_in in _PATCHES:
                setattr(owner, attr, stand_in)
        _depth += 1
    previous = getattr(_local, "threads", None)
    _local.threads = threads
    try:
        yield
    finally:
        _local.threads = previous
        with _guard:
            _depth -= 1
            if _depth == 0:
                for owner, attr, real, _stand_in in _PATCHES:
                    setattr(owner, attr, _start_before[0] if owner is threading.Thread and attr == "start" else real)


def main_thread_stand_in() -> threading.Thread:
    """What ``current_thread()`` is in a program's main thread: a non-daemon ``MainThread`` (the worker
    thread kamera runs it on is a daemon, and threads inherit their creator's daemon flag)."""
    return threading.Thread(name="MainThread", daemon=False)

