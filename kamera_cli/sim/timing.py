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

import math
from collections.abc import Callable, Hashable

from kamera_cli.sim.runtime import ReconcileRun

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
