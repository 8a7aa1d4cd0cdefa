"""The Kubernetes model the explorer checks: states, enabled steps and their successors.

Why here: this is where the three independent layer-2 packages meet.  The explorer sees only
``initial_states/actions/successor/fingerprint/is_converged``; the API server sees only requests;
the adapters see only one reconcile at a time.  Everything Kubernetes-specific about *scheduling*
— triggers, the coalescing queue, requeues and timers, the built-in actors, external actions and
perturbations — lives in this package.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kamera_cli.apiserver import ApiError, ApiServer, Registry, Snapshot
from kamera_cli.apiserver import actors as api_actors
from kamera_cli.apiserver.storage.snapshot import is_record
from kamera_cli.explore import Footprint, Transition
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import ActionSpec, Perturbations, covers
from kamera_cli.sim import positions, traces
from kamera_cli.sim.footprints import actor_reads, collector_footprint, owner_root, process_of, step_footprint
from kamera_cli.sim.future_keys import group_digest
from kamera_cli.sim.journal import journal_writes, object_names, perform_action, same_content
from kamera_cli.sim.labels import Finding, StepLabel, WriteRec
from kamera_cli.sim.memo_keys import list_scope
from kamera_cli.sim.perturbing import StaleViews, stale_views
from kamera_cli.sim.positions import Positions
from kamera_cli.sim.runtime import ControllerRuntime, Fault, ReconcileRun
from kamera_cli.sim.shipping import Shipping
from kamera_cli.sim.state import (
    REQUEUE,
    RESTART,
    STOP,
    TIMER,
    WATCH,
    FaultBook,
    PendingItem,
    SimState,
    down_owners,
    marked_down,
    merge_pending,
    unsettled,
)
from kamera_cli.sim.symmetry import Canon, Symmetry, state_notes, translate
from kamera_cli.sim.timing import LONG_WINDOW, steady_window, stored_texts
from kamera_cli.sim.traces import thread_process, thread_tokens
from kamera_cli.sim.triggers import MapperFailed, Triggers

_NO_TICKS: Mapping[str, int] = {}


@dataclass(frozen=True, slots=True, order=True)
class Act:
    """One enabled step."""

    kind: str  # reconcile | actor | action
    controller: str = ""
    namespace: str = ""
    name: str = ""
    index: int = 0  # action index
    fault: Fault | None = None
    #: the branch a built-in took among its possible outcomes (a pod's fate), "" when it had none
    choice: str = ""

    def __reduce__(self) -> tuple[type[Act], tuple[str, str, str, str, int, Fault | None, str]]:
        # a split search's workers send every expansion's actions: a tuple pickles several times faster
        return (Act, (self.kind, self.controller, self.namespace, self.name, self.index, self.fault, self.choice))

    def describe(self) -> str:
        if self.kind == "reconcile":
            req = f"{self.namespace}/{self.name}" if self.namespace else self.name
            return (f"{self.controller} reconcile {req}" + (f" [{self.fault.describe()}]" if self.fault else "")
                    + (f" [outcome: {self.choice}]" if self.choice else ""))
        if self.kind == "actor":
            return self.controller
        return f"action #{self.index + 1}"


GC = "garbage-collector"
NS = "namespace-controller"
#: the reduction's processes of the collector and the namespace controller (``KubeModel.process``)
_ACTORS: frozenset[Hashable] = frozenset({("actor", GC, "0"), ("actor", NS, "0")})


class KubeModel:
    """Implements ``kamera_cli.explore.Model`` over ``SimState``."""

    def __init__(
        self,
        *,
        registry: Registry,
        initial: Snapshot,
        controllers: Sequence[ControllerRuntime],
        triggers: Triggers,
        actions: Sequence[ActionSpec] = (),
        perturbations: Perturbations = Perturbations(),
        seed_requests: Sequence[tuple[str, str, str]] = (),
        start_clock: int = 0,
        initial_findings: Sequence[Finding] = (),
        first_ticks: Mapping[str, int] = _NO_TICKS,
    ) -> None:
        #: sweeps whose first tick is pending work some seconds after the start (docs/controllers.md, "Sweeps")
        self._first_ticks = dict(first_ticks)
        #: problems seen before the first step (a watch mapper failing on the initial list)
        self.initial_findings = tuple(initial_findings)
        self.registry = registry
        self.initial = initial
        self.controllers = {c.name: c for c in controllers}
        self.triggers = triggers
        self.action_specs = tuple(actions)
        self.perturbations = perturbations
        #: the stale-read bookkeeping: whose view of which kind may lag (sim/perturbing.py)
        self.stale = StaleViews(perturbations, [c.name for c in controllers],
                                lambda name: (self.controllers[name].for_kind, *self.controllers[name].watched_kinds),
                                lambda name: self.controllers[name].native)
        self._seed_requests = tuple(seed_requests)
        #: equal actions and step labels are one object: a search keeps one per edge, and most edges of
        #: a large search repeat a step already taken elsewhere (memory, not behaviour)
        self._acts: dict[Act, Act] = {}
        self._labels: dict[tuple[Any, ...], StepLabel] = {}
        #: share equal labels (above); off when the search lets go of labels (``SearchSettings.drops_states``):
        #: the table would then be all that keeps them, and every state's objects with them
        self.share_labels = True
        self._start_clock = start_clock
        self._track_steps = any(isinstance(a.at, int) for a in self.action_specs)
        #: report step footprints (off when the search does not reduce: they would go unread)
        self.footprints = True
        self._shipping = Shipping(derived=(_ACTOR_WORK,))
        self._builtins = any(c.native for c in controllers)
        #: timers of their own processes (kopf timers and daemons): their items keep their own schedule
        #: ``_window``'s answers by (controller, memo entry, instant, anchor)
        self._windows: dict[tuple[str, int, int, int | None], int] = {}
        self._anchored = frozenset(c.name for c in controllers if getattr(c.factory, "timer_shaped", False))
        #: the symmetry reduction over generated names (sim/symmetry.py); None: states are compared as
        #: they are (``reduction: none``)
        self.symmetry: Symmetry | None = None
        #: programs whose position a fingerprint takes up to renaming (sim/positions.py), by owner
        self._programs = {c.name: c.factory for c in controllers
                          if getattr(c.factory, "exact_position", None) is not None
                          and getattr(c.factory, "shape", "") == "program" and positions.ENABLED}
        self._positions = Positions()

    def trace_threads(self, on: bool) -> None:
        """Place a program with threads by its trace's normal form (sim/traces.py) rather than its log's
        order: on when the search reduces; ``reduction: none`` keeps every order apart, the reference."""
        self._positions.traces = on

    def trace_notes(self) -> list[str]:
        """The programs whose threads broke the assumption their trace rests on, and how: their logs keep
        the order of their threads from there on (docs/semantics.md, "Thread interleavings")."""
        if not self._positions.traces:
            return []
        return [f"program {name!r}: {why}; its threads' orders count from there on as they ran (the trace "
                "assumes threads share changing Python objects only under locks, docs/semantics.md)"
                for name, factory in sorted(self._programs.items()) for why in getattr(factory, "untraced", {})]

    # ------------------------------------------------------------------ explorer protocol
    def initial_states(self) -> Sequence[SimState]:
        # a controller that tells a listing from an update (kopf) gets its first events as a listing
        items = [PendingItem(c, ns, n, self._start_clock + self._first_ticks.get(c, 0),
                             TIMER if c in self._first_ticks else WATCH,
                             relist=getattr(self.controllers[c].factory, "relists", False),
                             anchored=c in self._anchored)
                 for c, ns, n in self._seed_requests]
        return [SimState(self.initial, merge_pending((), items, None), self._start_clock)]

    def fingerprint(self, state: SimState) -> str:
        if state._fp:
            return state.fingerprint(self._track_steps)
        canon = self.canon(state) if self.symmetry is not None else None
        memory = None
        if self._programs:
            # a program's position up to renaming (sim/positions.py), renamed as the cluster is
            memory = self._positions.memory(state.memory, self._programs, state.snapshot, self.is_converged(state),
                                            canon if canon is not None and canon.names else None)
        return state.fingerprint(self._track_steps, canon, memory)

    def canon(self, state: SimState) -> Canon | None:
        """The state's canonical form under the symmetry reduction (None when it is off)."""
        if self.symmetry is None:
            return None
        return self.symmetry.canon(state.snapshot, state_notes(state, self.symmetry.generated(state.snapshot)))

    def translate(self, act: Act, recorded: SimState, actual: SimState) -> Act:
        """``act``, taken from ``recorded``, for ``actual``: the same state up to a renaming of generated
        names (a path through merged states replays with the names of the states it meets)."""
        before, after = self.canon(recorded), self.canon(actual)
        if before is None or after is None or act.kind != "reconcile":
            return act
        name = translate(before, after, act.name)
        return act if name == act.name else replace(act, name=name)

    # a split search ships states between processes (explore.Portable): a program's position is the
    # digest of its input log, and the log lives in its factory, so it travels with the state
    def pack(self, state: SimState) -> bytes:
        logs = []
        for owner, _key, value in state.memory:
            ctrl = self.controllers.get(owner)
            chain = getattr(ctrl.factory, "log_chain", None) if ctrl is not None else None
            if chain is not None and value:
                logs.append((owner, chain(value)))
        return self._shipping.dumps(state, tuple(logs))

    def unpack(self, blob: bytes) -> SimState:
        state, logs = self._shipping.loads(blob)
        for owner, chain in logs:
            self.controllers[owner].factory.adopt_log(chain)
        assert isinstance(state, SimState)
        return state

    def is_converged(self, state: SimState) -> bool:
        if state.halted:
            return True
        return self.quiescent(state) and state.next_action >= len(self.action_specs)

    def quiescent(self, state: SimState) -> bool:
        if any(not p.stable for p in state.pending):
            return False
        gc, ns = self._actor_work(state.snapshot)
        return not gc and not ns

    def actions(self, state: SimState) -> Sequence[Act]:
        if state.halted:
            return []
        ext = self._external(state)
        if ext == "forced":
            return [Act("action", index=state.next_action)]
        acts: list[Act] = []
        quiet = self.quiescent(state)
        ready = state.ready()
        if not ready and not quiet:
            # Nothing is ready now: time jumps to the earliest timer(s).
            timers = [p for p in state.pending if p.ready_at > state.clock]
            if timers:
                first = min(p.ready_at for p in timers)
                ready = [p for p in timers if p.ready_at == first]
        if not quiet:
            for item in ready:
                choices = self._choices(state, item)
                if choices:
                    acts.extend(Act("reconcile", item.controller, item.namespace, item.name, choice=c)
                                for c in choices)
                    if not self.controllers[item.controller].native:  # a program's threads: perturbed too
                        acts.extend(self._fault_variants(state, item, choices[0]))
                    continue
                act = Act("reconcile", item.controller, item.namespace, item.name)
                acts.append(self._acts.setdefault(act, act))
                acts.extend(self._fault_variants(state, item))
            gc, ns = self._actor_work(state.snapshot)
            if gc:
                acts.append(Act("actor", GC))
            if ns:
                acts.append(Act("actor", NS))
        if ext == "enabled":
            acts.append(Act("action", index=state.next_action))
        return acts

    def process(self, act: Act) -> tuple[str, ...]:
        """Partial-order reduction's process: one reconcile request (its variants are one process)."""
        if act.kind == "reconcile":
            if act.choice and self._threads_as_processes(act.controller):
                return thread_process(act.controller, act.namespace, act.name, act.choice)
            return process_of(act.controller, act.namespace, act.name)
        return (act.kind, act.controller, str(act.index))

    def _threads_as_processes(self, controller: str) -> bool:
        """Whether a program's thread choices are processes of their own (docs/semantics.md, "Threads as
        processes"): with its position a trace, that is when the search reduces."""
        return traces.THREADS and self._positions.traces and controller in self._programs

    def release(self, state: SimState) -> None:
        """The explorer has expanded ``state``: its snapshot's caches (listings, the actors' work) go."""
        state.snapshot.forget_derived()

    def footprint(self, state: SimState, act: Act, transition: Transition[SimState]) -> Footprint | None:
        return transition.footprint

    def unit(self, state: SimState, process: Hashable) -> Hashable:
        """The reduction's unit of a reconcile request: the object at the root of its object's
        controller ownerReferences (a WebApp for its Deployment's, ReplicaSet's and Pods'
        requests), so work on one owned tree is weighed as one; anything else is its own unit."""
        if not (isinstance(process, tuple) and len(process) == 4 and process[0] == "reconcile"):
            return process
        ctrl = self.controllers.get(process[1])
        if ctrl is None or getattr(ctrl, "for_kind", None) is None:
            return process
        return owner_root(self.registry, state.snapshot, ctrl.for_kind, process[2], process[3]) or process

    def group_key(self, state: SimState, processes: frozenset[Hashable], footprint: Footprint) -> str | None:
        """What a future of ``processes`` with union footprint ``footprint`` depends on at ``state``
        (explore.reduction.FutureCache; sim/future_keys.py). None for programs: their positions live
        in their factories' logs, which no token names."""
        if any(getattr(c.factory, "shape", "") == "program" for c in self.controllers.values()):
            return None
        gc, ns = self._actor_work(state.snapshot)
        return group_digest(state, processes, footprint, actor_work=bool(gc or ns), symmetry=self.symmetry is not None)

    def _global_state(self, state: SimState) -> str:
        """Why no step from this state may be reordered ("" when they may; see docs/semantics.md).

        Not with an external action due after a number of steps (every step brings it closer).
        Perturbations no longer make a state global: their bookkeeping is in each step's footprint
        (sim/perturbing.py).
        """
        if self._track_steps or state.halted:
            return "a user action due after a number of steps"
        return ""

    def horizon(self, state: SimState) -> int | None:
        """How many steps can be taken from ``state`` before a pending timer falls due (None: no timer).

        The instant the enabled steps run at is the clock, or the earliest timer's when nothing is
        ready (time jumps there); every step then moves the clock by one second.
        """
        if not state.pending:
            return None
        clock = state.clock
        if all(p.ready_at > clock for p in state.pending):
            clock = min(p.ready_at for p in state.pending)
        later = [p.ready_at for p in state.pending if p.ready_at > clock]
        # (a built-in step that depends on the clock says over how many steps in its footprint's window)
        return min(later) - clock if later else None

    def successor(self, state: SimState, act: Act) -> Transition[SimState]:
        if act.kind == "reconcile":
            return self._reconcile(state, act)
        if act.kind == "actor":
            return self._actor(state, act)
        return self._action(state, act)

    # ------------------------------------------------------------------ helpers
    def _external(self, state: SimState) -> str:
        if state.next_action >= len(self.action_specs):
            return ""
        spec = self.action_specs[state.next_action]
        if spec.at == "any":
            return "enabled"
        if spec.at == "converged":
            return "enabled" if self.quiescent(state) else ""
        assert isinstance(spec.at, int)
        if state.steps_since_action >= spec.at:
            return "forced"
        return "enabled" if self.quiescent(state) else ""

    def _actor_work(self, snapshot: Snapshot) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        # cached per snapshot object (uids matter to the collector, so never by fingerprint); as
        # tuples, and nothing to do as one shared value: every state the search has not expanded yet
        # holds its answer
        def compute(s: Snapshot) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            work = (tuple(api_actors.gc_work(s, self.registry)), tuple(api_actors.namespace_work(s, self.registry)))
            return _IDLE if work == _IDLE else work
        return snapshot.derived(_ACTOR_WORK, compute)

    def _inherit_idle_actors(self, parent: Snapshot, child: Snapshot, writes: Sequence[WriteRec]) -> None:
        """Skip rescanning the cluster when the built-in actors had nothing to do and no write can change that.

        A write ``actor_reads`` finds quiet (nothing deleted, deletion metadata as it was, owners that
        exist, no terminating namespace) gives neither actor work.
        """
        if child is parent or any(actor_reads(self.registry, child, w) is None for w in writes):
            return
        gc, ns = self._actor_work(parent)
        if not gc and not ns:
            child.derived(_ACTOR_WORK, lambda s: _IDLE)

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
                                         else object_names(run.snapshot, ctrl.for_kind))
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
        pending = self._settled(self._running(memory, merge_pending(state.pending, new_items, item)),
                                run.snapshot, run.writes)
        self._inherit_idle_actors(state.snapshot, run.snapshot, run.writes)
        new_state = SimState(
            snapshot=run.snapshot,
            pending=pending,
            clock=clock + 1,
            next_action=state.next_action,
            steps_since_action=state.steps_since_action + 1,
            faults=faults,
            extra=self.stale.extra(faults),
            memory=memory,
            outcomes=state.outcomes if not act.choice or not ctrl.native else tuple(sorted(
                {**dict(state.outcomes), f"{act.namespace}/{act.name}": act.choice}.items())),
        )
        footprint, cause = self._reconcile_footprint(
            state, act, run, mapped, listed, new_items,
            lambda later: ctrl.run(state.snapshot, item, later, None, None, act.choice, remembered),
            (owner, memory_key, memory != state.memory) if owner else None, faults)
        label_note = (_join(f"outcome: {act.choice}", note) if act.choice and ctrl.native
                      else note if act.fault is None else _join(act.fault.describe(), note))
        writes, reads = tuple(run.story_writes), run.regions or ()
        label_key = (act.controller, item.key, id(writes), id(reads), label_note, run.error_text, run.output)
        label = self._labels.get(label_key) if self.share_labels else None
        if label is None or label.writes is not writes or label.reads is not reads:
            label = StepLabel(
                kind="reconcile", actor=act.controller, request=item.request_text, writes=writes,
                note=label_note, error=run.error_text, log=run.output, reads=reads)
            if self.share_labels:
                self._labels[label_key] = label
        return Transition(new_state, label, tuple(findings), footprint, cause)

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
        return item.anchored and item.controller in self._anchored

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
                             faults: FaultBook | None = None) -> tuple[Footprint | None, str]:
        """The step's footprint, or ``None`` with the cause that makes it global (docs/semantics.md).

        ``memo``: the framework's per-object memory the step read (owner, object key) and whether it
        changed it. ``faults``: the perturbation bookkeeping after the step."""
        if not self.footprints:
            return None, "reduction off"
        cause = self._global_state(state)
        if cause:
            return None, cause
        if not mapped:
            return None, "a watch mapper failed"
        crash = act.fault is not None and act.fault.kind == "crash"
        regions = run.crash_regions if crash and run.crash_regions is not None else run.regions
        if regions is None:
            return None, "the step crashed or never returned"
        if crash and (run.down or act.controller in self._programs):
            return None, ("a crash after which the process never started again" if run.down
                          else "a program's crash")
        ctrl = self.controllers[act.controller]
        native = ctrl.native
        windowed = bool(getattr(ctrl.factory, "windowed", False))
        if run.requeue_after is not None and not native and not windowed:
            return None, "the step set a timer"
        if act.controller in self._programs:
            # its position after the step, up to renaming, is the same wherever the step runs, unless the
            # program observed the clock, its seed or the server's history (docs/semantics.md)
            if run.memory is None or ctrl.factory.exact_position(run.memory):
                return None, "a program that observed the clock, its random seed or the server's history"
        elif getattr(ctrl.factory, "time_dependent", False) and not windowed:
            return None, "time-dependent controller (a program)"
        window: int | None = None
        if run.clocked or run.requeue_after is not None or windowed:
            item = next(p for p in state.pending if p.key == (act.controller, act.namespace, act.name))
            if act.fault is not None and not self._instant_free(item, run):
                # its window would be found by running the perturbed step again at each instant
                return None, "a perturbed kopf step whose outcome depends on the instant it runs at"
            window = self._window(act.controller, item, run, max(state.clock, item.ready_at), run_at,
                                  lambda: stored_texts(state.snapshot, ctrl.for_kind, item))
            if window < 2:
                return None, ("a built-in's outcome depends on the instant it runs at" if native else
                              "a kopf step's outcome depends on the instant it runs at")
        extra: set[Any] = set()
        wakes: set[Hashable] = {process_of(i.controller, i.namespace, i.name) for i in new_items}
        for w in run.writes:
            owners = actor_reads(self.registry, run.snapshot, w)
            if owners is None:  # may give the collector or the namespace controller work: wakes them
                wakes |= _ACTORS
            else:
                extra.update(owners)
        if crash:  # the restart lists the controller's objects to hear of each anew
            listed = [*listed, *((kind, None) for kind in (ctrl.for_kind, *ctrl.watched_kinds))]
        footprint = step_footprint(self.registry, self.process(act), regions, run.writes, listed, wakes,
                                   run.claims)
        if footprint is None:
            return None, "a list of an unknown collection"
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
        return footprint, ""

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
            # no read of the clock could change what it did: only its requeue's due instant can move
            if run.requeue_after is None:
                return LONG_WINDOW
            return max(0, item.due_after(clock, run.requeue_after) - clock - 1) if item.anchored else 0
        key = (controller, run.memo_serial, clock, item.ready_at if item.anchored else None)
        if run.memo_serial and key in self._windows:
            return self._windows[key]
        window = steady_window(run, clock, run_at,
                               lambda r, at: None if r.requeue_after is None else item.due_after(at, r.requeue_after),
                               getattr(self.controllers[controller].factory, "steady_for", None), stored)
        if run.memo_serial:
            self._windows[key] = window
        return window

    def _actor(self, state: SimState, act: Act) -> Transition[SimState]:
        gc, ns = self._actor_work(state.snapshot)
        work = (gc if act.controller == GC else ns)[0]
        server = ApiServer(self.registry, state.snapshot, now=lambda: state.clock)
        step = api_actors.gc_step if act.controller == GC else api_actors.namespace_step
        step(server, work)
        writes = journal_writes(server)
        findings: list[Finding] = []
        new_items: list[PendingItem] = []
        listed: list[tuple[KindRef, str | None]] = []
        try:
            new_items = self._triggered(server.snapshot, writes, state.clock + 1, listed)
        except MapperFailed as exc:
            findings.append(Finding("controller-error", exc.controller, str(exc)))
        faults = self.stale.age(state.faults, writes, state.snapshot, server.snapshot)
        new_state = SimState(
            snapshot=server.snapshot,
            pending=self._settled(self._running(state.memory, merge_pending(state.pending, new_items, None)),
                                  server.snapshot, writes),
            clock=state.clock + 1,
            next_action=state.next_action,
            steps_since_action=state.steps_since_action + 1,
            faults=faults,
            extra=self.stale.extra(faults),
            outcomes=state.outcomes,
            memory=state.memory,
        )
        what = work.describe()
        what = what[len(act.controller) + 2:] if what.startswith(act.controller + ": ") else what
        label = StepLabel(kind=act.controller, actor=act.controller, request=what, writes=tuple(writes))
        footprint: Footprint | None = None
        if self.footprints and not findings and not self._global_state(state):
            wakes = self._wakes(server.snapshot, writes, new_items)
            footprint = self._viewed((collector_footprint(self.registry, self.process(act), work.target, writes,
                                                          listed, wakes)
                                      if act.controller == GC else
                                      step_footprint(self.registry, self.process(act), [("obj", work.target)], writes,
                                                     listed, wakes)), writes)
        return Transition(new_state, label, tuple(findings), footprint, act.controller)

    def _viewed(self, footprint: Footprint | None, writes: Sequence[WriteRec]) -> Footprint | None:
        """``footprint`` of a step that has no view of its own (the collector, the namespace controller,
        a user's action), with the views its writes make lag (sim/perturbing.py)."""
        if footprint is None or not self.stale.watchers:
            return footprint
        _reads, lagged = self.stale.tokens("", FaultBook(), FaultBook(), writes, None)
        return replace(footprint, writes=footprint.writes | lagged) if lagged else footprint

    def _wakes(self, after: Snapshot, writes: Sequence[WriteRec], new_items: Sequence[PendingItem]) -> set[Hashable]:
        """The processes a step's writes wake: the requests they enqueue, and the collector and the
        namespace controller when a write may change their work (``actor_reads``)."""
        wakes: set[Hashable] = {process_of(i.controller, i.namespace, i.name) for i in new_items}
        if any(actor_reads(self.registry, after, w) is None for w in writes):
            wakes |= _ACTORS
        return wakes

    def _action_footprint(self, state: SimState, act: Act, after: Snapshot, writes: Sequence[WriteRec],
                          new_items: Sequence[PendingItem]) -> Footprint | None:
        """A user action due at any step, applied without a refusal: it reads what it names (and its
        namespace), writes what it wrote, and wakes the next action (docs/semantics.md)."""
        spec = self.action_specs[act.index]
        if not self.footprints or spec.at != "any" or self._global_state(state):
            return None
        named = [spec.target] if spec.target is not None else [ObjectRef.of(o) for o in spec.objects]
        for ref in named:
            info = self.registry.lookup(ref.api_version, ref.kind)
            if not ref.name or info is None or info.namespaced != bool(ref.namespace):
                return None  # a generated name, an unknown kind, a namespace left to defaulting
        reads: list[tuple[Any, ...]] = [("obj", ref) for ref in named]
        reads += [("obj", ObjectRef("v1", "Namespace", "", ref.namespace)) for ref in named if ref.namespace]
        wakes = self._wakes(after, writes, new_items)
        if act.index + 1 < len(self.action_specs):
            wakes.add(self.process(Act("action", index=act.index + 1)))
        return self._viewed(step_footprint(self.registry, self.process(act), reads, writes, (), wakes), writes)

    def _action(self, state: SimState, act: Act) -> Transition[SimState]:
        spec = self.action_specs[act.index]
        server = ApiServer(self.registry, state.snapshot, now=lambda: state.clock)
        error = ""
        allowed = False
        try:
            perform_action(server, spec)
        except ApiError as exc:
            error = f"{exc}"
            allowed = spec.refusal_allowed(exc.status)
        writes = journal_writes(server)
        findings: list[Finding] = []
        new_items: list[PendingItem] = []
        if error and not allowed:
            findings.append(Finding("action-failed", spec.name, f"action {spec.name!r} failed: {error}"))
        elif not error:
            try:
                new_items = self._triggered(server.snapshot, writes, state.clock + 1)
            except MapperFailed as exc:
                findings.append(Finding("controller-error", exc.controller, str(exc)))
        faults = state.faults if error else self.stale.age(state.faults, writes, state.snapshot, server.snapshot)
        new_state = SimState(
            snapshot=server.snapshot if not error else state.snapshot,
            pending=self._settled(self._running(state.memory, merge_pending(state.pending, new_items, None)),
                                  server.snapshot, writes),
            clock=state.clock + 1,
            next_action=state.next_action + 1,
            steps_since_action=0,
            faults=faults,
            # a refusal the action allows (mayFail) is one of its outcomes: the execution goes on
            halted="" if allowed else error,
            extra=self.stale.extra(faults),
            outcomes=state.outcomes,
            memory=state.memory,
        )
        label = StepLabel(kind="action", actor=f"action {spec.name!r}", writes=tuple(writes),
                          note=("refused, as it may be: " if allowed else "failed: ") + error if error else "")
        footprint = None if error or findings else self._action_footprint(state, act, server.snapshot, writes,
                                                                          new_items)
        return Transition(new_state, label, tuple(findings), footprint, "a user action")

    def _triggered(self, snapshot: Snapshot, writes: Sequence[WriteRec], ready_at: int,
                   listed: list[tuple[KindRef, str | None]] | None = None) -> list[PendingItem]:
        """The requests the writes enqueue; ``listed`` collects the listings a watch mapping read."""
        def lister(kind: KindRef, namespace: str | None) -> list[tuple[str, str]]:
            if listed is not None:
                listed.append((kind, namespace))
            return object_names(snapshot, kind, namespace)

        items: list[PendingItem] = []
        track = bool(self.perturbations.stale_reads)
        spawns: set[tuple[str, str, str]] = set()
        stops: set[tuple[str, str, str]] = set()
        for w in writes:
            if w.refused:
                continue
            fresh = (str(w.ref.kind_ref),) if track else ()
            for req in self.triggers.requests(w.before, w.after, lister, spawns, stops):
                if req in stops:  # a timer or daemon whose filters stopped matching ends at this event
                    stops.discard(req)
                    items.append(PendingItem(*req, ready_at, STOP))
                    continue
                # a timer or daemon an event starts (or re-arms) keeps its own schedule from the event's
                # instant, as kopf's task does: its first tick is due then, whenever it runs
                items.append(PendingItem(*req, ready_at, WATCH, fresh=fresh, spawn=req in spawns,
                                         anchored=req[0] in self._anchored))
        return items

    def _running(self, memory: tuple[tuple[str, str, str], ...],
                 pending: tuple[PendingItem, ...]) -> tuple[PendingItem, ...]:
        """``pending`` without the work of controllers that are down on this path (sim/state.py, marked_down)."""
        gone = down_owners(memory)
        if not gone:
            return pending
        return tuple(p for p in pending if self.owner(p.controller) not in gone)

    def _settled(self, pending: tuple[PendingItem, ...], snapshot: Snapshot,
                 writes: Sequence[WriteRec]) -> tuple[PendingItem, ...]:
        """``pending`` after a step that wrote ``writes``: a stable timer whose reads changed is not
        stable any more (sim/state.py, ``unsettled``)."""
        if not writes:
            return pending
        written = {(w.ref.api_version.rpartition("/")[0], w.ref.kind, w.ref.namespace) for w in writes}

        def changed(p: PendingItem) -> bool:
            # digested again only when a write could fall in a region it read (the explorer's hot path)
            return (self._touched(p.reads, written)
                    and self.controllers[p.controller].regions_digest(snapshot, p.reads) != p.read_digest)
        return unsettled(pending, changed)

    def _touched(self, regions: Sequence[Any], written: set[tuple[str, str, str]]) -> bool:
        """Whether an object of a written (group, kind, namespace) may lie in one of ``regions`` (an
        object read, or a list of its kind in its namespace or cluster-wide; anything else: yes)."""
        for region in regions:
            if region[0] == "obj":
                ref = region[1]
                if (ref.api_version.rpartition("/")[0], ref.kind, ref.namespace) in written:
                    return True
                continue
            scope = list_scope(self.registry, region[1]) if region[0] == "list" else None
            if scope is None:
                return True
            info, namespace = scope
            if any(g == info.group and k == info.kind and (not namespace or n == namespace) for g, k, n in written):
                return True
        return False

    def owner(self, controller: str) -> str:
        """The process a controller is part of (a kopf operator's for its timers and daemons)."""
        return getattr(self.controllers[controller].factory, "memory_owner", "") or controller


_ACTOR_WORK = "kamera.sim.actor-work"
#: the built-in actors' work when neither has any
_IDLE: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a and b else a or b


__all__ = ["Act", "Fault", "KubeModel", "ReconcileRun", "journal_writes", "object_names", "perform_action",
           "same_content"]
