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

Only built-ins are checked this way: they are deterministic and cheap, and their time reads are
memoised per instant, so the probes are reused by the states that meet those instants. A user's
time-dependent controller (kopf) stays global.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable

from kamera_cli.sim.runtime import ReconcileRun

#: how many later instants a clock-dependent built-in step is checked at, and so the longest run of
#: deferred steps the reduction may reorder it past
CLOCK_WINDOW = 256


def outcome_signature(run: ReconcileRun, clock: int) -> tuple[Hashable, ...]:
    """What a reordering must leave unchanged: the cluster, the writes, the reads, the timer's instant."""
    due = None if run.requeue_after is None else clock + max(1, math.ceil(run.requeue_after))
    writes = tuple((w.verb, w.ref, w.subresource, w.refused) for w in run.writes)
    return (run.snapshot.fingerprint(), writes, run.regions, due, run.requeue_now, run.retry, run.error_text,
            tuple(repr(f) for f in run.findings))


def stable_over_window(run: ReconcileRun, clock: int, run_at: Callable[[int], ReconcileRun]) -> bool:
    """Whether running the step at each of the next ``CLOCK_WINDOW`` instants gives this run's outcome:
    known at once when the step's comparisons of the clock were recorded (sim/instants.py)."""
    if run.stable_for is not None:
        return run.stable_for >= CLOCK_WINDOW
    expected = outcome_signature(run, clock)
    return all(outcome_signature(run_at(clock + k), clock + k) == expected for k in range(1, CLOCK_WINDOW + 1))
