"""A unit's future, passed on from state to state and kept for reuse (``reduction`` chooses with them).

Why a module of its own: what a future is (a group's own search, summarised), how a successor
inherits it and how futures worked out elsewhere are reused (``FutureCache``) are facts about one
group, independent of how a persistent set is chosen from them (docs/explorer.md, "Futures are
inherited, not searched again" and "Futures reused by what they read").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.explore.model import Footprint

#: a future's length when its search may go round a cycle or was cut (no bound on how long it runs)
CYCLE = 1 << 30


@dataclass(frozen=True, slots=True)
class Future:
    """What a process and everything it wakes may still do when run alone: its *group*.

    ``footprint``: the union over every step of every path the group can take by itself;
    ``processes``: the group; ``length``: the longest such path (``CYCLE`` when it may go round or
    the search of it was cut, ``complete`` False); ``age``: steps taken since it was worked out.

    A future is a property of the state. A step outside the group that neither writes what the
    group reads, nor reads what it writes, nor wakes one of its processes leaves it as it was
    (every step of the group reads the same values), and a step of the group itself leads to a
    state of the group's own search, whose future that search already holds; so a successor
    inherits futures (``inherit``) instead of searching the group again.
    """

    processes: frozenset[Hashable]
    footprint: Footprint
    length: int
    complete: bool = True
    age: int = 0
    graph: GroupGraph | None = field(default=None, compare=False, repr=False)
    node: int = 0
    #: the group's processes with a step at the state (the unit's enabled processes)
    enabled: frozenset[Hashable] = frozenset()
    #: how many steps the group's steps may still be moved over (``age`` plus the other deferred
    #: groups' steps must stay below it), by each step's window and place (``GroupGraph.summarise``);
    #: None when no step of it has a window
    slack: int | None = None

    def older(self) -> Future:
        return Future(self.processes, self.footprint, self.length, self.complete, self.age + 1, self.graph,
                      self.node, self.enabled, self.slack)


@dataclass(eq=False, slots=True)
class GroupGraph:
    """A group's own search, kept so that the group's steps find their successors' futures.

    Per node: its edges (action, node), the group's processes with a step there, and — filled in
    once the search is complete and has no cycle — everything reachable from it (``prints``) and
    the longest path from it (``lengths``).
    """

    edges: list[list[tuple[Any, int, Footprint]]]
    enabled: list[frozenset[Hashable]]
    #: each node's depth in the search (its state's instant is the root's plus that many seconds)
    depths: list[int] = field(default_factory=lambda: [0])
    prints: list[Footprint] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    slacks: list[int | None] = field(default_factory=list)

    def after(self, node: int, action: Any, age: int) -> Future | None:
        """The future at the node ``action`` leads to from ``node`` (None: the search has no summary)."""
        if not self.prints:
            return None
        for act, dst, _fp in self.edges[node]:
            if act == action:
                fp, enabled = self.prints[dst], self.enabled[dst]
                group = fp.wakes | enabled
                return Future(group, Footprint(None, fp.reads, fp.writes, fp.marks, group, fp.window),
                              self.lengths[dst], True, age, self, dst, enabled, self.slacks[dst])
        return None

    def summarise(self) -> None:
        """Fill ``prints`` and ``lengths`` by one pass in reverse topological order (no cycle)."""
        n = len(self.edges)
        order = _topological(self.edges)
        if order is None:
            return
        prints: list[Footprint | None] = [None] * n
        lengths = [0] * n
        # per node, the least over the steps reachable from it of window + depth + the longest path
        # after the step: with ``lengths``, how far those steps may still be moved (``_slack``)
        reach: list[int | None] = [None] * n
        for v in reversed(order):
            reads: set[Hashable] = set()
            writes: set[Hashable] = set()
            marks: set[Hashable] = set()
            wakes: set[Hashable] = set()
            window: int | None = None
            best = 0
            least: int | None = None
            for _a, w, fp in self.edges[v]:
                for bound in (reach[w], None if fp.window is None else fp.window + self.depths[v] + lengths[w]):
                    if bound is not None:
                        least = bound if least is None else min(least, bound)
                for src in (fp, prints[w]):
                    assert src is not None
                    reads |= src.reads
                    writes |= src.writes
                    marks |= src.marks
                    wakes |= src.wakes
                    if src.window is not None:
                        window = src.window if window is None else min(window, src.window)
                best = max(best, 1 + lengths[w])
            prints[v] = Footprint(None, frozenset(reads), frozenset(writes), frozenset(marks), frozenset(wakes), window)
            lengths[v] = best
            reach[v] = least
        empty = Footprint(None)
        self.prints = [empty if p is None else p for p in prints]
        self.lengths = lengths
        self.slacks = [None if r is None else r - lengths[v] for v, r in enumerate(reach)]


def _topological(edges: list[list[tuple[Any, int, Footprint]]]) -> list[int] | None:
    """Nodes reachable from 0 in topological order, or ``None`` when the graph has a cycle."""
    state = [0] * len(edges)  # 0 new, 1 on the path, 2 done
    out: list[int] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    state[0] = 1
    while stack:
        node, i = stack[-1]
        if i < len(edges[node]):
            stack[-1] = (node, i + 1)
            nxt = edges[node][i][1]
            if state[nxt] == 1:
                return None
            if state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, 0))
            continue
        stack.pop()
        state[node] = 2
        out.append(node)
    out.reverse()
    return out


def inherit(futures: Mapping[Hashable, Future], process: Hashable, action: Any, footprint: Footprint | None,
            ) -> dict[Hashable, Future]:
    """The futures known after ``action`` of ``process`` (footprint ``footprint``; none when global),
    by unit. Whether a unit still has the same processes there is checked where they are used."""
    if footprint is None or not futures:
        return {}
    out: dict[Hashable, Future] = {}
    for unit, f in futures.items():
        if process in f.processes:
            if process in f.enabled and f.graph is not None:
                found = f.graph.after(f.node, action, f.age + 1)
                if found is not None and found.enabled:
                    out[unit] = found
            continue
        if not footprint.wakes.isdisjoint(f.processes) or f.footprint.conflicts(footprint):
            continue
        out[unit] = f.older()
    return out


class FutureCache:
    """Futures worked out before, reused at any state where what they read has the same values.

    Why: a unit's future is a search of everything its group can do alone, and a state meets it again
    in every interleaving of the other units' steps, and again whenever it ages past the horizon
    (``_choose``); searched each time, one unit of a kopf operator with built-ins cost 1.5 s at every
    such state. The search is a function of what its steps read: the model is deterministic, a step's
    outcome is a function of its process's pending work and the values it reads, and every step the
    search took is in the future's union footprint. So at a state where the model's ``group_key``
    for that footprint and group equals the one taken where the future was worked out, the search
    would take the same steps with the same footprints and reach the same nodes (by induction along
    it: each step reads either a value the digest covers or one an earlier step of the group wrote),
    and give the same future: reusing it never changes what is chosen, in any process
    (docs/explorer.md, "Futures reused by what they read").

    Futures are kept by the processes they were worked out for, a few per group, the groups least
    recently used forgotten past ``limit``; which are forgotten changes the time taken, not the result.
    """

    def __init__(self, key: Callable[[Any, frozenset[Hashable], Footprint], Hashable | None], limit: int = 256,
                 per_group: int = 8) -> None:
        self._key = key
        self._limit, self._per_group = limit, per_group
        self._entries: dict[frozenset[Hashable], list[tuple[Hashable, Future]]] = {}
        self.hits = 0
        self.misses = 0

    def find(self, state: Any, roots: frozenset[Hashable]) -> Future | None:
        """A future of the group of ``roots`` valid at ``state`` (aged 0), if one is kept."""
        bucket = self._entries.pop(roots, None)
        if bucket is None:
            self.misses += 1
            return None
        self._entries[roots] = bucket  # most recently used last
        for digest, f in bucket:
            if self._key(state, f.processes, f.footprint) == digest:
                self.hits += 1
                return f
        self.misses += 1
        return None

    def add(self, state: Any, roots: frozenset[Hashable], future: Future) -> None:
        digest = self._key(state, future.processes, future.footprint)
        if digest is None:
            return
        bucket = self._entries.pop(roots, [])
        bucket.append((digest, future))
        self._entries[roots] = bucket[-self._per_group:]
        while len(self._entries) > self._limit:
            del self._entries[next(iter(self._entries))]


def future_cache(model: object) -> FutureCache | None:
    """A cache of futures for ``model`` when it says what a future depends on (``group_key``)."""
    key = getattr(model, "group_key", None)
    return FutureCache(key) if key is not None else None
