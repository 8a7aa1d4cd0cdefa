"""kopf operators as controllers: one step is kopf processing one watch event for one object.

Why drive kopf's own per-event processing (``process_resource_event``) rather than call the
handlers: cause detection (create, update, delete, resume, field changes), filters, ``old``/``new``/
``diff``, the progress and last-handled-configuration annotations, ``status.<handler>`` results,
the finalizer for ``on.delete``, retries with ``TemporaryError``/``PermanentError``/``retries=``/
``backoff=`` — all of that is kopf's code, and every one of the bugs kopf operators have lives in
how user handlers meet it.  A re-implementation would check a different program.

A step reads the object as kopf's watch would deliver it (through kopf's own aiohttp client, which
the containment routes into the simulated API server), then lets kopf process that one event with
fresh per-step memories (so a step is a function of what it reads, like any reconcile).  Where kopf
would sleep before retrying a delayed handler, the step ends and asks for a *retry* after that many
virtual seconds instead (kopf's "touch" patch that wakes it up is not written: the retry is
delivered directly).  A handler exception kopf only logs is re-raised after kopf stored its
progress, so it becomes a ``no controller errors`` finding with the handler's traceback.

Timers and daemons are controllers of their own (``kopf/spawning.py``).  Simplifications (written
down in docs/controllers.md): indices are rebuilt from the cluster in every step; the ``memo`` is kept
per object in the explored state; login and startup handlers run once per (re)load (``activities``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import traceback
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, cast

from kamera_cli.adapters.asyncio.loop import run_async
from kamera_cli.adapters.kopf import activities, deadlines, indexing
from kamera_cli.adapters.kopf.clockreads import EVENT_ONLY, PROGRESSION, blind_readers
from kamera_cli.adapters.kopf.filters import metadata_matches
from kamera_cli.adapters.kopf.intercepts import no_spawning, retries_instead_of_sleeps
from kamera_cli.adapters.sandbox.calls import call_sandboxed
from kamera_cli.adapters.sandbox.fence import EMPTY_PLAN, VirtualClock, sandboxed
from kamera_cli.adapters.sandbox.frames import user_traceback
from kamera_cli.adapters.sandbox.loading import IMPORT_EPOCH, IMPORT_SEED, ReconcilerFactory, ReconcileShape
from kamera_cli.adapters.sandbox.modules import is_user_file, module_state
from kamera_cli.adapters.sandbox.values import Remembering, Request, Result, retry_failure
from kamera_cli.errors import EntrypointError

__all__ = ["KopfHandlerError", "KopfOperator", "load_kopf_operator", "supported"]

#: kopf versions whose internals this adapter follows (``process_resource_event`` and friends)
SUPPORTED = ">=1.44,<1.46"


def supported() -> str | None:
    """None when a usable kopf is installed, else the reason (for a clear error or a test skip)."""
    try:
        import kopf
    except ImportError:
        return "kopf is not installed (pip install 'kamera-cli[kopf]')"
    version = getattr(kopf, "__version__", "") or _dist_version()
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if parts and not ((1, 44) <= parts < (1, 46)):
        return f"kopf {version} is not supported (kamera follows kopf {SUPPORTED})"
    return None


def _dist_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kopf")
    except PackageNotFoundError:
        return ""


class KopfHandlerError(Exception):
    """A handler failed and kopf only logged it: re-raised so that it becomes a finding.

    ``reported_type`` is the handler's own exception type, which the finding names (``raised
    ConflictException: Handler 'create_fn' failed ...``); "KopfHandlerError" told a user nothing.
    """

    controller_fault = True

    def __init__(self, message: str, reported_type: str = "") -> None:
        super().__init__(message)
        self.reported_type = reported_type

    def __reduce__(self) -> tuple[type[KopfHandlerError], tuple[str, str]]:
        return KopfHandlerError, (str(self), self.reported_type)


class KopfOperator(ReconcilerFactory):
    """A kopf operator module: its handlers, its settings, and one step per (object, event)."""

    #: a step compares progress timestamps with the (virtual) clock: memoised per clock value
    time_dependent = True
    #: ... and so partial-order reduction reorders a step only over the instants at which running it
    #: again gives the same outcome (sim/timing.py, ``stable_window``)
    windowed = True
    #: the first event of each object after a restart is kopf's initial listing (resume handlers)
    relists = True
    registry: Any
    resource: Any
    #: the operator-wide memo (``@kopf.on.startup``'s ``memo``): each object's memo starts as a copy
    memobase: Any = None
    #: the name under which the explored state keeps its objects' memos (the scenario's controller)
    memory_owner: str = ""
    #: the resources the operator's @kopf.index handlers select (``bind_resource``)
    index_resources: list[Any]
    settings: Any
    host: str
    #: every served resource as kopf's API scanning sees it, by (group, version, plural)
    discovered: dict[tuple[str, str, str], Any]
    #: why the operator never started (summary, details): a login or startup handler failed when it
    #: was first loaded (its steps then do nothing)
    start_failure: tuple[str, str] | None = None
    #: the outcome of the latest start, the first or a restart's after a crash (``reload``): the
    #: simulator makes a restart's failure a finding on that path (sim/runtime.py)
    last_start: tuple[str, str] | None = None
    #: it has ``@kopf.on.cleanup`` handlers to run when it stops gracefully (``stop``); a timer or daemon,
    #: which shares the operator's attributes, says False of itself
    stops_gracefully: bool = False
    #: (registry, whether a handler of it may see the time): ``_handlers_see_time``'s answer
    _seen_time: tuple[Any, bool] | None = None
    #: the other parts of an operator run as one controller per resource (set by the simulator); kopf
    #: runs them in one process, kamera each with its own copy of the modules
    other_parts: tuple[str, ...] = ()
    #: what this part's steps changed at module level that the other parts do not see, for the result's
    #: notes (``_step``)
    unshared: dict[str, None]

    def __init__(self, module: str, base_dir: Any, *, scenario: str, controller: str, host: str,
                 env: Any = None) -> None:
        self.kopf_module = module
        self.host = host
        self.resource = None
        self.index_resources = []
        self.discovered = {}
        self.unshared = {}
        reason = supported()
        if reason is not None:
            raise EntrypointError(reason, scenario=scenario, controller=controller)
        # "operator.py" (a file) or "package.module" / "package:module" (importable)
        entry = f"{module}:__name__" if module.endswith(".py") else f"{module.replace(':', '.')}:__name__"
        super().__init__(entry, base_dir, scenario=scenario, controller=controller, env=env)
        # only the first start decides whether the operator runs at all; a restart's start is the
        # path's (sim/runtime.py reads ``last_start`` after a crash)
        self.start_failure = self.last_start
        self.stops_gracefully = activities.has_cleanup(self.registry)
        # kopf's view of the cluster's resources, from the simulated API's discovery (once: a restart
        # re-imports the operator, but the cluster serves the same resources)
        self.discovered = activities.scan(host, self.settings, self.logger)

    def _tried(self) -> str:
        return f"kopf operator {self.kopf_module!r}"

    # -- loading ------------------------------------------------------------------------------------------------
    def _import(self) -> ModuleType:
        import kopf
        from kopf._core.intents import registries

        registry = kopf.OperatorRegistry()
        previous = registries.get_default_registry()
        registries.set_default_registry(registry)
        try:
            module = super()._import()
        finally:
            registries.set_default_registry(previous)
        self.registry = registry
        self.settings = kopf.OperatorSettings()
        return module

    def _resolve(self, module: ModuleType) -> Any:
        if not any(sub.get_all_handlers() for sub in (self.registry._changing, self.registry._watching,
                                                        self.registry._spawning)):
            raise self._error(f"{self._tried()}: no @kopf.on.create/update/delete/resume/field/event or "
                              "@kopf.timer handler found",
                              "kamera runs the handlers the module registers when it is imported")
        self._shape = ReconcileShape("function", 1, False)
        self._run_startup()
        return self._step

    def reload(self) -> None:
        """A restart after a crash: the operator's modules re-imported, then its login and startup again
        (``last_start`` says how that went).  When they now fail, the operator is down on that path
        only (sim/state.py, marked_down), and every other path goes on with the operator as it was before: its
        modules, registry, settings and memo are put back."""
        kept = (dict(self.module_set.modules), self.module, self._target, self.registry, self.settings,
                self.memobase)
        super().reload()
        if self.last_start is None:
            return
        modules, self.module, self._target, self.registry, self.settings, self.memobase = kept
        self.module_set.forget()
        self.module_set.modules.update(modules)
        self.module_set.activate()

    def _check_shape(self, value: Any, where: str) -> Any:  # pragma: no cover - _resolve never calls it
        return value

    def _run_startup(self) -> None:
        """kopf's login and startup activities, as ``kopf run`` runs them before any watch, with the
        controller's ``env:`` and files in place and time virtual (``activities.start``).  Their failure is kept in
        ``last_start`` (a finding): the operator then never starts, so its steps do nothing."""
        from kopf._cogs.structs import ephemera

        # the operator's memo: what startup handlers put there, every object's memo starts as a copy of
        self.memobase = ephemera.Memo()
        self.last_start = self._activity(
            "a @kopf.on.login or @kopf.on.startup handler",
            lambda: activities.start(self.registry, self.settings, self.memobase, self.host),
            VirtualClock(IMPORT_EPOCH), IMPORT_SEED, importing=True)

    def stop(self, clock: float, seed: bytes, budget_seconds: float) -> tuple[str, str] | None:
        """kopf's graceful stop at virtual time ``clock``: its ``@kopf.on.cleanup`` handlers, with the
        controller's ``env:`` and files, against whatever API server is bound (``activities.cleanup``),
        as one sandboxed call under the controller's budget (a handler that never returns is its
        finding, not a kamera that hangs).  None when they all succeeded, else (summary naming the
        handler and its line, details)."""
        who = "a @kopf.on.cleanup handler"
        record = call_sandboxed(
            self, lambda: activities.cleanup(self.registry, self.settings, self.memobase, self.host),
            budget_seconds=budget_seconds, clock=VirtualClock(clock), seed=seed)
        if record.timed_out:
            return (f"{who} did not return within {budget_seconds:g} s of wall-clock time when the operator stopped "
                    "(time.sleep is virtual; look for a busy loop or real blocking)",
                    "Where it was when the budget ran out (most recent call last):\n"
                    + "".join(traceback.format_list(self._stuck(record.stuck_at))).rstrip())
        failed = record.value if record.error is None else _uncaught(who, record.error)
        return self._judged(who, failed, record.processes, record.network)

    def _stuck(self, stuck_at: Sequence[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
        """Where a handler that overran is: kopf runs a sync handler on a thread of its executor, so the
        call's own stack waits in the event loop; the user's frames are on whichever thread runs them."""
        stacks = [list(stuck_at)] + [traceback.extract_stack(f) for _ident, f in sorted(sys._current_frames().items())]
        for stack in stacks:
            frames = [f for f in stack if is_user_file(f.filename, self.module_set.roots)]
            if frames:
                return frames
        return list(stuck_at)

    def _activity(self, who: str, run_activity: Callable[[], activities.StartFailure | None], clock: VirtualClock,
                  seed: bytes, *, importing: bool) -> tuple[str, str] | None:
        """One of kopf's activities in the controller's sandbox (``_judged``)."""
        plan = EMPTY_PLAN if importing else self.patch_plan()  # at import the module is not bound yet
        with self.scope(), sandboxed(clock, seed, plan, importing=importing) as run:
            run.processes_allowed = self.process.processes_allowed
            try:
                failed = run_activity()
            except (Exception, SystemExit, KeyboardInterrupt) as exc:  # what kopf's handler call lets through
                failed = _uncaught(who, exc)
        return self._judged(who, failed, run.processes, run.network)

    def _judged(self, who: str, failed: activities.StartFailure | None, processes: Sequence[Any],
                network: Sequence[Any]) -> tuple[str, str] | None:
        """What failed in an activity, naming the handler and the line of the user's file that raised, or
        None.  A process or network connection it tried is a failure too (kamera refused it)."""
        if failed is None and processes:
            failed = activities.StartFailure(
                f"{who} started a process",
                f"{processes[0].describe()} (kamera refused it: it cannot model what a child process does)")
        if failed is None and network:
            failed = activities.StartFailure(
                f"{who} tried to open a network connection",
                f"to {', '.join(a.address for a in network)} (kamera refused it)")
        if failed is None:
            return None
        where = self._user_location(failed.error) if failed.error is not None else ""
        detail = failed.detail
        if failed.error is not None and failed.error.__traceback__ is not None:
            # kopf's line about it, then the operator's own frames (not kopf's, asyncio's, kamera's)
            said = detail.split("\nTraceback (most recent call last):", 1)[0]
            detail = f"{said}\n{self.user_traceback(failed.error).rstrip()}"
        return (failed.summary.replace(" failed:", f" failed{where}:", 1), detail)

    def user_traceback(self, exc: BaseException) -> str:
        """``exc``'s traceback as a report shows it: the operator's own frames, paths relative to the
        scenario (kopf's machinery around a handler is dozens of frames that hide the one that raised)."""
        return user_traceback(exc, self.module_set.roots, str(self.base_dir))

    def handles(self, group: str, version: str, plural: str, kind: str) -> bool:
        """Whether any resource handler of the operator selects this resource."""
        resource = self._resource(group, version, plural, kind, True)
        for sub in (self.registry._changing, self.registry._watching, self.registry._spawning):
            if any(h.selector is not None and h.selector.check(resource) for h in sub.get_all_handlers()):
                return True
        return False

    def selectors(self) -> list[str]:
        """What the operator's resource handlers select, as a user wrote it (``group/version name``;
        a part left open as ``*``): named when no resource of the scenario matches."""
        out: list[str] = []
        for sub in (self.registry._changing, self.registry._watching, self.registry._spawning):
            for h in sub.get_all_handlers():
                sel = h.selector
                if sel is None or sel.fn is not None:
                    continue
                name = sel.any_name or sel.plural or sel.kind or sel.singular or sel.shortcut or sel.category
                text = f"{sel.group if sel.group is not None else '*'}/{sel.version or '*'} {str(name or '*')!r}"
                if text not in out:
                    out.append(text)
        return out

    def handled_resources(self, candidates: list[tuple[str, str, str, str, bool]]) -> list[int]:
        """Which of ``candidates`` (group, version, plural, kind, namespaced) the handlers select."""
        return [i for i, (g, v, p, k, _ns) in enumerate(candidates) if self.handles(g, v, p, k)]

    def bind_resource(self, group: str, version: str, plural: str, kind: str, namespaced: bool,
                      candidates: Sequence[tuple[str, str, str, str, bool]] = ()) -> None:
        """The resource this controller entry handles; ``candidates`` (every resource of the scenario)
        are searched for the ones the operator's ``@kopf.index`` handlers select."""
        self.resource = self._resource(group, version, plural, kind, namespaced)
        self.index_resources = []
        seen: set[tuple[str, str]] = set()
        for g, v, p, k, ns in candidates:
            res = self._resource(g, v, p, k, ns)
            if (g, k) not in seen and any(h.selector is not None and h.selector.check(res)
                                          for h in self.registry._indexing.get_all_handlers()):
                seen.add((g, k))  # a versionless selector: the preferred (first) version only
                self.index_resources.append(res)

    async def indexers(self) -> Any:
        """kopf's indices as the operator's watch streams would have filled them by now (``indexing``)."""
        return await indexing.build_indexers(self)

    def index_paths(self) -> dict[str, tuple[str, str]]:
        """The collections each step lists for its indices, with their (group, kind) (``indexing``)."""
        return indexing.index_paths(self)

    def index_entries(self, obj: Mapping[str, Any], budget_seconds: float) -> str | None:
        """What indexing ``obj`` alone puts in the operator's indices, or None when that may depend on
        more than the object (``indexing.object_entries``)."""
        return indexing.object_entries(self, obj, budget_seconds)

    def _resource(self, group: str, version: str, plural: str, kind: str, namespaced: bool) -> Any:
        """kopf's ``Resource`` for a served resource: the one kopf's scanning found (``discovered``)."""
        found = self.discovered.get((group, version, plural))
        if found is not None:
            return found
        from kopf._cogs.structs import references

        return references.Resource(group=group, version=version, plural=plural, kind=kind, namespaced=namespaced,
                                   preferred=True, verbs=frozenset({"list", "watch", "patch", "get"}))

    def events(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
        """Which changes reach kopf's event processing: those of an object some handler's label and
        annotation filters select (before or after the change), or that carries kopf's finalizer.

        kopf processes every event of a watched resource, but for an object no handler selects it
        does nothing; leaving those steps out keeps, say, every Namespace of the cluster from being a
        step of an operator that handles only the labelled ones.
        """
        handlers = [h for sub in (self.registry._changing, self.registry._watching, self.registry._spawning)
                    for h in sub.get_all_handlers() if h.selector is None or h.selector.check(self.resource)]
        finalizer = self.settings.persistence.finalizer
        for obj in (before, after):
            if obj is None:
                continue
            if finalizer in ((obj.get("metadata") or {}).get("finalizers") or ()):
                return "event"
            if any(metadata_matches(h, obj) for h in handlers):
                return "event"
        return ""

    def spawning_handlers(self, kind: str) -> list[str]:
        """Ids of the operator's ``@kopf.daemon`` (kind "daemon") or ``@kopf.timer`` handlers for the bound resource."""
        from kopf._core.intents import handlers

        cls = handlers.DaemonHandler if kind == "daemon" else handlers.TimerHandler
        return [str(h.id) for h in self.registry._spawning.get_all_handlers()
                if isinstance(h, cls) and h.selector is not None and h.selector.check(self.resource)]

    # -- one step -----------------------------------------------------------------------------------------------
    logger = logging.getLogger("kopf.objects")

    def clock_blind(self, readers: frozenset[str], carried: str, carry: str) -> bool:
        """Whether a step whose clock was read only by ``readers`` does the same at every instant.

        Reads that cannot matter: asyncio's and the virtual-time loop's scheduling (they compare loop
        times with deadlines taken from the same clock, so every one moves with the instant), the log
        records' timestamps (the step's log, not the cluster), kopf's credential vault (kamera's
        credentials never expire), the Events kopf posts (records, outside the state). Anything else —
        kopf's progress timestamps, a handler's own ``datetime.now()`` — may, and the step is then run
        again at later instants to know. An event step also reads it in kopf's daemon memory (the idle
        time it notes lives in a per-step memory that is thrown away: timers are controllers of their
        own). ``carried``/``carry``: a timer's retry state (timers only).
        """
        return blind_readers(readers, EVENT_ONLY)

    def steady_for(self, readers: frozenset[str], stored: Sequence[str], clock: int, longest: int) -> int | None:
        """For how many instants after ``clock`` the step's reads of the clock answer as they did, known
        from what kopf stored (``stored``: the object's annotations and status, a timer's carried state),
        or None when that cannot be told without running it again (``kopf/deadlines.py``): something
        besides kopf's progression read the clock, or a handler can see the time. The caller still runs
        it once more at the next instant: an instant the step made from the clock differs there."""
        if not blind_readers(readers, (*EVENT_ONLY, *PROGRESSION)) or self._handlers_see_time():
            return None
        return deadlines.steady_for(stored, clock, longest)

    def _handlers_see_time(self) -> bool:
        """Whether any of the operator's handlers may see the time (``deadlines.handler_sees_time``),
        once per registry (a restart re-imports the module into a new one)."""
        registry = self.registry
        if self._seen_time is None or self._seen_time[0] is not registry:
            subs = (registry._changing, registry._watching, registry._spawning, registry._indexing)
            self._seen_time = (registry, any(deadlines.handler_sees_time(h) for sub in subs
                                             for h in sub.get_all_handlers()))
        return self._seen_time[1]

    def run_logged(self, run: Callable[[], Any]) -> Any:
        """Run one step of kopf's; what kopf only logs as a handler failure is raised as a finding."""
        capture = activities.LogCapture()
        capture.format_exc = self.user_traceback
        kopf_log = logging.getLogger("kopf")
        kopf_log.addHandler(capture)
        # `kopf run` logs at INFO (kopf's loggers.configure sets the root logger's level): what it logs
        # about an object at the posting level ("Handler 'x' succeeded.") is posted as an Event, so it
        # must be emitted, and what the operator logs at INFO is in its log (the step's, calls.py)
        root = logging.getLogger()
        levels = [(logger, logger.level) for logger in (kopf_log, root) if logger.getEffectiveLevel() > logging.INFO]
        for logger, _ in levels:
            logger.setLevel(logging.INFO)
        try:
            value = run()
        finally:
            kopf_log.removeHandler(capture)
            for logger, level in levels:
                logger.setLevel(level)
        if capture.failures:
            first = capture.errors[0] if capture.errors else None
            failed = KopfHandlerError("\n\n".join(capture.failures),
                                      type(first).__qualname__ if first is not None else "PermanentError")
            if isinstance(value, Result) and value.requeue_after:
                # kopf retries the handler after its backoff, from the state it stored (an event's
                # progress, a timer's carried retry state), not at once (docs/semantics.md, "kopf")
                retry_failure(failed, value)
            raise failed
        return value

    def _step(self, request: Request) -> Any:
        if self.start_failure is not None:
            return None  # kopf never got past its login or startup: no watch, no handler
        kept: list[str] = []

        def run() -> list[float]:
            with retries_instead_of_sleeps() as delays, no_spawning():
                kept.append(run_async(self._process(request)))
            return delays

        before = module_state(self.module_set.modules.values()) if self.other_parts else None
        try:
            delays = self.run_logged(run)
        finally:
            if before is not None:
                self._unshared(before)
        memory = kept[0] if kept else None
        if delays:
            return Remembering(requeue_after=max(1.0, min(delays)), retry=True, memory=memory)
        return Remembering(memory=memory)

    def _unshared(self, before: dict[str, Any]) -> None:
        """A module global one part's handlers change (a dict of configs its create handler fills) is what
        another part's handlers read in kopf's one process, and here they read their own copy: say so,
        since a result that depends on it may be false (docs/controllers.md, "kopf operators")."""
        after = module_state(self.module_set.modules.values())
        for name in sorted(name for name in {*before, *after} if before.get(name) != after.get(name)):
            self.unshared.setdefault(name)

    # -- the object's memo between steps ------------------------------------------------------------------------
    def restore_memo(self, memo: Any, remembered: str) -> None:
        """What the object's memo held after its last step (``Request.remembered``) back into ``memo``."""
        if remembered:
            memo.update(json.loads(remembered))

    def keep_memo(self, memo: Any) -> str:
        """The object's memo as kamera keeps it between steps: the entries a handler set or changed
        (not the ones copied from the operator's memo), as canonical JSON; entries whose values are
        not JSON (a thread, a client) cannot be part of the explored state and are left out."""
        kept = {}
        for key, value in memo.items():
            if key in self.memobase and self.memobase[key] is value:
                continue
            try:
                kept[str(key)] = json.loads(json.dumps(value, sort_keys=True))
            except (TypeError, ValueError):
                continue
        return json.dumps(kept, sort_keys=True, separators=(",", ":")) if kept else ""

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[Any]:
        """kopf's context for one step: a fresh aiohttp session (routed in-process) in a vault, and
        the queue of Events to post (kopf.info/warn/event, and log lines at the posting level).

        The Events the step queued are posted at its end with kopf's own ``post_event``, as kopf's
        background poster would: they are stored as ``v1/Event`` objects (records, not state:
        docs/semantics.md).
        """
        from kopf._cogs.clients import events
        from kopf._core.engines import posting

        assert self.resource is not None, "bind_resource() first"
        async with activities.connected(self.host):
            queue: asyncio.Queue[Any] = asyncio.Queue()
            posting.settings_var.set(self.settings)
            posting.event_queue_var.set(queue)
            posting.event_queue_loop_var.set(asyncio.get_running_loop())
            yield queue
            await asyncio.sleep(0)  # events enqueued from handler threads arrive through the loop
            resource = self._resource("", "v1", "events", "Event", True)
            while not queue.empty():
                event = queue.get_nowait()
                await events.post_event(ref=event.ref, type=event.type, reason=event.reason, message=event.message,
                                        resource=resource, settings=self.settings, logger=self.logger)

    async def _process(self, request: Request) -> str:
        """Process the object's event; the object's memo as kept between steps ("" when gone)."""
        from kopf._cogs.clients import api
        from kopf._cogs.clients import errors as kerrors
        from kopf._core.actions import lifecycles
        from kopf._core.reactor import inventory, processing

        assert self.resource is not None, "bind_resource() first"
        async with self.session() as event_queue:
            url = self.resource.get_url(namespace=request.namespace, name=request.name)
            try:
                raw = await api.get(url, settings=self.settings, logger=self.logger)
            except kerrors.APINotFoundError:
                return ""  # gone: a real watch would deliver DELETED, and kopf forgets the object
            indexers = await self.indexers()
            memories = inventory.ResourceMemories()
            memory = await memories.recall(raw, memobase=self.memobase, noticed_by_listing=request.relisted)
            self.restore_memo(memory.memo, request.remembered)
            await processing.process_resource_event(
                lifecycle=lifecycles.get_default_lifecycle(),
                indexers=indexers,
                registry=self.registry,
                settings=self.settings,
                memories=memories,
                memobase=cast(Any, self.memobase),  # kopf copies it into the object's memory
                resource=self.resource,
                # None: kopf's initial listing after a (re)start, where resume handlers run
                raw_event={"type": None if request.relisted else "MODIFIED", "object": raw},
                event_queue=event_queue,
                no_throttling=True,
            )
            return self.keep_memo(memory.memo)


def _uncaught(who: str, exc: BaseException) -> activities.StartFailure:
    """An exception kopf's handler call does not catch (``SystemExit``, ``KeyboardInterrupt``), or one
    raised around it: the activity's failure all the same."""
    return activities.StartFailure(f"{who} failed: it raised {type(exc).__name__}, which kopf does not catch",
                                   "".join(traceback.format_exception(exc)).rstrip(), exc)


def load_kopf_operator(module: str, base_dir: Any, *, scenario: str, controller: str, host: str,
                       env: Any = None) -> KopfOperator:
    """Import a kopf operator module (its handlers register into a registry of its own)."""
    return KopfOperator(module, base_dir, scenario=scenario, controller=controller, host=host, env=env)

