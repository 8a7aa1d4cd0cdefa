"""Partial-order reduction against the full search on random kamera-shaped systems (Hypothesis).

Why random systems: the reduction's soundness argument (docs/explorer.md) has many conditions; a
system generator finds the interleavings a hand-written example would not think of. Each system is
searched both ways and must agree on everything kamera reports.
"""

from __future__ import annotations

from explore_toys import UnitWorkers, Worker, Workers
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.explore import ExploreError, Property, SearchResult, search


@st.composite
def systems(draw: st.DrawFn) -> Workers:
    n_vars = draw(st.integers(1, 4))
    var = st.integers(0, n_vars - 1)
    workers = draw(st.lists(
        st.builds(Worker, reads=st.lists(var, max_size=2).map(tuple), target=var,
                  offsets=st.lists(st.integers(0, 2), min_size=1, max_size=2).map(tuple),
                  alarm=st.integers(-1, 2)),
        min_size=1, max_size=4))
    watchers = {v: tuple(sorted(set(draw(st.lists(st.integers(0, len(workers) - 1), max_size=2)))))
                for v in range(n_vars)}
    initial = tuple(draw(st.lists(st.integers(0, 2), min_size=n_vars, max_size=n_vars)))
    return Workers(workers, initial, watchers)


def _both(model: Workers, properties: list[Property[object]]) -> tuple[SearchResult[object, object], ...]:
    return tuple(search(model, properties=properties, reduction=r, max_states=100_000)  # type: ignore[arg-type]
                 for r in ("none", "persistent"))


def _converged(result: SearchResult[object, object]) -> set[str]:
    return {result.graph.fingerprint(n) for n in result.converged}


def agrees(reduced: SearchResult[object, object], full: SearchResult[object, object]) -> None:
    """The reduced search reports what the full one does, and holds no state the full one lacks."""
    assert _converged(reduced) == _converged(full)
    assert bool(reduced.deadlocks) == bool(full.deadlocks)
    assert bool(reduced.livelocks) == bool(full.livelocks)
    assert {f.key for f in reduced.findings} == {f.key for f in full.findings}
    assert {v.property for v in reduced.violations} == {v.property for v in full.violations}
    assert set(reduced.graph.fingerprints) <= set(full.graph.fingerprints)


@settings(max_examples=400, deadline=None)
@given(systems(), st.booleans())
def test_reduced_search_reports_what_the_full_search_reports(model: Workers, scoped: bool) -> None:
    observes = (lambda tok: tok == ("var", 0)) if scoped else None
    props: list[Property[object]] = [
        Property("var0 is never 2", "always", lambda s: "two" if s[0][0] == 2 else None, observes),  # type: ignore[index]
        Property("ends with var0 = 1", "converged", lambda s: None if s[0][0] == 1 else "no"),  # type: ignore[index]
    ]
    full, reduced = _both(model, props)
    assert full.complete and reduced.complete
    assert full.stats.reduced == 0
    agrees(reduced, full)


@settings(max_examples=300, deadline=None)
@given(systems(), st.lists(st.integers(0, 2), min_size=4, max_size=4))
def test_any_grouping_into_units_reports_what_the_full_search_reports(model: Workers, units: list[int]) -> None:
    """Units only say which processes' futures are worked out together: any grouping is sound."""
    grouped = UnitWorkers(model.workers, model.initial_vars, model.watchers, units=tuple(units))
    props: list[Property[object]] = [
        Property("var0 is never 2", "always", lambda s: "two" if s[0][0] == 2 else None,  # type: ignore[index]
                 lambda tok: tok == ("var", 0)),
        Property("ends with var0 = 1", "converged", lambda s: None if s[0][0] == 1 else "no"),  # type: ignore[index]
    ]
    full, reduced = _both(grouped, props)
    assert full.complete and reduced.complete
    assert _converged(reduced) == _converged(full)
    assert bool(reduced.deadlocks) == bool(full.deadlocks)
    assert bool(reduced.livelocks) == bool(full.livelocks)
    assert {f.key for f in reduced.findings} == {f.key for f in full.findings}
    assert {v.property for v in reduced.violations} == {v.property for v in full.violations}


def _chains(k: int, length: int) -> UnitWorkers:
    """``k`` chains of ``length`` workers: each worker writes a variable of its own that wakes the
    next worker of its chain (a WebApp's request waking its Deployment's, then its ReplicaSet's)."""
    workers, watchers, units = [], {}, []
    for c in range(k):
        for i in range(length):
            v = c * length + i
            workers.append(Worker(reads=(v - 1,) if i else (), target=v, offsets=(1,)))
            if i + 1 < length:
                watchers[v] = (v + 1,)
            units.append(c)
    pending = frozenset(c * length for c in range(k))
    model = UnitWorkers(workers, (0,) * (k * length), watchers, units=tuple(units))
    model.initial_states = lambda: (((0,) * (k * length), pending),)  # type: ignore[method-assign]
    return model


def test_chains_that_wake_their_own_next_step_run_one_after_another() -> None:
    """3 chains of 3 workers each waking the next: the full search interleaves them (4^3 = 64 states);
    each chain's future is worked out once and the chains run one after the other (1 + 3 * 3)."""
    full, reduced = _both(_chains(3, 3), [])
    assert full.stats.states == 64
    assert reduced.stats.states == 10
    assert _converged(reduced) == _converged(full)


def test_a_horizon_counts_only_the_deferred_chains() -> None:
    """2 chains of 3 with a timer 4 steps away: the chain taken first is in the persistent set, so
    only the other one (3 steps) is deferred, 3 < 4, and the chains still run one after the other.
    Counting both chains (6 steps) would expand the first states fully (10 states), as a
    horizon of 3 must."""
    for horizon, states in ((4, 7), (3, 10)):
        model = _chains(2, 3)
        model.horizon = lambda state, h=horizon: h  # type: ignore[attr-defined]
        full, reduced = _both(model, [])
        assert full.stats.states == 16
        assert reduced.stats.states == states
        assert _converged(reduced) == _converged(full)


def test_independent_workers_take_one_order() -> None:
    """k workers on variables of their own, each writing twice: 3^k states become 2k+1."""
    k = 6
    workers = [Worker(reads=(), target=i, offsets=(1,)) for i in range(k)]
    # each write wakes the writer once more (like a controller's own watch); the second run writes nothing
    model = Workers(workers, (0,) * k, {i: (i,) for i in range(k)})
    full, reduced = _both(model, [])
    assert full.stats.states == 3 ** k
    assert reduced.stats.states == 2 * k + 1
    assert _converged(reduced) == _converged(full)


def test_the_cycle_proviso_keeps_a_livelock() -> None:
    """Two workers fighting over one variable while a third is independent: the fight is still found."""
    workers = [Worker(reads=(), target=0, offsets=(1,)), Worker(reads=(), target=0, offsets=(2,)),
               Worker(reads=(), target=1, offsets=(1,))]
    model = Workers(workers, (0, 0), {0: (0, 1)})
    full, reduced = _both(model, [])
    assert full.livelocks and reduced.livelocks
    assert reduced.stats.states <= full.stats.states


def test_the_cycle_proviso_does_not_ignore_deferred_work() -> None:
    """Worker 0 counts forever on its own variable; worker 1's single write raises a finding. Without
    the proviso the reduced search would follow worker 0 around its loop and never run worker 1."""
    model = Workers([Worker((0,), 0, (1,)), Worker((), 1, (2,), alarm=2)], (0, 0), {0: (0,)})
    full, reduced = _both(model, [])
    assert [f.key for f in full.findings] == [f.key for f in reduced.findings] == ["alarm-1"]


def test_visible_steps_are_not_reordered() -> None:
    """The property fails only where worker 1 ran before worker 0: a reduction that ran worker 0 first
    (it is free and first) would miss it, unless steps the property observes count as visible."""
    model = Workers([Worker((), 0, (1,)), Worker((), 1, (1,))], (0, 0), {})
    bad: Property[object] = Property("not (0, 1)", "always", lambda s: "seen" if s[0] == (0, 1) else None,  # type: ignore[index]
                                     lambda tok: tok == ("var", 0))
    full, reduced = _both(model, [bad])
    assert [v.property for v in full.violations] == [v.property for v in reduced.violations] == ["not (0, 1)"]
    # a property that observes neither variable lets the steps commute
    blind: Property[object] = Property("blind", "always", lambda s: None, lambda tok: False)
    _full, quiet = _both(model, [blind])
    assert quiet.stats.states < full.stats.states


def test_an_unknown_reduction_is_refused() -> None:
    import pytest

    with pytest.raises(ExploreError, match="unknown reduction"):
        search(Workers([Worker((), 0, (1,))], (0,), {}), reduction="sleepy")  # type: ignore[arg-type]
