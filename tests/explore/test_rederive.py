"""A search that lets go of expanded states gives back the very states a search keeping them holds.

Why: ``keep_states=False`` is how ``kamera check`` searches (issue #26, memory per state); every report
then reads states derived again from their parent paths, so they must be the kept search's states,
for every node, with and without the reduction, and a model whose step is not a function must be
told apart (``diverged``), not crash or pass silently.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from explore_toys import Counter, Workers
from hypothesis import given, settings
from test_reduction import systems

from kamera_cli.explore import Footprint, Rederive, SearchResult, SearchSettings, Transition, search_with
from kamera_cli.explore.result import REMOTE


def _run(model: Any, keep: bool, **kwargs: Any) -> SearchResult[Any, Any]:
    return search_with(model, SearchSettings(keep_states=keep, **kwargs))


@settings(max_examples=40, deadline=None)
@given(systems())
def test_every_dropped_state_comes_back_as_kept(model: Workers) -> None:
    for reduction in ("persistent", "none"):
        kept = _run(model, True, reduction=reduction)
        dropped = _run(model, False, reduction=reduction)
        g, h = kept.graph, dropped.graph
        assert (h.fingerprints, h.parents, h.e_dst) == (g.fingerprints, g.parents, g.e_dst)
        assert dropped.converged == kept.converged and dropped.stats.states == kept.stats.states
        held = [n for n in range(h.num_states) if h.states[n] is not REMOTE]
        assert set(dropped.initial) | set(dropped.converged) <= set(held)
        # read back in an order that makes the batch share and skip prefixes
        nodes = list(range(h.num_states))[::-1]
        h.prefetch(nodes)
        assert [h.state(n) for n in range(h.num_states)] == [g.state(n) for n in range(g.num_states)]
        assert isinstance(h.remote, Rederive) and h.remote.diverged == []


@settings(max_examples=40, deadline=None)
@given(systems())
def test_every_dropped_label_comes_back_as_kept(model: Workers) -> None:
    """Labels hold the objects a step wrote, so a search letting go of states lets go of them too;
    each comes back as the kept search's, tree edges (derived with their targets) and the others."""
    for reduction in ("persistent", "none"):
        kept = _run(model, True, reduction=reduction).graph
        result = _run(model, False, reduction=reduction)
        dropped = result.graph
        # only the labels of steps with findings stay (a finding's record shows its step), and those the
        # result read already (the livelocks' paths and cycles)
        read = {e.id for ll in result.livelocks for e in (*ll.path, *ll.cycle)}
        for e, label in enumerate(dropped.e_label):
            found = bool(model.successor(kept.state(kept.e_src[e]), kept.e_action[e]).findings)
            assert (label is not REMOTE) == (found or e in read)
        edges = list(range(dropped.num_edges))[::-1]
        dropped.prefetch_labels(edges[: len(edges) // 2])  # two batches: the second meets some held
        assert [dropped.label(e) for e in edges] == [kept.label(e) for e in edges]
        assert isinstance(dropped.remote, Rederive) and dropped.remote.diverged == []


def test_the_labels_of_many_paths_come_in_one_batch() -> None:
    model = _Counting(12)
    g = _run(model, False).graph
    before = model.calls
    g.prefetch_paths([12, 7, 3])
    # the union of the three paths is the path to 12: each of its 12 steps taken once
    assert model.calls - before == 12
    assert [e.label for e in g.path_to(7)] == [f"+1 from {i}" for i in range(7)]
    assert model.calls - before == 12  # read from the batch, not derived again


class _Counting(Counter):
    """Counts its steps and labels each by its source."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.calls = 0

    def successor(self, state: int, action: str) -> Transition[int]:
        self.calls += 1
        return Transition(super().successor(state, action).state, f"+1 from {state}")


def test_expanded_states_are_let_go_of() -> None:
    result = _run(Counter(30), False)
    g = result.graph
    assert g.num_states == 31
    # the initial state and the converged end stay; every state in between was expanded and let go of
    assert [n for n in range(g.num_states) if g.states[n] is not REMOTE] == [0, 30]
    assert g.state(17) == 17


def test_dfs_and_random_walks_keep_their_states() -> None:
    """Only breadth-first parents are the discovering edges: the other strategies keep everything."""
    for strategy in ("dfs", "random"):
        g = _run(Counter(10), False, strategy=strategy).graph
        assert all(s is not REMOTE for s in g.states)
        assert g.remote is None


class _Drifting(Counter):
    """A step that is not a function of its state: the second time it runs, it lands elsewhere."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.runs: dict[tuple[int, str], int] = {}

    def successor(self, state: int, action: str) -> Transition[int]:
        seen = self.runs[(state, action)] = self.runs.get((state, action), 0) + 1
        step = super().successor(state, action)
        return step if seen == 1 or state != 3 else Transition(state + 100, step.label)

    def actions(self, state: int) -> Sequence[str]:
        return [] if state >= 100 else super().actions(state)


def test_a_step_that_is_not_a_function_is_counted() -> None:
    g = _run(_Drifting(6), False).graph
    assert g.state(5) == 104  # what the second run of the path gives, as the runner's note says
    assert isinstance(g.remote, Rederive) and g.remote.diverged == [4, 5]  # and each state after it


def test_a_scan_reads_states_without_keeping_them() -> None:
    g = _run(Counter(40), False).graph
    assert list(g.iter_states(range(g.num_states), chunk=7)) == list(range(41))
    assert sum(s is REMOTE for s in g.states) == 39  # the scan put nothing back


class _SlowCounters:
    """Two independent counters to 400, each step 5 ms: the reduction's look-ahead from the first
    state alone would take hundreds of steps (seconds) inside one expansion."""

    def initial_states(self) -> Sequence[tuple[int, int]]:
        return ((0, 0),)

    def actions(self, state: tuple[int, int]) -> Sequence[int]:
        return [i for i in (0, 1) if state[i] < 400]

    def successor(self, state: tuple[int, int], action: int) -> Transition[tuple[int, int]]:
        time.sleep(0.005)
        nxt = (state[0] + 1, state[1]) if action == 0 else (state[0], state[1] + 1)
        return Transition(nxt, f"c{action}", footprint=Footprint(action, frozenset({action}), frozenset({action})))

    def fingerprint(self, state: tuple[int, int]) -> str:
        return f"{state[0]},{state[1]}"

    def is_converged(self, state: tuple[int, int]) -> bool:
        return state == (400, 400)

    def process(self, action: int) -> int:
        return action

    def footprint(self, state: object, action: object, transition: Transition[object]) -> object:
        return transition.footprint


def test_a_timeout_ends_the_reductions_look_ahead_too() -> None:
    """The deadline is checked between expansions, and inside the look-ahead of one: a timeout stops
    the search at about its instant (kamera's supervisor kills a worker that overruns it)."""
    started = time.monotonic()
    result = search_with(_SlowCounters(), SearchSettings(timeout=0.3))
    assert not result.complete and result.bound_hit == "timeout 0.3s reached"
    assert time.monotonic() - started < 1.5


class _Overrun:
    """Two steps from the start; the first runs past the search's deadline and reports it."""

    def initial_states(self) -> Sequence[str]:
        return ("start",)

    def actions(self, state: str) -> Sequence[int]:
        return (0, 1) if state == "start" else ()

    def successor(self, state: str, action: int) -> Transition[str]:
        if action == 0:
            time.sleep(0.4)
            return Transition("stuck", "spin", findings=("overran its budget",),
                              footprint=Footprint(0, frozenset({0}), frozenset({0})))
        return Transition("other", "other", footprint=Footprint(1, frozenset({1}), frozenset({1})))

    def fingerprint(self, state: str) -> str:
        return state

    def is_converged(self, state: str) -> bool:
        return state != "start"

    def process(self, action: int) -> int:
        return action

    def footprint(self, state: object, action: object, transition: Transition[object]) -> object:
        return transition.footprint


def test_a_step_that_runs_past_the_deadline_keeps_its_finding() -> None:
    """The search stops at its deadline, but what the step that ran past it found is kept, with its
    path: a controller's overrun there used to be dropped with the half-expanded state, and the check
    said only "search incomplete"."""
    result = search_with(_Overrun(), SearchSettings(timeout=0.2))
    assert not result.complete and result.bound_hit == "timeout 0.2s reached"
    assert [f.finding for f in result.findings] == ["overran its budget"]
    assert result.graph.num_states == 2  # the start and the overrun's state; the other step never ran
