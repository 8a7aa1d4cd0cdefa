"""For how many later instants a kopf step's reads of the clock answer as they did, from what kopf stored.

Why: partial-order reduction moves a step that read the clock only over the instants at which it
does the same (sim/timing.py). Finding that out by running the step again at each of the next 24
instants was most of a retrying operator's search (``bench/bench_operators.py``: kopf-retry-3, 1,197
extra runs for 410 states). kopf's progression uses the clock in few ways (``progression.py``,
``execution.py``): it compares each handler's stored ``delayed`` instant with it (sleeping or
awake), subtracts it (the rest of a backoff, ``delayed - now``; a handler's ``runtime``, ``now -
started``) and makes new instants from it (``started``, ``stopped``, ``delayed = now + delay``).
So when nothing else read the clock and no handler can see it (no ``timeout=``, no use of the
``started``/``runtime`` kwargs), the step's outcome at a later instant ``x`` differs from its
outcome now only (a) where some stored ``delayed`` instant ``D`` is crossed (``D > x`` changes),
or (b) by an instant made from ``x`` (which then differs at every instant, the next one too).
The caller rules out (b) by running the step once more at the next instant; this module gives (a)
(docs/semantics.md, "kopf", *Its window*).
"""

from __future__ import annotations

import datetime
import dis
import math
import re
import types
from collections.abc import Iterable
from typing import Any

__all__ = ["handler_sees_time", "later_deadlines", "steady_for"]

#: an ISO 8601 instant as kopf stores it (``format_iso8601``) or as any other JSON text holds one
_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

#: the kwargs through which kopf hands a handler values made from the clock
_TIMED_KWARGS = frozenset({"started", "runtime"})

#: names whose use lets a function read its own locals (and so a ``**kwargs`` it never names)
_INTROSPECTION = frozenset({"locals", "vars", "_getframe", "currentframe", "f_locals", "stack", "trace"})


def later_deadlines(texts: Iterable[str], clock: int) -> list[float]:
    """Every instant written in ``texts`` (kopf's progress records, a timer's carried state, the
    object's annotations and status as JSON) that is later than ``clock``, in seconds since the epoch.
    Every instant, not only ``delayed``: a storage kopf is configured with may name them otherwise,
    and an instant too many only shortens a window."""
    found: list[float] = []
    for text in texts:
        for match in _INSTANT.finditer(text):
            try:
                instant = datetime.datetime.fromisoformat(match.group(0).replace("Z", "+00:00"))
            except ValueError:
                continue
            if instant.tzinfo is None:
                instant = instant.replace(tzinfo=datetime.timezone.utc)
            seconds = (instant - _EPOCH).total_seconds()
            if seconds > clock:
                found.append(seconds)
    return found


def steady_for(texts: Iterable[str], clock: int, longest: int) -> int:
    """How many instants after ``clock`` every comparison ``D > now`` of a stored instant ``D`` with
    the clock answers as at ``clock``: up to the last whole second before the earliest later ``D``
    (``longest`` when there is none)."""
    later = later_deadlines(texts, clock)
    return min(longest, *(math.ceil(d) - clock - 1 for d in later)) if later else longest


def handler_sees_time(handler: Any) -> bool:
    """Whether a kopf handler's outcome may depend on the instant beyond kopf's own comparisons: it
    has a ``timeout=`` (kopf compares its runtime with it), or its function can read the ``started``
    or ``runtime`` kwargs — it names one, or it reads its ``**kwargs`` (or its own locals) at all.
    Anything that is not a plain Python function (a bound method, a partial, a callable object) is
    taken to see it. A handler's own ``datetime.now()`` is seen by the clock's watch instead
    (adapters/sandbox/clockwatch.py)."""
    if getattr(handler, "timeout", None) is not None:
        return True
    fn = getattr(handler, "fn", None)
    if not isinstance(fn, types.FunctionType):
        return True
    return _reads_timed_kwargs(fn.__code__)


def _reads_timed_kwargs(code: types.CodeType) -> bool:
    named = code.co_argcount + code.co_kwonlyargcount
    params = code.co_varnames[:named]
    if _TIMED_KWARGS & set(params):
        return True
    if _INTROSPECTION & set(code.co_names):
        return True
    if not code.co_flags & 0x08:  # CO_VARKEYWORDS: no **kwargs, so the timed kwargs never reach it
        return False
    rest = code.co_varnames[named + (1 if code.co_flags & 0x04 else 0)]  # after *args (CO_VARARGS)
    if rest in code.co_cellvars:  # a nested function closes over it
        return True
    for instruction in dis.get_instructions(code):
        if instruction.opname.startswith("STORE") or instruction.opname.startswith("DELETE"):
            continue
        if "FAST" in instruction.opname or "DEREF" in instruction.opname:
            value = instruction.argval
            if rest == value or (isinstance(value, tuple) and rest in value):
                return True
    return False
