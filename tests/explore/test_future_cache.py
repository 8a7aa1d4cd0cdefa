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

from explore_toys import ClockedWorkers, KeyedWorkers, TimerGroups, TimerWorkers, UnitWorkers, Worker, Workers
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_reduction import _chains, _converged, systems

import kamera_cli.explore.checker as checker
from kamera_cli.explore import SearchResult, futures, reduction, search
from kamera_cli.explore.futures import Future
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


def _graph_of(future: Future) -> tuple[object, ...] | None:
    """A future's graph as a value: every node's edges, enabled processes and depth, and what a
    successor inherits at it (``GroupGraph.after``)."""
    g = future.graph
    if g is None:
        return None
    return (future.node, tuple(tuple(e) for e in g.edges), tuple(g.enabled), tuple(g.depths), tuple(g.prints),
            tuple(g.lengths), tuple(g.slacks))


@contextmanager
def _kept_against_searched() -> Iterator[list[bool]]:
    """Every future the cache finds is compared with a search at the same state (the cache answers
    nothing, so the search runs): one entry per comparison, True when the graphs differ."""
    found: dict[tuple[int, frozenset[object]], Future] = {}
    compared: list[bool] = []
    real_find, real_search = FutureCache.find, reduction._group_future

    def find(self: FutureCache, state: Any, roots: frozenset[object]) -> Future | None:
        kept = real_find(self, state, roots)
        if kept is not None:
            found[(id(state), roots)] = kept
        return None

    def fresh(model: Any, roots: list[object], state: Any, *args: Any, **kw: Any) -> Future | None:
        searched = real_search(model, roots, state, *args, **kw)
        kept = found.pop((id(state), frozenset(roots)), None)
        if kept is not None and searched is not None:
            compared.append(_graph_of(kept) != _graph_of(searched) or kept != searched)
        return searched

    saved = futures.FutureCache.find, reduction._group_future
    futures.FutureCache.find, reduction._group_future = find, fresh  # type: ignore[method-assign]
    try:
        yield compared
    finally:
        futures.FutureCache.find, reduction._group_future = saved  # type: ignore[method-assign]


def _timer_pair(model: type[TimerWorkers]) -> TimerWorkers:
    """Workers 0 and 1 (one unit) reach the same state after two steps (0, then 1) or three (1, 0,
    then 1 again, woken by 0, writing what is there); worker 2, the lead, sets the timer; worker 3
    stands beside. Under a horizon the pair's future is worked out again at every state, with the
    timer set or not: the same key either way."""
    workers = [Worker(reads=(), target=0, offsets=(1,)), Worker(reads=(), target=1, offsets=(1,)),
               Worker(reads=(), target=2, offsets=(1,)), Worker(reads=(), target=3, offsets=(1,))]
    found = model(workers, (0, 0, 0, 0), {0: (1,)}, units=(2, 2, 0, 1), timer=2)
    found.horizon = lambda state: 2  # type: ignore[attr-defined]
    return found


def test_a_kept_future_has_the_graph_a_search_gives() -> None:
    """A group's states reached after different numbers of steps are one node where no timer is
    waiting in the rest of the state and two where one is (its delay shows the clock): kept where it
    was not, the pair's future had another graph than a search where it is, though the same key.
    Told apart by what the group can change and see (``group_fingerprint``), never."""
    with _kept_against_searched() as plain:
        search(_timer_pair(TimerWorkers))
    with _kept_against_searched() as grouped:
        search(_timer_pair(TimerGroups))
    assert any(plain), "the rest's timer never changed a kept graph: the test checks nothing"
    assert grouped and not any(grouped)


@st.composite
def timed(draw: st.DrawFn) -> TimerGroups:
    base = draw(systems())
    units = tuple(draw(st.lists(st.integers(0, 2), min_size=4, max_size=4)))
    timer = draw(st.integers(0, len(base.initial_vars) - 1))
    return TimerGroups(base.workers, base.initial_vars, base.watchers, units=units, timer=timer,
                       due=draw(st.integers(0, 6)))


@settings(max_examples=100, deadline=None)
@given(timed(), st.integers(1, 4))
def test_kept_graphs_are_searched_graphs(model: TimerGroups, horizon: int) -> None:
    """On random systems with a timer in the fingerprint and a horizon (futures worked out again,
    the cache answering): every kept future is the one a search gives, graph and all, and the
    reduced graph is the one searched futures give."""
    model.horizon = lambda state: horizon  # type: ignore[attr-defined]
    with _kept_against_searched() as compared:
        search(model, max_states=100_000)
    assert not any(compared)
    with_cache = search(model, max_states=100_000)
    saved = checker.future_cache  # type: ignore[attr-defined]
    checker.future_cache = lambda m: None  # type: ignore[attr-defined]
    try:
        without = search(model, max_states=100_000)
    finally:
        checker.future_cache = saved  # type: ignore[attr-defined]
    assert _graph(with_cache) == _graph(without)


def _links(model: Any) -> list[tuple[object, ...]]:
    """Every grouping weighed again for its linked units, with the links and the free units, in the
    order the search met them (``clusters.linked``'s arguments)."""
    seen: list[tuple[object, ...]] = []
    real = reduction.linked

    def record(units: dict[Any, list[Any]], free: list[Any], links: Any) -> Any:
        why = tuple((u, tuple(sorted(v, key=repr))) for u, v in links.items())
        seen.append((tuple(units.items()), tuple(free), why))
        return real(units, free, links)

    reduction.linked = record  # type: ignore[attr-defined]
    try:
        search(model, max_states=100_000)
    finally:
        reduction.linked = real  # type: ignore[attr-defined]
    return seen


@settings(max_examples=100, deadline=None)
@given(systems(), st.lists(st.integers(0, 2), min_size=4, max_size=4), st.integers(1, 4))
# (found by Hypothesis) a kept future of worker 0 that meets the pair of workers 2 and 3 is linked to
# it only by the search worked out again for the links
@example(Workers([Worker(reads=(), target=0, offsets=(0,), alarm=0), Worker(reads=(), target=2, offsets=(0,), alarm=0),
                  Worker(reads=(), target=1, offsets=(1,), alarm=0),
                  Worker(reads=(1,), target=0, offsets=(0,), alarm=0)],
                 (0, 0, 0), {0: (), 1: (), 2: ()}), [0, 0, 0, 0], 1)
def test_links_are_the_same_with_kept_futures(model: Workers, units: list[int], horizon: int) -> None:
    """The units linked for being kept from free (``_free_units``) are the same when a future comes
    from the cache: a kept future that meets another unit is not used, and the units it met are
    those a search at the state meets (worked out again for that), and a kept future's whole
    footprint is a search's; so the clusters weighed again are too."""
    plain, keyed = _plain(model, tuple(units)), _keyed(model, tuple(units))
    for m in (plain, keyed):
        m.horizon = lambda state: horizon  # type: ignore[attr-defined]
    assert _links(keyed) == _links(plain)
