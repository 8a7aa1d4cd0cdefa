"""Calling one reconcile (or one watch mapper) and classifying what happened.

Why a worker thread: a reconcile that loops forever or blocks on something real must be reported
as a finding, not hang kamera.  Each call is handed to a long-lived daemon worker thread and the
caller waits for it with the wall-clock budget (the handoff costs ~10 µs; a new thread per call
costs ~100 µs).  On overrun, kamera records where the worker was, asks it to stop (an asynchronous
exception, delivered at the next Python bytecode, so pure-Python busy loops do stop; code blocked
inside C keeps its thread until it returns), restores every virtualised global and moves on with a
fresh worker; the old one is never given work again and is left to end on its own as a daemon.
``time.sleep`` is virtual inside a reconcile, so the budget only ever catches busy loops and real
blocking.  SIGALRM was not used: it only works on the main thread, and it cannot get kamera out of
a loop that swallows ``BaseException``.

What is *not* caught: :class:`ReconcileAbort`, the simulator's own control flow (crash injection).
It passes out of :func:`run_reconcile` untouched, after the sandbox has been undone.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import io
import json
import os
import re
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kamera_cli.adapters.sandbox.fence import NetworkAttempt, ProcessAttempt, VirtualClock, sandboxed
from kamera_cli.adapters.sandbox.loading import (
    EntrypointLoader,
    InvalidMapping,
    Mapper,
    ReconcilerFactory,
    requests_from_mapping,
)
from kamera_cli.adapters.sandbox.modules import is_user_file
from kamera_cli.adapters.sandbox.values import InvalidResult, Request, Result, failure_retry, normalise_result
from kamera_cli.errors import InternalError

__all__ = [
    "ErrorInfo",
    "MapOutcome",
    "OutcomeKind",
    "ReconcileAbort",
    "ReconcileOutcome",
    "run_mapper",
    "run_reconcile",
]

OutcomeKind = Literal["ok", "api-error", "exception", "exit", "timeout", "network", "process"]

_KAMERA_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_ADAPTERS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_REQUEUE = Result(requeue=True)


class ReconcileAbort(BaseException):
    """Base of the simulator's own aborts (crash injection); never caught or reported by the adapters."""


class _BudgetExceeded(BaseException):
    """Injected into a reconcile thread that overran its budget, to make it unwind."""


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What went wrong in user code, ready for a report: no kamera frames, paths relative to the scenario."""

    type_name: str
    message: str
    #: ``Traceback (most recent call last): ...`` over the user's frames only ("" when there are none)
    traceback: str
    #: HTTP status of a kubernetes ``ApiException``; None otherwise
    api_status: int | None = None

    def summary(self) -> str:
        return f"{self.type_name}: {self.message}" if self.message else self.type_name


@dataclass(frozen=True, slots=True)
class ReconcileOutcome:
    """How one reconcile ended.

    ``kind``: ``ok`` (``result`` says what it asked for), ``api-error`` (an ApiException escaped; as in
    controller-runtime this means "requeue", and ``result`` is ``Result(requeue=True)``, or the timed
    retry a framework adapter attached to the exception, ``reconcile.retry_failure``), ``exception``
    (any other exception, or an unreadable return value: a controller error finding), ``exit``
    (``sys.exit``/``SystemExit``/``KeyboardInterrupt`` raised by user code), ``timeout`` (did not return
    within the wall-clock budget) or ``network`` (tried to open a network connection; takes precedence
    over everything else, because the controller may have caught the error kamera raised).
    """

    kind: OutcomeKind
    result: Result | None = None
    error: ErrorInfo | None = None
    #: every address the call tried to connect to, in order
    network: tuple[str, ...] = ()
    #: what the call printed (stdout and stderr, interleaved; escaped, at most ``OUTPUT_LIMIT`` chars)
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    def describe(self) -> str:
        """One line for a story step: ``done``, ``requeue after 30s``, ``exception: KeyError: 'web'``."""
        if self.kind == "ok" and self.result is not None:
            return describe_result(self.result)
        return f"{self.kind}: {self.error.summary()}" if self.error is not None else self.kind


def describe_result(result: Result) -> str:
    if result.requeue_after is not None:
        return f"requeue after {result.requeue_after:g}s"
    return "requeue" if result.requeue else "done"


@dataclass(frozen=True, slots=True)
class MapOutcome:
    """How one watch-mapper call ended: ``requests`` when ``kind == "ok"``, else ``error``."""

    kind: OutcomeKind
    requests: tuple[Request, ...] = ()
    error: ErrorInfo | None = None
    network: tuple[str, ...] = ()


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


def _abandon(worker: _Worker, call: _Call) -> None:
    global _worker
    call.cancelled = True
    worker.abandoned = True
    if _worker is worker:
        _worker = None
    _stop(worker.thread)
    # wake the thread if it is idle, so that it sees ``abandoned`` and ends instead of waiting forever
    with contextlib.suppress(RuntimeError):  # already released: it had not picked the job up yet
        worker._go.release()


@dataclass(frozen=True, slots=True)
class _Raw:
    output: str
    value: Any
    error: BaseException | None
    timed_out: bool
    stuck_at: tuple[traceback.FrameSummary, ...]
    network: tuple[NetworkAttempt, ...]
    processes: tuple[ProcessAttempt, ...] = ()


def call_sandboxed(
    loader: EntrypointLoader, fn: Callable[[], Any], *, budget_seconds: float, clock: VirtualClock, seed: bytes
) -> _Raw:
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
    with (ms.on_path(), loader.scope(), _captured(printed), warnings.catch_warnings(),
          sandboxed(clock, seed, plan) as run):
        run.processes_allowed = loader.process.processes_allowed
        worker.submit(call)
        try:
            finished = call.finished.acquire(timeout=max(budget_seconds, 0.0))
        except BaseException:  # Ctrl-C while waiting: the worker is mid-call, so it cannot be reused
            _abandon(worker, call)
            raise
        timed_out = not finished
        if timed_out:
            stuck_at = _stack_of(worker.thread)
            _abandon(worker, call)
        network = tuple(run.network)
        processes = tuple(run.processes)
        blocked = getattr(call.error, "blocked_address", None)
        if not network and isinstance(blocked, str) and call.error is not None:
            # refused before any socket existed (e.g. a urllib3 pool in requests): still the attempt
            network = (NetworkAttempt(blocked or "an unknown address",
                                      tuple(traceback.extract_tb(call.error.__traceback__))),)
    if not timed_out:
        ms.adopt_late_imports()
        if isinstance(call.error, ReconcileAbort):
            raise call.error
        if (call.error is not None and not network and not processes and _raised_inside_kamera(call.error)
                and not getattr(call.error, "controller_fault", False)):
            raise InternalError(
                f"{loader.scenario}: controller {loader.controller!r}: kamera failed while serving a call from the "
                f"controller (a bug in kamera, not in the controller):\n"
                + "".join(traceback.format_exception(call.error))
            ) from call.error
    return _Raw(_output_text(printed.getvalue()), call.value, call.error, timed_out, stuck_at, network, processes)


#: the most a step's log keeps of what the controller printed
OUTPUT_LIMIT = 4000


class _StepOutput(io.StringIO):
    """A step's ``sys.stdout``/``sys.stderr``: closing it closes nothing (a controller that calls
    ``sys.stdout.close()`` silences only itself; kamera still reads what it printed, issue #28)."""

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _captured(buffer: io.StringIO) -> Iterator[None]:
    """What user code prints belongs to its step's log, never to kamera's own output.

    Swapping ``sys.stdout``/``sys.stderr`` is process-wide, which is what is wanted: the reconcile
    runs on a worker thread while kamera's thread only waits for it.
    """
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buffer
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


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
    return file.startswith(_KAMERA_DIR) and not file.startswith(_ADAPTERS_DIR)


def _stack_of(thread: threading.Thread) -> tuple[traceback.FrameSummary, ...]:
    frame = sys._current_frames().get(thread.ident or -1)
    return tuple(traceback.extract_stack(frame)) if frame is not None else ()


def _stop(thread: threading.Thread) -> None:
    """Ask an overrunning reconcile thread to unwind, and give it a moment to do so."""
    ident = thread.ident
    if ident is None:
        return
    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async_exc(ctypes.c_ulong(ident), ctypes.py_object(_BudgetExceeded))
    thread.join(0.05)


def run_reconcile(
    factory: ReconcilerFactory,
    request: Request,
    client: object,
    *,
    budget_seconds: float,
    clock: VirtualClock,
    seed: bytes,
) -> ReconcileOutcome:
    """Run one reconcile of ``request`` under the sandbox and classify how it ended.

    Not re-entrant and not thread-safe: kamera runs one reconcile at a time per process.
    """
    # the result is read in the step too, under its budget: a returned object whose attributes never
    # answer is the controller's overrun, not a kamera that hangs (issue #28)
    raw = call_sandboxed(
        factory, lambda: _read_result(factory.invoke(request, client)), budget_seconds=budget_seconds, clock=clock,
        seed=seed,
    )
    roots = factory.module_set.roots
    base = str(factory.base_dir)
    network = tuple(a.address for a in raw.network)
    out = raw.output
    if raw.network:
        return ReconcileOutcome("network", error=_network_error(raw.network, roots, base), network=network,
                                output=out)
    if raw.processes:
        return ReconcileOutcome("process", error=_process_error(raw.processes, roots, base), output=out)
    if raw.timed_out:
        return ReconcileOutcome("timeout", error=_timeout_error(raw, budget_seconds, roots, base), output=out)
    if raw.error is not None:
        kind, error = _classify(raw.error, roots, base)
        retry = failure_retry(raw.error) if kind in ("api-error", "exception") else None
        return ReconcileOutcome(kind, result=retry or (_REQUEUE if kind == "api-error" else None), error=error,
                                output=out)
    if isinstance(raw.value, InvalidResult):
        return ReconcileOutcome("exception", error=ErrorInfo("InvalidResult", str(raw.value), ""), output=out)
    return ReconcileOutcome("ok", result=raw.value, output=out)


def _read_result(value: Any) -> Result | InvalidResult:
    """What the reconcile returned, read as a Result (or why it cannot be): the refusal is a value, so
    that kamera's own exception is never taken for one the controller raised."""
    try:
        return normalise_result(value)
    except InvalidResult as exc:
        return exc


def run_mapper(
    mapper: Mapper, obj: dict[str, Any], *, budget_seconds: float, clock: VirtualClock, seed: bytes
) -> MapOutcome:
    """Run one watch-mapper call under the same sandbox; a bad return value is an ``exception`` outcome."""
    raw = call_sandboxed(mapper, lambda: mapper.call(obj), budget_seconds=budget_seconds, clock=clock, seed=seed)
    roots = mapper.module_set.roots
    base = str(mapper.base_dir)
    network = tuple(a.address for a in raw.network)
    if raw.network:
        return MapOutcome("network", error=_network_error(raw.network, roots, base), network=network)
    if raw.processes:
        return MapOutcome("process", error=_process_error(raw.processes, roots, base))
    if raw.timed_out:
        return MapOutcome("timeout", error=_timeout_error(raw, budget_seconds, roots, base))
    if raw.error is not None:
        kind, error = _classify(raw.error, roots, base)
        return MapOutcome(kind, error=error)
    try:
        requests = requests_from_mapping(raw.value)
    except InvalidMapping as exc:
        return MapOutcome("exception", error=ErrorInfo("InvalidMapping", str(exc), ""))
    return MapOutcome("ok", requests=requests)


# -------------------------------------------------------------------------------------------------------------------
# classification and tracebacks
# Each client's "the API server answered with an error status" exception: (module, class).  Imported
# only when the user's code already did; the status is read by ``_api_status``.
_API_ERRORS = (
    ("kubernetes.client.exceptions", "ApiException"),  # .status
    ("kubernetes_asyncio.client.exceptions", "ApiException"),  # .status
    ("kr8s._exceptions", "ServerError"),  # .response.status_code
    ("lightkube.core.exceptions", "ApiError"),  # .status.code
    ("pykube.exceptions", "HTTPError"),  # .code
)


def _api_exception_types() -> tuple[type[BaseException], ...]:
    """The loaded clients' API error classes, without importing a client the user never did."""
    found = []
    for module_name, name in _API_ERRORS:
        module = sys.modules.get(module_name)
        cls = getattr(module, name, None) if module is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def _api_status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    for candidate in (status, getattr(status, "code", None), getattr(exc, "code", None),
                      getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
    return None


def _classify(exc: BaseException, roots: tuple[str, ...], base: str) -> tuple[OutcomeKind, ErrorInfo]:
    kind, info = _classify_raw(exc, roots, base)
    return kind, ErrorInfo(clean_text(info.type_name), clean_text(info.message), clean_text(info.traceback),
                           info.api_status)


_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Text any reporter can write: control characters, line separators and lone surrogates escaped.

    Why here, once: an exception message is the controller's text, and a lone surrogate in it made
    the JSON and JUnit writers fail; escaping at the source keeps every reporter simple.
    """
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _classify_raw(exc: BaseException, roots: tuple[str, ...], base: str) -> tuple[OutcomeKind, ErrorInfo]:
    text = _format_tb(exc, roots, base)
    name = type(exc).__qualname__
    if isinstance(exc, SystemExit):
        return "exit", ErrorInfo(name, f"sys.exit({exc.code!r}) called inside a reconcile", text)
    if isinstance(exc, KeyboardInterrupt):
        return "exit", ErrorInfo(name, "KeyboardInterrupt raised inside a reconcile", text)
    api = _api_exception_types()
    if api and isinstance(exc, api):
        status = _api_status(exc)
        return "api-error", ErrorInfo(name, _api_message(exc, status), text, status)
    return "exception", ErrorInfo(name, _safe_str(exc), text)


def _api_message(exc: BaseException, status: int | None) -> str:
    reason = getattr(exc, "reason", None)
    parts = [str(status) if status is not None else "", str(reason) if reason else ""]
    head = " ".join(p for p in parts if p)
    body = getattr(exc, "body", None)
    detail = ""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping) and isinstance(parsed.get("message"), str):
            detail = parsed["message"]
    if not detail and not hasattr(exc, "body"):  # kr8s, lightkube, pykube: the message is the Status's
        detail = _safe_str(exc)
    if head and detail:
        return f"{head}: {detail}"
    return head or detail or _safe_str(exc)


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__} with an unprintable message>"


def _relative(filename: str, base: str) -> str:
    prefix = base.rstrip(os.sep) + os.sep
    return filename[len(prefix) :] if filename.startswith(prefix) else filename


def _user_frames(
    frames: list[traceback.FrameSummary] | tuple[traceback.FrameSummary, ...], roots: tuple[str, ...], base: str
) -> list[traceback.FrameSummary]:
    """Drop kamera's frames, and library frames outside the span of the user's own frames."""
    kept = [f for f in frames if not f.filename.startswith(_KAMERA_DIR)]
    user = [i for i, f in enumerate(kept) if is_user_file(f.filename, roots)]
    if user:
        kept = kept[user[0] : user[-1] + 1]
    return [traceback.FrameSummary(_relative(f.filename, base), f.lineno, f.name, line=f.line) for f in kept]


def _render(frames: list[traceback.FrameSummary], header: str = "Traceback (most recent call last):\n") -> str:
    if not frames:
        return ""
    return header + "".join(traceback.StackSummary.from_list(frames).format())


def _format_tb(exc: BaseException, roots: tuple[str, ...], base: str, depth: int = 0) -> str:
    frames = _user_frames(traceback.extract_tb(exc.__traceback__), roots, base)
    try:
        tail = "".join(traceback.format_exception_only(type(exc), exc))
    except Exception:
        tail = f"{type(exc).__qualname__}: {_safe_str(exc)}\n"
    text = _render(frames) + tail if frames else tail
    # the cause first, as Python prints it: "raise ... from err" hides the real error otherwise
    cause, link = exc.__cause__, "The above exception was the direct cause of the following exception:"
    if cause is None and exc.__context__ is not None and not exc.__suppress_context__:
        cause, link = exc.__context__, "During handling of the above exception, another exception occurred:"
    if cause is not None and depth < 4:
        text = _format_tb(cause, roots, base, depth + 1) + f"\n{link}\n\n" + text
    return text


def _network_error(attempts: tuple[NetworkAttempt, ...], roots: tuple[str, ...], base: str) -> ErrorInfo:
    addresses = list(dict.fromkeys(a.address for a in attempts))
    first = attempts[0]
    frames = _user_frames(first.stack, roots, base)
    message = (
        f"tried to open a network connection to {', '.join(addresses)}; a controller under kamera must reach the "
        "cluster only through the kubernetes client (kamera refused the connection)"
    )
    return ErrorInfo("NetworkAccess", message, _render(frames))


def _process_error(attempts: tuple[ProcessAttempt, ...], roots: tuple[str, ...], base: str) -> ErrorInfo:
    calls = list(dict.fromkeys(a.describe() for a in attempts))
    message = (f"started a process: {'; '.join(calls)}; kamera cannot model what a child process does (it refused "
               "it): fake the tool with `fakes:`, or set `processes: allowed` on the controller to let it run, "
               "contained")
    return ErrorInfo("ProcessStarted", message, _render(_user_frames(attempts[0].stack, roots, base)))


def _timeout_error(raw: _Raw, budget: float, roots: tuple[str, ...], base: str) -> ErrorInfo:
    frames = _user_frames(raw.stuck_at, roots, base)
    message = (
        f"did not return within {budget:g} s of wall-clock time "
        "(time.sleep is virtual; look for a busy loop or real blocking)"
    )
    header = "Where it was when the budget ran out (most recent call last):\n"
    return ErrorInfo("Timeout", message, _render(frames, header))
