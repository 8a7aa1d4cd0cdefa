"""What a search found, kept while it runs and read off the graph when it ends.

Why apart: the serial search (``checker.py``) and the split one (``parallel.py``) count findings
and violations the same way and build their result from the finished graph the same way; both use
this module, so neither reaches into the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from kamera_cli.explore.result import (
    DEPTH_CUT,
    EXPANDED,
    FindingRecord,
    Graph,
    Progress,
    SearchResult,
    Stats,
    Strategy,
    Violation,
)
from kamera_cli.explore.scc import find_livelocks

# Captured at import: a simulator may virtualise ``time.*`` while a step runs; elapsed is real time.
_monotonic = time.monotonic

S = TypeVar("S")
A = TypeVar("A")


def finding_key(finding: object) -> str:
    """Which findings count as the same problem: a ``key`` attribute (or method), else ``repr``."""
    key = getattr(finding, "key", None)
    if callable(key):
        key = key()
    if key is None:
        return repr(finding)
    return key if isinstance(key, str) else repr(key)


class Problems:
    """First occurrence and count of each distinct finding and of each violated property."""

    def __init__(self, stop_on_first: bool) -> None:
        self.stop_on_first = stop_on_first
        self.stopped = False
        self.first_finding: dict[str, tuple[object, int, int]] = {}  # key -> (finding, src node, edge id)
        self.finding_count: dict[str, int] = {}
        self.first_violation: dict[str, tuple[str, int, object]] = {}  # name -> (kind, node, detail)
        self.violation_count: dict[str, int] = {}

    def finding(self, src: int, edge_id: int, findings: tuple[object, ...]) -> None:
        for f in findings:
            k = finding_key(f)
            n = self.finding_count.get(k, 0)
            if n == 0:
                self.first_finding[k] = (f, src, edge_id)
                if self.stop_on_first:
                    self.stopped = True
            self.finding_count[k] = n + 1

    def violation(self, name: str, kind: str, node: int, detail: object) -> None:
        n = self.violation_count.get(name, 0)
        if n == 0:
            self.first_violation[name] = (kind, node, detail)
            if self.stop_on_first:
                self.stopped = True
        self.violation_count[name] = n + 1

    def is_stopped(self) -> bool:
        return self.stopped


def finish(graph: Graph[S, A], run: Problems, strategy: Strategy, bound_hit: str | None, initial: list[int],
           initial_index: dict[int, int], converged_nodes: list[int], max_depth_seen: int, start: float,
           on_progress: Callable[[Progress], None] | None, reduced_count: int,
           global_causes: Mapping[str, int] | None = None) -> SearchResult[S, A]:
    """What the search found, read off the finished graph (shared by the serial and parallel searches)."""
    states, depths, status, conv = graph.states, graph.depths, graph.status, graph.converged_flags
    first_edge, last_edge, e_src = graph.first_edge, graph.last_edge, graph.e_src
    complete = bound_hit is None
    if depths:
        max_depth_seen = max(max_depth_seen, max(depths))
    # Depth cuts: non-converged nodes at the depth bound whose actions were not taken.
    depth_cuts = tuple(v for v in range(len(states)) if status[v] == DEPTH_CUT and not conv[v])
    deadlocks = tuple(
        v for v in range(len(states)) if status[v] == EXPANDED and first_edge[v] == last_edge[v] and not conv[v]
    )
    livelocks = tuple(find_livelocks(graph))
    elapsed = _monotonic() - start
    if on_progress is not None:
        on_progress(Progress(len(states), len(e_src), max_depth_seen, elapsed))

    findings = tuple(
        FindingRecord(key, f, src, graph.edge(eid), run.finding_count[key])
        for key, (f, src, eid) in run.first_finding.items()
    )
    violations = tuple(
        Violation(name, kind, node, detail, run.violation_count[name])
        for name, (kind, node, detail) in run.first_violation.items()
    )
    stats = Stats(
        states=len(states),
        transitions=len(e_src),
        max_depth_reached=max_depth_seen,
        converged=len(converged_nodes),
        depth_cuts=len(depth_cuts),
        deadlocks=len(deadlocks),
        livelocks=len(livelocks),
        elapsed=elapsed,
        states_per_second=len(states) / elapsed if elapsed > 0 else 0.0,
        reduced=reduced_count,
        global_causes=tuple(sorted((global_causes or {}).items(), key=lambda kv: (-kv[1], kv[0]))),
    )
    return SearchResult(
        graph=graph,
        strategy=strategy,
        complete=complete,
        bound_hit=bound_hit,
        initial=tuple(initial),
        converged=tuple(converged_nodes),
        depth_cuts=depth_cuts,
        deadlocks=deadlocks,
        livelocks=livelocks,
        findings=findings,
        violations=violations,
        initial_index=initial_index,
        stats=stats,
    )
