"""A reconcile step: running the controller, what it enqueues, its faults, and its footprint.

Why apart: this is the step the reduction reasons about most (windows from the clock, stored retries,
programs' threads); the protocol around it is ``kube.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

from kamera_cli.apiserver.storage.snapshot import is_record
from kamera_cli.explore import Footprint, Settle, Transition
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import covers
from kamera_cli.sim.footprints import actor_reads, process_of, step_footprint
from kamera_cli.sim.labels import Finding, StepLabel
from kamera_cli.sim.model.acts import ACTORS, Act, join_notes
from kamera_cli.sim.model.core import ModelCore
from kamera_cli.sim.perturbing import stale_views
from kamera_cli.sim.runs import Fault, ReconcileRun
from kamera_cli.sim.runtime import ControllerRuntime
from kamera_cli.sim.state import (
    REQUEUE,
    RESTART,
    STOP,
    TIMER,
    WATCH,
    FaultBook,
    PendingItem,
    SimState,
    later,
    marked_down,
    merge_pending,
)
from kamera_cli.sim.timing import LONG_WINDOW, steady_window, stored_texts
from kamera_cli.sim.traces import thread_process, thread_tokens
from kamera_cli.sim.triggers import MapperFailed


class ReconcileSteps(ModelCore):
    """``KubeModel``'s reconcile steps."""

    def _choices(self, state: SimState, item: PendingItem) -> tuple[str, ...]:
        """The outcomes a built-in's step may have (each an explored branch); () for everyone else."""
        ctrl = self.controllers[item.controller]
        if not ctrl.native:
            at = getattr(ctrl.factory, "choices_at", None)  # a program: which of its threads runs next
            owner = getattr(ctrl.factory, "memory_owner", "") or ""
            return tuple(at(state.remembered(owner, f"{item.namespace}/{item.name}"))) if at and owner else ()
        ref = ObjectRef(ctrl.for_kind.api_version, ctrl.for_kind.kind, item.namespace, item.name)
        return tuple(ctrl.factory.choices(state.snapshot.get(ref)))

    def _fault_variants(self, state: SimState, item: PendingItem, choice: str = "") -> list[Act]:
        p = self.perturbations
        if not p.any:
            return []
        ctrl = self.controllers[item.controller]
        if ctrl.native:
            return []  # the control plane is not the code under test: it is never perturbed
        out: list[Act] = []
        base = Act("reconcile", item.controller, item.namespace, item.name, choice=choice)

        plain: ReconcileRun | None = None

        def plain_run() -> ReconcileRun:
            nonlocal plain
            if plain is None:
                owner = getattr(ctrl.factory, "memory_owner", "") or ""
                plain = ctrl.run(state.snapshot, item, max(state.clock, item.ready_at), None, None, choice,
                                 state.remembered(owner, f"{item.namespace}/{item.name}") if owner else "")
            return plain

        def plain_writes() -> int:
            return plain_run().write_attempts

        for spec in p.conflicts:
            if covers(spec.controller, item.controller) and state.faults.conflicts < spec.max:
                for k in range(1, plain_run().conflictable + 1):
                    out.append(replace(base, fault=Fault("conflict", k)))
                break
        for cspec in p.crashes:
            if covers(cspec.controller, item.controller) and state.faults.crashes < cspec.max:
                n_writes = plain_writes()
                points = cspec.after_writes or tuple(range(n_writes))
                for n in sorted(set(points)):
                    if 0 <= n < max(n_writes, 1):
                        out.append(replace(base, fault=Fault("crash", n)))
                break
        for sspec in p.stale_reads:
            if not covers(sspec.controller, item.controller) or not getattr(ctrl.factory, "stale_views", True):
                continue
            options: list[list[tuple[str, int]]] = [[]]
            for kind in self.stale.kinds(sspec, item.controller):
                if str(kind) in item.fresh:
                    continue  # the write that enqueued this request is in the cache before the event
                # A view may lag by up to what the controller's cache could lag now (it never goes
                # backwards), and no further back than the logged history reaches.
                most = min(state.faults.lag(item.controller, str(kind)),
                           self.stale.available(state.faults, kind, sspec.max_lag))
                options = [o + ([(str(kind), n)] if n else []) for o in options for n in range(most + 1)]
            for combo in options:
                if combo:
                    out.append(replace(base, fault=Fault("stale", lags=tuple(combo))))
            break
        return out

    def _reconcile(self, state: SimState, act: Act) -> Transition[SimState]:
        key = (act.controller, act.namespace, act.name)
        item = next(p for p in state.pending if p.key == key)
        ctrl = self.controllers[act.controller]
        clock = max(state.clock, item.ready_at)
        # a timer's tick (or daemon's wake-up) runs at the instant it was due, wherever the order put it
        at = self._tick_instant(item, clock)
        views = (stale_views(state.snapshot, state.faults, act.fault) if act.fault and act.fault.kind == "stale"
                 else None)
        owner = getattr(ctrl.factory, "memory_owner", "") or ""
        memory_key = f"{act.namespace}/{act.name}"
        remembered = state.remembered(owner, memory_key) if owner else ""
        run = ctrl.run(state.snapshot, item, at, act.fault, views, act.choice, remembered)
        memory = state.memory
        if owner and run.memory is not None and run.memory != remembered:
            memory = state.remembering(owner, memory_key, run.memory)
        findings: list[Finding] = list(run.findings)
        new_items: list[PendingItem] = []
        listed: list[tuple[KindRef, str | None]] = []
        mapped = True
        try:
            new_items.extend(self._triggered(run.snapshot, run.writes, clock + 1, listed))
        except MapperFailed as exc:
            mapped = False
            findings.append(Finding("controller-error", exc.controller, str(exc)))
        faults = state.faults
        note = run.note
        seen: dict[str, int] = {}  # the view this reconcile read, per tracked kind (lag)
        for spec in self.perturbations.stale_reads:
            if covers(spec.controller, act.controller) and not ctrl.native:
                for kind in self.stale.kinds(spec, act.controller):
                    seen[str(kind)] = 0
        if act.fault is not None:
            if act.fault.kind == "conflict":
                faults = replace(faults, conflicts=faults.conflicts + 1)
            elif act.fault.kind == "crash":
                faults = replace(faults, crashes=faults.crashes + 1)
                memory = tuple(e for e in memory if e[0] != owner)  # a restarted process remembers nothing
                if run.down:  # it never started again: no more steps of it on this path (sim/state.py, marked_down)
                    memory = marked_down(memory, self.owner(act.controller))
                else:
                    restart = getattr(ctrl.factory, "restart_keys", None)  # programs: their own keys
                    new_items.extend(
                        PendingItem(act.controller, ns, name, clock + 1, RESTART,
                                    relist=getattr(ctrl.factory, "relists", False))
                        for ns, name in (restart(run.snapshot) if restart
                                         else self.triggers.listed(act.controller,
                                                                   run.snapshot.objects_of(ctrl.for_kind)))
                    )
            elif act.fault.kind == "stale":
                seen.update(dict(act.fault.lags))
        for kind_text, lag in seen.items():
            faults = faults.with_lag(act.controller, kind_text, lag)  # a fresh read (or a restart) catches up
        faults = self.stale.age(faults, run.writes, state.snapshot, run.snapshot)
        changed = any(not is_record(w.ref.api_version, w.ref.kind) for w in run.writes)  # an Event is no change
        if run.requeue_now:
            new_items.append(PendingItem(act.controller, act.namespace, act.name, clock + 1, REQUEUE))
        elif run.requeue_after is not None:
            # a timer that goes on is running: its own writes do not start it again (kopf's
            # spawn_daemons is idempotent per handler), so its next tick is this requeue's
            new_items = [i for i in new_items if not (i.spawn and i.key == item.key)]
            timer_shaped = act.controller in self._anchored
            # unless its own write made its filters stop matching: kopf stops it at that event
            if any(i.source == STOP and i.key == item.key for i in new_items):
                note = "stopped: its filters no longer match"
            else:
                due = item.due_after(clock, run.requeue_after)
                stable = not changed and not run.retry
                reads = run.regions if stable and run.regions else ()
                new_items.append(PendingItem(
                    act.controller, act.namespace, act.name, due, TIMER,
                    stable=stable, woken=timer_shaped, carry=run.carry,
                    anchored=timer_shaped, retry_due=due if run.retry and self._stored_retries(ctrl) else 0,
                    reads=reads, read_digest=ctrl.regions_digest(run.snapshot, reads) if reads else ""))
        if act.controller in self._listed_at_start and self._runs_when_due(item):
            new_items = self._chained(new_items, item, at)
        pending = self._settled(self._running(memory, merge_pending(state.pending, new_items, item)),
                                run.snapshot, run.writes)
        if act.fault is not None and act.fault.kind == "crash" and act.controller in self._listed_at_start:
            # the restarted operator hears of every object anew, at its restart: none waits at the start's instant
            pending = tuple(replace(p, anchored=False) if p.anchored and p.controller == act.controller else p
                            for p in pending)
        self._inherit_idle_actors(state.snapshot, run.snapshot, run.writes)
        new_state = SimState(
            snapshot=run.snapshot,
            pending=pending,
            clock=later(clock),
            next_action=state.next_action,
            steps_since_action=state.steps_since_action + 1,
            faults=faults,
            extra=self.stale.extra(faults),
            memory=memory,
            outcomes=state.outcomes if not act.choice or not ctrl.native else tuple(sorted(
                {**dict(state.outcomes), f"{act.namespace}/{act.name}": act.choice}.items())),
        )
        footprint, cause, settle = self._reconcile_footprint(
            state, act, run, mapped, listed, new_items,
            lambda later: ctrl.run(state.snapshot, item, later, None, None, act.choice, remembered),
            (owner, memory_key, memory != state.memory) if owner else None, faults)
        label_note = (join_notes(f"outcome: {act.choice}", note) if act.choice and ctrl.native
                      else note if act.fault is None else join_notes(act.fault.describe(), note))
        writes, reads = tuple(run.story_writes), run.regions or ()
        label_key = (act.controller, item.key, id(writes), id(reads), label_note, run.error_text, run.output)
        label = self._labels.get(label_key) if self.share_labels else None
        if label is None or label.writes is not writes or label.reads is not reads:
            label = StepLabel(
                kind="reconcile", actor=act.controller, request=item.request_text, writes=writes,
                note=label_note, error=run.error_text, log=run.output, reads=reads)
            if self.share_labels:
                self._labels[label_key] = label
        return Transition(new_state, label, tuple(findings), footprint, cause, settle)

    def _tick_instant(self, item: PendingItem, clock: int) -> int:
        """The instant a step runs at: ``clock``, except for a timer's tick or a daemon's wake-up
        (an anchored item of a timer-shaped controller), which runs at the instant it was due.

        Why: in kopf each timer of each object is an asyncio task that runs when it is due; a tick
        that waits behind other objects' steps is kamera's serialisation (docs/semantics.md, "kopf",
        *Its instant*). Its next tick is already measured from that instant (``due_after``); kopf's
        own instants (a failure's ``started`` and ``delayed``, carried to the retry) now are too, so
        the retry is due exactly when kopf's carried state says it is awake, and the tick does the
        same wherever the order put it: the fingerprint holds ``ready_at`` as its distance from the
        clock, so equal states run it at instants shifted as their clocks are."""
        return item.ready_at if self._runs_when_due(item) else clock

    def _runs_when_due(self, item: PendingItem) -> bool:
        """A timer's tick, a daemon's wake-up, and a kopf event of the start's listing (its instant is
        the start's in every order, and the fingerprint holds it as its distance from the clock)."""
        return item.anchored and (item.controller in self._anchored or item.controller in self._listed_at_start)

    @staticmethod
    def _chained(new_items: list[PendingItem], item: PendingItem, at: int) -> list[PendingItem]:
        """A kopf event step that ran at its anchored instant ``at``: the next event of the same object
        it causes (its own patch, a requeue) is ready at ``at + 1`` and keeps that instant, as kopf's
        worker processes it right after this one (docs/semantics.md, "kopf", *Its retry*)."""
        return [replace(i, ready_at=at + 1, anchored=True) if i.key == item.key and i.source in (WATCH, REQUEUE)
                and not i.spawn else i for i in new_items]

    def _instant_free(self, item: PendingItem, run: ReconcileRun) -> bool:
        """Whether the step does the same wherever the order puts it: it runs at the instant it was due
        (``_tick_instant``), or no read of the clock in it could change what it did (``clock_blind``)."""
        return self._runs_when_due(item) or self.controllers[item.controller].clock_blind(item, run)

    def _stored_retries(self, ctrl: ControllerRuntime) -> bool:
        """Whether a retry of the controller is due at an instant it stored in the cluster (a kopf
        operator's event processing: the handler's ``delayed`` progress), not in its own memory (a
        kopf timer's carry) or nowhere (a reconcile's requeue)."""
        return bool(getattr(ctrl.factory, "windowed", False)) and ctrl.name not in self._anchored

    def _reconcile_footprint(self, state: SimState, act: Act, run: ReconcileRun, mapped: bool,
                             listed: Sequence[tuple[KindRef, str | None]],
                             new_items: Sequence[PendingItem],
                             run_at: Callable[[int], ReconcileRun],
                             memo: tuple[str, str, bool] | None = None,
                             faults: FaultBook | None = None) -> Worked:
        """The step's footprint, or ``None`` with the cause that makes it global (docs/semantics.md);
        with a third part when its clock window needs the step run again at later instants: then the
        footprint and cause are that part's answer, worked out only if the search asks
        (``Transition.settle``: most steps' are never asked, and each answer costs up to a dozen runs).

        ``memo``: the framework's per-object memory the step read (owner, object key) and whether it
        changed it. ``faults``: the perturbation bookkeeping after the step."""
        if not self.footprints:
            return None, "reduction off", None
        cause = self._global_state(state)
        if cause:
            return None, cause, None
        if not mapped:
            return None, "a watch mapper failed", None
        crash = act.fault is not None and act.fault.kind == "crash"
        regions = run.crash_regions if crash and run.crash_regions is not None else run.regions
        if regions is None:
            return None, "the step crashed or never returned", None
        if crash and (run.down or act.controller in self._programs):
            return None, ("a crash after which the process never started again" if run.down
                          else "a program's crash"), None
        ctrl = self.controllers[act.controller]
        native = ctrl.native
        windowed = bool(getattr(ctrl.factory, "windowed", False))
        if run.requeue_after is not None and not native and not windowed:
            return None, "the step set a timer", None
        if act.controller in self._programs:
            # its position after the step, up to renaming, is the same wherever the step runs, unless the
            # program observed the clock, its seed or the server's history (docs/semantics.md)
            if run.memory is None or ctrl.factory.exact_position(run.memory):
                return None, "a program that observed the clock, its random seed or the server's history", None
        elif getattr(ctrl.factory, "time_dependent", False) and not windowed:
            return None, "time-dependent controller (a program)", None
        window: int | None = None
        later: Callable[[], int] | None = None
        narrow = ""
        if run.clocked or run.requeue_after is not None or windowed:
            item = next(p for p in state.pending if p.key == (act.controller, act.namespace, act.name))
            free = self._instant_free(item, run)
            if act.fault is not None and not free:
                # its window would be found by running the perturbed step again at each instant
                return None, "a perturbed kopf step whose outcome depends on the instant it runs at", None
            at = max(state.clock, item.ready_at)
            if free:
                window = _free_window(item, run, at)
            else:
                later = functools.partial(self._window, act.controller, item, run, at, run_at,
                                          lambda: stored_texts(state.snapshot, ctrl.for_kind, item))
            narrow = ("a built-in's outcome depends on the instant it runs at" if native else
                      "a kopf step's outcome depends on the instant it runs at")
            if window is not None and window < 2:
                return None, narrow, None
        extra: set[Any] = set()
        wakes: set[Hashable] = {process_of(i.controller, i.namespace, i.name) for i in new_items}
        for w in run.writes:
            owners = actor_reads(self.registry, run.snapshot, w)
            if owners is None:  # may give the collector or the namespace controller work: wakes them
                wakes |= ACTORS
            else:
                extra.update(owners)
        if crash:  # the restart lists the controller's objects to hear of each anew
            listed = [*listed, *((kind, None) for kind in (ctrl.for_kind, *ctrl.watched_kinds))]
        footprint = step_footprint(self.registry, self.process(act), regions, run.writes, listed, wakes,
                                   run.claims, self.index_marks)
        if footprint is None:
            return _after_window(later, narrow, None, "a list of an unknown collection")
        read, writes = self.stale.tokens(act.controller, state.faults, faults or state.faults, run.writes, act.fault)
        extra |= read
        trace = (self._programs[act.controller].step_trace(run.memory)
                 if run.memory is not None and self._threads_as_processes(act.controller) else None)
        if trace is not None and memo is not None:  # a program's position: what its threads touched
            program = (act.controller, act.namespace, act.name)
            read, written = thread_tokens(program, trace, self._positions.traced(self._programs[act.controller],
                                                                                 run.memory or ""))
            extra |= read
            writes |= written
            # its own requeue is not a wake: the threads its next step may choose are (``_woken_threads``)
            woken = footprint.wakes - {process_of(*program)} | self._woken_threads(state, act, run.memory or "")
            footprint = Footprint(footprint.process, footprint.reads, footprint.writes, footprint.marks, woken)
            memo = None  # the log's digest is no longer one token every step of the program writes
        if memo is not None:  # what kopf keeps per object in memory, shared by its event steps, timers, daemons
            token = ("memo", *memo[:2])
            extra |= {token, ("memo-all", memo[0])}  # a crash of the owner forgets every object's memo
            writes |= {token} if memo[2] else set()
            writes |= {("memo-all", memo[0])} if crash else set()
        if extra or writes or window is not None:
            footprint = Footprint(footprint.process, footprint.reads | extra, footprint.writes | writes,
                                  footprint.marks, footprint.wakes, window)
        return _after_window(later, narrow, footprint, "")

    def _woken_threads(self, state: SimState, act: Act, after: str) -> frozenset[Hashable]:
        """The processes of a program that its step enables: a thread the next step may choose that this
        state's could not, or the program's own step when the next one is no choice."""
        factory = self._programs[act.controller]
        before = set(factory.choices_at(state.remembered(factory.memory_owner, f"{act.namespace}/{act.name}")))
        now = factory.choices_at(after)
        if not now:
            return frozenset({process_of(act.controller, act.namespace, act.name)})
        return frozenset(thread_process(act.controller, act.namespace, act.name, t) for t in now
                         if t not in before and t != act.choice)

    def _window(self, controller: str, item: PendingItem, run: ReconcileRun, clock: int,
                run_at: Callable[[int], ReconcileRun], stored: Callable[[], Sequence[str]] = tuple) -> int:
        """``stable_window`` of the step, once per memo entry and instant: every run of one entry read
        the same regions with the same answers, so running it again at later instants does the same.

        A framework that can tell from what it stored (``stored``: kopf's progress on the object, a
        timer's carried state) for how long its reads of the clock answer the same (``steady_for``)
        is run again at the next instant only, which shows whether it made an instant from the clock
        (docs/semantics.md, "kopf", *Its window*); otherwise at each of the next ``CLOCK_WINDOW``."""
        if self._instant_free(item, run):
            return _free_window(item, run, clock)
        key = (controller, run.memo_serial, clock, item.ready_at if item.anchored else None)
        if run.memo_serial and key in self._windows:
            return self._windows[key]
        window = steady_window(run, clock, run_at,
                               lambda r, at: None if r.requeue_after is None else item.due_after(at, r.requeue_after),
                               getattr(self.controllers[controller].factory, "steady_for", None), stored)
        if run.memo_serial:
            self._windows[key] = window
        return window


#: a step's footprint and cause, or a placeholder of both with the work that gives them
Worked = tuple[Footprint | None, str, Settle | None]


def _after_window(later: Callable[[], int] | None, narrow: str, footprint: Footprint | None, cause: str) -> Worked:
    """``footprint`` and ``cause``, once a window ``later`` works out is known to be wide enough
    (``narrow`` is the cause when it is not, and comes first, as it did when the window was found
    before the rest)."""
    if later is None:
        return footprint, cause, None

    def settle() -> tuple[Footprint | None, str]:
        window = later()
        if window < 2:
            return None, narrow
        if footprint is None:
            return None, cause
        return replace(footprint, window=window), ""

    return None, "", settle


def _free_window(item: PendingItem, run: ReconcileRun, clock: int) -> int:
    """The window of a step no read of the clock could change (``_instant_free``): only its requeue's
    due instant can move."""
    if run.requeue_after is None:
        return LONG_WINDOW
    return max(0, item.due_after(clock, run.requeue_after) - clock - 1) if item.anchored else 0
