"""The explicit-state search: breadth-first by default, depth-first on request.

Why BFS by default: node ids are handed out in discovery order and BFS expands them in that same
order, so the "queue" is just a cursor over the node list, and every parent pointer lies on a
shortest path — the first counterexample found is a shortest one.

DFS keeps an explicit stack (no recursion limit). A node DFS first reaches by a long path may be
cut at ``max_depth`` although a shorter path exists, so when the stack empties the shortest depths
are recomputed over the recorded edges (no model calls) and the nodes cut too early are expanded,
until nothing changes. A complete DFS thus explores exactly the node set BFS does under the same
``max_depth``, and its final parent pointers are shortest too; only what DFS found *first* (with
``stop_on_first`` or under a bound) may be deep.

The inner loop is written for speed: bound methods and lists in locals, one append per column.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from kamera_cli.explore.model import ALWAYS, Footprint, Model, Property, Transition, unwrap
from kamera_cli.explore.problems import Problems, finish
from kamera_cli.explore.proviso import closes_cycle
from kamera_cli.explore.rederive import Rederive
from kamera_cli.explore.reduction import (
    PERSISTENT,
    Future,
    Reducible,
    Reduction,
    future_cache,
    inherit,
    persistent_subset,
)
from kamera_cli.explore.result import (
    CONVERGED_LEAF,
    DEPTH_CUT,
    EXPANDED,
    NO_PARENT,
    PARTIAL,
    REMOTE,
    UNEXPANDED,
    Graph,
    Progress,
    SearchResult,
    Strategy,
)
from kamera_cli.explore.settings import SearchSettings

# Captured at import: a simulator may virtualise ``time.*`` while a step runs; bounds use real time.
_monotonic = time.monotonic

S = TypeVar("S")
A = TypeVar("A")

_PROGRESS_INTERVAL = 0.25
#: allocations between young collections during a search (Python's default is 700)
_YOUNG_THRESHOLD = 20_000


def _shortest_depths(graph: Graph[S, A], initial: Sequence[int], max_depth: int) -> list[int]:
    """Reset every node's depth and parent to a shortest path over the recorded edges (BFS).

    Returns the depth-cut nodes now shallower than ``max_depth``, marked unexpanded again.
    """
    n = graph.num_states
    depths, parents = graph.depths, graph.parents
    first, last, dst = graph.first_edge, graph.last_edge, graph.e_dst
    seen = bytearray(n)
    order = list(initial)
    for v in order:
        seen[v] = 1
        depths[v] = 0
        parents[v] = NO_PARENT
    head = 0
    while head < len(order):
        v = order[head]
        head += 1
        nd = depths[v] + 1
        for e in range(first[v], last[v]):
            w = dst[e]
            if not seen[w]:
                seen[w] = 1
                depths[w] = nd
                parents[w] = e
                order.append(w)
    status = graph.status
    retry = [v for v in range(n) if status[v] == DEPTH_CUT and depths[v] < max_depth]
    for v in retry:
        status[v] = UNEXPANDED
    return retry


class _Walker:
    """Chooses the next state for ``strategy="random"``: walks on through expanded states, one
    successor drawn at random each step, and returns the first unexpanded state it reaches (-1 when
    every walk is done). A walk ends at a state without recorded successors or after ``length`` steps."""

    def __init__(self, graph: Graph[S, A], initial: list[int], rng: random.Random, walks: int, length: int) -> None:
        self.graph, self.initial, self.rng = graph, initial, rng
        self.walks_left, self.length = walks, length
        self.current = -1
        self.steps = 0

    def next_node(self) -> int:
        g = self.graph
        while True:
            cur = self.current
            if cur < 0 or self.steps >= self.length:
                if self.walks_left <= 0 or not self.initial:
                    return -1
                self.walks_left -= 1
                cur = self.initial[self.rng.randrange(len(self.initial))]
                self.steps = 0
            else:
                lo, hi = g.first_edge[cur], g.last_edge[cur]
                if g.status[cur] == UNEXPANDED:
                    return cur
                if hi <= lo:
                    self.current = -1
                    continue
                cur = g.e_dst[self.rng.randrange(lo, hi)]
                self.steps += 1
            self.current = cur
            if g.status[cur] == UNEXPANDED:
                return cur


def serve_search(conn: Any, model: Model[S, A], settings: SearchSettings[S]) -> None:
    """Serve as one remote worker of a breadth-first search coordinated elsewhere, until told to quit.

    Why a model of its own: a remote worker is not forked from the coordinator, so it builds the same
    model from the same scenario; ``settings`` must be the coordinator's as far as a worker reads them
    (``properties``, ``max_depth``, ``expand_converged``, ``reduction``, ``worker_report``): the
    coordinator trusts what workers compute.
    """
    from kamera_cli.explore.parallel_worker import serve

    serve(conn, model, settings, settings.reducer(model))


def search(
    model: Model[S, A],
    *,
    properties: Sequence[Property[S]] = (),
    strategy: Strategy = "bfs",
    max_depth: int = 50,
    max_states: int = 100_000,
    timeout: float | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    stop_on_first: bool = False,
    expand_converged: bool = True,
    should_stop: Callable[[], object] | None = None,
    reduction: Reduction = PERSISTENT,
    seed: int = 0,
    walks: int = 100,
    workers: int = 1,
    worker_report: Callable[[], object] | None = None,
    remote: Sequence[Any] = (),
) -> SearchResult[S, A]:
    """Explore every state reachable from ``model.initial_states()`` within the bounds.

    ``max_depth``: states that many steps from an initial state are not expanded (a non-converged
    one with actions left is a depth cut). ``max_states``: discovering one more distinct state than
    this stops the search. ``timeout``: seconds of wall-clock time. A bound or ``stop_on_first``
    ending the search makes the result incomplete. ``expand_converged=False`` treats converged
    states as terminal (their actions are not taken). ``should_stop`` is polled before each
    expansion: a true answer ends the search (a string answer says why, in ``bound_hit``).
    ``reduction``: ``"persistent"`` expands a persistent subset of the actions where the model
    reports footprints (``Reducible``; see ``reduction.py``), ``"none"`` every action.
    ``strategy="random"``: ``walks`` random walks of at most ``max_depth`` steps from a generator
    seeded with ``seed`` (the same seed, the same walks); each state a walk reaches is expanded
    fully and the walk goes on through one successor drawn at random. Not exhaustive: unless the
    walks happened to expand every state they discovered, the result is incomplete and says so.
    ``workers > 1`` (breadth-first only) computes successors in that many forked processes, with the
    same result (``parallel.py``); ``worker_report`` runs in each of them at the end, its answers are
    the result's ``worker_reports``. Call ``close()`` on such a result once its states are read.
    ``remote``: connections to workers already serving this search elsewhere (``serve_search`` on
    the same model, another process or machine); they count among ``workers``.
    """
    return search_with(model, SearchSettings(
        properties=properties, strategy=strategy, max_depth=max_depth, max_states=max_states, timeout=timeout,
        on_progress=on_progress, stop_on_first=stop_on_first, expand_converged=expand_converged,
        should_stop=should_stop, reduction=reduction, seed=seed, walks=walks, workers=workers,
        worker_report=worker_report, remote=remote))


def search_with(model: Model[S, A], settings: SearchSettings[S]) -> SearchResult[S, A]:
    """``search`` with its settings as one value (what the runner builds once and a remote worker too)."""
    settings.check()
    reducer = settings.reducer(model)
    # Everything alive when the search starts (loaded code, client libraries, the scenario) outlives
    # it: frozen, the collector's full passes walk only what the search made (measured: the full
    # passes of a 20k-state search went from 0.73 s to 0.31 s).
    gc.freeze()
    # Most of what a search allocates lives to its end (states, edges): young collections find little
    # garbage and promote the rest, and every promotion brings a full collection nearer. Fewer young
    # collections (a larger first threshold) mean far fewer full ones; forked workers inherit it.
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], _YOUNG_THRESHOLD), *thresholds[1:])
    try:
        if settings.workers > 1 and settings.strategy == "bfs":
            from kamera_cli.explore.parallel import search_parallel

            return search_parallel(model, settings, reducer)
        return _serial(model, settings, reducer)
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


class _OutOfTime(Exception):
    """The search's deadline passed (or it was asked to stop) during the reduction's look-ahead."""


def _serial(model: Model[S, A], settings: SearchSettings[S], reducer: Reducible[S, A] | None) -> SearchResult[S, A]:
    properties, strategy, max_depth, max_states = (settings.properties, settings.strategy, settings.max_depth,
                                                   settings.max_states)
    timeout, on_progress, should_stop = settings.timeout, settings.on_progress, settings.should_stop
    stop_on_first, seed, walks = settings.stop_on_first, settings.seed, settings.walks
    start = _monotonic()
    deadline = None if timeout is None else start + timeout
    graph: Graph[S, A] = Graph()
    run = Problems(stop_on_first)
    always = [p for p in properties if p.kind == ALWAYS]
    at_converged = [p for p in properties if p.kind != ALWAYS]

    states = graph.states
    depths = graph.depths
    parents = graph.parents
    first_edge = graph.first_edge
    last_edge = graph.last_edge
    status = graph.status
    conv = graph.converged_flags
    e_src = graph.e_src
    add_state, add_depth, add_parent = states.append, depths.append, parents.append
    add_first, add_last, add_status, add_conv = first_edge.append, last_edge.append, status.append, conv.append
    add_src, add_dst = e_src.append, graph.e_dst.append
    add_action, add_label = graph.e_action.append, graph.e_label.append
    index: dict[str, int] = {}
    converged_nodes: list[int] = []
    fingerprint = model.fingerprint
    is_converged = model.is_converged
    actions_of = model.actions
    successor = model.successor
    # what a state keeps only to be expanded (caches of derived data): let go of once it has been
    release: Callable[[S], None] | None = getattr(model, "release", None)
    # let go of expanded states (rederive.py): a breadth-first node's parent edge never changes
    drop = settings.drops_states

    has_properties = bool(properties)
    reduced_count = 0
    global_causes: dict[str, int] = {}
    horizon_of = getattr(reducer, "horizon", None)
    # the groups' futures a discovered state inherited from the step that found it (reduction.Future)
    futures_at: dict[int, dict[Hashable, Future]] = {}
    cache = future_cache(reducer) if reducer is not None else None

    # the last state asked about and its actions: a future's search asks once per member process at
    # each of its nodes, one after the other (reduction._group_future), and one listing serves them all
    listed: list[Any] = [None, []]

    def process_steps(state: S, process: object) -> tuple[list[A], list[Transition[S]]]:
        assert reducer is not None
        # the reduction's look-ahead may take many steps inside one expansion: it gives up when the
        # search is out of time (or asked to stop), so a timeout ends the search at about its instant
        if (deadline is not None and _monotonic() >= deadline) or (should_stop is not None and should_stop()):
            raise _OutOfTime
        if listed[0] is not state:
            listed[0], listed[1] = state, list(actions_of(state))
        mine = [a for a in listed[1] if reducer.process(a) == process]
        return mine, [successor(state, a) for a in mine]

    def visible(state_converged: bool, picked: list[int], ts: list[Transition[S]],
                prints: list[Footprint]) -> bool:
        """A persistent subset may stand for all actions only if none of its steps is visible."""
        for i in picked:
            if is_converged(ts[i].state) != state_converged:
                return True
            fp = prints[i]
            touched = fp.writes | fp.marks
            if not touched:
                continue
            for p in always:
                if p.observes is None or any(p.observes(tok) for tok in touched):
                    return True
        return False

    def check(node: int, state: S, converged: bool) -> None:
        if converged:
            for p in at_converged:
                detail = unwrap(p.predicate(state), p.tally)
                if detail is not None:
                    run.violation(p.name, p.kind, node, detail)
        for p in always:
            detail = unwrap(p.predicate(state), p.tally)
            if detail is not None:
                run.violation(p.name, p.kind, node, detail)

    bound_hit: str | None = None
    initial: list[int] = []
    initial_index: dict[int, int] = {}
    for i, s0 in enumerate(model.initial_states()):
        fp = fingerprint(s0)
        if fp in index:
            continue
        if len(states) >= max_states:
            bound_hit = f"maxStates {max_states} reached"
            break
        node = len(states)
        index[fp] = node
        states.append(s0)
        depths.append(0)
        parents.append(NO_PARENT)
        first_edge.append(0)
        last_edge.append(0)
        status.append(UNEXPANDED)
        c = is_converged(s0)
        conv.append(c)
        if c:
            converged_nodes.append(node)
        if has_properties:
            check(node, s0, c)
        initial.append(node)
        initial_index[node] = i

    dfs = strategy == "dfs"
    walker = _Walker(graph, initial, random.Random(seed), walks, max_depth) if strategy == "random" else None
    stack: list[int] = list(reversed(initial)) if dfs else []
    cursor = 0  # BFS: the next node id to expand
    next_report = start + _PROGRESS_INTERVAL
    max_depth_seen = 0
    stopped = run.is_stopped()
    depths_final = not dfs and walker is None
    terminal_converged = not settings.expand_converged

    while bound_hit is None and not stopped:
        if dfs:
            if not stack:
                # Nodes DFS reached first by a long path may be cut although a shorter path exists:
                # recompute shortest depths over the recorded graph and expand those cut too early.
                retry = _shortest_depths(graph, initial, max_depth)
                if not retry:
                    depths_final = True
                    break
                stack.extend(reversed(retry))
                continue
            node = stack.pop()
            if status[node] != UNEXPANDED:
                continue
        elif walker is not None:
            node = walker.next_node()
            if node < 0:
                break
        else:
            if cursor >= len(states):
                break
            node = cursor
            cursor += 1
        d = depths[node]
        if d > max_depth_seen:
            max_depth_seen = d
        now = _monotonic()
        if deadline is not None and now >= deadline:
            bound_hit = f"timeout {timeout:g}s reached"
            break
        if should_stop is not None:
            reason = should_stop()
            if reason:
                bound_hit = reason if isinstance(reason, str) else "stopped by the caller"
                break
        if on_progress is not None and now >= next_report:
            next_report = now + _PROGRESS_INTERVAL
            on_progress(Progress(len(states), len(e_src), max_depth_seen, now - start))

        state = states[node]
        if terminal_converged and conv[node]:
            status[node] = CONVERGED_LEAF
            continue
        acts = actions_of(state)
        if not acts:
            status[node] = EXPANDED  # a deadlock unless converged; both are read off the graph later
            first_edge[node] = last_edge[node] = len(e_src)
            continue
        if d >= max_depth:
            status[node] = DEPTH_CUT
            continue
        nd = d + 1
        eid = len(e_src)
        first_edge[node] = eid
        first_new = len(states)
        ts: list[Transition[S]] | None = None
        order: Sequence[int] = range(len(acts))
        rest: list[int] = []
        cut_short = False
        futures = futures_at.pop(node, None) if reducer is not None else None
        if reducer is not None and len(acts) > 1:
            ts = []
            for a in acts:
                if deadline is not None and ts and _monotonic() >= deadline:
                    break  # out of time: the steps run so far are kept, and the search stops after this node
                ts.append(successor(state, a))
            if len(ts) < len(acts):
                # the steps run before the deadline are kept, the node partly expanded: the one that ran
                # past it may be a controller's overrun, a finding the search must not lose
                bound_hit = f"timeout {timeout:g}s reached"
                order, futures, cut_short = range(len(ts)), None, True
            else:
                futures = {} if futures is None else futures
                try:
                    chosen = persistent_subset(reducer, state, acts, ts, process_steps, fingerprint,
                                               horizon_of(state) if horizon_of is not None else None,
                                               global_causes, futures, cache)
                except _OutOfTime:
                    chosen = None  # expanded fully; the search stops before the next expansion
                if chosen is not None and not visible(bool(conv[node]), chosen[0], ts, chosen[1]):
                    order = chosen[0]
                    taken = set(order)
                    rest = [i for i in range(len(acts)) if i not in taken]
        taken_count = 0
        planned = len(order)
        while True:
            proviso_ok = True
            for i in order:
                a = acts[i]
                t = successor(state, a) if ts is None else ts[i]
                s2 = t.state
                fp = fingerprint(s2)
                dst = index.get(fp)
                if dst is None:
                    dst = len(states)
                    if dst >= max_states:
                        bound_hit = f"maxStates {max_states} reached"
                        break
                    index[fp] = dst
                    add_state(s2)
                    add_depth(nd)
                    add_parent(eid)
                    add_first(0)
                    add_last(0)
                    add_status(UNEXPANDED)
                    c = is_converged(s2)
                    add_conv(c)
                    if c:
                        converged_nodes.append(dst)
                    if has_properties:
                        check(dst, s2, c)
                    if futures:
                        assert reducer is not None
                        passed = inherit(futures, reducer.process(a), a, reducer.footprint(state, a, t))
                        if passed:
                            futures_at[dst] = passed
                elif rest and proviso_ok and closes_cycle(first_edge, last_edge, graph.e_dst, node, dst):
                    proviso_ok = False  # the cycle proviso (proviso.py): a reduced state closing a cycle expands fully
                add_src(node)
                add_action(a)
                # a label holds the step's writes (objects of both states): kept, it would keep them alive
                add_label(REMOTE if drop and not t.findings else t.label)
                add_dst(dst)
                if t.findings:
                    run.finding(node, eid, t.findings)
                eid += 1
                taken_count += 1
                if stop_on_first and run.is_stopped():
                    stopped = True
                    break
            if not rest or bound_hit is not None or stopped:
                break
            if proviso_ok:
                reduced_count += 1
                break
            order, rest = rest, []
            planned += len(order)
        last_edge[node] = eid
        status[node] = EXPANDED if taken_count == planned and not cut_short else PARTIAL
        if release is not None:
            release(state)
        if drop and not conv[node] and node not in initial_index:
            states[node] = REMOTE
        if dfs and len(states) > first_new:
            stack.extend(range(len(states) - 1, first_new - 1, -1))

    graph.fingerprints = list(index)  # insertion order is node order
    if drop:
        rederive = Rederive(graph, model, settings.rederive_around)
        graph.remote, graph.remote_labels = rederive, rederive.labels
    if run.is_stopped() and bound_hit is None:
        bound_hit = "stopped at the first problem (stop on first)"
    if walker is not None and bound_hit is None:
        left = sum(1 for v in range(len(states)) if status[v] in (UNEXPANDED, PARTIAL))
        if left:
            bound_hit = (f"random walks are not exhaustive: {walks} walks from seed {seed} left {left} "
                         f"discovered state(s) unexpanded")
    if not depths_final:
        _shortest_depths(graph, initial, max_depth)  # shortest parents for the stories
    return finish(graph, run, strategy, bound_hit, initial, initial_index, converged_nodes, max_depth_seen,
                  start, on_progress, reduced_count, global_causes)
