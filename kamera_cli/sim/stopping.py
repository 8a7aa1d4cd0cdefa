"""Operators stopping gracefully where an execution ends: kopf's ``@kopf.on.cleanup`` handlers.

Why at converged states: kopf runs its cleanup activity only when the operator stops gracefully —
SIGTERM or SIGINT, as when its pod is deleted or rolled, or its stop flag — after every other task of
the operator has ended (``kopf/_core/reactor/running.py``, ``startup_cleanup_activities``); a
process that is killed (kamera's crash perturbation) runs none.  An execution kamera explores ends
where the cluster has converged, and that is where the operator is eventually stopped: so each
operator that has cleanup handlers is stopped once at each converged state, and a handler that fails
there is a finding whose path is the path to that state.

Why their writes are not explored: after the stop the execution is over — the operator no longer
runs, and what the cluster does then is no outcome of the operator's (an invariant such as "every
widget has its config map" is about the running system).  The handlers' requests are served by the
simulated API server against the converged state, so a refused write fails the handler as on a
cluster, and the failing stop's story shows what they wrote; the written state is then discarded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kamera_cli.apiserver import ApiServer
from kamera_cli.sim.journal import journal_writes
from kamera_cli.sim.labels import Finding, StepLabel
from kamera_cli.sim.state import down_owners

if TYPE_CHECKING:
    from kamera_cli.sim.model import KubeModel
    from kamera_cli.sim.runtime import ControllerRuntime
    from kamera_cli.sim.state import SimState

__all__ = ["FailedStop", "GracefulStops"]


@dataclass(frozen=True, slots=True)
class FailedStop:
    """One operator's graceful stop at one state, which failed: the step telling it, and the finding."""

    label: StepLabel
    finding: Finding


class GracefulStops:
    """Stops the operators that have cleanup handlers at given states (each state and operator once)."""

    def __init__(self, model: KubeModel) -> None:
        self._model = model
        # an operator whose first start failed never ran: kopf runs no cleanup after a failed startup
        self._stoppers = [(name, model.controllers[name]) for name in sorted(model.controllers)
                          if getattr(model.controllers[name].factory, "stops_gracefully", False)
                          and getattr(model.controllers[name].factory, "start_failure", None) is None]
        self._done: dict[tuple[str, str], FailedStop | None] = {}

    @property
    def any(self) -> bool:
        """Whether any controller of the scenario stops gracefully (runs cleanup handlers)."""
        return bool(self._stoppers)

    def failures(self, state: SimState) -> list[FailedStop]:
        """The operators whose cleanup fails when they stop at ``state`` (not those down on its path)."""
        gone = down_owners(state.memory)
        fingerprint = self._model.fingerprint(state)
        out = []
        for name, ctrl in self._stoppers:
            if self._model.owner(name) in gone:
                continue
            key = (name, fingerprint)
            if key not in self._done:
                self._done[key] = self._stop(name, ctrl, state, fingerprint)
            failed = self._done[key]
            if failed is not None:
                out.append(failed)
        return out

    def _stop(self, name: str, ctrl: ControllerRuntime, state: SimState, fingerprint: str) -> FailedStop | None:
        server = ApiServer(self._model.registry, state.snapshot, now=lambda: state.clock)
        seed = hashlib.sha256(f"{name}\0stop\0{fingerprint}".encode()).digest()
        ctrl.bind(server)
        try:
            failed = ctrl.factory.stop(float(state.clock), seed, ctrl.budget_seconds)
        finally:
            ctrl.bind(None)
        if failed is None:
            return None
        summary, detail = failed
        label = StepLabel(kind="stop", actor=name, request="stops gracefully (SIGTERM)",
                          writes=tuple(journal_writes(server)), note="its @kopf.on.cleanup handlers run",
                          error=detail)
        return FailedStop(label, Finding("controller-error", name, summary, detail))
