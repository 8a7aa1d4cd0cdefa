"""Partial-order reduction: at each state, expand a persistent subset of the enabled actions.

Why: independent work interleaves in every order. ``k`` controllers that each take two steps on
objects of their own reach ``3^k`` states, although every order ends in the same place. A
persistent set ``T`` at state ``s`` is a set of enabled actions such that no sequence of actions
outside ``T`` taken from ``s`` contains an action dependent on one in ``T``; exploring only ``T``
(with the conditions below) still reaches every terminal state, every reachable stuck region,
every finding and every property violation (docs/explorer.md, "Partial-order reduction").

How ``T`` is chosen, from the footprints the model reports (``Reducible``): actions belong to
*processes* (kamera: one reconcile request), processes to *units* (kamera: one owned tree). A unit's
*future* at ``s`` is what its processes, and every process they wake, can do alone: a search of the
states they reach with everything else frozen. A unit is *free* when that search is complete, meets
no global step, and neither touches, nor wakes, nor is touched by any other unit (iterated to a
fixpoint, free units by their futures, others by their first steps). ``T`` is every enabled action
of the units that are not free, or, when all are free, the actions of the one with the smallest key
(so a unit keeps being chosen until its work is done: docs/explorer.md). Every action
outside ``T`` is a step of a free unit's group, so every path outside ``T`` is an interleaving of
the free groups' own paths, none of which touches what ``T`` reads, writes or wakes. Futures are
inherited from state to state (``inherit``): searched once per tree, not once per state.

Conditions kept (checked by the caller, ``checker.py``):
- visibility: when ``T`` is not everything, no action in ``T`` may write what an ``always``
  property observes, nor change whether the state is converged;
- cycle proviso: when an edge through ``T`` closes a cycle, the state is expanded fully, so every
  cycle of the reduced graph holds a fully expanded state (livelocks and ignored work; proviso.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from kamera_cli.explore.clusters import linked
from kamera_cli.explore.futures import CYCLE, Future, FutureCache, GroupGraph, future_cache, inherit
from kamera_cli.explore.model import Footprint, Transition

__all__ = ["CYCLE", "NONE", "PERSISTENT", "Future", "FutureCache", "Reducible", "Reduction", "future_cache",
           "inherit", "persistent_subset"]

S = TypeVar("S")
A = TypeVar("A")
S_contra = TypeVar("S_contra", contravariant=True)
A_contra = TypeVar("A_contra", contravariant=True)

Reduction = Literal["persistent", "none"]
PERSISTENT: Reduction = "persistent"
NONE: Reduction = "none"


@runtime_checkable
class Reducible(Protocol[S_contra, A_contra]):
    """What a model adds to ``Model`` to be reduced.

    ``process``: the process an action belongs to (actions of one process are never reordered).
    ``footprint``: the step's footprint, or ``None`` when the step is global (time, external
    actions, anything whose effect the model cannot describe): a ``None`` among the enabled
    actions makes the state fully expanded, one in a unit's future makes that unit not free.
    ``unit(state, process)`` (optional): the unit a process belongs to (by default its own).
    ``group_key(state, processes, footprint)`` (optional): a digest of everything a future of the
    group ``processes`` whose union footprint is ``footprint`` depends on at ``state`` (the values of
    its read tokens, its processes' pending work), or ``None`` when the model cannot say; futures are
    then reused between states with equal digests (``FutureCache``).
    ``group_fingerprint(state, group)`` (optional, with ``group_key``): a state met in the search of
    a group's future, as a node of that search, from what the group can change and see only; two
    states the plain fingerprint tells apart by the frozen rest alone (a waiting timer there, and
    how far the clock has moved) are one node, so the future's graph is the same at every state
    with the same key (``_group_future``; docs/explorer.md, "A kept future's graph").
    """

    def process(self, action: A_contra) -> Hashable: ...

    def footprint(self, state: S_contra, action: A_contra, transition: Transition[Any]) -> Footprint | None: ...


#: the cause counted when the deferred steps could reach a pending timer's instant
TIMER_IN_REACH = "a timer falls due within the deferred steps"


def persistent_subset(model: Reducible[S, A], state: S, actions: Sequence[A],
                      transitions: Sequence[Transition[S]],
                      successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
                      fingerprint: Callable[[S], str], horizon: int | None = None,
                      causes: dict[str, int] | None = None,
                      futures: dict[Hashable, Future] | None = None,
                      cache: FutureCache | None = None) -> tuple[list[int], list[Footprint]] | None:
    """Indexes (into ``actions``) of a persistent set at ``state`` and every action's footprint, or
    ``None`` when the state must be expanded fully.

    ``successors_of(state, process)`` returns the process's enabled actions at ``state`` with their
    transitions. ``horizon``: how many steps can be taken from ``state`` before time alone enables
    more work (a timer falls due, or a clock-dependent step leaves the window it was checked over);
    ``None`` when nothing is waiting for time. ``causes`` counts why a state is expanded fully (a
    global step's ``Transition.cause``, or ``TIMER_IN_REACH``). ``futures``: the groups' futures
    known at ``state`` (inherited from its parent); the ones worked out here are added to it. What
    is chosen never depends on which futures were known, only on the state: a known future is the
    one that would be worked out, and one too old for the horizon is worked out again. ``cache``:
    futures worked out at other states, reused where what they read is the same (``FutureCache``).
    """
    if len(actions) < 2:
        return None
    prints: list[Footprint] = []
    order: list[Hashable] = []
    members: dict[Hashable, list[int]] = {}
    first: dict[Hashable, Footprint] = {}
    for i, (a, t) in enumerate(zip(actions, transitions)):
        fp = model.footprint(state, a, t)
        if fp is None:
            _count(causes, t.cause or "unknown")
            return None
        prints.append(fp)
        p = model.process(a)
        if p not in members:
            order.append(p)
            members[p] = []
            first[p] = fp
        else:
            first[p] = first[p].union(fp)
        members[p].append(i)
    if len(order) < 2:
        return None
    unit_of = getattr(model, "unit", None)
    modes: list[dict[Hashable, list[Hashable]]] = [{("process", p): [p] for p in order}]
    # the order free units are chosen in, the same in every grouping: by owned tree, then process
    rank: dict[Hashable, tuple[str, str]] = {p: ("", repr(p)) for p in order}
    if unit_of is not None:
        trees: dict[Hashable, list[Hashable]] = {}
        for p in order:
            tree = ("unit", unit_of(state, p))
            trees.setdefault(tree, []).append(p)
            rank[p] = (repr(tree), repr(p))
        if 1 < len(trees) < len(order):  # one tree holding every process can only be chosen whole
            modes.append(trees)
    known = futures if futures is not None else {}
    best: list[int] | None = None
    first_cause = ""
    for units in modes:
        if best is not None and _cannot_beat(len(best), units, members):
            continue
        picked, cause = _choose(model, state, units, members, first, prints, actions, transitions, successors_of,
                                fingerprint, horizon, known, rank, cache)
        if picked is not None and len(picked) < len(actions) and (best is None or len(picked) < len(best)):
            best = picked
        first_cause = first_cause or cause
    if best is None:
        if first_cause:
            _count(causes, first_cause)
        return None
    return best, prints


def _cannot_beat(best: int, units: Mapping[Hashable, list[Hashable]], members: Mapping[Hashable, list[int]]) -> bool:
    """Whether no set of the grouping ``units`` can be smaller than a set of ``best`` actions already
    found: each holds every action of at least one unit (``_choose``), and only a smaller set replaces
    the one found first. Then the grouping's futures, the costly part, are not worked out, and what is
    chosen is the same (docs/explorer.md, "A grouping that cannot win is not weighed")."""
    return best <= min(sum(len(members[p]) for p in procs) for procs in units.values())


def _choose(model: Reducible[S, A], state: S, units: dict[Hashable, list[Hashable]],
            members: dict[Hashable, list[int]], first: dict[Hashable, Footprint], prints: list[Footprint],
            actions: Sequence[A], transitions: Sequence[Transition[S]],
            successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
            fingerprint: Callable[[S], str], horizon: int | None, known: dict[Hashable, Future],
            rank: Mapping[Hashable, tuple[str, str]], cache: FutureCache | None = None,
            ) -> tuple[list[int] | None, str]:
    """The persistent set one grouping of the processes into units gives (indexes into ``actions``),
    or ``None`` with the cause when it reduces nothing.

    Two groupings are weighed (``persistent_subset``): every process its own unit, and processes by
    the model's units (owned trees). Each is a persistent set on its own, so taking the smaller is
    sound; both are functions of the state, so the choice is too. Their futures share ``known``
    under keys that say which grouping they belong to.

    When units that are not free are linked to each other (``clusters.linked``),
    each cluster is made one unit and the choice is made again: a cluster whose joint future is free
    can then be left out of the set, where before every unit that is not free was taken. Any
    grouping gives a persistent set, so the smallest of these is one too (docs/semantics.md).
    """
    links: dict[Hashable, set[Hashable]] = {}
    best, cause, free = _pick(model, state, units, members, first, prints, actions, transitions, successors_of,
                              fingerprint, horizon, known, rank, cache, links)
    current = units
    while True:
        merged = linked(current, free, links)
        if merged is None:
            break
        current, links = merged, {}
        picked, _cause, free = _pick(model, state, current, members, first, prints, actions, transitions,
                                     successors_of, fingerprint, horizon, known, rank, cache, links)
        if picked is not None and (best is None or len(picked) < len(best)):
            best = picked
    return best, ("" if best is not None else cause)


def _pick(model: Reducible[S, A], state: S, units: dict[Hashable, list[Hashable]],
          members: dict[Hashable, list[int]], first: dict[Hashable, Footprint], prints: list[Footprint],
          actions: Sequence[A], transitions: Sequence[Transition[S]],
          successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
          fingerprint: Callable[[S], str], horizon: int | None, known: dict[Hashable, Future],
          rank: Mapping[Hashable, tuple[str, str]], cache: FutureCache | None, links: dict[Hashable, set[Hashable]],
          ) -> tuple[list[int] | None, str, list[Hashable]]:
    """The persistent set of one grouping: every unit that is not free, or the free unit with the
    least key when all are; ``None`` with the cause when it is every action or time could enable
    work along the deferred paths. Also the free units, and in ``links`` why the others are not."""
    for unit, procs in units.items():  # a future whose unit has other processes here is not this one's
        if unit in known and known[unit].enabled != frozenset(procs):
            del known[unit]
    free: list[Hashable] = []
    def order(u: Hashable) -> tuple[str, str]:
        return min(rank[p] for p in units[u])
    lead = min(units, key=order)
    stopped: dict[Hashable, set[Hashable]] = {}
    for attempt in range(2):
        # First with the leading unit taken as not free, its future not worked out: when every other
        # unit is free against its first steps, the set is its actions, which is what it would be
        # were it free too (docs/semantics.md, "The leading unit"); otherwise as every unit weighs.
        links.clear()
        free = _free_units(model, state, units, members, first, actions, transitions, successors_of,
                           fingerprint, known, cache, links, lead, stopped)
        if len(free) < len(units) - 1:
            links.clear()
            free = _free_units(model, state, units, members, first, actions, transitions, successors_of,
                               fingerprint, known, cache, links, None, stopped)
        free_set = set(free)
        chosen = ([u for u in units if u not in free_set] or [min(free, key=order)]) if free else list(units)
        deferred = [u for u in free if u not in chosen]
        # Every path outside the set is made of the deferred groups' paths (a free unit taken into
        # the set is not one of them), so it is at most their total length; time alone must not
        # enable anything along it (a timer falling due there would be a process the argument never
        # looked at), counting the steps an inherited future has aged; and a step of the set moved
        # after such a path must not move further than its footprint's window says.
        if not deferred:
            break
        total = sum(known[u].length for u in deferred)
        taken = [prints[i].window for u in chosen for p in units[u] for i in members[p]]
        limit = min([*(w for w in taken if w is not None), *([horizon] if horizon is not None else [])],
                    default=None)
        if (limit is None or total + max(known[u].age for u in deferred) < limit) and all(
                _within(known[u], total) for u in deferred):
            break
        if attempt == 0 and any(known[u].age for u in deferred):
            for u in deferred:
                if known[u].age:
                    del known[u]  # worked out again at this state's instant
            continue
        return None, TIMER_IN_REACH, free
    picked = sorted(i for u in chosen for p in units[u] for i in members[p])
    return (None, "", free) if len(picked) == len(actions) else (picked, "", free)


def _within(future: Future, total: int) -> bool:
    """Whether every step of a deferred group stays within its window on every path outside the
    persistent set (``total``: the deferred groups' longest paths together).

    A step of the group's search at depth ``d`` was checked at the instant the future was worked out
    plus ``d``, over the next ``window`` instants. Outside the set it runs after at most the longest
    path to it in its own group and every other deferred group's steps, and one more when a step of
    the set is moved before it; the future has aged ``age`` steps since, so it is moved by at most
    ``age + total - length + (length - 1 - after - d) + 1`` instants, ``after`` being the longest
    path after the step: ``GroupGraph.summarise`` keeps, per node, the least
    ``window + d + after - length`` (the future's ``slack``), and the step is within its window
    while ``age + total - length`` stays below that. A step on the group's longest path is moved only
    by the others and the age, so a long group no longer uses up its own windows (docs/explorer.md).
    """
    if future.slack is None:
        return True
    return future.age + total - future.length < future.slack


def _clash(mine: Future, theirs: Footprint, their_group: frozenset[Hashable]) -> bool:
    """Whether a free unit's group could interfere with another unit (its first steps, or its
    group's future when it is free too)."""
    if not mine.processes.isdisjoint(their_group) or not theirs.wakes.isdisjoint(mine.processes):
        return True
    return mine.footprint.conflicts(theirs)


def _free_units(model: Reducible[S, A], state: S, units: dict[Hashable, list[Hashable]],
                members: dict[Hashable, list[int]], first: dict[Hashable, Footprint], actions: Sequence[A],
                transitions: Sequence[Transition[S]],
                successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
                fingerprint: Callable[[S], str], known: dict[Hashable, Future],
                cache: FutureCache | None = None,
                links: dict[Hashable, set[Hashable]] | None = None, assumed: Hashable | None = None,
                stopped: dict[Hashable, set[Hashable]] | None = None) -> list[Hashable]:
    """The units whose groups are free at ``state``: every path their groups can take alone
    interferes with no other unit (with no other free unit's paths either).

    A unit whose first steps already conflict with another unit's (or are woken by them) can never
    be free: its (costly) future is not worked out, nor used when inherited. Every other unit's
    future is worked out, or inherited (the same value: what is chosen depends only on the state).
    ``links`` (when given) gets, per unit that is not free, the units that kept it from being free
    (``clusters.linked``). ``assumed``: a unit taken as not free without its future (``_pick``).
    ``stopped``: the units whose search here stopped where it met another, with the processes met
    (filled in; a second call at the same state and grouping does not search them again).
    """
    firsts: dict[Hashable, Footprint] = {}
    unit_of: dict[Hashable, Hashable] = {}
    for unit, procs in units.items():
        fp = first[procs[0]]
        for q in procs[1:]:
            fp = fp.union(first[q])
        firsts[unit] = Footprint(unit, fp.reads, fp.writes, fp.marks, fp.wakes, fp.window)
        unit_of.update((q, unit) for q in procs)

    def link(u: Hashable, vs: Collection[Hashable]) -> None:
        if links is not None:
            links.setdefault(u, set()).update(vs)

    candidates = []
    for unit, procs in units.items():
        if unit == assumed:
            continue
        mine = frozenset(procs)
        clashing = [v for v in units if v != unit and (
            firsts[unit].conflicts(firsts[v]) or not firsts[v].wakes.isdisjoint(mine) or
            not firsts[unit].wakes.isdisjoint(units[v]))]
        if clashing:
            link(unit, clashing)
            continue
        if unit not in known and stopped is not None and unit in stopped:
            link(unit, stopped[unit])
            continue
        if unit not in known:
            others = {q: first[q] for v, qs in units.items() if v != unit for q in qs}
            found = cache.find(state, mine) if cache is not None else None
            met: set[Hashable] = set()
            steps = [(actions[i], transitions[i]) for p in procs for i in members[p]]
            if found is None:
                found = _group_future(model, procs, state, steps, successors_of, fingerprint, others, met)
                if found is not None and cache is not None:
                    cache.add(state, mine, found)
            elif _meets(found.footprint, found.processes, others):
                # the search here would have stopped where the group meets another unit; which units it
                # met is taken from that search, so that the links depend on the state, not on the cache
                found = None
                if links is not None:
                    _group_future(model, procs, state, steps, successors_of, fingerprint, others, met)
            if found is None:
                link(unit, {unit_of[q] for q in met})
                if stopped is not None:
                    stopped[unit] = {unit_of[q] for q in met}
                continue
            known[unit] = found
        candidates.append(unit)
    free = [u for u in candidates if known[u].complete]
    changed = True
    while changed:
        changed = False
        for u in list(free):
            for v in units:
                if v == u:
                    continue
                theirs, group = ((known[v].footprint, known[v].processes) if v in free
                                 else (firsts[v], frozenset(units[v])))
                if _clash(known[u], theirs, group):
                    free.remove(u)
                    link(u, [v])
                    changed = True
                    break
    return free


def _meets(total: Footprint, group: Collection[Hashable], others: Mapping[Hashable, Footprint]) -> bool:
    """Whether a group's steps so far (``total``) touch or wake another unit's first steps, or are
    woken by them: where a search of its future stops. Monotone in ``total`` and ``group``, so a
    kept future (``FutureCache``) meets ``others`` exactly when a search of it here would stop."""
    return any(_touches(total, group, theirs) for theirs in others.values())


def _met(total: Footprint, group: Collection[Hashable], others: Mapping[Hashable, Footprint]) -> list[Hashable]:
    """The processes of ``others`` a group's steps so far touch, wake or are woken by (``_meets``)."""
    return [q for q, theirs in others.items() if _touches(total, group, theirs)]


def _touches(total: Footprint, group: Collection[Hashable], theirs: Footprint) -> bool:
    """Whether a group's steps so far (``total``) conflict with another process's first steps, or
    that process's first steps wake one of the group's."""
    return total.conflicts(theirs) or not theirs.wakes.isdisjoint(group)


#: the most states one group's future is explored over before the group is taken as never free
GROUP_LIMIT = 2048


def _group_future(model: Reducible[S, A], roots: list[Hashable], state: S, steps: list[tuple[A, Transition[S]]],
                  successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
                  fingerprint: Callable[[S], str], others: Mapping[Hashable, Footprint],
                  met: set[Hashable] | None = None) -> Future | None:
    """The future at ``state`` of the group of ``roots`` (a unit's processes; their steps there are
    ``steps``): a search of the states the group reaches alone, the group growing by every process
    one of its steps wakes.

    ``None`` when the group plainly cannot be free (it wakes or touches another enabled process, a
    step is global): the search stops at the first such step. A search cut at ``GROUP_LIMIT``
    states gives an incomplete future, which a successor may inherit like a complete one.

    Nodes are told apart by the model's ``group_fingerprint`` when it has one: what a state holds
    outside the group is frozen here, yet can show how far the clock moved (docs/explorer.md, "A
    kept future's graph"), and the graph must be the same wherever the future's key is.
    """
    group: set[Hashable] = set(roots)
    total = Footprint(None)
    view: Callable[[S, frozenset[Hashable]], str] | None = getattr(model, "group_fingerprint", None)
    members = frozenset(group)

    def node_key(s: S) -> str:
        return fingerprint(s) if view is None else view(s, members)

    index = {node_key(state): 0}
    graph = GroupGraph([[]], [frozenset(roots)])
    queue: deque[tuple[int, S]] = deque([(0, state)])
    complete = True
    while queue:
        node, here = queue.popleft()
        if node == 0:
            pairs = steps
        else:
            pairs = []
            enabled = []
            for member in sorted(group, key=repr):
                acts, ts = successors_of(here, member)
                if acts:
                    enabled.append(member)
                pairs.extend(zip(acts, ts))
            graph.enabled[node] = frozenset(enabled)
        for a, t in pairs:
            fp = model.footprint(here, a, t)
            if fp is None:
                return None
            for woken in fp.wakes - group:
                if woken in others:
                    if met is not None:
                        met.add(woken)
                    return None
                group.add(woken)
                members = frozenset(group)
            total = total.union(fp)
            if _meets(total, group, others):
                if met is not None:
                    met.update(_met(total, group, others))
                return None
            key = node_key(t.state)
            dst = index.get(key)
            if dst is None:
                if len(index) >= GROUP_LIMIT:
                    complete = False
                    queue.clear()
                    break
                dst = index[key] = len(graph.edges)
                graph.edges.append([])
                graph.enabled.append(frozenset())
                graph.depths.append(graph.depths[node] + 1)
                queue.append((dst, t.state))
            graph.edges[node].append((a, dst, fp))
    members = frozenset(group)
    print_ = Footprint(None, total.reads, total.writes, total.marks, total.wakes | members, total.window)
    # without a summary, every step is taken as movable by the group's whole (unbounded) length
    slack = None if print_.window is None else print_.window - CYCLE
    if not complete:
        return Future(members, print_, CYCLE, False, enabled=frozenset(roots), slack=slack)
    graph.summarise()
    if not graph.prints:
        return Future(members, print_, CYCLE, True, enabled=frozenset(roots), slack=slack)
    return Future(members, print_, graph.lengths[0], True, 0, graph, 0, frozenset(roots), graph.slacks[0])


def _count(causes: dict[str, int] | None, cause: str) -> None:
    if causes is not None:
        causes[cause] = causes.get(cause, 0) + 1
