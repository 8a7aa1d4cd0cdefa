"""Calling one reconcile (or one watch mapper) and classifying what happened.

The call itself runs on the sandbox's worker thread under the wall-clock budget
(``sandbox/calls.py``, which says why a thread); this module turns what it recorded into a
``ReconcileOutcome``: the result, or the user's error with kamera's frames left out.

What is *not* caught: :class:`ReconcileAbort`, the simulator's own control flow (crash injection).
It passes out of :func:`run_reconcile` untouched, after the sandbox has been undone.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from kamera_cli.adapters.sandbox.calls import CallRecord, ReconcileAbort, call_sandboxed, clean_text
from kamera_cli.adapters.sandbox.child_processes import ProcessAttempt
from kamera_cli.adapters.sandbox.fence import NetworkAttempt, VirtualClock
from kamera_cli.adapters.sandbox.frames import render_frames as _render
from kamera_cli.adapters.sandbox.frames import safe_str as _safe_str
from kamera_cli.adapters.sandbox.frames import user_frames as _user_frames
from kamera_cli.adapters.sandbox.frames import user_traceback as _format_tb
from kamera_cli.adapters.sandbox.loading import Mapper, ReconcilerFactory
from kamera_cli.adapters.sandbox.threads import StrayThread
from kamera_cli.adapters.sandbox.values import (
    InvalidMapping,
    InvalidResult,
    Request,
    Result,
    failure_retry,
    normalise_result,
    requests_from_mapping,
)

__all__ = [
    "ErrorInfo",
    "MapOutcome",
    "OutcomeKind",
    "ReconcileAbort",
    "ReconcileOutcome",
    "run_mapper",
    "run_reconcile",
]

OutcomeKind = Literal["ok", "api-error", "exception", "exit", "timeout", "network", "process", "thread"]

_REQUEUE = Result(requeue=True)


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
    within the wall-clock budget), ``thread`` (a thread it started called the API or outlived the step:
    ``sandbox/threads.py``) or ``network`` (tried to open a network connection; takes precedence
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
    out = raw.output
    fenced = _fenced(raw, budget_seconds, roots, base)
    if fenced is not None:
        return ReconcileOutcome(fenced[0], error=fenced[1], network=tuple(a.address for a in raw.network),
                                output=out)
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
    """Run one watch-mapper call under the same sandbox; a bad return value is an ``exception`` outcome.

    The returned value is read into requests inside the call, under its budget, as a reconcile's
    result is: a generator that never ends or a name whose ``__hash__`` hangs is the mapper's timeout,
    not a kamera that hangs (issue #28).
    """
    raw = call_sandboxed(mapper, lambda: _read_mapping(mapper.call(obj)), budget_seconds=budget_seconds,
                         clock=clock, seed=seed)
    roots = mapper.module_set.roots
    base = str(mapper.base_dir)
    fenced = _fenced(raw, budget_seconds, roots, base)
    if fenced is not None:
        return MapOutcome(fenced[0], error=fenced[1], network=tuple(a.address for a in raw.network))
    if raw.error is not None:
        kind, error = _classify(raw.error, roots, base)
        return MapOutcome(kind, error=error)
    if isinstance(raw.value, InvalidMapping):
        return MapOutcome("exception", error=ErrorInfo("InvalidMapping", clean_text(str(raw.value)), ""))
    return MapOutcome("ok", requests=raw.value)


def _read_mapping(value: Any) -> tuple[Request, ...] | InvalidMapping:
    """The mapper's answer as requests, or why it is not one (a value, as ``_read_result``'s refusal)."""
    try:
        return requests_from_mapping(value)
    except InvalidMapping as exc:
        return exc


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


def _classify_raw(exc: BaseException, roots: tuple[str, ...], base: str) -> tuple[OutcomeKind, ErrorInfo]:
    text = _format_tb(exc, roots, base)
    # an exception that stands for another one (kopf's logged handler failure) names that one: the
    # user's exception type, not kamera's wrapper, is what a finding's summary shows
    told = getattr(exc, "reported_type", None)
    name = told if isinstance(told, str) and told else type(exc).__qualname__
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


def _fenced(raw: CallRecord, budget: float, roots: tuple[str, ...],
            base: str) -> tuple[OutcomeKind, ErrorInfo] | None:
    """What the sandbox caught, in order of precedence (a refused connection or process raises, which
    may be what the call then did; a call that overran is reported where it was stuck, whatever its
    threads did); None when it caught nothing."""
    if raw.network:
        return "network", _network_error(raw.network, roots, base)
    if raw.processes:
        return "process", _process_error(raw.processes, roots, base)
    if raw.timed_out:
        return "timeout", _timeout_error(raw, budget, roots, base)
    if raw.threads:
        reached = _reached_out(raw.threads, roots, base)
        if reached is not None:
            return "network", reached
        return "thread", _thread_error(raw.threads, roots, base)
    if raw.closed_output:
        return "exception", _closed_output_error(raw.closed_output, roots, base)
    return None


def _closed_output_error(closes: tuple[tuple[str, tuple[traceback.FrameSummary, ...]], ...],
                         roots: tuple[str, ...], base: str) -> ErrorInfo:
    streams = list(dict.fromkeys(name for name, _ in closes))
    message = (f"closed {' and '.join(streams)}; in a real process every later print to it raises ValueError "
               "(I/O operation on closed file) and the operator's logs are gone: kamera closed nothing and kept "
               "what the step printed")
    return ErrorInfo("OutputClosed", message, _render(_user_frames(closes[0][1], roots, base)))


def _network_error(attempts: tuple[NetworkAttempt, ...], roots: tuple[str, ...], base: str) -> ErrorInfo:
    addresses = list(dict.fromkeys(a.address for a in attempts))
    first = attempts[0]
    frames = _user_frames(first.stack, roots, base)
    message = f"tried to open a network connection to {', '.join(addresses)}; " + _NETWORK_ADVICE
    return ErrorInfo("NetworkAccess", message, _render(frames))


#: what a user can do about a refused connection
_NETWORK_ADVICE = ("a controller under kamera must reach the cluster only through the kubernetes client (kamera "
                   "refused the connection); stand in for the service it calls with `fakes:` (docs/scenario.md, "
                   "spec.fakes)")


def _reached_out(strays: tuple[StrayThread, ...], roots: tuple[str, ...], base: str) -> ErrorInfo | None:
    """A connection tried from threads the step started and that ended with it, told as the step's own.

    Why: ``loop.getaddrinfo`` and ``run_in_executor`` run on the event loop's executor, whose thread the
    step's first use starts; a client resolving a service's name there is reaching the network, and
    "a stray thread" would send the user after threads they never wrote."""
    prefix = "a connection to "
    if any(t.outlived or not t.attempts or not all(a.startswith(prefix) for a in t.attempts) for t in strays):
        return None
    addresses = list(dict.fromkeys(a[len(prefix):] for t in strays for a in t.attempts))
    site = _user_frames(strays[0].site, roots, base)
    where = f" (at {site[-1].filename}:{site[-1].lineno})" if site else ""
    message = (f"tried to open a network connection to {', '.join(addresses)} from a thread it started{where}: "
               "asyncio's getaddrinfo and run_in_executor run on such threads; " + _NETWORK_ADVICE)
    return ErrorInfo("NetworkAccess", message, _render(site, "Where the thread was started (most recent call last):\n"))


def _process_error(attempts: tuple[ProcessAttempt, ...], roots: tuple[str, ...], base: str) -> ErrorInfo:
    calls = list(dict.fromkeys(a.describe() for a in attempts))
    message = (f"started a process: {'; '.join(calls)}; kamera cannot model what a child process does (it refused "
               "it): fake the tool with `fakes:`, or set `processes: allowed` on the controller to let it run, "
               "contained")
    return ErrorInfo("ProcessStarted", message, _render(_user_frames(attempts[0].stack, roots, base)))


def _thread_error(strays: tuple[StrayThread, ...], roots: tuple[str, ...], base: str) -> ErrorInfo:
    first = strays[0]
    site = _user_frames(first.site, roots, base)
    shown = replace(first, site=tuple(site))
    more = f" (and {len(strays) - 1} more thread(s))" if len(strays) > 1 else ""
    message = (f"{shown.describe()}{more}; kamera runs a reconcile as one step and cannot order what the OS "
               "schedules on other threads, so it refused every API call from them and applied nothing: make "
               "the calls in the reconcile itself, or write the controller as a program")
    return ErrorInfo("StrayThread", message, _render(site, "Where the thread was started (most recent call last):\n"))


def _timeout_error(raw: CallRecord, budget: float, roots: tuple[str, ...], base: str) -> ErrorInfo:
    frames = _user_frames(raw.stuck_at, roots, base)
    message = (
        f"did not return within {budget:g} s of wall-clock time "
        "(time.sleep is virtual; look for a busy loop or real blocking)"
    )
    header = "Where it was when the budget ran out (most recent call last):\n"
    return ErrorInfo("Timeout", message, _render(frames, header))
