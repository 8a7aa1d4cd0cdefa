"""Breadth-first search split across worker processes, with exactly the serial search's result.

Why this shape: what costs is computing successors (running controller code, applying writes,
digesting states); what decides the result is the order in which the graph is built. So workers
only compute, and one coordinator builds the graph in the serial search's order: it merges the
expansion of node ``n`` only after every node before it, takes the same persistent subsets, applies
the same cycle proviso and stops at the same bound. Node ids, edges, counts, findings and
counterexamples are therefore those of ``search(..., workers=1)``.

Why states stay in the workers: shipping a state costs as much as computing it (pickling a
snapshot ~0.2 ms, unpickling ~0.3 ms, against ~0.6 ms to expand one), so a state lives in the
worker that discovered it, which also expands it. The coordinator holds fingerprints and the
graph; a state is sent elsewhere only to even out the workers' queues (the discoverer ships the
successors of an expansion when told to), and ``Graph.state`` fetches a state from its worker
when someone reads it after the search.

Workers are forked from the coordinator once the model is built, so they share its loaded code
and configuration; each runs the model's functions exactly as the serial search does (they are
functions of the state). What a worker caches on its own (memoised steps) changes only speed.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from kamera_cli.explore.model import Model, unpack_state, unwrap
from kamera_cli.explore.parallel_pool import BATCH, Pool, WorkerDied
from kamera_cli.explore.parallel_worker import check, pack_node, unpack_node
from kamera_cli.explore.problems import Problems, finish
from kamera_cli.explore.proviso import closes_cycle
from kamera_cli.explore.reduction import Reducible
from kamera_cli.explore.result import (
    CONVERGED_LEAF,
    DEPTH_CUT,
    EXPANDED,
    NO_PARENT,
    PARTIAL,
    REMOTE,
    UNEXPANDED,
    Graph,
    ProcessLoad,
    Progress,
    SearchResult,
)
from kamera_cli.explore.settings import SearchSettings

S = TypeVar("S")
A = TypeVar("A")

_monotonic = time.monotonic
_POLL = 0.25
#: a worker with fewer nodes than this left to expand is given some of the coordinator's
_LOW = 8
#: the coordinator's share of the queued nodes against a worker's (it merges as well)
_COORDINATOR_SHARE = 0.8

__all__ = ["WorkerDied", "search_parallel"]

def search_parallel(model: Model[S, A], settings: SearchSettings[S],
                    reducer: Reducible[S, A] | None) -> SearchResult[S, A]:
    """``search(strategy="bfs")`` over ``settings.workers`` processes: this one, ``settings.remote``
    ones already serving the search elsewhere (``serve``), the rest forked (see the module doc)."""
    start = _monotonic()
    pool = Pool(model, settings, reducer)
    try:
        return _Coordinator(pool, model, settings, start).run()
    except BaseException:
        pool.close()
        raise


class _Coordinator:
    def __init__(self, pool: Pool, model: Model[Any, Any], settings: SearchSettings[Any], start: float) -> None:
        self.pool, self.model, self.properties = pool, model, list(settings.properties)
        self.max_depth, self.max_states = settings.max_depth, settings.max_states
        self.timeout, self.on_progress = settings.timeout, settings.on_progress
        self.deadline = None if settings.timeout is None else start + settings.timeout
        self.stop_on_first, self.expand_converged = settings.stop_on_first, settings.expand_converged
        self.should_stop = settings.should_stop
        self.start = start
        self.graph: Graph[Any, Any] = Graph()
        self.run_ = Problems(settings.stop_on_first)
        self.index: dict[str, int] = {}
        self.fps: list[str] = []
        self.edge_index: list[int] = []  # edge id -> the transition's index in its source's expansion
        self.owner: list[int] = []
        #: nodes each worker holds and has not expanded yet (worker 0: its queue, counted there)
        self.backlog = [0] * pool.size
        self.asked = [0] * pool.size  # requests for nodes ("give") not answered yet
        self.idle, self.taken, self.cpu0 = 0.0, 0, time.process_time()
        #: equal actions are one object: each result brings its own copies, and a large search keeps
        #: one per edge (memory, and the collector's time walking them)
        self.actions: dict[Any, Any] = {}
        self.act_tables: list[dict[int, Any]] = [{} for _ in range(pool.size)]  # each worker's numbering
        self.results: dict[int, Any] = pool.results  # results received ahead of their turn
        self.converged_nodes: list[int] = []
        #: why nodes were expanded fully, summed over the expansions merged (docs/output.md)
        self.global_causes: dict[str, int] = {}

    #: tests: move every new node to another process (the states cross, however small the search)
    _move_all = False

    # -- dispatch and balance --------------------------------------------------------------------------
    def _dispatch(self, node: int, fp: str, worker: int, blob: bytes | None) -> None:
        self.owner[node] = worker
        if worker:
            self.backlog[worker] += 1
        self.pool.send(worker, ("expand", node, fp, self.graph.depths[node], blob), 1)

    def _ship(self, worker: int, nodes: Sequence[int] | None, count: int) -> None:
        """Hand queued nodes of the coordinator (``nodes``, else the ``count`` queued last: the
        furthest from the merge) to ``worker``, their states packed."""
        local = self.pool.local
        for node, fp, _depth, blob in local.give(count, nodes):
            self._dispatch(node, fp, worker, blob)

    def _take(self, worker: int, given: list[tuple[int, str, int, bytes]], queue: bool = True) -> None:
        """Nodes a worker let go of at our request: now the coordinator's to expand."""
        local = self.pool.local
        self.asked[worker] -= 1
        for node, fp, depth, blob in given:
            self.owner[node] = 0
            self.backlog[worker] -= 1
            self.taken += 1
            local.store[fp], futures = unpack_node(self.model, blob)
            if futures:
                local.futures[fp] = futures
            if queue:
                heapq.heappush(local.queue, (node, fp, depth))

    def _balance(self) -> None:
        """Why moving work is the exception: a node stays in the process that discovered it (its
        state is there), and so do its successors. Moving a state costs a pickle each way, as much
        as a step, so nodes move only when a worker runs short: it gets some of the coordinator's
        queue, enough to bring both to their shares (the coordinator's is smaller: it also
        merges). A coordinator with nothing to expand takes some of the fullest worker's."""
        local = self.pool.local.queue
        backlog = self.backlog
        workers = len(backlog) - 1
        mine = len(local)
        total = mine + sum(backlog)
        share = total / (workers + _COORDINATOR_SHARE)  # a worker's
        for w in range(1, workers + 1):
            if backlog[w] < max(_LOW, share / 2) and mine > _COORDINATOR_SHARE * share:
                count = min(int(share - backlog[w]), mine - int(_COORDINATOR_SHARE * share))
                if count > 0:
                    self._ship(w, None, count)
                    mine -= count
        if not local:
            w = max(range(len(backlog)), key=backlog.__getitem__)
            if backlog[w] > _LOW and not self.asked[w]:
                self.asked[w] += 1
                self.pool.send(w, ("give", backlog[w] // 2, None))

    def _receive(self, worker: int, message: tuple[Any, ...]) -> None:
        if message[0] == "given":
            self._take(worker, message[1])
        elif message[0] == "results":
            for node, result in message[1]:
                self._learn(worker, result)
                self.results[node] = result
            self.backlog[worker] -= len(message[1])
        else:
            self._learn(worker, message[2])
            self.results[message[1]] = message[2]
            self.backlog[worker] -= 1

    def _learn(self, worker: int, result: Any) -> None:
        """Record the actions a worker numbered for the first time in ``result``, as it arrives.

        A worker numbers each action once, in the order it sends its results; the coordinator merges
        results in node order, which is not that order, so a later result may use a number an
        unmerged one brought (a KeyError at the merge, seen with built-ins over two workers). The
        coordinator's own worker does not number its actions (``Worker.numbering``)."""
        if result[0] != "expanded":
            return
        new = result[1][1]
        if new is not None:
            table = self.act_tables[worker]
            for number, act in new:
                table[number] = self.actions.setdefault(act, act)

    def _add_node(self, state: Any, fp: str, depth: int, parent: int, converged: bool) -> int:
        g = self.graph
        node = len(g.states)
        self.index[fp] = node
        self.fps.append(fp)
        g.states.append(state)
        g.depths.append(depth)
        g.parents.append(parent)
        g.first_edge.append(0)
        g.last_edge.append(0)
        g.status.append(UNEXPANDED)
        g.converged_flags.append(converged)
        self.owner.append(-1)
        if converged:
            self.converged_nodes.append(node)
        return node

    def _violations(self, node: int, details: tuple[tuple[int, object], ...]) -> None:
        for i, answer in details:
            p = self.properties[i]
            detail = unwrap(answer, p.tally)
            if detail is not None:
                self.run_.violation(p.name, p.kind, node, detail)

    # -- the merge loop, in node order ---------------------------------------------------------------------
    def run(self) -> SearchResult[Any, Any]:
        g, model = self.graph, self.model
        initial: list[int] = []
        initial_index: dict[int, int] = {}
        bound_hit: str | None = None
        for i, s0 in enumerate(model.initial_states()):
            fp = model.fingerprint(s0)
            if fp in self.index:
                continue
            if len(g.states) >= self.max_states:
                bound_hit = f"maxStates {self.max_states} reached"
                break
            c = model.is_converged(s0)
            node = self._add_node(s0, fp, 0, NO_PARENT, c)
            self._violations(node, check(self.properties, s0, c))
            initial.append(node)
            initial_index[node] = i
        for k, node in enumerate(initial):
            worker = k % self.pool.size
            if worker == 0:
                self.pool.local.store[self.fps[node]] = g.states[node]
            self._dispatch(node, self.fps[node], worker,
                           None if worker == 0 else pack_node(model, g.states[node], None))
        cursor, reduced, max_depth_seen = 0, 0, 0
        next_report = self.start + _POLL
        stopped = self.run_.is_stopped()
        while bound_hit is None and not stopped and cursor < len(g.states):
            node = cursor
            d = g.depths[node]
            max_depth_seen = max(max_depth_seen, d)
            result = self._await(node)
            if isinstance(result, str):
                bound_hit = result
                break
            now = _monotonic()
            if self.on_progress is not None and now >= next_report:
                next_report = now + _POLL
                self.on_progress(Progress(len(g.states), len(g.e_src), max_depth_seen, now - self.start))
            cursor += 1
            worker = self.owner[node]
            kept: list[tuple[int, str, int]] = []
            bound_hit, stopped, took_reduced = self._merge(node, d, result, worker, kept)
            reduced += took_reduced
            self.pool.send(worker, ("merged", node, kept), len(kept))
            if worker:
                self.backlog[worker] += len(kept)
            if self._move_all and kept:
                moved = [k[0] for k in kept]
                if worker:
                    self.asked[worker] += 1
                    self.pool.send(worker, ("give", 0, moved))
                else:
                    self._ship(1 + node % (self.pool.size - 1), moved, 0)
        g.fingerprints = list(self.index)
        if self.run_.is_stopped() and bound_hit is None:
            bound_hit = "stopped at the first problem (stop on first)"
        reports, loads = self._finish_workers()
        g.remote = self._fetch
        g.remote_labels = self._fetch_labels
        result = finish(g, self.run_, "bfs", bound_hit, initial, initial_index, self.converged_nodes,
                        max_depth_seen, self.start, self.on_progress, reduced, self.global_causes)
        return SearchResult(**{**{f: getattr(result, f) for f in result.__dataclass_fields__},
                               "worker_reports": reports, "processes": loads, "closer": self.pool.close})

    def _await(self, node: int) -> Any:
        """The expansion of ``node`` (a string: the bound that stopped the search while waiting)."""
        pool, local, backlog = self.pool, self.pool.local, self.backlog
        while node not in self.results:
            now = _monotonic()
            if self.deadline is not None and now >= self.deadline:
                return f"timeout {self.timeout:g}s reached"
            if self.should_stop is not None:
                reason = self.should_stop()
                if reason:
                    return reason if isinstance(reason, str) else "stopped by the caller"
            # everything that has arrived first: the backlogs then say what the workers really hold
            # (read one message per expansion, a slower coordinator saw a worker busy long after it
            # had run dry, and held back the work it needed)
            self._drain(pool.ready(0))
            if node in self.results:
                break
            if not self._move_all:
                self._balance()
            local_work = bool(local.queue)
            if not local_work:
                pool.flush()  # about to wait
            else:
                for w in range(1, len(backlog)):
                    # a worker running short of work: what is batched for it leaves now (its
                    # backlog counts the nodes still held here, which it cannot start)
                    if backlog[w] - pool.held(w) < BATCH:
                        pool.flush(w)
            unsent = pool.unsent()
            if local_work:
                local.expand_next()  # one of its own while the others' results come in
            else:
                t0 = _monotonic()
                ready = pool.ready(0.001 if unsent else _POLL)
                self.idle += _monotonic() - t0
                self._drain(ready)
        return self.results.pop(node)

    def _drain(self, ready: list[Connection]) -> None:
        """Read every message the workers have sent so far (``ready``: the connections to start with)."""
        pool = self.pool
        while ready:
            for conn in ready:
                w = pool.worker_of(conn)
                self._receive(w, pool.recv(w))
            ready = pool.ready(0)

    def _merge(self, node: int, d: int, result: Any, worker: int,
               kept: list[tuple[int, str, int]]) -> tuple[str | None, bool, int]:
        g = self.graph
        kind = result[0]
        if kind == "leaf":  # converged and not expanded
            g.status[node] = CONVERGED_LEAF
            return None, False, 0
        if kind == "none":  # no action enabled
            g.status[node] = EXPANDED
            g.first_edge[node] = g.last_edge[node] = len(g.e_src)
            return None, False, 0
        if kind == "cut":
            g.status[node] = DEPTH_CUT
            return None, False, 0
        _kind, (acts, new), succs, order, rest, causes = result
        for cause, count in causes:
            self.global_causes[cause] = self.global_causes.get(cause, 0) + count
        if new is not None:  # numbered (``Worker._numbered``); the numbers were learnt on arrival
            table = self.act_tables[worker]
            acts = [table[i] for i in acts]
        nd = d + 1
        eid = len(g.e_src)
        g.first_edge[node] = eid
        taken_count, planned, reduced = 0, len(order), 0
        bound_hit: str | None = None
        stopped = False
        while True:
            proviso_ok = True
            for i in order:
                fp, findings, converged, details = succs[i]
                dst = self.index.get(fp)
                if dst is None:
                    dst = len(g.states)
                    if dst >= self.max_states:
                        bound_hit = f"maxStates {self.max_states} reached"
                        break
                    self._add_node(REMOTE, fp, nd, eid, converged)
                    if details:
                        self._violations(dst, details)
                    self.owner[dst] = worker
                    kept.append((dst, fp, nd))
                elif rest and proviso_ok and closes_cycle(g.first_edge, g.last_edge, g.e_dst, node, dst):
                    proviso_ok = False  # the serial search's cycle proviso (proviso.py)
                g.e_src.append(node)
                g.e_action.append(acts[i])
                g.e_label.append(REMOTE)
                self.edge_index.append(i)
                g.e_dst.append(dst)
                if findings:
                    self.run_.finding(node, eid, findings)
                eid += 1
                taken_count += 1
                if self.stop_on_first and self.run_.is_stopped():
                    stopped = True
                    break
            if not rest or bound_hit is not None or stopped:
                break
            if proviso_ok:
                reduced = 1
                break
            order, rest = rest, []
            planned += len(order)
        g.last_edge[node] = eid
        g.status[node] = EXPANDED if taken_count == planned else PARTIAL
        return bound_hit, stopped, reduced

    # -- after the search -----------------------------------------------------------------------------------
    def _finish_workers(self) -> tuple[tuple[object, ...], tuple[ProcessLoad, ...]]:
        pool = self.pool
        for w in range(pool.size):
            pool.send(w, ("halt",))
        reports: list[object] = []
        loads: list[ProcessLoad] = []
        for w in range(pool.size):
            while True:
                message = pool.recv(w)
                if message[0] == "halted":
                    reports.append(message[1])
                    expanded, cpu, idle, moved = message[2]
                    if w == 0:  # the coordinator: its merging counts, and its waits
                        cpu, idle, moved = time.process_time() - self.cpu0, self.idle, self.taken
                    loads.append(ProcessLoad(expanded, cpu, idle, moved))
                    break  # results still in flight for nodes the search no longer needs are dropped
                if message[0] == "given":  # their states may still be read
                    self._take(w, message[1], queue=False)
        return tuple(reports), tuple(loads)

    def _fetch_labels(self, edge_ids: Sequence[int]) -> list[object]:
        pool, g = self.pool, self.graph
        if pool.closed:
            raise RuntimeError("the search's worker processes are gone: its steps can no longer be read")
        by_worker: dict[int, list[int]] = {}
        for e in edge_ids:
            by_worker.setdefault(self.owner[g.e_src[e]], []).append(e)
        for w, es in by_worker.items():
            pool.send(w, ("labels", [(g.e_src[e], self.edge_index[e]) for e in es]))
        found: dict[int, object] = {}
        for w, es in by_worker.items():
            _tag, labels = pool.recv(w)
            found.update(zip(es, labels, strict=True))
        return [found[e] for e in edge_ids]

    def _fetch(self, nodes: Sequence[int]) -> list[Any]:
        pool = self.pool
        if pool.closed:
            raise RuntimeError("the search's worker processes are gone: its states can no longer be read")
        by_worker: dict[int, list[int]] = {}
        for n in nodes:
            by_worker.setdefault(self.owner[n], []).append(n)
        for w, ns in by_worker.items():
            pool.send(w, ("get", [self.fps[n] for n in ns]))
        found: dict[int, Any] = {}
        for w, ns in by_worker.items():
            _tag, blobs = pool.recv(w)
            for n, blob in zip(ns, blobs, strict=True):
                found[n] = unpack_state(self.model, blob)
        return [found[n] for n in nodes]
