"""States the search let go of, derived again from their parent paths when something reads them.

Why: a breadth-first search reads a state once, to expand it; after that only reports read it (a
counterexample's states, the state map, a vacuity scan) and only for a handful of nodes. Keeping every
expanded state costs most of a search's memory (issue #26: "≤ 2 KiB per state"). ``successor`` is a
function (the model promises it, and kamera's judge already replays every counterexample on that
promise), so a dropped state is its parent's successor by the recorded parent edge, and so on up to a
state still held: the initial states, the converged ones, the frontier. Edge labels likewise: a
label holds the step's write records with the objects written, so labels kept for every edge would
keep every state's objects alive; an edge's label is its step's, taken again from its source state.

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
    """A ``Graph.remote`` (states) and ``Graph.remote_labels`` (edge labels) that replays parent paths.
    Nodes fetched in one call share their common prefixes (each state on the union of their paths is
    derived once, and let go of once the batch no longer needs it). A re-derived state whose
    fingerprint is not the recorded one means a step is not a function of its state: it is counted in
    ``diverged`` (the runner says so in the result's notes) and the re-derived state is returned."""

    def __init__(self, graph: Graph[S, A], model: Model[S, A],
                 around: Callable[[Callable[[], list[Any]]], list[Any]] | None = None) -> None:
        self.graph = graph
        self.model = model
        #: wraps each batch (the runner's: keep the controllers' counters and memo as the search left them)
        self.around = around
        self.diverged: list[int] = []

    def __call__(self, nodes: Sequence[int]) -> list[S]:
        return self._batch(lambda: self._states(nodes))

    def labels(self, edges: Sequence[int]) -> list[object]:
        """The labels of ``edges``: an edge's label is its step's, taken again from its source state.
        An edge that discovered its target comes with deriving the target (one step, not two)."""
        return self._batch(lambda: self._labels(edges))

    def _batch(self, fetch: Callable[[], list[Any]]) -> list[Any]:
        return fetch() if self.around is None else self.around(fetch)

    def _states(self, nodes: Sequence[int]) -> list[S]:
        derived, _ = self._derive(nodes, ())
        return [derived[n] for n in nodes]

    def _labels(self, edges: Sequence[int]) -> list[object]:
        g = self.graph
        parents, e_src, e_dst = g.parents, g.e_src, g.e_dst
        tree = [e for e in edges if parents[e_dst[e]] == e]
        others = [e for e in edges if parents[e_dst[e]] != e]
        sources = sorted({e_src[e] for e in others})
        derived, labels = self._derive(sources, tree)
        for e in others:
            t = self.model.successor(derived[e_src[e]], g.e_action[e])
            if self.model.fingerprint(t.state) != g.fingerprints[e_dst[e]]:
                self.diverged.append(e_dst[e])
            labels[e] = t.label
        return [labels[e] for e in edges]

    def _derive(self, nodes: Sequence[int], tree: Sequence[int]) -> tuple[dict[int, S], dict[int, object]]:
        """The states of ``nodes`` and the labels of the parent edges ``tree`` (each edge the one that
        discovered its target: deriving the target, held or not, gives its label)."""
        g = self.graph
        states, parents, e_src, depths = g.states, g.parents, g.e_src, g.depths
        needed: set[int] = set()

        def climb(node: int) -> None:
            while states[node] is REMOTE and node not in needed:
                if parents[node] == NO_PARENT:
                    raise RuntimeError(f"state {node} was dropped but has no parent to derive it from")
                needed.add(node)
                node = e_src[parents[node]]

        for edge in tree:
            target = g.e_dst[edge]
            if target not in needed:
                needed.add(target)
                climb(e_src[edge])
        for node in nodes:
            climb(node)
        wanted = set(nodes)
        # how many derivations still start from each state: one no longer needed is let go of at once
        uses: dict[int, int] = {}
        for node in needed:
            src = e_src[parents[node]]
            uses[src] = uses.get(src, 0) + 1
        derived: dict[int, S] = {}
        labels: dict[int, object] = {}
        successor, fingerprint = self.model.successor, self.model.fingerprint
        # breadth-first depths: a parent is one step shallower than its child, so it comes first
        for node in sorted(needed, key=lambda n: (depths[n], n)):
            edge = parents[node]
            src = e_src[edge]
            base: Any = derived[src] if src in derived else states[src]
            t = successor(base, g.e_action[edge])
            if fingerprint(t.state) != g.fingerprints[node]:
                self.diverged.append(node)
            derived[node] = t.state
            labels[edge] = t.label
            uses[src] -= 1
            if not uses[src] and src not in wanted:
                derived.pop(src, None)
        found = {n: derived[n] if n in derived else states[n] for n in nodes}
        return found, labels
