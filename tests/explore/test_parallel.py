"""The parallel search against the serial one: the same graph, node for node and edge for edge.

Why whole graphs and not summaries: the promise is that ``--workers`` changes nothing a user sees —
counts, counterexamples, the first finding — and all of those are read off the graph, so the graph
itself is compared. Random kamera-shaped systems (Hypothesis) find merge orders an example would not.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from explore_toys import Counter, Finding, GraphModel, Worker, Workers
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reduction import systems

from kamera_cli.explore import Property, SearchResult, Transition, WorkerDied, search

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="a parallel search forks its workers")


def _picture(result: SearchResult[Any, Any]) -> dict[str, object]:
    g = result.graph
    return {
        "fingerprints": list(g.fingerprints),
        "parents": list(g.parents),
        "depths": list(g.depths),
        "status": bytes(g.status),
        "converged": bytes(g.converged_flags),
        "edges": [(g.e_src[e], g.e_action[e], g.label(e), g.e_dst[e]) for e in range(g.num_edges)],
        "states": [g.state(n) for n in range(g.num_states)],
        "findings": [(f.key, f.node, f.edge.id, f.count) for f in result.findings],
        "violations": [(v.property, v.node, v.detail, v.count) for v in result.violations],
        "livelocks": [(lk.nodes, lk.entry) for lk in result.livelocks],
        "deadlocks": result.deadlocks,
        "depth_cuts": result.depth_cuts,
        "complete": result.complete,
        "bound_hit": result.bound_hit,
        "counts": (result.stats.states, result.stats.transitions, result.stats.reduced),
    }


def _both(model: Any, **kwargs: Any) -> tuple[dict[str, object], dict[str, object]]:
    serial = search(model, **kwargs)
    parallel = search(model, workers=2, **kwargs)
    try:
        return _picture(serial), _picture(parallel)
    finally:
        parallel.close()


PROPS: list[Property[Any]] = [
    Property("var0 is never 2", "always", lambda s: "two" if s[0][0] == 2 else None),
    Property("ends with var0 = 1", "converged", lambda s: None if s[0][0] == 1 else "no"),
]


@settings(max_examples=30, deadline=None)
@given(systems(), st.sampled_from(["none", "persistent"]))
def test_the_parallel_search_builds_the_serial_search_s_graph(model: Workers, reduction: str) -> None:
    serial, parallel = _both(model, properties=PROPS, reduction=reduction)
    assert parallel == serial


def _wide() -> Workers:
    """Five independent workers, each with two choices: a few thousand states, enough to split."""
    workers = [Worker(reads=(), target=i, offsets=(1, 2), alarm=2 if i == 3 else -1) for i in range(5)]
    return Workers(workers, (0,) * 5, {i: () for i in range(5)})


@pytest.mark.parametrize("bounds", [
    {"max_states": 100},
    {"max_depth": 3},
    {"stop_on_first": True},
    {"expand_converged": False},
    {},
])
def test_bounds_stop_both_searches_at_the_same_place(bounds: dict[str, Any]) -> None:
    serial, parallel = _both(_wide(), properties=PROPS, reduction="none", **bounds)
    assert parallel == serial
    assert serial["complete"] is not ("max_states" in bounds or "stop_on_first" in bounds)
    assert bool(serial["depth_cuts"]) is ("max_depth" in bounds)


def test_both_workers_take_part_and_the_states_come_back() -> None:
    result = search(_wide(), workers=2, reduction="none")
    try:
        owners = result.graph.remote.__self__.owner  # type: ignore[union-attr]
        assert set(owners) == {0, 1}  # the work was split
        assert result.graph.state(result.converged[-1])[1] == frozenset()
        assert sorted(result.worker_reports, key=repr) == [None, None]
    finally:
        result.close()
    with pytest.raises(RuntimeError, match="worker processes are gone"):
        result.graph.state(result.graph.num_states - 2)


def test_findings_and_livelocks_are_the_serial_ones() -> None:
    cycle = GraphModel(edges=[(0, 1), (1, 2), (2, 1), (0, 3), (3, 4), (1, 5)], converged=[4],
                       findings={1: (Finding("late"),), 4: (Finding("early"),)})
    serial, parallel = _both(cycle)
    assert parallel == serial
    assert serial["findings"]


def test_a_worker_report_comes_back_from_each_worker() -> None:
    result = search(Counter(5), workers=2, worker_report=lambda: os.getpid())
    try:
        assert len(set(result.worker_reports)) == 2 and os.getpid() not in result.worker_reports
    finally:
        result.close()


class _Exiting(Counter):
    """User code that ends its process in the middle of a step."""

    def successor(self, state: int, action: str) -> Transition[int]:
        if state == 3:
            os._exit(7)
        return super().successor(state, action)


class _Raising(Counter):
    def successor(self, state: int, action: str) -> Transition[int]:
        if state == 3:
            raise ValueError("a bug in the model")
        return super().successor(state, action)


def test_a_worker_that_dies_is_reported_with_its_exit_status() -> None:
    with pytest.raises(WorkerDied) as caught:
        search(_Exiting(6), workers=2)
    assert caught.value.exitcode == 7


def test_an_exception_in_a_worker_carries_its_traceback() -> None:
    with pytest.raises(RuntimeError, match="a bug in the model"):
        search(_Raising(6), workers=2)
