"""Futures reused by what they read (``reduction.FutureCache``) against futures searched every time.

Why: a kept future must be exactly the one a search at the state would give, or the reduced graph
would depend on which states were met first (and differ between the serial and the split search).
So the reduced search with the cache must record the very graph it records without it, and agree
with the full search; a key that leaves out a variable the future reads must be caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from explore_toys import ClockedWorkers, KeyedWorkers, UnitWorkers, Worker, Workers
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reduction import _chains, _converged, systems

import kamera_cli.explore.checker as checker
from kamera_cli.explore import SearchResult, search
from kamera_cli.explore.reduction import FutureCache, future_cache


@contextmanager
def _counting() -> Iterator[list[FutureCache]]:
    made: list[FutureCache] = []

    def make(model: object) -> FutureCache | None:
        found = future_cache(model)
        if found is not None:
            made.append(found)
        return found

    saved = checker.future_cache  # type: ignore[attr-defined]
    checker.future_cache = make  # type: ignore[attr-defined]
    try:
        yield made
    finally:
        checker.future_cache = saved  # type: ignore[attr-defined]


def _keyed(model: Workers, units: tuple[int, ...] = (), blind: frozenset[int] = frozenset()) -> KeyedWorkers:
    return KeyedWorkers(model.workers, model.initial_vars, model.watchers, units=units, blind=blind)


def _plain(model: Workers, units: tuple[int, ...] = ()) -> UnitWorkers:
    return UnitWorkers(model.workers, model.initial_vars, model.watchers, units=units)


def _graph(result: SearchResult[Any, Any]) -> tuple[object, ...]:
    g = result.graph
    return (tuple(g.fingerprints), tuple(g.e_src), tuple(g.e_dst), result.stats.reduced)


@settings(max_examples=300, deadline=None)
@given(systems(), st.lists(st.integers(0, 2), min_size=4, max_size=4), st.integers(2, 6))
def test_kept_futures_give_the_graph_searched_futures_give(model: Workers, units: list[int], horizon: int) -> None:
    """The same graph with the cache as without (and the full search's outcomes), with and without
    a horizon (aged futures are worked out again: the cache answers those)."""
    for h in (None, horizon):
        plain, keyed = _plain(model, tuple(units)), _keyed(model, tuple(units))
        if h is not None:
            plain.horizon = keyed.horizon = lambda state, h=h: h  # type: ignore[attr-defined]
        without = search(plain, max_states=100_000)
        with_cache = search(keyed, max_states=100_000)
        full = search(plain, reduction="none", max_states=100_000)
        assert _graph(with_cache) == _graph(without)
        assert _converged(with_cache) == _converged(full)  # type: ignore[arg-type]
        assert bool(with_cache.livelocks) == bool(full.livelocks)
        assert bool(with_cache.deadlocks) == bool(full.deadlocks)


def test_a_deferred_chain_is_searched_once_per_state_it_reaches() -> None:
    """2 chains of 3 under a horizon of 4: the deferred chain's future ages at every step of the
    chosen one and is worked out again; met again with the same values, it is taken from the cache."""
    plain = _chains(3, 3)
    keyed = KeyedWorkers(plain.workers, plain.initial_vars, plain.watchers, units=plain.units)
    keyed.initial_states = plain.initial_states  # type: ignore[method-assign]
    for m in (plain, keyed):
        m.horizon = lambda state: 5  # type: ignore[attr-defined]
    with _counting() as made:
        with_cache = search(keyed)
    without = search(plain)
    assert _graph(with_cache) == _graph(without)
    assert made and made[0].hits > 0


def test_a_key_that_leaves_out_a_read_is_caught() -> None:
    """A key blind to a variable the future reads reuses a future where the variable changed: the
    graph then differs from the one searched futures give (what the test above would catch)."""
    # (found by Hypothesis) workers 0 and 1 set variable 0 to 0; worker 2 moves variable 1 and wakes itself
    workers = [Worker(reads=(), target=0, offsets=(0,)), Worker(reads=(), target=0, offsets=(0,)),
               Worker(reads=(), target=1, offsets=(1,))]
    model = Workers(workers, (0, 0), {0: (), 1: (2,)})
    honest, blind = _keyed(model), _keyed(model, blind=frozenset({0, 1}))
    # (blind to both variables: every future is keyed by its workers' pending entries alone)
    plain = _plain(model)
    for m in (honest, blind, plain):
        m.horizon = lambda state: 2  # type: ignore[attr-defined]
    assert _graph(search(honest)) == _graph(search(plain))
    assert _graph(search(blind)) != _graph(search(plain))


@st.composite
def clocked(draw: st.DrawFn) -> ClockedWorkers:
    base = draw(systems())
    units = tuple(draw(st.lists(st.integers(0, 2), min_size=4, max_size=4)))
    deadlines = tuple(draw(st.lists(st.integers(-1, 8), min_size=len(base.workers), max_size=len(base.workers))))
    return ClockedWorkers(base.workers, base.initial_vars, base.watchers, units=units, deadlines=deadlines)


def _agree(model: ClockedWorkers) -> None:
    full = search(model, reduction="none", max_states=100_000)
    reduced = search(model, max_states=100_000)
    assert full.complete and reduced.complete
    assert _converged(reduced) == _converged(full)  # type: ignore[arg-type]
    assert bool(reduced.deadlocks) == bool(full.deadlocks)
    assert {f.key for f in reduced.findings} == {f.key for f in full.findings}


@settings(max_examples=25, deadline=None)
@given(clocked())
def test_deferred_steps_stay_within_their_windows(model: ClockedWorkers) -> None:
    """Steps whose outcome changes at a deadline, deferred behind other units: the reduced search
    finds every outcome the full one does (each deferred step is moved only within its window,
    ``reduction._within``)."""
    _agree(model)


def test_a_deferred_step_is_not_moved_past_its_deadline() -> None:
    """A chain of 4 steps, and a worker that wakes a second one, which writes 2 before instant 4 and
    0 from then on: the chain is taken first and the pair deferred. Deferred for the whole chain,
    the second worker would only ever write 0 (what the reduced search finds when ``_within`` lets
    every future through); its window, checked at instant 1, allows 2 more instants."""
    chain = _chains(1, 4)
    workers = [*chain.workers, Worker(reads=(), target=4, offsets=(1,)), Worker(reads=(4,), target=5, offsets=(1,))]
    watchers = {**chain.watchers, 4: (5,)}
    model = ClockedWorkers(workers, (0,) * 6, watchers, units=(0, 0, 0, 0, 1, 1), deadlines=(-1,) * 5 + (4,))
    model.initial_states = lambda: (((0,) * 6, frozenset({0, 4}), 0),)  # type: ignore[method-assign]
    full = search(model, reduction="none")
    assert {full.graph.state(n)[0][5] for n in full.converged} == {2, 0}
    _agree(model)
