"""The cycle proviso of partial-order reduction: which reduced expansions must become full ones.

Why not "any edge back to an older state": a reduced state must be expanded fully when one of its
edges closes a cycle (every cycle of the reduced graph then holds a fully expanded state, so no
work is deferred round it for ever: docs/explorer.md). An edge to an older state is only a *maybe*:
a step that consumes a queued request the next step would have queued again reaches a state of the
same level, with no cycle, and treating it as one undid the reduction of every owned tree (each
such edge let every other tree's work start there). The edge closes a cycle exactly when its
source is reachable from its target over the edges recorded so far: the last edge of any cycle to
be recorded is checked with all the others present, so every cycle is caught at its last edge.
"""

from __future__ import annotations

from collections.abc import Sequence


def closes_cycle(first_edge: Sequence[int], last_edge: Sequence[int], e_dst: Sequence[int],
                 source: int, target: int) -> bool:
    """Whether ``source`` is reachable from ``target`` over the recorded edges (node ``v``'s edges
    are ``first_edge[v]:last_edge[v]``; a node not expanded yet has none)."""
    if source == target:
        return True
    seen = {target}
    stack = [target]
    while stack:
        v = stack.pop()
        for e in range(first_edge[v], last_edge[v]):
            w = e_dst[e]
            if w == source:
                return True
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return False
