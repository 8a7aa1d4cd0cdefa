"""``strategy="random"``: seeded, reproducible random walks that say they are not exhaustive."""

from __future__ import annotations

import pytest
from explore_toys import GraphModel, Worker, Workers

from kamera_cli.explore import ExploreError, Property, search


def _grid(n: int) -> Workers:
    """n independent two-step workers: 3^n states, far more than a few walks visit."""
    return Workers([Worker((), i, (1,)) for i in range(n)], (0,) * n, {i: (i,) for i in range(n)})


def test_the_same_seed_gives_the_same_walks() -> None:
    a = search(_grid(6), strategy="random", seed=7, walks=5, reduction="none")
    b = search(_grid(6), strategy="random", seed=7, walks=5, reduction="none")
    assert a.graph.fingerprints == b.graph.fingerprints
    assert a.graph.e_dst == b.graph.e_dst
    c = search(_grid(6), strategy="random", seed=8, walks=5, reduction="none")
    assert c.graph.fingerprints != a.graph.fingerprints  # another seed, other walks (for these two seeds)


def test_walks_that_leave_states_unexpanded_are_incomplete_and_say_why() -> None:
    result = search(_grid(6), strategy="random", seed=1, walks=3, reduction="none")
    assert not result.complete
    assert result.bound_hit is not None and "not exhaustive" in result.bound_hit
    assert 1 < result.stats.states < 3 ** 6
    # every walk reaches a converged state here: every path of this system ends in one
    assert result.converged


def test_walks_that_expand_everything_they_found_are_complete() -> None:
    model = GraphModel([(0, 1), (1, 2)], converged=[2])
    result = search(model, strategy="random", walks=3)
    assert result.complete and result.bound_hit is None
    assert result.stats.states == 3


def test_a_violation_found_by_a_walk_has_a_real_path() -> None:
    prop: Property[object] = Property.always("var 3 stays 0", lambda s: "set" if s[0][3] else None)  # type: ignore[index]
    result = search(_grid(6), properties=[prop], strategy="random", seed=3, walks=20, reduction="none")
    (violation,) = result.violations
    path = result.path_to(violation.node)
    assert path and path[0].src in result.initial and path[-1].dst == violation.node


def test_bad_walk_counts_are_refused() -> None:
    with pytest.raises(ExploreError, match="walks must be at least 1"):
        search(_grid(2), strategy="random", walks=0)
