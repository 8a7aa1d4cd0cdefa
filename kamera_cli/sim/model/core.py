"""The model's state and the bookkeeping every kind of step shares: processes, triggers, the built-in
actors' work, timers whose reads changed.

Why apart: a reconcile (``reconciling.py``), a built-in actor's or user action's step
(``outside.py``) and the explorer's protocol (``kube.py``) all need these, and none owns them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kamera_cli.apiserver import Registry, Snapshot
from kamera_cli.apiserver import actors as api_actors
from kamera_cli.explore import Footprint
from kamera_cli.model.objects import KindRef
from kamera_cli.model.scenario import ActionSpec, Perturbations
from kamera_cli.sim import positions, traces
from kamera_cli.sim.footprints import actor_reads, process_of
from kamera_cli.sim.journal import object_names
from kamera_cli.sim.labels import Finding, StepLabel, WriteRec
from kamera_cli.sim.memo_keys import list_scope
from kamera_cli.sim.model.acts import ACTORS, Act
from kamera_cli.sim.perturbing import StaleViews
from kamera_cli.sim.positions import Positions
from kamera_cli.sim.runtime import ControllerRuntime
from kamera_cli.sim.shipping import Shipping
from kamera_cli.sim.state import (
    STOP,
    WATCH,
    FaultBook,
    PendingItem,
    SimState,
    down_owners,
    unsettled,
)
from kamera_cli.sim.symmetry import Symmetry
from kamera_cli.sim.traces import thread_process
from kamera_cli.sim.triggers import Triggers

_NO_TICKS: Mapping[str, int] = {}
#: whether new models leave out of fingerprints the instants no step can see; tests turn it off to
#: compare with the exact fingerprint (docs/semantics.md, "Instants no step can see")
UNCLOCKED = True
ACTOR_WORK = "kamera.sim.actor-work"
#: the built-in actors' work when neither has any
IDLE: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())


class ModelCore:
    """What ``KubeModel``'s parts share (its configuration and the helpers above)."""

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
        #: the index tokens a write marks (kopf's index reads: sim/memo_keys.py, ``IndexReads``)
        indices = next((c.indices for c in controllers if c.indices is not None and c.indices.readers), None)
        self.index_marks = indices.marks if indices is not None else None
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
        self._shipping = Shipping(derived=(ACTOR_WORK,))
        self._builtins = any(c.native for c in controllers)
        #: timers of their own processes (kopf timers and daemons): their items keep their own schedule
        #: ``_window``'s answers by (controller, memo entry, instant, anchor)
        self._windows: dict[tuple[str, int, int, int | None], int] = {}
        self._anchored = frozenset(c.name for c in controllers if getattr(c.factory, "timer_shaped", False))
        #: kopf event processing (a retry due at an instant stored on the object): its events of the
        #: start's listing run at the start's instant, wherever the order puts them (docs/semantics.md,
        #: "kopf", *Its retry*)
        self._listed_at_start = frozenset(c.name for c in controllers if getattr(c.factory, "windowed", False)
                                          and c.name not in self._anchored)
        #: the symmetry reduction over generated names (sim/symmetry.py); None: states are compared as
        #: they are (``reduction: none``)
        self.symmetry: Symmetry | None = None
        #: programs whose position a fingerprint takes up to renaming (sim/positions.py), by owner
        self._programs = {c.name: c.factory for c in controllers
                          if getattr(c.factory, "exact_position", None) is not None
                          and getattr(c.factory, "shape", "") == "program" and positions.ENABLED}
        self._positions = Positions()
        #: fingerprints leave out the instants no step can see (docs/semantics.md, "Instants no step
        #: can see"); off only to compare against the exact fingerprint (tests: ``UNCLOCKED``)
        self.unclocked = UNCLOCKED

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

    def owner(self, controller: str) -> str:
        """The process a controller is part of (a kopf operator's for its timers and daemons)."""
        return getattr(self.controllers[controller].factory, "memory_owner", "") or controller

    def quiescent(self, state: SimState) -> bool:
        if any(not p.stable for p in state.pending):
            return False
        gc, ns = self._actor_work(state.snapshot)
        return not gc and not ns

    def _global_state(self, state: SimState) -> str:
        """Why no step from this state may be reordered ("" when they may; see docs/semantics.md).

        Not with an external action due after a number of steps (every step brings it closer).
        Perturbations no longer make a state global: their bookkeeping is in each step's footprint
        (sim/perturbing.py).
        """
        if self._track_steps or state.halted:
            return "a user action due after a number of steps"
        return ""

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
            return IDLE if work == IDLE else work
        return snapshot.derived(ACTOR_WORK, compute)

    def _inherit_idle_actors(self, parent: Snapshot, child: Snapshot, writes: Sequence[WriteRec]) -> None:
        """Skip rescanning the cluster when the built-in actors had nothing to do and no write can change that.

        A write ``actor_reads`` finds quiet (nothing deleted, deletion metadata as it was, owners that
        exist, no terminating namespace) gives neither actor work.
        """
        if child is parent or any(actor_reads(self.registry, child, w) is None for w in writes):
            return
        gc, ns = self._actor_work(parent)
        if not gc and not ns:
            child.derived(ACTOR_WORK, lambda s: IDLE)

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
            scope = list_scope(self.registry, region[1]) if region[0] in ("list", "index") else None
            if scope is None:
                return True
            info, namespace = scope
            if any(g == info.group and k == info.kind and (not namespace or n == namespace) for g, k, n in written):
                return True
        return False

    def _wakes(self, after: Snapshot, writes: Sequence[WriteRec], new_items: Sequence[PendingItem]) -> set[Hashable]:
        """The processes a step's writes wake: the requests they enqueue, and the collector and the
        namespace controller when a write may change their work (``actor_reads``)."""
        wakes: set[Hashable] = {process_of(i.controller, i.namespace, i.name) for i in new_items}
        if any(actor_reads(self.registry, after, w) is None for w in writes):
            wakes |= ACTORS
        return wakes

    def _viewed(self, footprint: Footprint | None, writes: Sequence[WriteRec]) -> Footprint | None:
        """``footprint`` of a step that has no view of its own (the collector, the namespace controller,
        a user's action), with the views its writes make lag (sim/perturbing.py)."""
        if footprint is None or not self.stale.watchers:
            return footprint
        _reads, lagged = self.stale.tokens("", FaultBook(), FaultBook(), writes, None)
        return replace(footprint, writes=footprint.writes | lagged) if lagged else footprint
