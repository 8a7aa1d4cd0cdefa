"""A bounded, reporter-ready copy of the explored graph (``model.graph.StateGraph``).

Why here: turning the explorer's graph into something a person can look at needs both the search
(node ids, edges, depths) and the Kubernetes states (snapshots, pending work, step labels); the
runner asks for it only when a report will draw it (``--html``), because copying states costs time
and memory the plain verdict does not need.

What is kept when the search is larger than ``limit``: first every state the result points at —
counterexample paths, converged outcomes, livelock members, violating and failing states, the
initial states — with the parent path to each (so the drawing stays connected), then the rest in
discovery order (under breadth-first search, shallowest first), each with its parent path too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kamera_cli.explore import Edge, SearchResult
from kamera_cli.explore.result import NO_PARENT, UNEXPANDED
from kamera_cli.judging.story import story_verb
from kamera_cli.model.graph import STATE_TAGS, GraphEdge, GraphState, StateGraph
from kamera_cli.model.objects import plain_json
from kamera_cli.model.result import Write
from kamera_cli.sim.labels import StepLabel
from kamera_cli.sim.state import SimState

#: transitions kept per kept state beyond parent edges and highlighted steps (a fully connected
#: drawing is unreadable anyway)
EDGES_PER_STATE = 8


def record_graph(search: SearchResult[SimState, Any], *, limit: int, outcomes: Sequence[int],
                 highlighted: Iterable[Sequence[int]] = ()) -> StateGraph:
    """Copy at most ``limit`` states of ``search`` (see the module docstring for which).

    ``highlighted``: the counterexamples' state paths, each kept whole (with the parent path to each
    of its states) or, when it no longer fits, not at all.
    """
    graph = search.graph
    total = graph.num_states
    tags: dict[int, set[str]] = {}

    def tag(nodes: Iterable[int], name: str) -> None:
        for n in nodes:
            tags.setdefault(n, set()).add(name)

    tag(search.initial, "initial")
    tag(search.converged, "converged")
    tag(outcomes, "outcome")
    for ll in search.livelocks:
        tag(ll.nodes, "livelock")
    tag(search.depth_cuts, "depth-cut")
    tag(search.deadlocks, "deadlock")
    tag((v.node for v in search.violations), "violation")
    tag((rec.node for rec in search.findings), "error")

    paths = [tuple(p) for p in highlighted if p]
    groups: list[Sequence[int]] = [*paths, *((n,) for n in outcomes), *((n,) for n in search.initial),
                                   *((v.node,) for v in search.violations), *((r.node,) for r in search.findings),
                                   *((n,) for n in search.deadlocks), *((n,) for n in search.depth_cuts[:50])]
    groups.extend(ll.nodes[: max(1, limit // 4)] for ll in search.livelocks)
    chosen: set[int] = set()
    parents, e_src = graph.parents, graph.e_src

    def take(nodes: Iterable[int]) -> None:
        """The nodes with the parent path of each, all or nothing, if the limit allows."""
        chain: dict[int, None] = {}
        for node in nodes:
            while 0 <= node < total and node not in chosen and node not in chain:
                chain[node] = None
                if parents[node] == NO_PARENT:
                    break
                node = e_src[parents[node]]
        if len(chosen) + len(chain) <= limit:
            chosen.update(chain)

    for group in groups:
        take(group)
    # then discovery order; after DFS re-parents to shortest paths a parent may come after its child
    for node in range(total):
        if len(chosen) >= limit:
            break
        take((node,))
    ids = sorted(chosen)

    objects = _ObjectTable()
    outcome_index = {n: i for i, n in enumerate(outcomes)}
    states = []
    graph.prefetch(ids)  # states let go of are derived again in one pass sharing their paths
    for node in ids:
        state = graph.state(node)
        node_tags = tags.get(node, set())
        if graph.node_status(node) == UNEXPANDED:
            node_tags = {*node_tags, "unexpanded"}
        states.append(GraphState(
            id=node,
            depth=graph.depth(node),
            fingerprint=graph.fingerprint(node),
            objects=tuple(objects.key(o) for o in state.snapshot.objects()),
            tags=tuple(t for t in STATE_TAGS if t in node_tags),
            outcome=outcome_index.get(node, -1),
            pending=tuple(f"{p.controller} {p.request_text}" for p in state.pending),
        ))

    # parent edges and the steps of highlighted paths are always kept, then the others up to the cap
    steps = {pair for path in paths for pair in itertools.pairwise(path)}
    kept, skipped_edges = [], 0
    for node in ids:
        out = [e for e in graph.out_range(node) if graph.e_dst[e] in chosen]
        must = {e for e in out if parents[graph.e_dst[e]] == e or (node, graph.e_dst[e]) in steps}
        room = max(0, EDGES_PER_STATE - len(must))
        others = [e for e in out if e not in must]
        skipped_edges += max(0, len(others) - room)
        kept.extend(sorted(must | set(others[:room])))
    graph.prefetch_labels(kept)  # labels let go of are derived again in one batch
    edges = [_edge(graph.e_src[e], graph.e_dst[e], graph.label(e)) for e in kept]

    depth_counts = [0] * (max(graph.depths, default=-1) + 1)
    for d in graph.depths:
        depth_counts[d] += 1
    return StateGraph(
        states=tuple(states), edges=tuple(edges), objects=objects.items(), total_states=total,
        total_edges=graph.num_edges, depth_counts=tuple(depth_counts), limit=limit,
        omitted=_omitted(len(ids), total, len(edges), graph.num_edges, skipped_edges, limit),
    )


def node_ids(edges: Sequence[Edge[Any]], end: int = -1) -> tuple[int, ...]:
    """The states a path passes through: where it starts, then after each step (``end`` for no steps)."""
    if edges:
        return (edges[0].src, *(e.dst for e in edges))
    return (end,) if end >= 0 else ()


def _edge(src: int, dst: int, label: object) -> GraphEdge:
    if not isinstance(label, StepLabel):  # pragma: no cover - every KubeModel transition carries a StepLabel
        return GraphEdge(src, dst, kind="step", actor=str(label))
    writes = tuple(Write(verb=story_verb(w), ref=w.ref, subresource=w.subresource, refused=w.refused).describe()
                   for w in label.writes)
    return GraphEdge(src, dst, kind=label.kind, actor=label.actor, request=label.request, note=label.note,
                     writes=writes, error=bool(label.error))


def _omitted(states: int, total_states: int, edges: int, total_edges: int, skipped: int, limit: int) -> str:
    parts = []
    if states < total_states:
        parts.append(f"{total_states - states:,} of {total_states:,} states are not recorded (at most {limit:,} are; "
                     "counterexample paths, converged outcomes and the paths to them come first, then the "
                     "shallowest states)")
    if edges < total_edges:
        why = [] if not skipped else [f"{skipped:,} beyond {EDGES_PER_STATE} per state"]
        if states < total_states:
            why.insert(0, "those touching an unrecorded state")
        parts.append(f"{total_edges - edges:,} of {total_edges:,} transitions are not recorded ({', '.join(why)})")
    return "; ".join(parts)


class _ObjectTable:
    """Each distinct manifest once, keyed by a digest of its exact content.

    Snapshots share unchanged objects, so the cache by identity makes this one hash per object
    version rather than one per object per state; the objects are held so their ids stay unique.
    """

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, str]] = {}
        self._table: dict[str, dict[str, Any]] = {}

    def key(self, obj: Mapping[str, Any]) -> str:
        hit = self._by_id.get(id(obj))
        if hit is not None:
            return hit[1]
        plain = plain_json(obj)
        text = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        key = hashlib.sha256(text.encode()).hexdigest()[:16]
        self._table.setdefault(key, plain)
        self._by_id[id(obj)] = (obj, key)
        return key

    def items(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        return tuple(sorted(self._table.items()))

