"""The parallel search against the serial one: the same graph, node for node and edge for edge.

Why whole graphs and not summaries: the promise is that ``--workers`` changes nothing a user sees —
counts, counterexamples, the first finding — and all of those are read off the graph, so the graph
itself is compared. Random kamera-shaped systems (Hypothesis) find merge orders an example would not.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest
from explore_toys import Counter, Finding, GraphModel, Worker, Workers
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reduction import systems

from kamera_cli.explore import (
    ExploreError,
    Property,
    SearchResult,
    SearchSettings,
    Transition,
    WorkerDied,
    search,
    serve_search,
)

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
        "global_causes": result.stats.global_causes,
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
        # worker 0 is the coordinator's own process, worker 1 a forked one
        assert result.worker_reports[0] == os.getpid() and result.worker_reports[1] != os.getpid()
    finally:
        result.close()


_PARENT = os.getpid()


class _Exiting(Workers):
    """User code that ends its process in the middle of a step (only in a forked worker: the
    coordinator's own process is the caller's, as in a serial search)."""

    def successor(self, state: Any, action: Any) -> Any:
        if os.getpid() != _PARENT and len(state[1]) == 2:
            os._exit(7)
        return super().successor(state, action)


class _Raising(Counter):
    def successor(self, state: int, action: str) -> Transition[int]:
        if state == 3:
            raise ValueError("a bug in the model")
        return super().successor(state, action)


def test_a_worker_that_dies_is_reported_with_its_exit_status() -> None:
    wide = _wide()
    with pytest.raises(WorkerDied) as caught:
        search(_Exiting(wide.workers, wide.initial_vars, wide.watchers), workers=2, reduction="none")
    assert caught.value.exitcode == 7


def test_an_exception_in_a_worker_carries_its_traceback() -> None:
    # raised in the coordinator's own process it propagates as it is; in a forked one it carries the text
    with pytest.raises((RuntimeError, ValueError), match="a bug in the model"):
        search(_Raising(6), workers=2)


def serve_wide(conn: Any) -> None:
    """A remote worker's whole program: its own model and properties, built here, not inherited."""
    serve_search(conn, _wide(), SearchSettings(properties=PROPS, reduction="none"))


@pytest.mark.parametrize("workers", [2, 3])
def test_a_remote_worker_with_a_model_of_its_own_builds_the_serial_graph(workers: int) -> None:
    """A spawned process (nothing inherited) serving the search counts as a worker like a forked one."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    proc = ctx.Process(target=serve_wide, args=(theirs,), daemon=True)
    proc.start()
    theirs.close()
    serial = search(_wide(), properties=PROPS, reduction="none")
    split = search(_wide(), properties=PROPS, reduction="none", workers=workers, remote=[mine])
    try:
        assert _picture(split) == _picture(serial)
        owners = split.graph.remote.__self__.owner  # type: ignore[union-attr]
        assert workers - 1 in set(owners)  # the remote worker (the last one) took part
    finally:
        split.close()
    proc.join(timeout=10)
    assert proc.exitcode == 0


def test_remote_workers_need_a_breadth_first_search_with_room_for_them() -> None:
    with pytest.raises(ExploreError, match="remote workers need a breadth-first search"):
        search(_wide(), workers=1, remote=[object()])


def test_each_process_says_what_it_did() -> None:
    result = search(_wide(), workers=2, reduction="none")
    try:
        loads = result.processes
        assert len(loads) == 2
        expanded = sum(1 for s in result.graph.status if s != 0)  # every node the search expanded
        assert sum(p.expanded for p in loads) == expanded
        assert all(p.expanded > 0 and p.cpu > 0 and p.idle >= 0 for p in loads)
        assert sum(p.moved for p in loads) > 0  # the single initial state's successors had to be shared
    finally:
        result.close()
    assert search(_wide(), reduction="none").processes == ()


def test_a_search_leaves_the_collector_as_it_found_it() -> None:
    import gc

    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    search(_wide(), reduction="none")
    search(_wide(), workers=2, reduction="none").close()
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before


def test_nodes_handed_over_are_spread_over_the_queue() -> None:
    """A state reached from several parents belongs to the first merged: a process given only a
    queue's tail would discover little of the next level, and run dry again."""
    from kamera_cli.explore.parallel_worker import Worker as SearchWorker

    worker = SearchWorker(lambda message: None, _wide(), SearchSettings(max_depth=10), None)
    for node in range(10):
        worker.store[f"fp{node}"] = (node,)
        worker.queue.append((node, f"fp{node}", 1))
    given = worker.give(3, None)
    assert [g[0] for g in given] == [2, 5, 8]
    assert [q[0] for q in sorted(worker.queue)] == [0, 1, 3, 4, 6, 7, 9]
    assert "fp5" not in worker.store  # the state left with the node
    assert [g[0] for g in worker.give(0, [9, 4, 42])] == [4, 9]  # named ones, those still queued


@pytest.mark.parametrize("duplex", [True, False])
def test_the_coordinator_never_blocks_on_a_write(duplex: bool) -> None:
    """A socket (what Pipe makes) is written without blocking, what does not fit waiting for the next
    pump; any other connection gets a sender thread. Either way the other end reads whole messages."""
    import multiprocessing
    import threading

    from kamera_cli.explore.parallel_pool import _Outbox

    a, b = multiprocessing.Pipe(duplex=duplex)
    reader, writer = (b, a) if duplex else (a, b)
    box = _Outbox(writer)
    assert (box.sock is not None) == duplex
    big = ("batch", [("expand", i, f"{i:08d}" * 125, 1, None) for i in range(5_000)])  # 5 MB: more than fits
    box.put(big)
    box.put(("halt",))
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.extend([reader.recv(), reader.recv()]))
    thread.start()
    if duplex:
        assert box.pending  # the socket took part of it; the rest waits
        box.drain(10.0)
        assert not box.pending
    thread.join(10)
    box.close()
    assert got == [big, ("halt",)]


class _ListActions(GraphModel):
    """The same graph with each action a list (unhashable): a worker cannot number them."""

    def actions(self, state: int) -> Sequence[Any]:
        return [[pos] for pos in self.out.get(state, [])]

    def successor(self, state: int, action: Any) -> Transition[int]:
        return super().successor(state, action[0])


def test_unhashable_actions_travel_as_themselves() -> None:
    edges = [(i, j) for i in range(30) for j in (i + 1, i + 2) if j < 30]
    serial, parallel = _both(_ListActions(edges=edges, converged=[29]), reduction="none")
    assert parallel == serial
    edges_seen: list[tuple[int, Any, object, int]] = serial["edges"]  # type: ignore[assignment]
    assert [e[1] for e in edges_seen][:2] == [[0], [1]]


class _SlowCoordinator(Workers):
    """Every step costs more in the process that built the model (the coordinator's) than in a
    forked worker: a coordinator on a slower CPU, as on a machine whose vCPUs do not run at one speed."""

    def __init__(self, inner: Workers) -> None:
        super().__init__(inner.workers, inner.initial_vars, inner.watchers, inner.domain)
        object.__setattr__(self, "home", os.getpid())

    def successor(self, state: Any, action: Any) -> Any:
        if os.getpid() == self.home:  # type: ignore[attr-defined]
            import time

            until = time.process_time() + 0.0002
            while time.process_time() < until:
                pass
        return super().successor(state, action)


def test_a_slower_coordinator_leaves_the_work_to_the_faster_worker() -> None:
    """The coordinator reads every result waiting for it before it balances: reading one message per
    step of its own, a slower coordinator saw a worker busy long after it had run dry, and kept the
    nodes the worker needed."""
    result = search(_SlowCoordinator(_wide()), workers=2, reduction="none")
    try:
        coordinator, worker = result.processes
        assert worker.expanded > 2 * coordinator.expanded, result.processes
    finally:
        result.close()
