"""Replaying recorded paths: the caller's guard against a model that is not a function of its state."""

from __future__ import annotations

import pytest
from explore_toys import Counter, GraphModel, node_of

from kamera_cli.explore import ExploreError, Transition, first_divergence, replay, search


def test_replay_reproduces_the_recorded_path() -> None:
    m = GraphModel([(0, 1), (1, 2), (0, 3), (3, 2)], initial=[3, 0], converged=[2])
    r = search(m)
    node = node_of(r, 2)
    path = r.path_to(node)
    transitions = replay(m, r.initial_index_of(node), [e.action for e in path])
    assert [t.state for t in transitions] == [r.state(e.dst) for e in path] == [2]
    assert [t.label for t in transitions] == [e.label for e in path]
    assert first_divergence(m, r, node) is None
    assert first_divergence(m, r, r.initial[0]) is None


def test_replay_rejects_an_unknown_initial_state() -> None:
    with pytest.raises(ExploreError):
        replay(Counter(3), 1, [])


class Drifting(Counter):
    """Deterministic until ``drift`` is set, then step 3 lands somewhere else (like reading a clock)."""

    drift = False

    def successor(self, state: int, action: str) -> Transition[int]:
        if self.drift and state == 2:
            return Transition(state + 100)
        return super().successor(state, action)


def test_first_divergence_points_at_the_first_differing_state() -> None:
    m = Drifting(6)
    r = search(m)
    m.drift = True
    assert first_divergence(m, r, r.converged[0]) == 3  # the state after the third step
    assert first_divergence(m, r, 2) is None  # the prefix before the drift still reproduces


class MovingStart(Counter):
    start = 0

    def initial_states(self) -> tuple[int, ...]:
        return (self.start,)


def test_a_different_initial_state_diverges_at_zero() -> None:
    m = MovingStart(3)
    r = search(m)
    m.start = 1
    assert first_divergence(m, r, r.converged[0]) == 0
