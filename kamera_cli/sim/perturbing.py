"""Perturbation bookkeeping — how far each controller's view of a kind lags, the writes a lagging view
undoes, the crash and conflict budgets — and the footprint tokens it gives a step.

Why a module of its own: the bookkeeping is state every step may change (a write ages the views of
its kind), so partial-order reduction must see it as precisely as it sees the cluster. Before, a
scenario with perturbations made every step global; now each piece of the bookkeeping is a token
(docs/semantics.md, "Perturbations as footprints"):

- ``("view", controller, kind)``: the controller's view of the kind — its lag and the kind's kept
  history. Every write to the kind writes it (the views fall further behind, and the history, whose
  order a stale view undoes, grows); every step of the controller reads it (which stale variants it
  has, and what they see, depend on it) and writes it when the step moves the lag.
- ``("budget", "crash")`` and ``("budget", "conflict")``: the per-execution counters every crash
  (conflict) of any controller spends, read and written by each such variant.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from kamera_cli.apiserver import Snapshot
from kamera_cli.apiserver.storage.snapshot import WriteRecord
from kamera_cli.model.objects import KindRef
from kamera_cli.model.scenario import Perturbations, StaleReadSpec, covers
from kamera_cli.sim.labels import WriteRec
from kamera_cli.sim.runs import Fault
from kamera_cli.sim.state import FaultBook

#: the token of the per-execution budget a crash or an injected conflict spends
CRASH_BUDGET: tuple[str, str] = ("budget", "crash")
CONFLICT_BUDGET: tuple[str, str] = ("budget", "conflict")


def view_token(controller: str, kind: str) -> tuple[str, str, str]:
    return ("view", controller, kind)


class StaleViews:
    """Which controllers' views of which kinds may lag, worked out once per scenario.

    ``kinds_of(controller)``: the kinds a stale-read spec covers for it (its watched kinds when the
    spec names none), as ``KindRef`` in the order the specs give them.
    """

    def __init__(self, perturbations: Perturbations, controllers: Iterable[str],
                 watched: Callable[[str], Sequence[KindRef]], native: Callable[[str], bool]) -> None:
        self.specs = perturbations.stale_reads
        self._watched = watched
        names = [c for c in controllers if not native(c)]
        #: (controller, kind, maxLag) in the order writes age them: one entry per view, however many
        #: specs cover it (the deepest maxLag among them), so a write ages each view once
        deepest: dict[tuple[str, str], int] = {}
        for spec in self.specs:
            for name in names:
                if covers(spec.controller, name):
                    for ref in self.kinds(spec, name):
                        key = (name, str(ref))
                        deepest[key] = max(deepest.get(key, 0), spec.max_lag)
        self.aging: tuple[tuple[str, str, int], ...] = tuple((n, k, m) for (n, k), m in deepest.items())
        watchers: dict[str, set[str]] = {}
        tracked: dict[str, set[str]] = {}
        depth: dict[str, int] = {}
        for name, kind, most in self.aging:
            watchers.setdefault(kind, set()).add(name)
            tracked.setdefault(name, set()).add(kind)
            depth[kind] = max(depth.get(kind, 0), most)
        self.watchers = {k: tuple(sorted(v)) for k, v in watchers.items()}
        self.tracked = {k: tuple(sorted(v)) for k, v in tracked.items()}
        #: how many of a kind's latest writes are kept: the deepest any view of it may lag
        self.depth = depth

    def kinds(self, spec: StaleReadSpec, controller: str) -> list[KindRef]:
        """The kinds whose view may lag: the listed ones, else the kinds the controller watches."""
        return sorted(spec.kinds) if spec.kinds else sorted(set(self._watched(controller)))

    def age(self, faults: FaultBook, writes: Sequence[WriteRec], before: Snapshot, after: Snapshot) -> FaultBook:
        """Writes to a kind let every tracking controller's view of it fall further behind (up to
        maxLag), and join the kind's kept history (the server's records of them, from ``after``'s log)."""
        if not self.aging or not writes:
            return faults
        counts: dict[str, int] = {}
        for w in writes:
            if not w.refused:
                k = str(w.ref.kind_ref)
                counts[k] = counts.get(k, 0) + 1
        for name, kind, most in self.aging:
            n = counts.get(kind, 0)
            if n:
                faults = faults.with_lag(name, kind, min(faults.lag(name, kind) + n, most))
        since = before.resource_version
        for kind, keep in sorted(self.depth.items()):
            if not counts.get(kind):
                continue
            new = tuple(r for r in after.log() if r.rv > since and str(r.ref.kind_ref) == kind)
            faults = faults.with_written(kind, (*faults.written(kind), *new)[-keep:])
        return faults

    def available(self, faults: FaultBook, kind: KindRef, max_lag: int) -> int:
        """How many writes back a view of ``kind`` can be rebuilt (the kept history, up to ``max_lag``)."""
        return len(faults.written(str(kind))[-max_lag:]) if max_lag > 0 else 0

    def extra(self, faults: FaultBook) -> str:
        """Fingerprint material for stale views: the writes a lagging view could still be missing."""
        if not faults.lags:
            return ""
        parts = []
        for controller, kind, lag in faults.lags:
            recent = faults.written(kind)[-lag:] if lag > 0 else ()
            parts.append(f"{controller}:{kind}:" + ",".join(f"{w.ref}={_digest_obj(w.before)}" for w in recent))
        return hashlib.sha256("|".join(parts).encode()).hexdigest()

    def tokens(self, controller: str, before: FaultBook, after: FaultBook, writes: Iterable[WriteRec],
               fault: Fault | None) -> tuple[frozenset[Hashable], frozenset[Hashable]]:
        """What the bookkeeping adds to a step's footprint: (reads, writes).

        ``controller``: the stepping controller ("" for the collector, the namespace controller or a
        user's action, which have no view); ``before``/``after``: the bookkeeping around the step.
        """
        reads: set[Hashable] = set()
        written: set[Hashable] = set()
        for w in writes:
            if not w.refused:
                kind = str(w.ref.kind_ref)
                written.update(view_token(c, kind) for c in self.watchers.get(kind, ()))
        for kind in self.tracked.get(controller, ()):
            token = view_token(controller, kind)
            reads.add(token)
            if before.lag(controller, kind) != after.lag(controller, kind):
                written.add(token)
        if fault is not None and fault.kind in ("crash", "conflict"):
            budget = CRASH_BUDGET if fault.kind == "crash" else CONFLICT_BUDGET
            reads.add(budget)
            written.add(budget)
        return frozenset(reads), frozenset(written)


def stale_views(snapshot: Snapshot, faults: FaultBook, fault: Fault) -> dict[KindRef, Snapshot]:
    """For each lagging kind, the cluster as it was before that kind's last n writes."""
    return {KindRef.parse(kind): snapshot.undoing(_latest(faults.written(kind), n)) for kind, n in fault.lags}


def _latest(records: tuple[WriteRecord, ...], n: int) -> tuple[WriteRecord, ...]:
    return records[-n:] if n > 0 else ()


def _digest_obj(obj: Mapping[str, Any] | None) -> str:
    if obj is None:
        return "-"
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]
