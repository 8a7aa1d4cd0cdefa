"""Strongly connected components of the explored graph, and the livelocks among them.

Why after the search rather than on the DFS stack: a cycle on the current path says only that a
loop exists, not that the system is stuck in it — the loop may have an exit another scheduling
takes. A *bottom* component (no edge leaves it) is a trap: once entered, every continuation stays
inside. If it holds no converged state and every member was fully expanded (so no exit can hide
behind a bound), the system can run forever without converging: a livelock.

Iterative Tarjan (no recursion: graphs reach 10^6 nodes), over the graph's compact edge lists. Its
per-node tables are ``array("q")`` and bytearrays, not lists of ints: it runs once, after the search,
over the whole graph, and with lists (an int object of its own for each node's index, and a set and a
list of the roots) it was the peak of a whole ``kamera check`` (issue #26: webapps-2-2, unreduced, cut
at 6,000 states: about 0.5 MB over the search's own heap, growing with the graph).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TypeVar

from kamera_cli.explore.result import EXPANDED, Edge, Graph, Livelock

S = TypeVar("S")
A = TypeVar("A")


def strongly_connected_components(graph: Graph[S, A], roots: Iterable[int] | None = None) -> Sequence[int]:
    """Component id for every node reachable from ``roots`` (default: all nodes), -1 for the rest.

    Ids are assigned in Tarjan's order (sinks first). The nodes reachable from any set of roots are
    closed under successors, so the components found are exactly those of the whole graph.
    """
    n = graph.num_states
    first, last, dst = graph.first_edge, graph.last_edge, graph.e_dst
    index = array("q", [-1]) * n
    low = array("q", [0]) * n
    on_stack = bytearray(n)
    comp = array("q", [-1]) * n
    stack: list[int] = []
    counter = 0
    ncomp = 0
    work_node: list[int] = []
    work_edge: list[int] = []
    for root in range(n) if roots is None else roots:
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        work_node.append(root)
        work_edge.append(first[root])
        while work_node:
            v = work_node[-1]
            ei = work_edge[-1]
            hi = last[v]
            descended = False
            while ei < hi:
                w = dst[ei]
                ei += 1
                if index[w] == -1:
                    work_edge[-1] = ei
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = 1
                    work_node.append(w)
                    work_edge.append(first[w])
                    descended = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if descended:
                continue
            work_node.pop()
            work_edge.pop()
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = 0
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
            if work_node:
                u = work_node[-1]
                if low[v] < low[u]:
                    low[u] = low[v]
    return comp


def find_livelocks(graph: Graph[S, A]) -> list[Livelock[A]]:
    """Every closed bottom SCC that has a cycle and no converged state, ordered by entry node."""
    src, dst = graph.e_src, graph.e_dst
    n = graph.num_states
    # Every cycle has an edge that does not lead to a younger node; only components reachable from
    # the targets of such edges can hold a cycle. (Often there are none, and the work stops here.)
    is_root = bytearray(n)
    for s, d in zip(src, dst):
        if d <= s:
            is_root[d] = 1
    if not any(is_root):
        return []
    comp = strongly_connected_components(graph, (v for v in range(n) if is_root[v]))  # in node order
    ncomp = max(comp) + 1
    visited = (v for v in range(n) if comp[v] >= 0)
    # A component is a candidate until an edge leaves it or a member is converged or not fully expanded.
    candidate = bytearray(b"\x01") * ncomp
    has_cycle = bytearray(ncomp)
    status, conv = graph.status, graph.converged_flags
    first, last = graph.first_edge, graph.last_edge
    for v in visited:
        cv = comp[v]
        if status[v] != EXPANDED or conv[v]:
            candidate[cv] = 0
        for e in range(first[v], last[v]):
            if comp[dst[e]] == cv:
                has_cycle[cv] = 1  # an edge inside: a self-loop, or a component of size > 1
            else:
                candidate[cv] = 0
    members: dict[int, list[int]] = {}
    for v in range(n):
        c = comp[v]
        if c >= 0 and candidate[c] and has_cycle[c]:
            members.setdefault(c, []).append(v)
    found: list[Livelock[A]] = []
    depths = graph.depths
    for nodes in members.values():
        entry = min(nodes, key=lambda v: (depths[v], v))
        cycle = _shortest_cycle(graph, entry, comp)
        found.append(Livelock(tuple(nodes), entry, tuple(graph.path_to(entry)), tuple(cycle)))
    found.sort(key=lambda ll: ll.entry)
    return found


def _shortest_cycle(graph: Graph[S, A], entry: int, comp: Sequence[int]) -> list[Edge[A]]:
    """Breadth-first search inside the entry's component, from the entry back to itself."""
    c = comp[entry]
    first, last, dst = graph.first_edge, graph.last_edge, graph.e_dst
    via: dict[int, int] = {}  # node -> edge id it was reached by
    queue: deque[int] = deque([entry])
    closing = -1
    while queue and closing < 0:
        v = queue.popleft()
        for e in range(first[v], last[v]):
            w = dst[e]
            if w == entry:
                closing = e
                break
            if comp[w] == c and w not in via:
                via[w] = e
                queue.append(w)
    if closing < 0:  # cannot happen for a component with a cycle through its members
        return []
    ids = [closing]
    v = graph.e_src[closing]
    while v != entry:
        e = via[v]
        ids.append(e)
        v = graph.e_src[e]
    ids.reverse()
    graph.prefetch_labels(ids)  # labels let go of are derived again in one batch
    return [graph.edge(e) for e in ids]
