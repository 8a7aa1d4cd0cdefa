"""A grouping that cannot give a smaller set is not weighed (``reduction._cannot_beat``).

Why: the persistent set is chosen twice, with every process its own unit and with the model's units,
and the smaller set is taken; working out the second grouping's futures is most of the reduction's
cost on a kopf operator with built-ins. Skipping it when no set of it can be smaller than the first
must leave every choice as it was: the same graph, state for state and edge for edge.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from explore_toys import UnitWorkers, Workers
from hypothesis import given, settings
from hypothesis import strategies as st
from test_future_cache import _graph
from test_reduction import _converged, systems

import kamera_cli.explore.reduction as reduction
from kamera_cli.explore import search


@contextmanager
def _every_grouping_weighed() -> Iterator[None]:
    saved = reduction._cannot_beat
    reduction._cannot_beat = lambda best, units, members: False
    try:
        yield
    finally:
        reduction._cannot_beat = saved


@settings(max_examples=300, deadline=None)
@given(systems(), st.lists(st.integers(0, 2), min_size=4, max_size=4), st.integers(2, 6))
def test_skipping_a_grouping_that_cannot_win_changes_nothing(model: Workers, units: list[int], horizon: int) -> None:
    """The same graph as when both groupings are always weighed (with and without a horizon), and
    the full search's outcomes."""
    for h in (None, horizon):
        grouped = UnitWorkers(model.workers, model.initial_vars, model.watchers, units=tuple(units))
        if h is not None:
            grouped.horizon = lambda state, h=h: h  # type: ignore[attr-defined]
        skipping = search(grouped, max_states=100_000)
        with _every_grouping_weighed():
            weighing = search(grouped, max_states=100_000)
        assert _graph(skipping) == _graph(weighing)
        full = search(grouped, reduction="none", max_states=100_000)
        assert _converged(skipping) == _converged(full)  # type: ignore[arg-type]


def test_a_grouping_is_skipped_only_when_each_of_its_sets_is_as_large() -> None:
    """Each set of a grouping holds a whole unit: it can win only against a larger set."""
    members: dict[object, list[int]] = {"a": [0], "b": [1, 2], "c": [3]}
    pairs = {"u": ["a", "c"], "v": ["b"]}  # two actions each
    assert reduction._cannot_beat(1, pairs, members)
    assert reduction._cannot_beat(2, pairs, members)  # a tie keeps the first set
    assert not reduction._cannot_beat(3, pairs, members)
    assert not reduction._cannot_beat(2, {"u": ["a"], "v": ["b", "c"]}, members)
