"""The explorer on tiny abstract models: counters, hand-written graphs, loops, bounds."""

from __future__ import annotations

import itertools
import time

import pytest
from explore_toys import Counter, Finding, GraphModel, node_of

from kamera_cli.errors import KameraError
from kamera_cli.explore import ExploreError, Progress, Property, Transition, search


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_counter_reaches_its_end_and_converges_once(strategy: str) -> None:
    r = search(Counter(20), strategy=strategy)  # type: ignore[arg-type]
    assert r.complete and r.bound_hit is None
    assert r.stats.states == 21 and r.stats.transitions == 20
    assert [r.state(n) for n in r.converged] == [20]
    path = r.path_to(r.converged[0])
    assert [e.label for e in path] == [f"inc to {i}" for i in range(1, 21)]
    assert r.stats.max_depth_reached == 20
    assert not r.livelocks and not r.deadlocks and not r.depth_cuts


def test_path_to_is_shortest_and_edges_carry_action_indices() -> None:
    # two routes to 3: 0-1-2-3 (listed first) and 0-3 directly
    m = GraphModel([(0, 1), (1, 2), (2, 3), (0, 3)], converged=[3])
    r = search(m)
    path = r.path_to(node_of(r, 3))
    assert [(r.state(e.src), r.state(e.dst)) for e in path] == [(0, 3)]
    assert path[0].action_index == 1 and path[0].action == 3  # second out-edge of 0, edge #3 of the list
    assert r.path_to(r.initial[0]) == []


def test_duplicate_states_are_deduplicated_by_fingerprint() -> None:
    m = GraphModel([(0, 1), (0, 2), (1, 3), (2, 3)], converged=[3])
    r = search(m)
    assert r.stats.states == 4 and r.stats.transitions == 4
    assert len(r.converged) == 1


def test_two_converged_states_each_with_a_path() -> None:
    m = GraphModel([(0, 1), (0, 2), (1, 3), (2, 4)], converged=[3, 4])
    r = search(m)
    assert [r.state(n) for n in r.converged] == [3, 4]
    assert [[r.state(e.dst) for e in r.path_to(n)] for n in r.converged] == [[1, 3], [2, 4]]
    assert not r.livelocks


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_two_node_cycle_without_exit_is_a_livelock(strategy: str) -> None:
    m = GraphModel([(0, 1), (1, 2), (2, 1)], converged=[])
    r = search(m, strategy=strategy)  # type: ignore[arg-type]
    assert r.complete
    assert len(r.livelocks) == 1
    ll = r.livelocks[0]
    assert sorted(r.state(v) for v in ll.nodes) == [1, 2]
    assert r.state(ll.entry) == 1
    assert [(r.state(e.src), r.state(e.dst)) for e in ll.path] == [(0, 1)]
    assert [(r.state(e.src), r.state(e.dst)) for e in ll.cycle] == [(1, 2), (2, 1)]
    assert r.stats.livelocks == 1


def test_hot_self_loop_is_a_livelock_with_a_one_edge_cycle() -> None:
    m = GraphModel([(0, 1), (1, 1)])
    r = search(m)
    (ll,) = r.livelocks
    assert [r.state(v) for v in ll.nodes] == [1]
    assert [(r.state(e.src), r.state(e.dst)) for e in ll.cycle] == [(1, 1)]


def test_self_loop_on_an_initial_state() -> None:
    r = search(GraphModel([(0, 0)]))
    (ll,) = r.livelocks
    assert ll.entry == r.initial[0] and ll.path == () and len(ll.cycle) == 1


def test_cycle_with_an_exit_is_not_a_livelock() -> None:
    m = GraphModel([(0, 1), (1, 2), (2, 1), (2, 3)], converged=[3])
    r = search(m)
    assert r.livelocks == ()
    assert [r.state(n) for n in r.converged] == [3]


def test_cycle_through_a_converged_state_is_not_a_livelock() -> None:
    # a converged state that still polls (self-loop) is settled, not stuck
    m = GraphModel([(0, 1), (1, 1)], converged=[1])
    assert search(m).livelocks == ()


def test_shortest_cycle_is_reported_from_the_entry() -> None:
    # entry 1; cycles 1-2-1 (short) and 1-3-4-1 (long); listed long first
    m = GraphModel([(0, 1), (1, 3), (3, 4), (4, 1), (1, 2), (2, 1)])
    r = search(m)
    (ll,) = r.livelocks
    assert [(r.state(e.src), r.state(e.dst)) for e in ll.cycle] == [(1, 2), (2, 1)]


def test_depth_cut_is_reported_and_not_expanded() -> None:
    r = search(Counter(10), max_depth=3)
    assert r.complete  # the bounded space was searched fully; the cut is a finding, not a bound
    assert [r.state(n) for n in r.depth_cuts] == [3]
    assert r.stats.states == 4 and r.converged == ()
    assert r.graph.out_edges(r.depth_cuts[0]) == []


def test_converged_state_at_the_depth_bound_is_not_a_cut() -> None:
    r = search(Counter(3), max_depth=3)
    assert r.depth_cuts == () and len(r.converged) == 1


def test_a_loop_whose_exit_is_behind_the_depth_bound_is_not_called_a_livelock() -> None:
    # 1 <-> 2 and 2 -> 3 -> 4 (converged): while the bound hides 3's future, the loop is not closed
    m = GraphModel([(0, 1), (1, 2), (2, 1), (2, 3), (3, 4)], converged=[4])
    r = search(m, max_depth=2)
    assert [r.state(n) for n in r.depth_cuts] == [2]
    assert r.livelocks == ()
    r = search(m, max_depth=3)
    assert [r.state(n) for n in r.depth_cuts] == [3]
    assert r.livelocks == ()
    m2 = GraphModel([(0, 1), (1, 2), (2, 1), (2, 3), (3, 3)])
    r = search(m2, max_depth=3)
    assert r.livelocks == () and [r.state(n) for n in r.depth_cuts] == [3]
    r = search(m2, max_depth=4)
    assert [r.state(v) for ll in r.livelocks for v in ll.nodes] == [3]


def test_deadlock_is_a_non_converged_state_without_actions() -> None:
    m = GraphModel([(0, 1), (0, 2)], converged=[2])
    r = search(m)
    assert [r.state(n) for n in r.deadlocks] == [1]
    assert r.livelocks == () and r.stats.deadlocks == 1


def test_max_states_makes_the_result_incomplete_but_keeps_what_was_found() -> None:
    r = search(Counter(100), max_states=10)
    assert not r.complete
    assert r.bound_hit == "maxStates 10 reached"
    assert r.stats.states == 10 and r.converged == ()
    assert r.depth_cuts == () and r.livelocks == ()


def test_exactly_max_states_states_is_still_complete() -> None:
    r = search(Counter(9), max_states=10)
    assert r.complete and r.stats.states == 10


def test_an_unexpanded_frontier_never_counts_as_a_livelock() -> None:
    # the loop 1 -> 2 -> 1 has an exit 2 -> 3, but the state bound stops before 3 is recorded
    m = GraphModel([(0, 1), (1, 2), (2, 1), (2, 3)], converged=[3])
    r = search(m, max_states=3)
    assert not r.complete and r.livelocks == ()


class _Endless:
    """An infinite counter whose steps take real time and virtualise ``time.monotonic``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.mp = monkeypatch

    def initial_states(self) -> list[int]:
        return [0]

    def actions(self, state: int) -> list[int]:
        return [1]

    def successor(self, state: int, action: int) -> Transition[int]:
        time.sleep(0.002)
        self.mp.setattr(time, "monotonic", lambda: 0.0)  # as a simulator freezing the clock would
        return Transition(state + 1)

    def fingerprint(self, state: int) -> str:
        return str(state)

    def is_converged(self, state: int) -> bool:
        return False


def test_timeout_uses_the_real_clock_and_makes_the_result_incomplete(monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = time.perf_counter()
    r = search(_Endless(monkeypatch), timeout=0.1, max_depth=10**9, max_states=10**9)
    assert time.perf_counter() - t0 < 2.0
    assert not r.complete and r.bound_hit == "timeout 0.1s reached"
    assert r.stats.states > 1


def test_always_property_checked_everywhere_including_initial_states() -> None:
    props: list[Property[int]] = [
        Property.always("not five", lambda s: None if s != 5 else f"reached {s}"),
        Property.always("even", lambda s: None if s % 2 == 0 else "odd"),
        Property.always("non-negative", lambda s: None if s >= 0 else "negative"),
        Property.always("not zero", lambda s: None if s != 0 else "zero"),
    ]
    r = search(Counter(10), properties=props)
    by_name = {v.property: v for v in r.violations}
    assert sorted(by_name) == ["even", "not five", "not zero"]
    assert r.state(by_name["not five"].node) == 5 and by_name["not five"].detail == "reached 5"
    assert by_name["not five"].count == 1 and by_name["not five"].kind == "always"
    assert r.state(by_name["even"].node) == 1 and by_name["even"].count == 5
    assert r.state(by_name["not zero"].node) == 0
    assert len(r.path_to(by_name["not five"].node)) == 5


def test_converged_property_checked_only_at_converged_states() -> None:
    m = GraphModel([(0, 1), (0, 2), (1, 3), (2, 4)], converged=[3, 4])
    prop: Property[int] = Property.converged("small", lambda s: None if s < 4 else f"ended at {s}")
    r = search(m, properties=[prop, Property.converged("any", lambda s: "always wrong")])
    by_name = {v.property: v for v in r.violations}
    assert r.state(by_name["small"].node) == 4 and by_name["small"].count == 1
    assert by_name["any"].count == 2 and by_name["any"].kind == "converged"


def test_property_kind_is_validated() -> None:
    with pytest.raises(ExploreError):
        Property("p", "sometimes", lambda s: None)  # type: ignore[arg-type]


def test_findings_keep_the_shortest_first_occurrence_and_count_the_rest() -> None:
    boom = Finding("boom", "long")
    boom_short = Finding("boom", "short")
    m = GraphModel(
        [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5)],
        converged=[3, 5],
        # listed first but deeper: edge 2 (2->3, depth 3); shallower: edge 4 (4->5, depth 2)
        findings={2: (boom,), 4: (boom_short,), 3: ("plain string",)},
    )
    r = search(m)
    by_key = {f.key: f for f in r.findings}
    assert sorted(by_key) == ["'plain string'", "boom"]
    rec = by_key["boom"]
    assert rec.finding is boom_short and rec.count == 2
    assert (r.state(rec.edge.src), r.state(rec.edge.dst)) == (4, 5) and r.state(rec.node) == 4
    assert [r.state(e.dst) for e in r.path_to(rec.node)] == [4]


def test_finding_key_may_be_a_method() -> None:
    class F:
        def key(self) -> str:
            return "k"

    r = search(GraphModel([(0, 1), (0, 2)], converged=[1, 2], findings={0: (F(),), 1: (F(),)}))
    assert [(f.key, f.count) for f in r.findings] == [("k", 2)]


def test_stop_on_first_stops_at_the_first_problem() -> None:
    r = search(
        Counter(1000), properties=[Property.always("small", lambda s: None if s < 3 else "big")], stop_on_first=True
    )
    assert not r.complete and r.bound_hit is not None and "first" in r.bound_hit
    assert r.stats.states == 4
    m = GraphModel([(0, 1), (0, 2), (1, 3)], converged=[2, 3], findings={0: (Finding("x"),)})
    g = search(m, stop_on_first=True)
    assert not g.complete and [f.key for f in g.findings] == ["x"]
    assert not g.graph.is_expanded(g.initial[0])  # the second action was never taken


def test_stop_on_first_with_nothing_wrong_is_complete() -> None:
    r = search(Counter(10), stop_on_first=True)
    assert r.complete


def test_expand_converged_false_treats_converged_states_as_terminal() -> None:
    m = GraphModel([(0, 1), (1, 2)], converged=[1])
    assert search(m).stats.states == 3
    r = search(m, expand_converged=False)
    assert r.stats.states == 2 and r.deadlocks == () and r.complete


def test_initial_states_are_deduplicated_and_indexed() -> None:
    m = GraphModel([(0, 2), (1, 2)], initial=[1, 0, 1], converged=[2])
    r = search(m)
    assert [r.state(n) for n in r.initial] == [1, 0]
    assert r.initial_index == {r.initial[0]: 0, r.initial[1]: 1}
    assert r.initial_index_of(node_of(r, 2)) == 0


def test_no_initial_states_is_an_empty_complete_search() -> None:
    r = search(GraphModel([], initial=[]))
    assert r.complete and r.stats.states == 0 and r.livelocks == ()


def test_progress_is_reported_and_rate_limited() -> None:
    seen: list[Progress] = []
    r = search(Counter(30_000), max_depth=10**6, on_progress=seen.append)
    assert seen, "at least the final report"
    assert seen[-1].states == r.stats.states and seen[-1].transitions == r.stats.transitions
    assert len(seen) <= r.stats.elapsed * 4 + 2
    assert all(a.states <= b.states for a, b in itertools.pairwise(seen))


@pytest.mark.parametrize(
    "kwargs",
    [{"strategy": "sideways"}, {"max_depth": -1}, {"max_states": 0}, {"timeout": 0}, {"timeout": -3.0}],
)
def test_bad_bounds_are_a_kamera_usage_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ExploreError) as info:
        search(Counter(3), **kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, KameraError) and info.value.exit_code == 2


def test_large_ring_livelock_needs_no_recursion() -> None:
    n = 20_000  # far beyond the recursion limit
    m = GraphModel([(i, (i + 1) % n) for i in range(n)])
    r = search(m, max_depth=n + 1, max_states=n + 1)
    (ll,) = r.livelocks
    assert len(ll.nodes) == n and len(ll.cycle) == n and ll.entry == r.initial[0]


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_should_stop_ends_the_search_with_a_partial_result(strategy: str) -> None:
    polls = []

    def stop() -> bool:
        polls.append(1)
        return len(polls) > 5

    r = search(Counter(100), should_stop=stop, strategy=strategy)  # type: ignore[arg-type]
    assert not r.complete and r.bound_hit == "stopped by the caller"
    assert r.stats.states == 6  # five expansions, each discovering one state


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_timeout_and_state_bounds_under_dfs_never_fake_a_livelock(strategy: str) -> None:
    # 0 -> 1 <-> 2 -> 3 (converged): the loop has an exit; cut the search at every possible point
    m = GraphModel([(0, 1), (1, 2), (2, 1), (2, 3)], converged=[3])
    for max_states in range(1, 5):
        r = search(m, max_states=max_states, strategy=strategy)  # type: ignore[arg-type]
        assert r.livelocks == ()
    for max_depth in range(4):
        r = search(m, max_depth=max_depth, strategy=strategy)  # type: ignore[arg-type]
        assert r.livelocks == ()


def test_graph_repr_is_short_and_stable() -> None:
    r = search(Counter(3))
    assert repr(r.graph) == "Graph(states=4, edges=3)"
