"""The leading unit taken as not free, its future not worked out (``reduction._pick``).

Why: the set is chosen first with the unit that comes first in the fixed order taken as not free;
when every other unit is then free (against its first steps, and each other), the set is its
actions without a search of its future — on a kopf operator with built-ins that search was the
owned tree's, or a cluster's joint one, at most states (docs/explorer.md, "The leading unit").
Taking any unit as not free is sound; these check that the search still reports what the full one
does, and that the leading unit's future is indeed not searched.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any

from explore_toys import UnitWorkers, Worker, Workers
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reduction import agrees, systems
from test_reduction_linked import FULL_LIMIT, objects

import kamera_cli.explore.reduction as reduction
from kamera_cli.explore import Property, search


def _props() -> list[Property[object]]:
    return [
        Property("var0 is never 2", "always", lambda s: "two" if s[0][0] == 2 else None,  # type: ignore[index]
                 lambda tok: tok == ("var", 0)),
        Property("ends with var0 = 1", "converged", lambda s: None if s[0][0] == 1 else "no"),  # type: ignore[index]
    ]


@settings(max_examples=300, deadline=None)
@given(systems(), st.lists(st.integers(0, 2), min_size=4, max_size=4), st.sampled_from([None, 2, 4, 6]))
def test_the_lead_taken_as_not_free_reports_what_the_full_search_reports(
        model: Workers, units: list[int], horizon: int | None) -> None:
    grouped = UnitWorkers(model.workers, model.initial_vars, model.watchers, units=tuple(units))
    if horizon is not None:
        grouped.horizon = lambda state: horizon  # type: ignore[attr-defined]
    full = search(grouped, properties=_props(), reduction="none", max_states=100_000)
    reduced = search(grouped, properties=_props(), max_states=100_000)
    assert full.complete and reduced.complete
    agrees(reduced, full)


@settings(max_examples=80, deadline=None)
@given(objects(3))
def test_with_linked_units_too(model: Any) -> None:
    """Objects whose pairs are never free: the clusters are chosen again with their lead taken as
    not free."""
    full = search(model, properties=_props(), reduction="none", max_states=FULL_LIMIT)
    if not full.complete:
        return
    reduced = search(model, properties=_props(), max_states=FULL_LIMIT)
    assert reduced.complete
    agrees(reduced, full)


@contextmanager
def _searched() -> Iterator[list[frozenset[Hashable]]]:
    """The groups whose futures were searched, by their roots."""
    seen: list[frozenset[Hashable]] = []
    saved = reduction._group_future

    def spy(model: Any, roots: list[Hashable], *rest: Any) -> Any:
        seen.append(frozenset(roots))
        return saved(model, roots, *rest)

    reduction._group_future = spy  # type: ignore[assignment]
    try:
        yield seen
    finally:
        reduction._group_future = saved


def test_the_leads_future_is_not_searched_when_the_others_are_free() -> None:
    """Three workers on variables of their own, each its own unit: at every state the first one in
    the order is chosen, and only the others' futures are searched (each once, then inherited).
    Full: 8 states; reduced: 4, in order."""
    model = UnitWorkers([Worker((), 0, (1,)), Worker((), 1, (1,)), Worker((), 2, (1,))], (0, 0, 0), {},
                        units=(0, 1, 2))
    with _searched() as seen:
        reduced = search(model, max_states=1000)
    assert reduced.stats.states == 4
    assert frozenset({0}) not in seen
    assert sorted(map(sorted, seen)) == [[1], [2]]  # type: ignore[type-var]
