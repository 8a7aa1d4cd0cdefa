"""Steps no controller under test takes: the garbage collector's, the namespace controller's, a user's
action.

Why apart: their footprints come from what the step names or examines, not from a recorded run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kamera_cli.apiserver import ApiError, ApiServer, Snapshot
from kamera_cli.apiserver import actors as api_actors
from kamera_cli.explore import Footprint, Transition
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.sim.footprints import collector_footprint, step_footprint
from kamera_cli.sim.journal import journal_writes, perform_action
from kamera_cli.sim.labels import Finding, StepLabel, WriteRec
from kamera_cli.sim.model.acts import GC, Act
from kamera_cli.sim.model.core import ModelCore
from kamera_cli.sim.state import (
    PendingItem,
    SimState,
    later,
    merge_pending,
)
from kamera_cli.sim.triggers import MapperFailed


class OutsideSteps(ModelCore):
    """``KubeModel``'s built-in actors' and user actions' steps."""

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
            clock=later(state.clock),
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
                                                          listed, wakes, self.index_marks)
                                      if act.controller == GC else
                                      step_footprint(self.registry, self.process(act), [("obj", work.target)], writes,
                                                     listed, wakes, index_marks=self.index_marks)), writes)
        return Transition(new_state, label, tuple(findings), footprint, act.controller)

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
        return self._viewed(step_footprint(self.registry, self.process(act), reads, writes, (), wakes,
                                           index_marks=self.index_marks), writes)

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
            clock=later(state.clock),
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
