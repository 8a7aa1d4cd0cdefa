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

import collections
import contextlib
import multiprocessing
import queue
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from kamera_cli.explore.checker import _Problems, finish
from kamera_cli.explore.model import ExploreError, Model, Property, pack_state, unpack_state, unwrap
from kamera_cli.explore.parallel_worker import Worker, check, worker_main
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
    Progress,
    SearchResult,
)

S = TypeVar("S")
A = TypeVar("A")

_monotonic = time.monotonic
_POLL = 0.25
#: a worker this many queued nodes ahead of the least busy one ships the successors it finds
_IMBALANCE = 32
#: messages to a forked worker sent together (unless it runs short of work, or the coordinator waits)
_BATCH = 16

def search_parallel(
    model: Model[S, A],
    *,
    workers: int,
    properties: Sequence[Property[S]],
    max_depth: int,
    max_states: int,
    timeout: float | None,
    on_progress: Callable[[Progress], None] | None,
    stop_on_first: bool,
    expand_converged: bool,
    should_stop: Callable[[], object] | None,
    reducer: Reducible[S, A] | None,
    worker_report: Callable[[], object] | None,
    remote: Sequence[Connection] = (),
) -> SearchResult[S, A]:
    """``search(strategy="bfs")`` over ``workers`` processes: this one, ``remote`` ones already
    serving the search elsewhere (``serve``), the rest forked (see the module doc)."""
    start = _monotonic()
    deadline = None if timeout is None else start + timeout
    pool = _Pool(model, properties, reducer, workers, max_depth, expand_converged, worker_report, remote)
    try:
        return _Coordinator(pool, model, properties, max_depth, max_states, deadline, timeout, on_progress,
                            stop_on_first, expand_converged, should_stop, start).run()
    except BaseException:
        pool.close()
        raise


class WorkerDied(RuntimeError):
    """A worker process of a parallel search ended without a word (user code in it exited or was
    killed). ``exitcode`` is its exit status (negative: the signal), so a supervisor can judge it as
    it would judge the death of the process that ran the whole search."""

    def __init__(self, worker: int, exitcode: int | None) -> None:
        super().__init__(f"search worker {worker} ended unexpectedly (exit code {exitcode})")
        self.exitcode = exitcode


class _Pool:
    """Worker 0 runs in the coordinator's own process; workers 1.. are forked, each with a pipe, and
    the last ones may be remote: a connection to a process that serves the search (``serve``) with a
    model of its own, on this machine or another (a relay speaks the same protocol).

    Why the coordinator expands too: merging costs little, and a coordinator that only waited would
    still need a core of its own to answer in time — on two cores, two forked workers and a waiting
    coordinator starve each other (workers blocked writing results a descheduled coordinator has not
    read). So with ``workers=N`` there are N processes in all, the coordinator expanding its own nodes
    between merges.
    """

    def __init__(self, model: Model[Any, Any], properties: Sequence[Property[Any]],
                 reducer: Reducible[Any, Any] | None, n: int, max_depth: int, expand_converged: bool,
                 report: Callable[[], object] | None, remote: Sequence[Connection] = ()) -> None:
        forked = n - 1 - len(remote)
        try:
            ctx = multiprocessing.get_context("fork") if forked else None
        except ValueError as exc:  # no fork (Windows): the serial search is the only one
            raise ExploreError("a parallel search needs the 'fork' start method (Linux, macOS)") from exc
        self.size = n
        self.conns: list[Connection] = []  # workers 1..n-1
        self.procs: list[Any] = []  # None for a remote worker
        # The coordinator sends through a thread per worker: a worker blocked writing its result to
        # a full pipe while the coordinator is blocked writing to the worker's would be a deadlock.
        # (Not the other way round: a second thread in a worker costs it a third of its speed in
        # GIL hand-offs.)
        self.outboxes: list[queue.SimpleQueue[tuple[Any, ...] | None]] = []
        self.senders: list[threading.Thread] = []
        for i in range(1, n):
            if i <= forked:
                assert ctx is not None
                mine, theirs = ctx.Pipe()
                args = (theirs, list(self.conns), model, properties, reducer, max_depth, expand_converged, report)
                proc = ctx.Process(target=worker_main, args=args, name=f"kamera-search-{i}", daemon=True)
                proc.start()
                theirs.close()
            else:
                mine, proc = remote[i - 1 - forked], None
            self.conns.append(mine)
            self.procs.append(proc)
            outbox: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
            self.outboxes.append(outbox)
            sender = threading.Thread(target=self._send_loop, args=(mine, outbox), name=f"kamera-search-send-{i}",
                                      daemon=True)
            sender.start()
            self.senders.append(sender)
        #: results of worker 0 go straight here (the coordinator's results by node); its other replies
        #: wait in ``replies`` for ``recv(0)``
        self.results: dict[int, Any] = {}
        self.replies: collections.deque[tuple[Any, ...]] = collections.deque()
        self.batches: list[list[tuple[Any, ...]]] = [[] for _ in range(1, n)]
        self.local = Worker(self._local_reply, model, properties, reducer, max_depth, expand_converged, report)
        self.closed = False

    def _local_reply(self, message: tuple[Any, ...]) -> None:
        if message[0] == "result":
            self.results[message[1]] = message[2]
        else:
            self.replies.append(message)

    def worker_of(self, conn: Any) -> int:
        return self.conns.index(conn) + 1

    def send(self, worker: int, message: tuple[Any, ...]) -> None:
        """Worker 0 handles it now; a forked worker's messages go out in batches (``flush``): waking the
        sender thread once per message costs the coordinator a GIL hand-off each time."""
        if worker == 0:
            self.local.handle(message)
            return
        batch = self.batches[worker - 1]
        batch.append(message)
        if len(batch) >= _BATCH or message[0] in ("get", "labels", "halt"):
            self.flush(worker)

    def flush(self, worker: int | None = None) -> None:
        for w in range(1, self.size) if worker is None else (worker,):
            batch = self.batches[w - 1]
            if batch:
                self.outboxes[w - 1].put(("batch", list(batch)))
                batch.clear()

    @staticmethod
    def _send_loop(conn: Connection, outbox: queue.SimpleQueue[tuple[Any, ...] | None]) -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                message = outbox.get()
                if message is None:
                    return
                conn.send(message)

    def recv(self, worker: int) -> Any:
        if worker == 0:
            return self.replies.popleft()
        try:
            message = self.conns[worker - 1].recv()
        except (EOFError, OSError):
            proc = self.procs[worker - 1]
            if proc is None:
                raise RuntimeError(f"remote search worker {worker} went away without a word") from None
            proc.join(timeout=5)
            raise WorkerDied(worker, proc.exitcode) from None
        if message[0] == "error":
            raise RuntimeError(f"search worker {worker} failed:\n{message[1]}")
        return message

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            for outbox in self.outboxes:
                outbox.put(None)
            for conn in self.conns:
                conn.close()  # the workers see the end of their pipe and quit

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for outbox in self.outboxes:
            outbox.put(("quit",))
            outbox.put(None)
        for sender in self.senders:
            sender.join(timeout=2)
        for conn in self.conns:
            conn.close()  # a worker still writing gets a broken pipe
        for proc in self.procs:
            if proc is None:
                continue
            proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
                proc.join()


class _Coordinator:
    def __init__(self, pool: _Pool, model: Model[Any, Any], properties: Sequence[Property[Any]], max_depth: int,
                 max_states: int, deadline: float | None, timeout: float | None,
                 on_progress: Callable[[Progress], None] | None, stop_on_first: bool, expand_converged: bool,
                 should_stop: Callable[[], object] | None, start: float) -> None:
        self.pool, self.model, self.properties = pool, model, list(properties)
        self.max_depth, self.max_states = max_depth, max_states
        self.deadline, self.timeout, self.on_progress = deadline, timeout, on_progress
        self.stop_on_first, self.expand_converged, self.should_stop = stop_on_first, expand_converged, should_stop
        self.start = start
        self.graph: Graph[Any, Any] = Graph()
        self.run_ = _Problems(stop_on_first)
        self.index: dict[str, int] = {}
        self.fps: list[str] = []
        self.edge_index: list[int] = []  # edge id -> the transition's index in its source's expansion
        self.owner: list[int] = []
        self.queued = [0] * pool.size  # nodes dispatched to each worker and not merged yet
        self.results: dict[int, Any] = pool.results  # results received ahead of their turn
        self.converged_nodes: list[int] = []

    # -- dispatch ---------------------------------------------------------------------------------------
    def _export(self, worker: int) -> bool:
        # a shipped state costs as much as computing it and loses the worker's caches: tolerate a
        # fair imbalance (a quarter of the queued work), ship only beyond it
        queued = self.queued
        return queued[worker] > min(queued) + max(_IMBALANCE, sum(queued) // 4)

    def _dispatch(self, node: int, fp: str, worker: int, blob: bytes | None) -> None:
        self.owner[node] = worker
        self.queued[worker] += 1
        self.pool.send(worker, ("expand", node, fp, self.graph.depths[node], blob, self._export(worker)))

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
                           None if worker == 0 else pack_state(model, g.states[node]))
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
            self.queued[worker] -= 1
            kept: list[tuple[int, str, int, bool]] = []
            bound_hit, stopped, took_reduced = self._merge(node, d, result, worker, kept)
            reduced += took_reduced
            self.pool.send(worker, ("merged", node, kept))
        g.fingerprints = list(self.index)
        if self.run_.is_stopped() and bound_hit is None:
            bound_hit = "stopped at the first problem (stop on first)"
        reports = self._finish_workers()
        g.remote = self._fetch
        g.remote_labels = self._fetch_labels
        result = finish(g, self.run_, "bfs", bound_hit, initial, initial_index, self.converged_nodes,
                        max_depth_seen, self.start, self.on_progress, reduced)
        return SearchResult(**{**{f: getattr(result, f) for f in result.__dataclass_fields__},
                               "worker_reports": reports, "closer": self.pool.close})

    def _await(self, node: int) -> Any:
        """The expansion of ``node`` (a string: the bound that stopped the search while waiting)."""
        pool = self.pool
        while node not in self.results:
            now = _monotonic()
            if self.deadline is not None and now >= self.deadline:
                return f"timeout {self.timeout:g}s reached"
            if self.should_stop is not None:
                reason = self.should_stop()
                if reason:
                    return reason if isinstance(reason, str) else "stopped by the caller"
            local_work = bool(pool.local.queue)
            if not local_work or any(q < _BATCH for q in self.queued[1:]):
                pool.flush()  # about to wait, or a forked worker is running short of work
            ready = wait(pool.conns, timeout=0 if local_work else _POLL) if pool.conns else []
            for conn in ready:
                message = pool.recv(pool.worker_of(conn))
                self.results[message[1]] = message[2]
            if local_work:
                pool.local.expand_next()  # one of its own while the others' results come in
        return self.results.pop(node)

    def _merge(self, node: int, d: int, result: Any, worker: int,
               kept: list[tuple[int, str, int, bool]]) -> tuple[str | None, bool, int]:
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
        _kind, acts, succs, order, rest = result
        export_to = self._export(worker)
        nd = d + 1
        eid = len(g.e_src)
        g.first_edge[node] = eid
        taken_count, planned, reduced = 0, len(order), 0
        bound_hit: str | None = None
        stopped = False
        while True:
            proviso_ok = True
            for i in order:
                fp, findings, converged, details, blob = succs[i]
                dst = self.index.get(fp)
                if dst is None:
                    dst = len(g.states)
                    if dst >= self.max_states:
                        bound_hit = f"maxStates {self.max_states} reached"
                        break
                    self._add_node(REMOTE, fp, nd, eid, converged)
                    if details:
                        self._violations(dst, details)
                    target = min(range(len(self.queued)), key=self.queued.__getitem__)
                    if blob is not None and export_to and target != worker:
                        self._dispatch(dst, fp, target, blob)
                    else:
                        self.owner[dst] = worker
                        self.queued[worker] += 1
                        kept.append((dst, fp, nd, self._export(worker)))
                elif dst <= node:
                    proviso_ok = False
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
    def _finish_workers(self) -> tuple[object, ...]:
        pool = self.pool
        for w in range(pool.size):
            pool.send(w, ("halt",))
        reports: list[object] = []
        for w in range(pool.size):
            while True:
                message = pool.recv(w)
                if message[0] == "halted":
                    reports.append(message[1])
                    break  # results still in flight for nodes the search no longer needs are dropped
        return tuple(reports)

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
