"""What one reconcile step did, as values: its run, the fault injected into it, the runtime's counts.

Why apart from ``runtime.py``: the model, the perturbation bookkeeping and the timing rules read
these without needing the machinery that runs and memoises a reconcile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kamera_cli.adapters import ReconcileAbort
from kamera_cli.apiserver import Snapshot
from kamera_cli.model.objects import KindRef
from kamera_cli.sim.labels import Finding, WriteRec

#: Verbs that change the cluster.
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "apply", "deletecollection"})


class InjectedCrash(ReconcileAbort):
    """Raised inside a reconcile at the chosen write to model a controller crash."""


@dataclass(frozen=True, slots=True, order=True)
class Fault:
    """A perturbation applied to one reconcile (one per step at most)."""

    kind: str  # conflict | crash | stale
    at: int = 0  # conflict: the k-th write (1-based) is refused; crash: stop after this many writes
    lags: tuple[tuple[str, int], ...] = ()  # stale: (kind, how many writes behind)

    def describe(self) -> str:
        if self.kind == "conflict":
            return f"injected 409 Conflict on write {self.at}"
        if self.kind == "crash":
            return f"crashed after write {self.at}"
        return "stale view of " + ", ".join(f"{k} ({n} behind)" for k, n in self.lags)


@dataclass(frozen=True, slots=True)
class ReconcileRun:
    snapshot: Snapshot
    writes: tuple[WriteRec, ...]  # effective changes (trigger watch events)
    story_writes: tuple[WriteRec, ...]  # for the story: effective and refused writes
    write_attempts: int
    #: updates and patches among the attempts: the writes a 409 Conflict can answer
    conflictable: int
    requeue_now: bool
    requeue_after: float | None
    findings: tuple[Finding, ...] = ()
    note: str = ""
    error_text: str = ""
    #: the requeue_after retries failed work (never a resync): it blocks convergence until it runs
    retry: bool = False
    #: carried to the requeue (``PendingItem.carry``)
    carry: str = ""
    #: what the framework keeps for the object after this step (``SimState.memory``); None: unchanged
    memory: str | None = None
    #: the reconcile overran its budget (its finding is memoised; it is never run twice to compare)
    timed_out: bool = False
    #: what the controller printed during the step (its log, shown with the step)
    output: str = ""
    #: the regions the reconcile read or wrote (objects, list queries, counters), for partial-order
    #: reduction; None when unknown (a crash, a reconcile that never returned)
    regions: tuple[tuple[Any, ...], ...] | None = None
    #: a built-in compared the clock: the step depends on the time it runs at, not only on its reads
    #: (a stamp alone does not count: the timestamps it writes are not in fingerprints)
    clocked: bool = False
    #: a clock-comparing built-in's step: for how many later instants its outcome is certainly the
    #: same (None: unknown; sim/instants.py)
    stable_for: int | None = None
    #: a built-in's claim listings, ``((kind, namespace), claims)``: the list regions of those kinds
    #: depend only on the objects the claims match (``Cluster.claimable``)
    claims: tuple[tuple[tuple[KindRef, str], tuple[Any, ...]], ...] = ()
    #: the memo entry this run was stored as or replayed from (0: none): runs of one entry read the same
    #: regions with the same answers, so whatever depends only on those is worked out once per entry
    memo_serial: int = 0
    #: the files that read the virtual clock during the run (None: not watched), for a framework that
    #: can tell which reads matter (``clock_blind``: kopf)
    clock_readers: frozenset[str] | None = None
    #: the step crashed and the restarted process never started again (a kopf operator whose login
    #: or startup handler now fails): on this path it takes no more steps
    down: bool = False
    #: what a crashed run read before the crash, and what its restart read (the re-imported module's
    #: top-level code, a kopf operator's login and startup): the crash's footprint. Not ``regions``,
    #: which would memoise the run, and a replay would skip the restart
    crash_regions: tuple[tuple[Any, ...], ...] | None = None


@dataclass
class Stats:
    executions: int = 0
    memo_hits: int = 0
    determinism_checks: int = 0
