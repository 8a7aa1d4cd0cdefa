"""The two values a controller exchanges with kamera: what to reconcile and whether to come back.

Why kamera has its own ``Request``/``Result`` rather than borrowing a framework's: users write
controllers against the plain ``kubernetes`` client, so there is no framework type to borrow.  The
shapes mirror controller-runtime's (``Request{Namespace, Name}``, ``Result{Requeue, RequeueAfter}``)
because that is what people porting Go controllers expect.  A reconcile may also answer with a dict
or with its own Result-like object; :func:`normalise_result` turns every accepted answer into a
:class:`Result` and explains every rejected one.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_MAPPED", "InvalidMapping", "InvalidResult", "Request", "Result", "failure_retry", "normalise_result",
           "requests_from_mapping", "retry_failure"]


@dataclass(frozen=True, slots=True)
class Request:
    """One unit of work: reconcile the object ``namespace/name`` (``namespace`` is None when cluster-scoped)."""

    namespace: str | None
    name: str
    #: delivered by the initial listing after the controller (re)started (only frameworks that tell
    #: a listing from an update, such as kopf, are told; always False for plain reconcilers)
    relisted: bool = field(default=False, compare=False)
    #: delivered by the controller's own requeue timer rather than by an event (only timer-shaped
    #: controllers, such as kopf timers, are told; always False for plain reconcilers)
    timer: bool = field(default=False, compare=False)
    #: what this controller's previous run carried to the requeue (only kamera's framework adapters
    #: carry anything: a kopf timer's retry state, which kopf keeps in memory between ticks)
    carried: str = field(default="", compare=False, repr=False)
    #: what the controller's framework kept in memory for this object after its last step (only
    #: kamera's framework adapters keep anything: a kopf operator's per-object ``memo``)
    remembered: str = field(default="", compare=False, repr=False)
    #: the explorer's branch for this step, among the choices the controller offered ("" when none:
    #: only a program offers choices, which of its threads runs next)
    choice: str = field(default="", compare=False, repr=False)
    #: whether a program's step may be answered by its memo (off for a perturbed step, a counterexample's
    #: verification and the determinism check's second run: those must run the program)
    memo: bool = field(default=True, compare=False, repr=False)

    @property
    def key(self) -> str:
        """``"namespace/name"``, or just ``"name"`` for a cluster-scoped object (the client-go cache key)."""
        return self.name if self.namespace is None else f"{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return self.key


def _seconds(value: object, what: str) -> float | None:
    """Accept int, float or timedelta; reject bools, NaN, infinities and negative delays."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InvalidResult(f"{what} must be a number of seconds or a datetime.timedelta, not {type(value).__name__}")
    if math.isnan(seconds) or math.isinf(seconds):
        raise InvalidResult(f"{what} must be a finite number of seconds, not {seconds!r}")
    if seconds < 0:
        raise InvalidResult(f"{what} must not be negative (got {seconds:g} s)")
    # controller-runtime treats RequeueAfter == 0 as "no timed requeue"; keep one spelling for it.
    return seconds or None


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next.

    ``requeue_after`` (seconds; an int, float or ``timedelta`` is accepted and stored as float) asks
    for the same request again after that much virtual time, which implies a requeue; ``requeue``
    alone asks for it again right away (controller-runtime's ``Requeue: true``, without backoff).
    ``retry=True`` with ``requeue_after`` marks the requeue as a retry of failed work (kopf's delayed
    handlers are retries); without it a ``requeue_after`` from a reconcile that wrote nothing is a
    periodic resync, which does not stop the cluster from being converged.
    """

    requeue: bool = False
    requeue_after: float | None = None
    #: the requeue retries failed work (a backoff after an error), rather than a periodic resync: a
    #: pending retry keeps the cluster from counting as converged until it has run
    retry: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.requeue, bool):
            raise InvalidResult(f"Result.requeue must be True or False, not {self.requeue!r}")
        object.__setattr__(self, "requeue_after", _seconds(self.requeue_after, "Result.requeue_after"))

    @property
    def wants_requeue(self) -> bool:
        return self.requeue or self.requeue_after is not None


#: the attribute a framework adapter sets on the exception a failed step raises (see retry_failure)
_RETRY_ATTRIBUTE = "__kamera_retry__"


@dataclass(frozen=True, slots=True)
class Remembering(Result):
    """A step's result with the memo its object keeps until its next step (None: unchanged): kopf's
    ``memo``, and metacontroller's engine, which steps through the same factory shape."""

    memory: str | None = None


def retry_failure(exc: BaseException, result: Result) -> None:
    """Say how the framework around the code retries the step ``exc`` ends: ``result`` (a timed retry,
    with what the framework keeps in memory) instead of an immediate requeue.

    Why on the exception: the step still fails — its exception is reported (a finding, or an API
    error's requeue note) with the user's traceback — but a framework such as metacontroller puts the
    failed key back through a rate-limited work queue, whose delay and failure count only the adapter
    knows.
    """
    try:
        setattr(exc, _RETRY_ATTRIBUTE, result)
    except (AttributeError, TypeError):  # an exception type without a __dict__: retried at once
        return


def failure_retry(exc: BaseException) -> Result | None:
    """The retry :func:`retry_failure` attached to ``exc``, if any."""
    value = getattr(exc, _RETRY_ATTRIBUTE, None)
    return value if isinstance(value, Result) else None


class InvalidResult(ValueError):
    """A reconcile returned something kamera cannot read as a Result (a controller error finding)."""


_DONE = Result()
_RESULT_KEYS = ("requeue", "requeue_after")


def normalise_result(value: Any) -> Result:
    """Read whatever a reconcile returned as a :class:`Result`; raise :class:`InvalidResult` otherwise.

    Accepted: ``None`` or any falsy value (done); a :class:`Result`; a mapping whose keys are among
    ``requeue`` and ``requeue_after``; any object with a ``requeue`` and/or ``requeue_after``
    attribute (a user's own Result-like class, or one from another framework).
    """
    if isinstance(value, Result):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in _RESULT_KEYS)
        if unknown:
            raise InvalidResult(
                f"reconcile returned a dict with unknown key(s) {', '.join(repr(k) for k in unknown)}; "
                "a result dict may only have 'requeue' (bool) and 'requeue_after' (seconds)"
            )
        return _build(value.get("requeue", False), value.get("requeue_after"), "the returned dict's")
    if value is None or value is False:
        return _DONE
    if hasattr(value, "requeue") or hasattr(value, "requeue_after"):
        return _build(getattr(value, "requeue", False), getattr(value, "requeue_after", None), "the returned object's")
    try:
        falsy = not value
    except Exception:  # a user object whose __bool__ raises is simply not a result
        falsy = False
    if falsy:
        return _DONE
    raise InvalidResult(
        f"reconcile returned {_short_repr(value)} ({type(value).__name__}); return None, a kamera Result, "
        "a dict with 'requeue'/'requeue_after', or an object with those attributes"
    )


def _build(requeue: object, requeue_after: object, whose: str) -> Result:
    if requeue is None:
        requeue = False
    if not isinstance(requeue, bool):
        raise InvalidResult(f"{whose} 'requeue' must be True or False, not {_short_repr(requeue)}")
    after = _seconds(requeue_after, f"{whose} 'requeue_after'")
    if not requeue and after is None:
        return _DONE
    return Result(requeue=requeue, requeue_after=after)


def _short_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------------------------
# what a watch mapper returns
class InvalidMapping(ValueError):
    """A watch mapper returned something other than (namespace, name) pairs (a controller error finding)."""


#: the most requests one mapper call may return (a mapper that fans out to every object of a big list
#: still fits; a runaway generator is a finding, not a kamera that runs out of memory)
MAX_MAPPED = 10_000


def requests_from_mapping(value: Any) -> tuple[Request, ...]:
    """Validate a mapper's answer and turn it into sorted, distinct requests.

    Runs inside the mapper's sandboxed call (``reconcile/running.py``), under its budget: iterating a
    returned generator, or a ``str`` subclass's ``__hash__``, is user code.  Names are copied into
    plain ``str`` so that nothing of the user's classes reaches the explorer.
    """
    if value is None:
        return ()
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise InvalidMapping(
            f"watch mapper returned {type(value).__name__} {_short_repr(value)}; it must return an iterable of "
            "(namespace, name) pairs"
        )
    found: dict[tuple[str, str], Request] = {}
    for count, item in enumerate(value, 1):
        if count > MAX_MAPPED:
            raise InvalidMapping(f"watch mapper returned more than {MAX_MAPPED} (namespace, name) pairs for one "
                                 "object; kamera reads at most that many")
        request = _request_of(item)
        found[(request.namespace or "", request.name)] = request
    return tuple(found[key] for key in sorted(found))


def _request_of(item: Any) -> Request:
    if isinstance(item, Request):
        namespace, name = item.namespace, item.name
    elif isinstance(item, (tuple, list)) and len(item) == 2:
        namespace, name = item
    else:
        raise InvalidMapping(
            f"watch mapper returned the item {_short_repr(item)}; each item must be a (namespace, name) pair")
    if not (namespace is None or isinstance(namespace, str)) or not isinstance(name, str) or not name:
        raise InvalidMapping(
            f"watch mapper returned the pair {_short_repr(item)}; namespace must be a string (or None for a "
            "cluster-scoped object) and name a non-empty string"
        )
    plain = None if namespace is None else str.__str__(namespace)
    return Request(plain or None, str.__str__(name))
