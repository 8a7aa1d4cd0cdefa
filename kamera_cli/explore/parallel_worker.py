"""The worker side of a split search: expanding nodes, keeping states, answering the coordinator.

Why a module of its own: a worker is all a remote process runs (``serve``), and it must compute
exactly what the serial search computes at a node — the same successors, persistent subset,
visibility check and property answers — so that the coordinator's merge gives the serial graph.
"""

from __future__ import annotations

import contextlib
import heapq
import pickle
import select
import time
import traceback
from collections.abc import Callable, Hashable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from kamera_cli.explore.model import ALWAYS, Footprint, Model, Property, Transition, pack_state, unpack_state
from kamera_cli.explore.reduction import Future, Reducible, future_cache, inherit, persistent_subset
from kamera_cli.explore.settings import SearchSettings

#: results a worker in a process of its own sends together, at most (fewer when it is about to
#: read or wait)
RESULTS_BATCH = 4

# One successor as a worker reports it (its label stays with the worker): fingerprint, findings,
# converged, property details (None when the worker already holds the state: not new, so never
# checked).
_Succ = tuple[str, tuple[object, ...], bool, "tuple[tuple[int, object], ...] | None"]


def check(properties: Sequence[Property[Any]], state: Any, converged: bool) -> tuple[tuple[int, object], ...]:
    out: list[tuple[int, object]] = []
    # the serial search's order: the converged properties of a converged state, then the always ones
    ordered = [i for i, p in enumerate(properties) if p.kind != ALWAYS and converged]
    ordered += [i for i, p in enumerate(properties) if p.kind == ALWAYS]
    for i in ordered:
        answer = properties[i].predicate(state)  # a Tallied answer is unwrapped by the coordinator
        if answer is not None:
            out.append((i, answer))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- workers
def serve(conn: Connection, model: Model[Any, Any], settings: SearchSettings[Any],
          reducer: Reducible[Any, Any] | None) -> None:
    """Be a remote worker of a search coordinated at the other end of ``conn`` (until it says quit)."""
    worker_main(conn, [], model, settings, reducer)


def worker_main(conn: Connection, others: list[Connection], model: Model[Any, Any], settings: SearchSettings[Any],
                reducer: Reducible[Any, Any] | None) -> None:
    for other in others:  # the coordinator's ends of the workers forked before: theirs, not ours
        other.close()
    try:
        Worker(conn.send, model, settings, reducer).loop(conn)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except BaseException:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()



def pack_node(model: object, state: object, futures: dict[Hashable, Future] | None) -> bytes:
    """A state moving to another process, with the futures it inherited: the receiver then chooses as
    the serial search would (a node searched afresh may choose differently: docs/explorer.md)."""
    return pickle.dumps((pack_state(model, state), futures or None), protocol=pickle.HIGHEST_PROTOCOL)


def unpack_node(model: object, blob: bytes) -> tuple[Any, dict[Hashable, Future] | None]:
    packed, futures = pickle.loads(blob)
    return unpack_state(model, packed), futures

class Worker:
    """Expands the nodes it is given, smallest id first, and keeps the states it discovers."""

    def __init__(self, reply: Callable[[tuple[Any, ...]], None], model: Model[Any, Any],
                 settings: SearchSettings[Any], reducer: Reducible[Any, Any] | None) -> None:
        self.report = settings.worker_report
        self.reply, self.model, self.properties, self.reducer = reply, model, list(settings.properties), reducer
        #: futures worked out here, reused where what they read is the same (reduction.FutureCache)
        self.cache = future_cache(reducer) if reducer is not None else None
        #: the last state a future's search listed the actions of, and them (``_process_steps``)
        self._listed: tuple[Any, list[Any]] = (None, [])
        #: number actions for the coordinator (off in the coordinator's own worker: nothing crosses)
        self.numbering = True
        self.max_depth, self.expand_converged = settings.max_depth, settings.expand_converged

        self.always = [p for p in self.properties if p.kind == ALWAYS]
        self.store: dict[str, Any] = {}  # the states this worker holds, by fingerprint
        self.judged: dict[str, tuple[bool, tuple[tuple[int, object], ...]]] = {}
        self.labels: dict[int, list[object]] = {}  # node -> the labels of its expansion's transitions
        self.found: dict[int, dict[str, Any]] = {}  # node -> states its expansion discovered, until merged
        self.queue: list[tuple[int, str, int]] = []  # (node, fingerprint, depth)
        self.numbers: dict[Any, int] = {}  # actions sent to the coordinator, by number
        #: the reduction's futures a queued state inherited, by fingerprint (``reduction.inherit``), and
        #: those an expanded node offers its successors until the coordinator says which it keeps
        self.futures: dict[str, dict[Hashable, Future]] = {}
        self.offered: dict[int, dict[str, dict[Hashable, Future]]] = {}
        #: results not sent yet (a worker in a process of its own sends them a few at a time: each
        #: message costs a pickle and a system call on both sides)
        self.outgoing: list[tuple[int, Any]] = []
        self.batching = False
        self.expanded = self.moved = 0
        self.idle = 0.0
        self.cpu0 = time.process_time()

    def loop(self, conn: Connection) -> None:
        # a poll object made once: ``conn.poll()`` builds a selector per call (~6 µs a node); a
        # connection without a file descriptor of its own (a relay's pair of pipes) polls itself
        make, fileno = getattr(select, "poll", None), getattr(conn, "fileno", None)
        poller = make() if make is not None and fileno is not None else None
        if poller is not None:
            try:
                poller.register(fileno(), select.POLLIN)  # type: ignore[misc]
            except (OSError, ValueError, TypeError):
                poller = None
        self.batching = True
        while True:
            while self.queue and not (poller.poll(0) if poller is not None else conn.poll()):
                self.expand_next()
            self.send_results()  # before reading: the coordinator may be waiting for them
            if self.queue:
                message = conn.recv()
            else:
                t0 = time.monotonic()
                message = conn.recv()
                self.idle += time.monotonic() - t0
            if not self.handle(message):
                return

    def load(self) -> tuple[int, float, float, int]:
        return (self.expanded, time.process_time() - self.cpu0, self.idle, self.moved)

    def expand_next(self) -> bool:
        """Expand the smallest queued node (False: none queued)."""
        if not self.queue:
            return False
        self._expand(*heapq.heappop(self.queue))
        return True

    def handle(self, message: tuple[Any, ...]) -> bool:
        tag = message[0]
        if tag not in ("batch", "expand", "merged"):
            self.send_results()  # an answer comes after the results before it
        if tag == "batch":
            return all([self.handle(m) for m in message[1]])
        if tag == "expand":
            _tag, node, fp, depth, blob = message
            if blob is not None:
                self.store[fp], futures = unpack_node(self.model, blob)
                if futures:
                    self.futures[fp] = futures
                self.moved += 1
            heapq.heappush(self.queue, (node, fp, depth))
        elif tag == "merged":
            _tag, node, kept = message
            found = self.found.pop(node, {})
            offered = self.offered.pop(node, {})
            for child, fp, depth in kept:
                self.store[fp] = found[fp]
                if fp in offered:
                    self.futures[fp] = offered[fp]
                heapq.heappush(self.queue, (child, fp, depth))
        elif tag == "give":
            self.reply(("given", self.give(message[1], message[2])))
        elif tag == "labels":
            self.reply(("labels", [self.labels[node][i] for node, i in message[1]]))
        elif tag == "get":
            self.reply(("states", [pack_state(self.model, self.store[fp]) for fp in message[1]]))
        elif tag == "halt":
            self.queue.clear()
            self.found.clear()
            self.offered.clear()
            self.reply(("halted", self.report() if self.report is not None else None, self.load()))
        elif tag == "quit":
            return False
        return True

    def give(self, count: int, nodes: Sequence[int] | None) -> list[tuple[int, str, int, bytes]]:
        """Let go of queued nodes, packed: ``nodes`` (those still queued), else ``count`` of them
        spread evenly over the queue. Their states leave this worker's store.

        Why spread: a state reached from several parents belongs to the process of the first one
        merged, so the process holding a level's low ids discovers most of the next level. Handing
        over the queue's tail would leave the receiver nodes whose successors are mostly known
        already, and the imbalance would come back one level later."""
        queue = self.queue
        if nodes is None:
            queue.sort()
            step = max(1, len(queue) // max(1, count))
            picked = set(range(step - 1, len(queue), step)[:count])
            leaving = [q for i, q in enumerate(queue) if i in picked]
            self.queue = [q for i, q in enumerate(queue) if i not in picked]  # still sorted: a heap
        else:
            wanted = set(nodes)
            leaving = [q for q in queue if q[0] in wanted]
            self.queue = [q for q in queue if q[0] not in wanted]
            heapq.heapify(self.queue)
        return [(node, fp, depth, pack_node(self.model, self.store.pop(fp), self.futures.pop(fp, None)))
                for node, fp, depth in leaving]

    def _expand(self, node: int, fp: str, depth: int) -> None:
        model = self.model
        state = self.store[fp]
        self.expanded += 1
        judged = self.judged.get(fp)  # a state this worker discovered was judged then
        converged = judged[0] if judged is not None else model.is_converged(state)
        if converged and not self.expand_converged:
            result: tuple[Any, ...] = ("leaf",)
        else:
            acts = list(model.actions(state))
            if not acts:
                result = ("none",)
            elif depth >= self.max_depth:
                result = ("cut",)
            else:
                result = self._successors(node, state, acts, converged, self.futures.pop(fp, None))
        if not self.batching:
            self.reply(("result", node, result))
            return
        self.outgoing.append((node, result))
        if len(self.outgoing) >= RESULTS_BATCH:
            self.send_results()

    def send_results(self) -> None:
        if self.outgoing:
            self.reply(("results", self.outgoing))
            self.outgoing = []

    def _successors(self, node: int, state: Any, acts: list[Any], converged: bool,
                    futures: dict[Hashable, Future] | None) -> tuple[Any, ...]:
        model, reducer = self.model, self.reducer
        ts = [model.successor(state, a) for a in acts]
        order: list[int] = list(range(len(acts)))
        rest: list[int] = []
        fps = [model.fingerprint(t.state) for t in ts]
        #: why this state is expanded fully, as the serial search counts it (summed by the coordinator
        #: over the nodes it merges, each expanded once: the same totals with any number of workers)
        causes: dict[str, int] = {}
        if reducer is not None and len(acts) > 1:
            horizon_of = getattr(reducer, "horizon", None)
            futures = {} if futures is None else futures
            chosen = persistent_subset(reducer, state, acts, ts, self._process_steps, model.fingerprint,
                                       horizon_of(state) if horizon_of is not None else None, causes, futures,
                                       self.cache)
            if chosen is not None and not self._visible(converged, chosen[0], ts, chosen[1]):
                order = chosen[0]
                taken = set(order)
                rest = [i for i in range(len(acts)) if i not in taken]
        if reducer is not None and futures:
            # what each successor inherits if it is new and this worker keeps it ("merged"): from its
            # first step in ``order`` then ``rest``, as the serial search passes them on at discovery
            offered = self.offered.setdefault(node, {})
            for i in (*order, *rest):
                if fps[i] not in offered:
                    passed = inherit(futures, reducer.process(acts[i]), acts[i],
                                     reducer.footprint(state, acts[i], ts[i]))
                    if passed:
                        offered[fps[i]] = passed
        found = self.found.setdefault(node, {})
        # the state kept for a fingerprint is the first one the coordinator meets: in ``order``, then ``rest``
        for i in (*order, *rest):
            if fps[i] not in self.store:
                found.setdefault(fps[i], ts[i].state)
        succs: list[_Succ] = []
        for fp, t in zip(fps, ts, strict=True):
            known = fp in self.store
            s2 = found.get(fp, t.state)
            judged = self.judged.get(fp)
            if judged is None:  # judged once per state and worker (the coordinator uses it only for new ones)
                c = model.is_converged(s2)
                judged = self.judged[fp] = (c, check(self.properties, s2, c))
            c, details = judged
            succs.append((fp, t.findings, c, None if known else details))
        self.labels[node] = [t.label for t in ts]
        return ("expanded", self._numbered(acts), succs, order, rest, tuple(causes.items()))

    def _numbered(self, acts: list[Any]) -> tuple[list[Any], list[tuple[int, Any]] | None]:
        """The actions as numbers, with the actions this worker has not sent before (``None``: the
        actions themselves, for a model whose actions cannot be hashed).

        Why: a model repeats a few actions over and over (the same reconcile from thousands of
        states); pickling each anew, and building each again on the other side, cost the
        coordinator more than merging the expansion."""
        if not self.numbering:
            return acts, None
        numbers = self.numbers
        ids: list[Any] = []
        new: list[tuple[int, Any]] = []
        try:
            for act in acts:
                number = numbers.get(act)
                if number is None:
                    number = numbers[act] = len(numbers)
                    new.append((number, act))
                ids.append(number)
        except TypeError:  # unhashable: sent as themselves; numbers given in this call are taken back
            for _number, act in new:
                del numbers[act]
            return acts, None
        return ids, new

    def _process_steps(self, state: Any, process: object) -> tuple[list[Any], list[Transition[Any]]]:
        assert self.reducer is not None
        # one listing per state: a future's search asks for each member process in turn (checker.py)
        if self._listed[0] is not state:
            self._listed = (state, list(self.model.actions(state)))
        mine = [a for a in self._listed[1] if self.reducer.process(a) == process]
        return mine, [self.model.successor(state, a) for a in mine]

    def _visible(self, state_converged: bool, picked: list[int], ts: list[Transition[Any]],
                 prints: list[Footprint]) -> bool:
        for i in picked:
            if self.model.is_converged(ts[i].state) != state_converged:
                return True
            touched = prints[i].writes | prints[i].marks
            if touched and any(p.observes is None or any(p.observes(tok) for tok in touched) for p in self.always):
                return True
        return False
