"""``KubeModel``: the protocol the explorer checks (``kamera_cli.explore.Model`` and ``Reducible``).

Why here: this is where the three independent layer-2 packages meet.  The explorer sees only
``initial_states/actions/successor/fingerprint/is_converged``; the API server sees only requests;
the adapters see only one reconcile at a time.  Everything Kubernetes-specific about *scheduling*
— triggers, the coalescing queue, requeues and timers, the built-in actors, external actions and
perturbations — lives in this package.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace

from kamera_cli.explore import Footprint, Transition
from kamera_cli.sim.footprints import owner_root
from kamera_cli.sim.future_keys import SHIFTED, group_digest
from kamera_cli.sim.model.acts import GC, NS, Act
from kamera_cli.sim.model.outside import OutsideSteps
from kamera_cli.sim.model.reconciling import ReconcileSteps
from kamera_cli.sim.model.unseen import STORED_INSTANTS, stores_instants
from kamera_cli.sim.state import (
    TIMER,
    WATCH,
    PendingItem,
    SimState,
    merge_pending,
)
from kamera_cli.sim.symmetry import Canon, state_notes, translate


class KubeModel(ReconcileSteps, OutsideSteps):
    """Implements ``kamera_cli.explore.Model`` over ``SimState``."""

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

    def part_notes(self) -> list[str]:
        """The parts of a kopf operator run as one controller per resource whose steps changed a module
        global: kopf's one process would share it with the other parts, kamera's copies do not
        (docs/controllers.md, "kopf operators")."""
        return [f"controller {name!r} changed the module-level {', '.join(changed)}, which the operator's "
                f"other parts ({', '.join(parts)}) do not see: kopf runs them in one process, kamera each with "
                "its own copy of the operator's modules, so an outcome that depends on it may be false"
                for name, controller in sorted(self.controllers.items())
                if (parts := getattr(controller.factory, "other_parts", ()))
                and (changed := list(getattr(controller.factory, "unshared", {})))]

    def initial_states(self) -> Sequence[SimState]:
        # a controller that tells a listing from an update (kopf) gets its first events as a listing
        items = [PendingItem(c, ns, n, self._start_clock + self._first_ticks.get(c, 0),
                             TIMER if c in self._first_ticks else WATCH,
                             relist=getattr(self.controllers[c].factory, "relists", False),
                             anchored=c in self._anchored or c in self._listed_at_start)
                 for c, ns, n in self._seed_requests]
        return [SimState(self.initial, merge_pending((), items, None), self._start_clock)]

    def fingerprint(self, state: SimState) -> str:
        if state._fp:
            return state.fingerprint(self._track_steps)
        canon = self.canon(state) if self.symmetry is not None else None
        memory = None
        converged = self.is_converged(state)
        if self._programs:
            # a program's position up to renaming (sim/positions.py), renamed as the cluster is
            memory = self._positions.memory(state.memory, self._programs, state.snapshot, converged,
                                            canon if canon is not None and canon.names else None)
        return state.fingerprint(self._track_steps, canon, memory, clock=self._seen_from(state, converged),
                                 settled=converged and self.unclocked)

    def group_fingerprint(self, state: SimState, group: frozenset[Hashable]) -> str:
        """A state met in the search of ``group``'s future (explore/reduction.py), as a node of that
        search: its fingerprint without the pending requests of processes outside the group, each
        delay measured from the state's own clock.

        Why: those requests are frozen there, but a waiting timer among them shows how far the clock
        has moved, and a ready request does not; so by the fingerprint, states the group reaches by
        paths of different lengths were one node where the rest of the state had no timer, and two
        where it had one. The rest is not in the key a future is kept by (sim/future_keys.py), so a
        kept future's graph could differ from a fresh search's, and a successor inherit another
        future from it (docs/explorer.md, "A kept future's graph"). A program's position lives in
        its factory's log: the plain fingerprint then (its futures are never kept)."""
        if self._programs:
            return self.fingerprint(state)
        keys = frozenset((str(p[1]), str(p[2]), str(p[3])) for p in group
                         if isinstance(p, tuple) and len(p) == 4 and p[0] == "reconcile")
        canon = self.canon(state) if self.symmetry is not None else None
        return state.fingerprint(self._track_steps, canon, only=keys)

    def _seen_from(self, state: SimState, converged: bool) -> int | None:
        """The instant the state's delays are measured from: the instant the clock jumps to when no
        step can run before it (None: the state's own clock). Why: every step enabled there runs at
        that instant, so how far away it is from the clock is seen by nothing (docs/semantics.md,
        "Instants no step can see")."""
        if not self.unclocked or converged or not state.pending or self._external(state):
            return None
        if any(p.ready_at <= state.clock for p in state.pending) or self.quiescent(state):
            return None
        gc, ns = self._actor_work(state.snapshot)
        if gc or ns:
            return None  # the collector and the namespace controller run at the clock
        if state.snapshot.derived(STORED_INSTANTS, stores_instants):
            return None  # a stored instant (kopf's ``delayed``) is compared with the instant steps run at
        return min(p.ready_at for p in state.pending)

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

    def release(self, state: SimState) -> None:
        """The explorer has expanded ``state``: its snapshot's caches (listings, the actors' work) go."""
        state.snapshot.forget_derived()

    def footprint(self, state: SimState, act: Act, transition: Transition[SimState]) -> Footprint | None:
        return transition.settled()

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
        (explore.futures.FutureCache; sim/future_keys.py). None for programs: their positions live
        in their factories' logs, which no token names."""
        if any(getattr(c.factory, "shape", "") == "program" for c in self.controllers.values()):
            return None
        gc, ns = self._actor_work(state.snapshot)
        shifted = frozenset(name for name, c in self.controllers.items()
                            if c.native and isinstance(getattr(c.factory, "controller", None), SHIFTED))
        return group_digest(state, processes, footprint, actor_work=bool(gc or ns), symmetry=self.symmetry is not None,
                            shifted=shifted)

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
