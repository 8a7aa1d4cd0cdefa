"""kopf's indices in a step, and what one object puts in them (docs/semantics.md, "kopf": *Index reads*).

Why apart from the event step: every step of an operator with ``@kopf.index`` handlers lists each
indexed resource and indexes every object, so the lists are read by every step. What a handler can
see of them is only the index — its keys and values per index — so kamera keys the step's read by
that content: ``object_entries`` runs kopf's own ``index_resource`` on one object alone and says what
it puts in the indices, as one text, or None when that is not a function of the object alone (a
handler read the clock, drew a random number, touched an index, raised, called out, overran). The
simulation compares those texts before and after a write (is the write seen by the index?) and
digests them for the memo (sim/memo_keys.py, ``IndexReads``).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Set
from typing import Any, Protocol, cast

from kamera_cli.adapters.asyncio.loop import run_async
from kamera_cli.adapters.kopf import deadlines
from kamera_cli.adapters.kopf.clockreads import EVENT_ONLY, PROGRESSION, blind_readers
from kamera_cli.adapters.sandbox.calls import call_sandboxed
from kamera_cli.adapters.sandbox.clockwatch import WatchedClock
from kamera_cli.adapters.sandbox.loading import EntrypointLoader
from kamera_cli.adapters.sandbox.observed import StepSeed


class KopfOperator(Protocol):
    """What indexing needs of the operator (``events.KopfOperator``, which imports this module)."""

    registry: Any
    settings: Any
    memobase: Any
    index_resources: list[Any]
    start_failure: tuple[str, str] | None
    logger: Any

__all__ = ["build_indexers", "index_paths", "object_entries"]


async def build_indexers(operator: KopfOperator) -> Any:
    """kopf's indices as the operator's watch streams would have filled them by now.

    kopf indexes every object of an indexed resource as its events arrive, before any handler
    runs; a step starts from scratch, so it lists each indexed resource (one request per resource:
    ``sim/memo_keys.py`` tells that list from a handler's own by counting) and lets kopf's own
    ``index_resource`` index every object (in name order, so the result is deterministic).
    """
    from kopf._cogs.clients import api
    from kopf._core.engines import indexing

    indexers = indexing.OperatorIndexers()
    indexers.ensure(operator.registry._indexing.get_all_handlers())
    for resource in operator.index_resources:
        listing = await api.get(resource.get_url(namespace=None), settings=operator.settings, logger=operator.logger)
        items = sorted(listing.get("items") or [], key=lambda o: (
            (o.get("metadata") or {}).get("namespace") or "", (o.get("metadata") or {}).get("name") or ""))
        for raw in items:
            await _index_one(operator, indexers, resource, raw, indexing.IndexingMemory())
    return indexers


async def _index_one(operator: KopfOperator, indexers: Any, resource: Any, raw: Any, memory: Any) -> None:
    from kopf._cogs.structs import bodies
    from kopf._core.actions import loggers
    from kopf._core.engines import indexing

    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    raw.setdefault("apiVersion", api_version)  # list items come without them (kopf adds them)
    raw.setdefault("kind", resource.kind)
    body = bodies.Body(raw)
    await indexing.index_resource(
        indexers=indexers, registry=operator.registry, settings=operator.settings, resource=resource,
        raw_event={"type": None, "object": raw}, memory=memory,
        logger=loggers.TerseObjectLogger(body=body, settings=operator.settings),
        memo=cast(Any, copy.copy(operator.memobase)), body=body)


def index_paths(operator: KopfOperator) -> dict[str, tuple[str, str]]:
    """The collection paths ``build_indexers`` lists (as the API server journals them), each with the
    (group, kind) it lists."""
    return {r.get_url(namespace=None): (r.group, r.kind) for r in operator.index_resources}


class _Touched(Exception):
    """An index handler read an index while kamera told its entries (kopf logs it as the handler's failure)."""


class _Opaque(Exception):
    """A value whose content cannot be told as text (an object of the handler's own class)."""


def object_entries(operator: KopfOperator, obj: Mapping[str, Any], budget_seconds: float) -> str | None:
    """What kopf's indexing of ``obj`` alone puts in the operator's indices, as text ("" for nothing),
    or None when that may depend on more than the object (the caller then reads the whole list).

    Run as a step's indexing runs it (kopf's ``index_resource``, a copy of the operator's memo), in the
    controller's sandbox, with whatever API server the caller bound (which must see no request). Not
    a function of the object alone when: a handler may see the time (``deadlines.handler_sees_time``)
    or read the clock, it drew a random number, touched an index (which holds other objects' entries
    in a step), raised (kopf logs it and leaves the object out: a finding of the step), tried the
    network or a process, started a thread or overran its budget, or returned a value of its own class.
    """
    registry = operator.registry
    handlers = registry._indexing.get_all_handlers()
    if operator.start_failure is not None or any(deadlines.handler_sees_time(h) for h in handlers):
        return None
    resource = next((r for r in operator.index_resources if _is_of(r, obj)), None)
    if resource is None:
        return None
    touched: list[str] = []
    done: list[bool] = []

    def run() -> tuple[Any, Any]:
        from kopf._core.engines import indexing

        indexers = indexing.OperatorIndexers()
        indexers.ensure(handlers)
        for indexer in indexers.values():
            indexer.index = _tripwire(touched, done)
        memory = indexing.IndexingMemory()
        noted = _Noted(touched)  # kopf logs a handler that raised, leaves the object out, and goes on
        kopf_log = logging.getLogger("kopf")
        kopf_log.addHandler(noted)
        try:
            run_async(_index_one(operator, indexers, resource, json.loads(json.dumps(obj)), memory))  # as listed
        finally:
            kopf_log.removeHandler(noted)
        return indexers, memory

    clock = WatchedClock(0.0)
    assert isinstance(operator, EntrypointLoader), "a loaded operator"
    seed = StepSeed(b"kamera-index")  # tells whether a handler drew a random number
    record = call_sandboxed(operator, run, budget_seconds=budget_seconds, clock=clock, seed=seed)
    if (record.error is not None or record.timed_out or record.network or record.processes or record.threads
            or seed.drawn or not blind_readers(frozenset(clock.readers), (*EVENT_ONLY, *PROGRESSION))):
        return None
    indexers, memory = record.value
    if memory.indexing_state is not None or touched:
        return None
    done.append(True)  # reading the indices below is kamera's, not a handler's
    try:
        return "\n".join(f"{hid}={_text(list(indexer.index.items()))}" for hid, indexer in sorted(indexers.items())
                         if indexer.index)
    except _Opaque:
        return None


class _Noted(logging.Handler):
    """Notes what kopf logs at WARNING or above while indexing (a handler's failure, which kopf ignores)."""

    def __init__(self, touched: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.touched = touched

    def emit(self, record: logging.LogRecord) -> None:
        self.touched.append(record.levelname)


def _is_of(resource: Any, obj: Mapping[str, Any]) -> bool:
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return bool(obj.get("kind") == resource.kind and obj.get("apiVersion") == api_version)


def _tripwire(touched: list[str], done: list[bool]) -> Any:
    """An empty kopf ``Index`` that notes any read of it in ``touched``, and raises there (until ``done``).

    kopf hands every index to every handler, index handlers too, as they are being filled: a handler
    that reads one sees the entries of objects indexed before its own, which no single object tells.
    """
    from kopf._core.engines import indexing

    def noting(name: str) -> Any:
        read = getattr(indexing.Index, name)

        def method(self: Any, *args: Any) -> Any:
            if not done:  # a handler's read ends it (one that waits for an index to fill would wait out its budget)
                touched.append(name)
                raise _Touched(name)
            return read(self, *args)
        return method

    reads = ("__getitem__", "__iter__", "__len__", "__contains__", "__bool__")  # all a Mapping's reads go through
    return type("Tripwire", (indexing.Index,), {name: noting(name) for name in reads})()


def _text(value: Any) -> str:
    """``value`` as text that tells apart what a handler could tell apart: its type, and its content
    (mappings in key order as kamera compares objects, canonically; sequences in order).

    Raises ``_Opaque`` for anything else: its equality is the class's own business."""
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if value is None or kind in (bool, int, float, str, bytes):
        return f"{name}:{value!r}"
    if isinstance(value, Mapping):
        return f"{name}{{" + ",".join(sorted(f"{_text(k)}:{_text(v)}" for k, v in value.items())) + "}"
    if kind in (list, tuple):
        return f"{name}[" + ",".join(_text(v) for v in value) + "]"
    if isinstance(value, Set) and kind in (set, frozenset):
        return f"{name}{{" + ",".join(sorted(_text(v) for v in value)) + "}"
    if type(value).__module__.startswith("kopf.") and hasattr(value, "__iter__"):
        return f"{name}[" + ",".join(_text(v) for v in value) + "]"  # kopf's Store of one object's value
    raise _Opaque(name)
