"""A program's threads as a trace: the one order of its segments that stands for every equivalent order.

Why: kamera runs a program's thread alone between two scheduling points, so a program's run is a
sequence of **segments** (``adapters/program/trace.py``), each one thread's stretch with the inputs it
consumed and the synchronisation objects it touched. Two segments of different threads that touch no
common object commute: under the assumption kamera already makes — threads share mutable Python
objects only under the primitives it intercepts — swapping them changes neither what each computes
nor the state they leave (the classic argument for data-race-free programs, Mazurkiewicz traces).
So the logs of two runs that differ by such swaps are one trace, and the trace's **normal form**
(the lexicographically least order: repeatedly the segment of the least thread label among those
whose dependent predecessors are all placed) is a position that names the program's state at least
as precisely as the log did (docs/semantics.md, "Thread interleavings: a position as a trace").
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import Protocol, TypeVar

__all__ = ["SCHEDULING", "normal_form", "thread_process", "thread_tokens"]

#: tests and benchmarks turn it off to compare: a program's steps are then one process, as before
THREADS = True

#: log entries that say who ran, not what a thread consumed (the trace's order replaces them)
SCHEDULING = frozenset({"run", "yield", "pick"})


class _Entry(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def body(self) -> bytes: ...


class _Segment(Protocol):
    @property
    def thread(self) -> str: ...

    @property
    def end(self) -> int: ...

    @property
    def sync(self) -> frozenset[str]: ...


class _StepTrace(Protocol):
    @property
    def segments(self) -> Sequence[_Segment]: ...

    @property
    def untraced(self) -> str: ...


E = TypeVar("E", bound=_Entry)


def thread_process(controller: str, namespace: str, name: str, thread: str) -> tuple[str, ...]:
    """The reduction's process of a program's step that the explorer chose for ``thread`` (a pick)."""
    return ("thread", controller, namespace, name, thread)


def thread_tokens(program: Hashable, trace: _StepTrace,
                  traced: bool) -> tuple[frozenset[Hashable], frozenset[Hashable]]:
    """What a program's step reads and writes of the program itself, for the reduction: each thread
    that ran a segment in it and each synchronisation object a segment touched (both read and
    written), and the **program token** — read by every step, written by one after which the log is
    not a trace (``traced`` False: its order counts as it is, so no other step of the program may be
    moved past it). Two steps of one program are then independent exactly when no thread ran in both,
    they touched no common object and the log stays a trace: the segments of one commute with the
    other's (docs/semantics.md, "Threads as processes")."""
    token = ("program", program)
    touched: set[Hashable] = set()
    for seg in trace.segments:
        touched.add(("run", program, seg.thread))
        touched.update(("sync", program, key) for key in seg.sync)
    writes = touched if traced else touched | {token}
    return frozenset(touched | {token}), frozenset(writes)


def _consumed(entry: _Entry) -> bool:
    """Whether an entry is something a thread consumed: not scheduling, not an event that turned out
    empty (the woken thread was handed nothing and waits on)."""
    return entry.kind not in SCHEDULING and not (entry.kind == "event" and not entry.body)


def normal_form(steps: Sequence[tuple[Sequence[E], _StepTrace | None]]) -> list[tuple[str, list[E]]] | None:
    """The log's segments (thread label, consumed entries) in the trace's normal form; None when the
    log's order must count as it is: one thread only (nothing to reorder), a step without a trace,
    a step whose trace says the threads shared a library's lock, or an input outside every segment."""
    segments: list[tuple[str, list[E], frozenset[str]]] = []
    for entries, trace in steps:
        if trace is None or trace.untraced:
            return None
        start = 0
        for seg in trace.segments:
            segments.append((seg.thread, [e for e in entries[start:seg.end] if _consumed(e)], seg.sync))
            start = seg.end
        if any(_consumed(e) for e in entries[start:]):
            return None
    if len({thread for thread, _e, _s in segments}) < 2:
        return None
    # a segment depends on its thread's previous one and on the last earlier toucher of each object it
    # touches: every toucher of one object is a chain, so these edges order all dependent pairs
    successors: list[list[int]] = [[] for _ in segments]
    waiting = [0] * len(segments)
    last: dict[str, int] = {}
    for j, (thread, _entries, sync) in enumerate(segments):
        before = {last[key] for key in ("\x00" + thread, *sync) if key in last}
        for i in before:
            successors[i].append(j)
        waiting[j] = len(before)
        for key in ("\x00" + thread, *sync):
            last[key] = j
    ready = [(segments[j][0], j) for j in range(len(segments)) if not waiting[j]]
    heapq.heapify(ready)
    out: list[tuple[str, list[E]]] = []
    while ready:
        _thread, i = heapq.heappop(ready)
        out.append((segments[i][0], segments[i][1]))
        for j in successors[i]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (segments[j][0], j))
    return out
