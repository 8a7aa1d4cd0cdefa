"""When a step that depends on the virtual clock may still be reordered (partial-order reduction).

Why: every step moves the clock by one second, so reordering a step past ``k`` others runs it ``k``
seconds later. A step whose outcome does not depend on the instant (it read no clock) does the same
thing then; a built-in that compares the clock (a Deployment's progress deadline, a terminating
Pod's grace period) or sets a timer might not. Rather than make every such step global, its
outcome is checked at each of the next ``CLOCK_WINDOW`` instants: when every one gives the same
result — the same cluster (fingerprints leave timestamps out), the same requests, the same timer
*instant* (not delay) — the step behaves identically wherever a reordering within that window puts
it. The explorer is told, through ``KubeModel.horizon``, never to defer work longer than the window
(docs/semantics.md, "Partial-order reduction").

Built-ins are checked this way, and kopf operators' steps (kopf compares its progress timestamps,
idle and backoff deadlines with the clock): both are deterministic (the determinism check holds a
kopf step to it) and memoised per instant, so the probes are reused by the states that meet those
instants. A kopf timer's next tick is measured from the instant its tick was due
(``PendingItem.due_after``), so it too is the same wherever a reordering puts the tick.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Mapping, Sequence

from kamera_cli.apiserver import Snapshot
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.sim.runs import ReconcileRun
from kamera_cli.sim.state import PendingItem

#: how many later instants a clock-dependent built-in step is run again at when its use of the clock
#: could not be followed (sim/instants.py), and so the longest run of other steps it may be
#: reordered past (its footprint's window)
CLOCK_WINDOW = 24

#: the longest window a step whose comparisons were recorded is given (any bound will do)
LONG_WINDOW = 1 << 20


def _due(run: ReconcileRun, clock: int) -> int | None:
    return None if run.requeue_after is None else clock + max(1, math.ceil(run.requeue_after))


def outcome_signature(run: ReconcileRun, clock: int,
                      due: Callable[[ReconcileRun, int], int | None] = _due) -> tuple[Hashable, ...]:
    """What a reordering must leave unchanged: the cluster, the writes, the reads, the timer's instant
    (``due``: when the run's requeue falls due, run at ``clock``), what the framework keeps for the
    object and carries to the next tick (a kopf memo, a timer's retry state)."""
    writes = tuple((w.verb, w.ref, w.subresource, w.refused) for w in run.writes)
    return (run.snapshot.fingerprint(), writes, run.regions, due(run, clock), run.requeue_now, run.retry,
            run.error_text, tuple(repr(f) for f in run.findings), run.memory, run.carry)


def stable_window(run: ReconcileRun, clock: int, run_at: Callable[[int], ReconcileRun],
                  due: Callable[[ReconcileRun, int], int | None] = _due, probes: int = CLOCK_WINDOW) -> int:
    """For how many later instants the step certainly has this run's outcome (0: not even the next):
    known at once when the step's comparisons of the clock were recorded (sim/instants.py), else
    found by running it again at each of the next ``probes`` instants, up to the first that differs.

    The window is the run of equal outcomes that starts at the step's own instant, not all or
    nothing: a kopf event step that sleeps out a handler's backoff until the instant ``D`` stored on
    the object does the same (a retry due at ``D``) at every instant before ``D`` and runs the
    handler at ``D``; it may be moved over the ``D - clock - 1`` instants before, and no further."""
    if run.stable_for is not None:
        return max(0, min(run.stable_for, LONG_WINDOW))
    expected = outcome_signature(run, clock, due)
    for k in range(1, probes + 1):
        if outcome_signature(run_at(clock + k), clock + k, due) != expected:
            return k - 1
    return probes


#: a framework's answer to "for how many instants after ``clock`` do this step's reads of the clock
#: answer as they did", from its readers, what it stored, the clock and a cap (None: it cannot tell)
Steady = Callable[[frozenset[str], Sequence[str], int, int], "int | None"]


def steady_window(run: ReconcileRun, clock: int, run_at: Callable[[int], ReconcileRun],
                  due: Callable[[ReconcileRun, int], int | None], steady: Steady | None,
                  stored: Callable[[], Sequence[str]]) -> int:
    """``stable_window``, told by the framework where it can be (``steady``: kopf's, from the deadlines
    it stored, adapters/kopf/deadlines.py): then the step is run again at the next instant only.

    Sound because the framework's answer covers every comparison of the clock the step made (its
    readers say nothing else read it), so up to that bound the step takes the same path at every
    instant, and whatever it makes of the instant itself (a new ``started`` or ``delayed``, a due
    instant ``now + delay``) moves with every instant: it differs at the next one already, which
    the one run shows (docs/semantics.md, "kopf", *Its window*)."""
    bound = None if steady is None or run.clock_readers is None else steady(run.clock_readers, stored(), clock,
                                                                             LONG_WINDOW)
    if bound is None:
        return stable_window(run, clock, run_at, due)
    return bound if bound < 1 else bound * stable_window(run, clock, run_at, due, probes=1)


def stored_texts(snapshot: Snapshot, kind: KindRef, item: PendingItem) -> tuple[str, ...]:
    """What a framework stored that its step may compare with the clock, as text: the object's
    annotations and status (kopf's progress records) and a timer's carried state."""
    found = snapshot.get(ObjectRef(kind.api_version, kind.kind, item.namespace, item.name))
    meta = found.get("metadata") if found is not None else None
    kept = {"annotations": meta.get("annotations") if isinstance(meta, Mapping) else None,
            "status": found.get("status") if found is not None else None}
    return (json.dumps(kept, sort_keys=True, default=str), item.carry)
