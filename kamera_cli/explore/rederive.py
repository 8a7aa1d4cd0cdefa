"""States the search let go of, derived again from their parent paths when something reads them.

Why: a breadth-first search reads a state once, to expand it; after that only reports read it (a
counterexample's states, the state map, a vacuity scan) and only for a handful of nodes. Keeping every
expanded state costs most of a search's memory (issue #26: "≤ 2 KiB per state"). ``successor`` is a
function (the model promises it, and kamera's judge already replays every counterexample on that
promise), so a dropped state is its parent's successor by the recorded parent edge, and so on up to a
state still held: the initial states, the converged ones, the frontier.

Only the serial breadth-first search drops states: there a node's parent edge is the edge that
discovered it and never changes, so the chain re-derives exactly the stored state. (A depth-first
search re-parents nodes to shorter paths after the fact, and a split search keeps its states in its
workers.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from kamera_cli.explore.model import Model
from kamera_cli.explore.result import NO_PARENT, REMOTE, Graph

S = TypeVar("S")
A = TypeVar("A")


class Rederive(Generic[S, A]):
    """A ``Graph.remote`` that replays parent paths. Nodes fetched in one call share their common
    prefixes (each state on the union of their paths is derived once). A re-derived state whose
    fingerprint is not the recorded one means a step is not a function of its state: it is counted in
    ``diverged`` (the runner says so in the result's notes) and the re-derived state is returned."""

    def __init__(self, graph: Graph[S, A], model: Model[S, A],
                 around: Callable[[Callable[[], list[S]]], list[S]] | None = None) -> None:
        self.graph = graph
        self.model = model
        #: wraps each batch (the runner's: keep the controllers' counters and memo as the search left them)
        self.around = around
        self.diverged: list[int] = []

    def __call__(self, nodes: Sequence[int]) -> list[S]:
        if self.around is not None:
            return self.around(lambda: self._fetch(nodes))
        return self._fetch(nodes)

    def _fetch(self, nodes: Sequence[int]) -> list[S]:
        g = self.graph
        states, parents, e_src, depths = g.states, g.parents, g.e_src, g.depths
        needed: set[int] = set()
        for node in nodes:
            while states[node] is REMOTE and node not in needed:
                if parents[node] == NO_PARENT:
                    raise RuntimeError(f"state {node} was dropped but has no parent to derive it from")
                needed.add(node)
                node = e_src[parents[node]]
        derived: dict[int, S] = {}
        successor, fingerprint = self.model.successor, self.model.fingerprint
        # breadth-first depths: a parent is one step shallower than its child, so it comes first
        for node in sorted(needed, key=lambda n: (depths[n], n)):
            edge = parents[node]
            src = e_src[edge]
            base: Any = derived[src] if src in derived else states[src]
            state = successor(base, g.e_action[edge]).state
            if fingerprint(state) != g.fingerprints[node]:
                self.diverged.append(node)
            derived[node] = state
        return [derived[n] for n in nodes]
