"""One call into user code, on a worker thread, under the sandbox and a budget.

Why a worker thread: a call that loops forever or blocks on something real must be reported as a
finding, not hang kamera.  Each call is handed to a long-lived daemon worker thread and the caller
waits for it within the budget (wall time, stretched on a loaded machine while the thread computes:
``budget.py``; the handoff costs ~10 µs; a new thread per call costs
~100 µs).  On overrun, kamera records where the worker was, asks it to stop (an asynchronous
exception, delivered at the next Python bytecode, so pure-Python busy loops do stop; code blocked
inside C keeps its thread until it returns), restores every virtualised global and moves on with a
fresh worker; the old one is never given work again and is left to end on its own as a daemon.

The stop must never reach a later step (issue #28).  The asynchronous exception lands wherever the
old thread evaluates next — inside a ``__del__`` or weakref callback that ``gc`` runs on it, say,
which Python reports through ``sys.unraisablehook`` (printed into whichever step's output is being
captured then) and which leaves the loop running.  So the old thread is *fenced* as well as stopped
(``threads.fence_thread``): its every later call out (API, network, process) raises ``ThreadOutlived``
and reaches nothing; what it prints is dropped by every step's capture; an unraisable it raises is
kamera's (``_unraisable``): dropped, and the stop is asked again until it lands in code that unwinds.
``time.sleep`` is virtual inside a call, so the budget only ever catches busy loops and real
blocking.  SIGALRM was not used: it only works on the main thread, and it cannot get kamera out of
a loop that swallows ``BaseException``.

Every controller shape calls user code through ``call_sandboxed`` (``reconcile/running.py`` for
reconciles and mappers, ``program/`` to end a program's suspended threads); it returns a
``CallRecord`` of what happened, which the caller classifies.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import io
import logging
import os
import re
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from kamera_cli.adapters.sandbox.budget import CallClock, await_call, thread_cpu_clock
from kamera_cli.adapters.sandbox.child_processes import ProcessAttempt
from kamera_cli.adapters.sandbox.fence import NetworkAttempt, VirtualClock, sandboxed
from kamera_cli.adapters.sandbox.loading import EntrypointLoader
from kamera_cli.adapters.sandbox.modules import is_user_file
from kamera_cli.adapters.sandbox.threads import (
    QUIESCE_SECONDS,
    StrayThread,
    fence_thread,
    is_fenced,
    watching_threads,
)
from kamera_cli.errors import InternalError

__all__ = ["KAMERA_DIR", "OUTPUT_LIMIT", "CallRecord", "ReconcileAbort", "call_sandboxed", "clean_text"]

#: kamera's own source directory: frames under it are kamera's, not the user's
KAMERA_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_POOL_FILE = os.path.join("concurrent", "futures", "thread.py")
_ADAPTERS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class ReconcileAbort(BaseException):
    """Base of the simulator's own aborts (crash injection); never caught or reported by the adapters."""


class _BudgetExceeded(BaseException):
    """Injected into a reconcile thread that overran its budget, to make it unwind."""


class _Call:
    """One call into user code, handed to the worker thread; ``finished`` is released when it ends."""

    __slots__ = ("cancelled", "context", "done", "error", "finished", "fn", "value")

    def __init__(self, fn: Callable[[], Any], context: contextvars.Context) -> None:
        self.fn = fn
        self.context = context
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = False
        #: set when the caller gave up before the worker even started (the sandbox is gone by then)
        self.cancelled = False
        self.finished = threading.Lock()
        self.finished.acquire()

    def run(self) -> None:
        try:
            if self.cancelled:
                return
            self.value = self.context.run(self.fn)
        except BaseException as exc:  # classified by the caller, in the caller's thread
            self.error = exc
            _probe_text(exc)  # an exception whose __str__ never returns must hang here, within the budget
        finally:
            self.done = True
            self.finished.release()


def _probe_text(exc: BaseException) -> None:
    """Render the exception (and its causes) once in the worker thread: the caller renders it again.

    Why: kamera formats the controller's exception in its own thread; a ``__str__`` that loops would
    hang kamera there, out of any budget.  Rendered first here, such a loop is the reconcile's own
    overrun, caught by the budget like any busy loop.
    """
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 5:
        with contextlib.suppress(Exception):
            traceback.format_exception_only(type(current), current)
        current = current.__cause__ or current.__context__
        seen += 1


class _Worker:
    """A long-lived daemon thread that runs one call at a time (a thread per call costs ~100 µs).

    Replaced by a fresh one when a call overruns its budget: the old thread is asked to stop and is
    never given work again.
    """

    def __init__(self) -> None:
        self.abandoned = False
        self._job: _Call | None = None
        self._go = threading.Lock()
        self._go.acquire()
        self.thread = threading.Thread(target=self._loop, name="kamera-reconcile", daemon=True)
        self.thread.start()
        #: the thread's CPU clock, looked up once (every call's budget reads it: ``budget.py``)
        self.cpu = thread_cpu_clock(self.thread)

    def submit(self, call: _Call) -> None:
        self._job = call
        self._go.release()

    def _loop(self) -> None:
        try:
            while not self.abandoned:
                self._go.acquire()
                job, self._job = self._job, None
                if job is not None:
                    job.run()
        except BaseException:  # a late stop request that landed between two jobs: just end the thread
            return


_worker: _Worker | None = None


def _get_worker() -> _Worker:
    global _worker
    worker = _worker
    if worker is None or not worker.thread.is_alive():
        worker = _worker = _Worker()
    return worker


def _abandon(worker: _Worker, call: _Call, stuck_at: tuple[traceback.FrameSummary, ...] = ()) -> None:
    global _worker
    call.cancelled = True
    worker.abandoned = True
    if _worker is worker:
        _worker = None
    user = [f for f in stuck_at if not f.filename.startswith(KAMERA_DIR)]
    fence_thread(worker.thread, f"abandoned at its budget at {user[-1].filename}:{user[-1].lineno}" if user
                 else "abandoned at its budget")
    _filter_unraisable()
    _stop(worker.thread)
    if worker.thread.is_alive():
        threading.Thread(target=_keep_stopping, args=(worker.thread,), name="kamera-stopper", daemon=True).start()
    # wake the thread if it is idle, so that it sees ``abandoned`` and ends instead of waiting forever
    with contextlib.suppress(RuntimeError):  # already released: it had not picked the job up yet
        worker._go.release()


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What one sandboxed call did: its output, its value or error, a timeout, network and process attempts."""

    output: str
    value: Any
    error: BaseException | None
    timed_out: bool
    stuck_at: tuple[traceback.FrameSummary, ...]
    network: tuple[NetworkAttempt, ...]
    processes: tuple[ProcessAttempt, ...] = ()
    #: threads the call started that called the API or outlived it (``threads.py``)
    threads: tuple[StrayThread, ...] = ()
    #: ``(sys.stdout or sys.stderr, stack)`` of each close of the step's output streams
    closed_output: tuple[tuple[str, tuple[traceback.FrameSummary, ...]], ...] = ()


def call_sandboxed(
    loader: EntrypointLoader, fn: Callable[[], Any], *, budget_seconds: float, clock: VirtualClock, seed: bytes
) -> CallRecord:
    ms = loader.module_set
    ms.activate()
    plan = loader.patch_plan()
    call = _Call(fn, contextvars.copy_context())
    stuck_at: tuple[traceback.FrameSummary, ...] = ()
    worker = _get_worker()
    printed = _StepOutput()
    # catch_warnings: a warning shown "once" is shown once per step, not once per process (what a
    # step prints must not depend on the steps this process ran before), and filters a controller
    # sets stay in its step
    with (ms.on_path(), loader.scope(), _captured(printed), _logged(printed), warnings.catch_warnings(),
          sandboxed(clock, seed, plan) as run,
          watching_threads(ms.roots, worker.thread.ident or 0) as started):
        run.processes_allowed = loader.process.processes_allowed
        worker.submit(call)
        try:
            cpu = (None if worker.cpu is None else
                   CallClock(worker.cpu, lambda: [h[0] for h in _handed_over(ms.roots, worker.thread)],
                             {threading.get_ident(), worker.thread.ident}))
            finished = await_call(call.finished, budget_seconds, cpu)
        except BaseException:  # Ctrl-C while waiting: the worker is mid-call, so it cannot be reused
            _abandon(worker, call)
            raise
        timed_out = not finished
        if timed_out:
            stuck_at = _stack_of(worker.thread)
            _abandon(worker, call, stuck_at)
        # the threads it started end within the step, or are its finding (a timed-out call waits no more)
        strays = started.quiesce(0.0 if timed_out else QUIESCE_SECONDS)
        if timed_out:
            handed = _stop_handed_over(ms.roots, worker.thread)
            if handed and not any(is_user_file(f.filename, ms.roots) for f in stuck_at):
                stuck_at = handed  # the worker only waited: where the user's code was is on the pool's thread
        network = tuple(run.network)
        processes = tuple(run.processes)
        blocked = _blocked_address(call.error)
        if not network and isinstance(blocked, str) and call.error is not None:
            # refused before any socket existed (e.g. a urllib3 pool in requests): still the attempt
            network = (NetworkAttempt(blocked or "an unknown address",
                                      tuple(traceback.extract_tb(call.error.__traceback__))),)
    if not timed_out:
        ms.adopt_late_imports()
        if isinstance(call.error, ReconcileAbort):
            raise call.error
        if (call.error is not None and not network and not processes and not strays
                and _raised_inside_kamera(call.error)
                and not getattr(call.error, "controller_fault", False)):
            raise InternalError(
                f"{loader.scenario}: controller {loader.controller!r}: kamera failed while serving a call from the "
                f"controller (a bug in kamera, not in the controller):\n"
                + "".join(traceback.format_exception(call.error))
            ) from call.error
    return CallRecord(_output_text(printed.getvalue()), call.value, call.error, timed_out, stuck_at, network,
                      processes, strays, tuple(printed.closed_by))


def _blocked_address(error: BaseException | None) -> str | None:
    """The address a refused connection named, also when a client wrapped the refusal in its own error
    (``requests`` raises its ``ConnectionError`` from a faked host's pool, whose path no fake matched)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        blocked = getattr(error, "blocked_address", None)
        if isinstance(blocked, str):
            return blocked
        error = error.__cause__ or error.__context__
    return None


#: the most a step's log keeps of what the controller printed
OUTPUT_LIMIT = 4000


class _StepOutput(io.StringIO):
    """What a step printed, stdout and stderr interleaved.

    What a fenced thread writes (one that outlived its step, or kamera's worker abandoned at its budget)
    is dropped: it belongs to an earlier step, and the scheduler decides when it lands."""

    def __init__(self) -> None:
        super().__init__()
        #: ``(stream name, stack)`` of each ``close()`` user code called on the step's stdout or stderr
        self.closed_by: list[tuple[str, tuple[traceback.FrameSummary, ...]]] = []

    def write(self, text: str) -> int:
        if is_fenced(threading.current_thread()):
            return len(text)
        return super().write(text)


class _StepStream(io.TextIOBase):
    """A step's ``sys.stdout`` or ``sys.stderr``, writing into its ``_StepOutput``.

    Closing it closes nothing, and is the step's finding (issue #28): in a real process every later
    ``print`` would raise ``ValueError: I/O operation on closed file``; kamera keeps reading what the
    controller prints and says where it closed the stream."""

    def __init__(self, name: str, output: _StepOutput) -> None:
        super().__init__()
        self._name = name
        self._output = output

    @property
    def name(self) -> str:
        return self._name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return self._output.write(text)

    def __del__(self) -> None:
        """Nothing: ``IOBase.__del__`` calls ``close()``, which would read as the controller's."""

    def close(self) -> None:
        if not is_fenced(threading.current_thread()) and len(self._output.closed_by) < 4:
            self._output.closed_by.append((self._name, tuple(traceback.extract_stack()[:-1])))


@contextlib.contextmanager
def _captured(buffer: _StepOutput) -> Iterator[None]:
    """What user code prints belongs to its step's log, never to kamera's own output.

    Swapping ``sys.stdout``/``sys.stderr`` is process-wide, which is what is wanted: the reconcile
    runs on a worker thread while kamera's thread only waits for it.
    """
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _StepStream("sys.stdout", buffer), _StepStream("sys.stderr", buffer)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


#: a user module's logger is named after the module kamera loaded it as (``loading._file_module_name``)
_USER_MODULE = re.compile(r"kamera_user_(\w+?)_[0-9a-f]{16}")


class _StepLog(logging.Handler):
    """The ``logging`` records of a step, into its log as lines ``LEVEL logger: message``.

    Why: operators log through ``logging`` (kopf's ``logger`` kwarg, ``logging.getLogger(__name__)``) far
    more than they print; without a handler Python drops what is below WARNING and prints the rest to
    stderr, so most of what the operator said was missing from its step.  No time in the line: the log
    of a step must not depend on when it ran; a user module's logger by its file's stem, not the name
    kamera imported it under (which depends on the scenario's path).  A record's exception is its last
    line only (the finding carries the traceback); kamera's own records are not the controller's.
    """

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        #: the running step's output (None between steps)
        self.output: _StepOutput | None = None

    def emit(self, record: logging.LogRecord) -> None:
        output = self.output
        if output is None or record.name.startswith("kamera_cli"):
            return
        try:
            name = _USER_MODULE.sub(r"\1", record.name)
            line = f"{record.levelname} {name}: {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                line += "\n" + "".join(traceback.format_exception_only(record.exc_info[1])).rstrip()
            output.write(line + "\n")
        except Exception:  # a message whose arguments do not format: logging's own report, not kamera's
            self.handleError(record)


_STEP_LOG = _StepLog()


@contextlib.contextmanager
def _logged(output: _StepOutput) -> Iterator[None]:
    """The step's ``logging`` records in its log, at the levels the process's loggers are enabled for
    (Python's default: WARNING and up; a kopf step sets INFO, as ``kopf run`` does: ``kopf/events.py``).

    One handler on the root logger for the whole process, pointed at each step's output in turn (a
    handler made per step cost more than the rest of this); no level is changed here, since changing
    one empties every logger's cache.
    """
    previous = _STEP_LOG.output
    _STEP_LOG.output = output
    root = logging.getLogger()
    root.addHandler(_STEP_LOG)
    try:
        yield
    finally:
        root.removeHandler(_STEP_LOG)
        _STEP_LOG.output = previous
        if previous is not None:
            root.addHandler(_STEP_LOG)


def _output_text(text: str) -> str:
    if len(text) > OUTPUT_LIMIT:
        text = text[: OUTPUT_LIMIT] + f"\n… ({len(text) - OUTPUT_LIMIT} more characters)"
    return clean_text(text.rstrip("\n")) if text else ""


def _raised_inside_kamera(exc: BaseException) -> bool:
    # An exception class may declare ``controller_fault = True``: kamera raises it on purpose because
    # the controller did something impossible in a simulation (a watch that would block forever).
    """True when the innermost frame is kamera's own (say, the simulated API server), outside the adapters."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    file = tb.tb_frame.f_code.co_filename
    return file.startswith(KAMERA_DIR) and not file.startswith(_ADAPTERS_DIR)


def _stack_of(thread: threading.Thread) -> tuple[traceback.FrameSummary, ...]:
    frame = sys._current_frames().get(thread.ident or -1)
    return tuple(traceback.extract_stack(frame)) if frame is not None else ()


def _stop(thread: threading.Thread, wait: float = 0.05) -> None:
    """Ask an overrunning reconcile thread to unwind, and give it a moment to do so."""
    ident = thread.ident
    if ident is None or not thread.is_alive():
        return
    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async_exc(ctypes.c_ulong(ident), ctypes.py_object(_BudgetExceeded))
    if wait:
        thread.join(wait)


#: how long, and how often, a stop is asked again of an abandoned thread that goes on running
_STOP_RETRY_SECONDS = 30.0
_STOP_RETRY_EVERY = 0.01


def _keep_stopping(thread: threading.Thread) -> None:
    """Ask ``thread`` to stop again and again until it ends (a finalizer may swallow each request).

    From a thread of its own, never from the stopped thread's unraisable hook: a stop asked there lands
    in the hook itself, which Python swallows too.  Bounded: code blocked in C, or looping around an
    ``except BaseException``, may never end; fenced, it reaches nothing meanwhile.
    """
    pause = threading.Event()
    for _ in range(int(_STOP_RETRY_SECONDS / _STOP_RETRY_EVERY)):
        if not thread.is_alive():
            return
        _stop(thread, wait=0)
        pause.wait(_STOP_RETRY_EVERY)


def _stop_handed_over(roots: tuple[str, ...], worker: threading.Thread) -> tuple[traceback.FrameSummary, ...]:
    """Stop the user code an overrunning call handed to an executor's thread, and only that work item.

    Why: kopf runs a sync handler on a thread of its own executor (``asyncio.to_thread`` and
    ``run_in_executor`` do the same), so stopping the worker stops the event loop that waits, not the
    loop that spins. Left running, it takes a CPU for the rest of the search, and as a non-daemon pool
    thread it keeps the interpreter from exiting (a ``pytest`` run that used kamera never ends). The
    pool thread itself lives on (the executor may get more work), so it is asked to stop only while
    the overrunning frame is still on its stack, and it is not fenced. Returns the first such thread's
    stack, taken before the stop (where the report says the user's code was).
    """
    first: tuple[traceback.FrameSummary, ...] = ()
    for thread, frame, outer in _handed_over(roots, worker):
        first = first or tuple(traceback.extract_stack(frame))
        threading.Thread(target=_stop_while_in, args=(thread, outer), name="kamera-stopper", daemon=True).start()
    return first


def _handed_over(roots: tuple[str, ...],
                 worker: threading.Thread) -> list[tuple[threading.Thread, FrameType, FrameType]]:
    """The threads now running user code the call handed to an executor, each with its current frame
    and the outermost user frame of that work (what ``budget.CallClock`` counts and an overrun stops)."""
    me = threading.get_ident()
    threads = {t.ident: t for t in threading.enumerate()}
    found: list[tuple[threading.Thread, FrameType, FrameType]] = []
    for ident, frame in sorted(sys._current_frames().items()):
        thread = threads.get(ident)
        if thread is None or ident in (me, worker.ident) or is_fenced(thread):
            continue
        outer = _handed_over_frame(frame, roots)
        if outer is not None:
            found.append((thread, frame, outer))
    return found


def _handed_over_frame(frame: FrameType | None, roots: tuple[str, ...]) -> FrameType | None:
    """The outermost user frame of a work item an executor's thread runs, or None."""
    outer: FrameType | None = None
    in_pool = False
    while frame is not None:
        file = frame.f_code.co_filename
        if is_user_file(file, roots):
            outer = frame
        elif file.endswith(_POOL_FILE) and frame.f_code.co_name == "run":
            in_pool = True
            break
        frame = frame.f_back
    return outer if in_pool else None


def _stop_while_in(thread: threading.Thread, frame: FrameType) -> None:
    """``_keep_stopping`` for a pool thread: ask again until ``frame`` has left its stack."""
    pause = threading.Event()
    for _ in range(int(_STOP_RETRY_SECONDS / _STOP_RETRY_EVERY)):
        current = sys._current_frames().get(thread.ident or -1)
        while current is not None and current is not frame:
            current = current.f_back
        if current is None:
            return
        del current
        _stop(thread, wait=0)
        pause.wait(_STOP_RETRY_EVERY)


def _filter_unraisable() -> None:
    """Put ``_unraisable`` in front of whatever ``sys.unraisablehook`` is now (once; again if replaced)."""
    hook = sys.unraisablehook
    if getattr(hook, "kamera_filter", False):
        return
    sys.unraisablehook = _unraisable_before(hook)


def _unraisable_before(previous: Callable[[Any], object]) -> Callable[[Any], object]:
    def hook(unraisable: Any) -> object:
        thread = threading.current_thread()
        if not is_fenced(thread):
            return previous(unraisable)
        return None  # a fenced thread's unraisable belongs to no step (the stopper asks again)

    hook.kamera_filter = True  # type: ignore[attr-defined]
    return hook


_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Text any reporter can write: control characters, line separators and lone surrogates escaped.

    Why here, once: an exception message is the controller's text, and a lone surrogate in it made
    the JSON and JUnit writers fail; escaping at the source keeps every reporter simple.
    """
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
