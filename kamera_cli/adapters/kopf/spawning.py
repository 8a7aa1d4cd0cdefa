"""kopf timers and daemons as controllers of their own: one step is one tick of one ``@kopf.timer``,
or one wake-up of one ``@kopf.daemon``, for one object.

Why a process per (handler, object) instead of running them inside the operator's event steps: in
a real operator each timer and daemon of each object is an asyncio task of its own that interleaves
with the event processing of the same object (kopf spawns it *before* running the changing
handlers).  The orders that matter — a timer ticking before the create handler made the child it
reads, or between two events — are only explored if a tick is a step the explorer can schedule.

A tick is one round of kopf's timer loop (``daemons._timer``) with kopf's own handler execution,
result delivery and patching; the loop's sleep ends the step instead and becomes the next tick's
time on the virtual clock (``Result(requeue_after=...)``; a backoff after a failure is a *retry*,
carrying kopf's in-memory retry state to the next tick).  What a change to the object does to the
timer follows kopf: an essential change (kopf's diff-base essence) re-arms an ``idle`` timer; any
event starts a timer that is not running (spawn) and leaves a running one alone; an event after
which its filters no longer match stops it (``match_daemons``); a timer without interval and idle
runs once per object.

A daemon wake-up runs kopf's daemon loop (``daemons._daemon``) — the handler from its start — until
the handler first sleeps (``stopped.wait(t)``, ``time.sleep(t)``, ``await asyncio.sleep(t)``): there
the daemon is told to stop (``stopped`` turns true, as on an operator shutdown), a well-behaved
loop ends, kopf applies its patch, and the next wake-up is due ``t`` virtual seconds later.  Local
variables do not survive between wake-ups (a daemon is re-entered from its start).  Where all this
differs from kopf is written down in docs/controllers.md ("Timers", "Daemons").
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from kamera_cli.adapters.asyncio.loop import run_async
from kamera_cli.adapters.kopf.clockreads import blind_readers
from kamera_cli.adapters.kopf.filters import metadata_matches
from kamera_cli.adapters.sandbox.values import Remembering, Request, Result

if TYPE_CHECKING:
    from kamera_cli.adapters.kopf.events import KopfOperator

__all__ = ["KopfDaemon", "KopfTimer", "spawning_handlers"]


def spawning_handlers(operator: KopfOperator, kind: str) -> list[Any]:
    """The operator's ``@kopf.timer`` (kind "timer") or ``@kopf.daemon`` handlers that select its bound
    resource, in registration order."""
    from kopf._core.intents import handlers

    cls = handlers.TimerHandler if kind == "timer" else handlers.DaemonHandler
    return [h for h in operator.registry._spawning.get_all_handlers()
            if isinstance(h, cls) and h.selector is not None and h.selector.check(operator.resource)]


#: where a tick with no carried retry state reads only times it took itself (``_Spawned.clock_blind``)
_TICK_RELATIVE = ("kopf/_core/actions/progression.py", "kopf/_core/actions/execution.py",
                  "kamera_cli/adapters/kopf/spawning.py")


class _Spawned:
    """One spawning handler of a kopf operator, as a controller: shares the operator's modules."""

    kind = ""

    #: the tick compares progress timestamps and sharp grids with the (virtual) clock
    time_dependent = True
    #: reordered only over the instants at which it has the same outcome (sim/timing.py)
    windowed = True
    #: its own ticks are told from events (``Request.timer``): an event only arms the timer
    timer_shaped = True
    relists = False
    #: the operator, not each of its timers and daemons, runs the cleanup handlers when it stops
    stops_gracefully = False

    def __init__(self, operator: KopfOperator, handler_id: str) -> None:
        self.operator = operator
        self.handler_id = handler_id

    def __getattr__(self, name: str) -> Any:  # loading, module set, reload and unload: the operator's
        return getattr(self.operator, name)

    def clock_blind(self, readers: frozenset[str], carried: str, carry: str) -> bool:
        """As for the operator's event steps (``KopfOperator.clock_blind``); a tick that neither got nor
        passes on retry state also reads the clock harmlessly in kopf's progression and kamera's timer
        round: every time it compares was taken in the same run (the handler's start, its runtime, a
        sharp timer's offset), so all of them move with the instant. A daemon's wake-up always starts
        kopf's daemon loop afresh (kamera carries nothing between wake-ups), so the same holds for
        every one of them: its next wake-up is due its sleep after the instant this one was due."""
        relative = self.kind == "daemon" or (self.kind == "timer" and not carried and not carry)
        return blind_readers(readers, _TICK_RELATIVE if relative else ())

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

    def _matches(self, handler: Any, obj: Mapping[str, Any]) -> bool:
        """Whether kopf would run this timer or daemon for ``obj`` (its label and annotation filters)."""
        return metadata_matches(handler, obj)

    @staticmethod
    def _mismatch(before: Mapping[str, Any] | None) -> str:
        """An event after which the handler's filters do not match: kopf stops a running timer or
        daemon right there (``processing.process_spawning_cause`` calls ``daemons.match_daemons``,
        which stops every running one whose handler the event's matching left out), and a later match
        spawns it afresh (its ``initial_delay`` again).  Nothing can be running for a new object."""
        return "stop" if before is not None else ""

    def _handler(self) -> Any:
        """The handler by id in the operator's current registry (a restart re-imports the module)."""
        return next((h for h in spawning_handlers(self.operator, self.kind) if h.id == self.handler_id), None)

    # -- one tick -------------------------------------------------------------------------------------------
    def invoke(self, request: Request, client: object) -> Any:
        return self.operator.run_logged(lambda: run_async(self._tick(request)))

    async def _tick(self, request: Request) -> Result | None:
        from kopf._cogs.clients import api
        from kopf._cogs.clients import errors as kerrors
        from kopf._cogs.structs import bodies, finalizers, patches
        from kopf._core.actions import loggers
        from kopf._core.intents import causes, registries, stoppers

        operator = self.operator
        handler = self._handler()
        if handler is None or operator.start_failure is not None:
            return None  # gone after a restart, or kopf never started: nothing spawns
        settings = operator.settings
        async with operator.session():
            url = operator.resource.get_url(namespace=request.namespace, name=request.name)
            try:
                raw = await api.get(url, settings=settings, logger=operator.logger)
            except kerrors.APINotFoundError:
                return _Carrying(memory="")  # deleted: kopf cancels the timer and forgets the object
            body = bodies.Body(raw)
            if finalizers.is_deletion_ongoing(body):
                return None
            indexers = await operator.indexers()
            cause = causes.DaemonCause(
                resource=operator.resource, indices=indexers.indices,
                logger=loggers.LocalObjectLogger(body=body, settings=settings),
                memo=cast(Any, copy.copy(operator.memobase)),
                body=body, patch=patches.Patch(body=body), stopper=stoppers.DaemonStopper())
            operator.restore_memo(cause.memo, request.remembered)  # the object's memo, shared with its events
            if not registries.match(handler=handler, cause=cause):
                return None  # kopf stops a timer or daemon whose filters no longer match
            if not request.timer:  # armed by an event: wait as kopf's loop would before the first run
                delay = getattr(handler, "idle", None)
                if delay is None and handler.initial_delay is not None:
                    initial = handler.initial_delay
                    delay = initial(**cause.kwargs) if callable(initial) else initial
                if delay:
                    return _Carrying(requeue_after=max(float(delay), 1.0), armed=True)
            result = await self._one_round(dataclasses.replace(handler, initial_delay=None), cause, request.carried)
            return _Carrying(requeue_after=result.requeue_after if result else None,
                             retry=bool(result and result.retry), carry=str(getattr(result, "carry", "")),
                             memory=operator.keep_memo(cause.memo))

    async def _one_round(self, handler: Any, cause: Any, carried: str) -> Result | None:
        raise NotImplementedError


class KopfTimer(_Spawned):
    """One ``@kopf.timer`` of a kopf operator (see the module doc)."""

    kind = "timer"

    def events(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
        """How one change to the object reaches this timer: "reset", "spawn", "stop" or "" (see the module doc)."""
        if after is None or (after.get("metadata") or {}).get("deletionTimestamp"):
            return ""  # kopf stops the timer; its pending tick finds the object gone or going
        handler = self._handler()
        if handler is None:
            return ""
        if not self._matches(handler, after):
            return self._mismatch(before)
        if handler.interval is None and handler.idle is None:
            return "spawn" if before is None else ""  # a one-shot timer runs once per object
        if handler.idle is not None and (before is None or self._essence(before) != self._essence(after)):
            return "reset"  # kopf: only essential changes reset idling
        return "spawn"

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
class _Carrying(Remembering):
    """A timer's next tick, with what kopf's timer task would keep in memory until then."""

    #: the handler's retry state after a failure (kopf's ``State`` for this handler, as stored)
    carry: str = ""
    #: armed by an event, not run yet: the first tick is pending work, not a periodic resync
    armed: bool = False


class _Parked(BaseException):
    """A daemon told to stop slept again: unwind it, the wake-up is over (not an error of the daemon)."""


class KopfDaemon(_Spawned):
    """One ``@kopf.daemon`` of a kopf operator (see the module doc)."""

    kind = "daemon"

    def events(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
        """kopf spawns a daemon when it first sees the object (or its filters match again after they
        stopped it) and never respawns one that exited."""
        if after is None or (after.get("metadata") or {}).get("deletionTimestamp"):
            return ""
        handler = self._handler()
        if handler is None:
            return ""
        if not self._matches(handler, after):
            return self._mismatch(before)
        return "spawn" if before is None or not self._matches(handler, before) else ""

    async def _one_round(self, handler: Any, cause: Any, carried: str) -> Result | None:
        """kopf's daemon loop (``kopf._core.engines.daemons._daemon``) until the handler first sleeps."""
        from kopf._cogs.aiokits import aioenums, aiotime
        from kopf._core.engines import daemons

        from kamera_cli.adapters.sandbox.fence import active_run

        loop = asyncio.get_running_loop()
        stopper = cause.stopper
        parked: list[float] = []
        backoff: list[float] = []

        def stop() -> None:
            stopper.sync_event.set()
            loop.call_soon_threadsafe(stopper.async_event.set)

        def park(seconds: float | None) -> None:
            if stopper.sync_event.is_set():
                raise _Parked()  # it ignored ``stopped``: end it here
            parked.append(float("inf") if seconds is None else float(seconds))
            stop()

        def sync_wait(waiter: Any, timeout: float | None = None) -> Any:
            park(timeout)
            return waiter

        async def kopf_sleep(delay: float | list[float], wakeup: Any = None) -> float | None:
            value = min(delay) if isinstance(delay, list) else delay
            if value and value > 0 and not parked:  # kopf backs off after a failed run: retried later
                backoff.append(float(value))
                stop()
            return None

        run = active_run()
        real_wait, real_sleep = aioenums.SyncFlagWaiter.wait, aiotime.sleep
        aioenums.SyncFlagWaiter.wait = sync_wait  # type: ignore[assignment, method-assign]
        aiotime.sleep = kopf_sleep  # type: ignore[assignment, unused-ignore]
        if run is not None:
            run.on_sleep = park
        try:
            with contextlib.suppress(_Parked):
                await daemons._daemon(settings=self.operator.settings, handler=handler, cause=cause)
        finally:
            aioenums.SyncFlagWaiter.wait = real_wait  # type: ignore[method-assign]
            aiotime.sleep = real_sleep  # type: ignore[assignment, unused-ignore]
            if run is not None:
                run.on_sleep = None
        if backoff:
            return Result(requeue_after=max(backoff[0], 1.0), retry=True)
        if parked and parked[0] != float("inf"):
            return Result(requeue_after=max(parked[0], 1.0))
        return None  # exited on its own (kopf never respawns it), or waits only for its stop
