"""kopf timers as controllers of their own: one step is one tick of one ``@kopf.timer`` for one object.

Why a process per (timer, object) instead of running timers inside the operator's event steps: in
a real operator each timer of each object is an asyncio task of its own that interleaves with the
event processing of the same object (kopf spawns it *before* running the changing handlers).  The
orders that matter — a timer ticking before the create handler made the child it reads, or between
two events — are only explored if a tick is a step the explorer can schedule.

A tick is one round of kopf's timer loop (``daemons._timer``) with kopf's own handler execution,
result delivery and patching; the loop's sleep ends the step instead and becomes the next tick's
time on the virtual clock (``Result(requeue_after=...)``; a backoff after a failure is a *retry*,
carrying kopf's in-memory retry state to the next tick).  What a
change to the object does to the timer follows kopf: an essential change (kopf's diff-base essence)
re-arms an ``idle`` timer; any event starts a timer that is not running (spawn) and leaves a
running one alone; a timer without interval and idle runs once per object.  Where this differs from
kopf is written down in docs/controllers.md ("Timers").
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from kamera_cli.adapters.aio import run_async
from kamera_cli.adapters.reconcile import Request, Result

if TYPE_CHECKING:
    from kamera_cli.adapters.kopf import KopfOperator

__all__ = ["KopfTimer", "timer_handlers"]


def timer_handlers(operator: KopfOperator) -> list[Any]:
    """The operator's ``@kopf.timer`` handlers that select its bound resource, in registration order."""
    from kopf._core.intents import handlers

    return [h for h in operator.registry._spawning.get_all_handlers()
            if isinstance(h, handlers.TimerHandler) and h.selector is not None
            and h.selector.check(operator.resource)]


class KopfTimer:
    """One ``@kopf.timer`` of a kopf operator, as a controller: shares the operator's modules."""

    #: the tick compares progress timestamps and sharp grids with the (virtual) clock
    time_dependent = True
    #: its own ticks are told from events (``Request.timer``): an event only arms the timer
    timer_shaped = True
    relists = False

    def __init__(self, operator: KopfOperator, handler_id: str) -> None:
        self.operator = operator
        self.handler_id = handler_id

    def __getattr__(self, name: str) -> Any:  # loading, module set, reload and unload: the operator's
        return getattr(self.operator, name)

    # -- which changes reach the timer --------------------------------------------------------------------
    def events(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
        """How one change to the object reaches this timer: "reset", "spawn" or "" (see the module doc)."""
        if after is None or (after.get("metadata") or {}).get("deletionTimestamp"):
            return ""  # kopf stops the timer; its pending tick finds the object gone or going
        handler = self._handler()
        if handler is None:
            return ""
        if handler.interval is None and handler.idle is None:
            return "spawn" if before is None else ""  # a one-shot timer runs once per object
        if handler.idle is not None and (before is None or self._essence(before) != self._essence(after)):
            return "reset"  # kopf: only essential changes reset idling
        return "spawn"

    def _essence(self, raw: Mapping[str, Any]) -> Any:
        from kopf._cogs.structs import bodies

        settings = self.operator.settings
        registry = self.operator.registry
        resource = self.operator.resource
        extra = (registry._watching.get_extra_fields(resource=resource)
                 | registry._changing.get_extra_fields(resource=resource)
                 | registry._spawning.get_extra_fields(resource=resource))
        body = bodies.Body(cast(Any, dict(raw)))
        essence = settings.persistence.diffbase_storage.build(body=body, extra_fields=extra)
        return settings.persistence.progress_storage.clear(essence=essence)

    def _handler(self) -> Any:
        """The handler by id in the operator's current registry (a restart re-imports the module)."""
        return next((h for h in timer_handlers(self.operator) if h.id == self.handler_id), None)

    # -- one tick -------------------------------------------------------------------------------------------
    def invoke(self, request: Request, client: object) -> Any:
        return self.operator.run_logged(lambda: run_async(self._tick(request)))

    async def _tick(self, request: Request) -> Result | None:
        from kopf._cogs.clients import api
        from kopf._cogs.clients import errors as kerrors
        from kopf._cogs.structs import bodies, ephemera, finalizers, patches
        from kopf._core.actions import loggers
        from kopf._core.intents import causes, registries, stoppers

        operator = self.operator
        handler = self._handler()
        if handler is None:
            return None
        settings = operator.settings
        async with operator.session():
            url = operator.resource.get_url(namespace=request.namespace, name=request.name)
            try:
                raw = await api.get(url, settings=settings, logger=operator.logger)
            except kerrors.APINotFoundError:
                return None  # deleted: kopf cancels the timer with the object
            body = bodies.Body(raw)
            if finalizers.is_deletion_ongoing(body):
                return None
            indexers = await operator.indexers()
            cause = causes.DaemonCause(
                resource=operator.resource, indices=indexers.indices,
                logger=loggers.LocalObjectLogger(body=body, settings=settings), memo=cast(Any, ephemera.Memo()),
                body=body, patch=patches.Patch(body=body), stopper=stoppers.DaemonStopper())
            if not registries.match(handler=handler, cause=cause):
                return None  # kopf stops a timer whose filters no longer match
            if not request.timer:  # armed by an event: wait as kopf's loop would before the first run
                delay = handler.idle
                if delay is None and handler.initial_delay is not None:
                    initial = handler.initial_delay
                    delay = initial(**cause.kwargs) if callable(initial) else initial
                if delay:
                    return _Carrying(requeue_after=max(float(delay), 1.0), armed=True)
            return await self._one_round(handler, cause, request.carried)

    async def _one_round(self, handler: Any, cause: Any, carried: str) -> Result | None:
        """One round of kopf's timer loop (``kopf._core.engines.daemons._timer``), with kopf's own
        handler execution, result delivery and patching; the loop's sleep becomes the next tick.

        kopf keeps the handler's retry state in the timer task's memory between rounds, and
        starts it afresh after a success: it is carried to the next tick (``Request.carried``).
        """
        from kopf._core.actions import application, execution, lifecycles, progression

        operator = self.operator
        loop = asyncio.get_running_loop()
        state = progression.State.from_scratch().with_handlers([handler])
        if carried:
            record = json.loads(carried)
            state = progression.State(
                {handler.id: progression.HandlerState.from_storage(record, basetime=state.basetime).as_active()},
                basetime=state.basetime)
        started = loop.time()
        outcomes = await execution.execute_handlers_once(
            lifecycle=lifecycles.all_at_once, settings=operator.settings, handlers=[handler], cause=cause,
            state=state)
        state = state.with_outcomes(outcomes)
        progression.deliver_results(outcomes=outcomes, patch=cause.patch)
        await application.patch_and_check(settings=operator.settings, resource=cause.resource,
                                          logger=cause.logger, patch=cause.patch, body=cause.body)
        if not state.done:  # a failure or a delay: kopf sleeps out the backoff, then retries
            delays = list(state.delays)
            carry = json.dumps(state[handler.id].as_in_storage(), sort_keys=True)
            return _Carrying(requeue_after=max(min(delays) if delays else 0.0, 1.0), retry=True, carry=carry)
        if handler.interval is not None and handler.sharp:
            return Result(requeue_after=max(handler.interval - (loop.time() - started) % handler.interval, 1.0))
        if handler.interval is not None:
            return Result(requeue_after=max(float(handler.interval), 1.0))
        return None  # idle-only: waits for the next essential change; neither: runs once


@dataclasses.dataclass(frozen=True, slots=True)
class _Carrying(Result):
    """A timer's next tick, with what kopf's timer task would keep in memory until then."""

    #: the handler's retry state after a failure (kopf's ``State`` for this handler, as stored)
    carry: str = ""
    #: armed by an event, not run yet: the first tick is pending work, not a periodic resync
    armed: bool = False
