"""Tiny abstract models for the explorer's tests (nothing Kubernetes here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.explore import Footprint, Transition


class Counter:
    """0 → 1 → … → n; converged at n."""

    def __init__(self, n: int) -> None:
        self.n = n

    def initial_states(self) -> Sequence[int]:
        return (0,)

    def actions(self, state: int) -> Sequence[str]:
        return ("inc",) if state < self.n else ()

    def successor(self, state: int, action: str) -> Transition[int]:
        return Transition(state + 1, label=f"inc to {state + 1}")

    def fingerprint(self, state: int) -> str:
        return f"c{state}"

    def is_converged(self, state: int) -> bool:
        return state == self.n


@dataclass(frozen=True)
class Finding:
    key: str
    detail: str = ""


@dataclass
class GraphModel:
    """A graph given as a list of edges; actions of a node are its out-edges in list order.

    ``findings`` maps an edge position in ``edges`` to the findings its transition reports.
    """

    edges: Sequence[tuple[int, int]]
    initial: Sequence[int] = (0,)
    converged: Iterable[int] = ()
    findings: Mapping[int, tuple[object, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.out: dict[int, list[int]] = {}
        for pos, (s, _d) in enumerate(self.edges):
            self.out.setdefault(s, []).append(pos)
        self.converged_set = frozenset(self.converged)

    def initial_states(self) -> Sequence[int]:
        return tuple(self.initial)

    def actions(self, state: int) -> Sequence[int]:
        return self.out.get(state, [])

    def successor(self, state: int, action: int) -> Transition[int]:
        s, d = self.edges[action]
        assert s == state
        return Transition(d, label=f"{s}->{d}", findings=tuple(self.findings.get(action, ())))

    def fingerprint(self, state: int) -> str:
        return f"n{state}"

    def is_converged(self, state: int) -> bool:
        return state in self.converged_set


def node_of(result: object, state: int) -> int:
    """The node id of a graph model's state in a search result."""
    graph = result.graph  # type: ignore[attr-defined]
    return int(graph.fingerprints.index(f"n{state}"))


@dataclass(frozen=True)
class Worker:
    """One process of ``Workers``: reads ``reads``, then writes ``target`` (one of ``choices``) when
    the value differs, waking every worker that watches the target."""

    reads: tuple[int, ...]
    target: int
    #: value written as a function of the values read: (sum(read values) + offset) % domain, one per choice
    offsets: tuple[int, ...]
    #: report a finding when writing this value (-1: never)
    alarm: int = -1


@dataclass
class Workers:
    """A kamera-shaped toy: shared variables, a set of pending workers, watch wiring.

    A state is (variables, pending workers). A worker's step consumes its pending entry; a write
    that changes a variable wakes its watchers. Converged: nothing pending. Implements ``Reducible``
    with exact footprints, so partial-order reduction can be compared with the full search.
    """

    workers: Sequence[Worker]
    initial_vars: tuple[int, ...]
    watchers: Mapping[int, tuple[int, ...]]
    domain: int = 3

    def initial_states(self) -> Sequence[tuple[tuple[int, ...], frozenset[int]]]:
        return ((self.initial_vars, frozenset(range(len(self.workers)))),)

    def actions(self, state: tuple[tuple[int, ...], frozenset[int]]) -> Sequence[tuple[int, int]]:
        return [(w, c) for w in sorted(state[1]) for c in range(len(self.workers[w].offsets))]

    def successor(self, state: tuple[tuple[int, ...], frozenset[int]],
                  action: tuple[int, int]) -> Transition[tuple[tuple[int, ...], frozenset[int]]]:
        from kamera_cli.explore import Footprint

        values, pending = state
        w, c = action
        worker = self.workers[w]
        value = (sum(values[r] for r in worker.reads) + worker.offsets[c]) % self.domain
        woken: frozenset[int] = frozenset()
        writes: frozenset[object] = frozenset()
        findings: tuple[object, ...] = ()
        new_values = values
        if values[worker.target] != value:
            new_values = (*values[:worker.target], value, *values[worker.target + 1:])
            woken = frozenset(self.watchers.get(worker.target, ()))
            writes = frozenset({("var", worker.target)})
            if value == worker.alarm:
                findings = (Finding(f"alarm-{w}"),)
        new_pending = (pending - {w}) | woken
        footprint = Footprint(w, frozenset(("var", r) for r in (*worker.reads, worker.target)), writes,
                              frozenset(), woken)
        return Transition((new_values, new_pending), label=f"w{w}/{c}", findings=findings, footprint=footprint)

    def fingerprint(self, state: tuple[tuple[int, ...], frozenset[int]]) -> str:
        return f"{state[0]}|{sorted(state[1])}"

    def is_converged(self, state: tuple[tuple[int, ...], frozenset[int]]) -> bool:
        return not state[1]

    def process(self, action: tuple[int, int]) -> int:
        return action[0]

    def footprint(self, state: object, action: object, transition: Transition[object]) -> object:
        return transition.footprint


@dataclass
class UnitWorkers(Workers):
    """``Workers`` whose workers are grouped into reduction units (``unit``), as kamera groups the
    requests of one owned tree. Which unit a worker is in must never change what is found."""

    units: tuple[int, ...] = ()

    def unit(self, state: object, process: int) -> object:
        return ("unit", self.units[process]) if process < len(self.units) else process


@dataclass
class KeyedWorkers(UnitWorkers):
    """``UnitWorkers`` that say what a group's future depends on (``group_key``): whether each of its
    workers is pending and the values of the variables it reads, so futures are reused between
    states (``reduction.FutureCache``). ``blind``: variables the key leaves out (a wrong key, to
    show the differential tests can fail)."""

    blind: frozenset[int] = frozenset()

    def group_key(self, state: tuple[tuple[int, ...], frozenset[int]], processes: frozenset[object],
                  footprint: Footprint) -> str | None:
        values, pending = state
        mine = sorted(p for p in processes if isinstance(p, int))
        read = sorted(t[1] for t in footprint.reads if isinstance(t, tuple) and t[1] not in self.blind)
        return f"{[(p, p in pending) for p in mine]}|{[(v, values[v]) for v in read]}"


@dataclass
class ClockedWorkers(UnitWorkers):
    """``UnitWorkers`` with a clock: every step moves it by one, and a worker with a deadline writes
    one more once the clock has reached it. Such a step reports the window kamera's built-ins report:
    for how many later instants its outcome stays the same (a step with less than 2 is global).
    The clock is in the fingerprint, so the full search is the exact reference."""

    deadlines: tuple[int, ...] = ()

    def initial_states(self) -> Sequence[Any]:
        return tuple((*s, 0) for s in super().initial_states())

    def actions(self, state: Any) -> Sequence[tuple[int, int]]:
        return super().actions(state[:2])

    def successor(self, state: Any, action: tuple[int, int]) -> Transition[Any]:
        values, pending, clock = state
        w = action[0]
        deadline = self.deadlines[w] if w < len(self.deadlines) else -1
        late = 0 <= deadline <= clock
        shifted = UnitWorkers(self.workers, self.initial_vars, self.watchers, self.domain, self.units)
        if late:
            worker = self.workers[w]
            shifted.workers = [*self.workers[:w], Worker(worker.reads, worker.target,
                                                         tuple(o + 1 for o in worker.offsets), worker.alarm),
                               *self.workers[w + 1:]]
        t = shifted.successor((values, pending), action)
        fp = t.footprint
        if fp is not None and deadline >= 0:
            window = deadline - clock - 1 if clock < deadline else 1 << 20
            fp = None if window < 2 else Footprint(fp.process, fp.reads, fp.writes, fp.marks, fp.wakes, window)
        return Transition((*t.state, clock + 1), t.label, t.findings, fp, "" if fp is not None else "deadline")

    def fingerprint(self, state: Any) -> str:
        return f"{super().fingerprint(state[:2])}@{state[2]}"

    def is_converged(self, state: Any) -> bool:
        return super().is_converged(state[:2])

    def group_key(self, state: Any, processes: frozenset[object], footprint: Footprint) -> str | None:
        values, pending, clock = state
        mine = sorted(p for p in processes if isinstance(p, int))
        read = sorted(t[1] for t in footprint.reads if isinstance(t, tuple))
        return f"{[(p, p in pending) for p in mine]}|{[(v, values[v]) for v in read]}@{clock}"


@dataclass
class TimerWorkers(KeyedWorkers):
    """``KeyedWorkers`` with a clock (one second a step) and a timer: while variable ``timer`` is
    set, the fingerprint holds how far instant ``due`` is (0 once it has passed), as kamera's holds
    a waiting request's delay. No step reads the clock, so the fingerprint is only finer than it
    must be; but where the timer is set, states a group reaches after different numbers of steps
    differ, and where it is not, they are one. The key of a group that does not read the timer
    leaves it out, so without ``group_fingerprint`` a kept future's graph can be another one than a
    search at the state gives (``TimerGroups``)."""

    timer: int = 0
    due: int = 10

    def initial_states(self) -> Sequence[Any]:
        return tuple((*s, 0) for s in super().initial_states())

    def actions(self, state: Any) -> Sequence[tuple[int, int]]:
        return super().actions(state[:2])

    def successor(self, state: Any, action: tuple[int, int]) -> Transition[Any]:
        t = super().successor(state[:2], action)
        return Transition((*t.state, state[2] + 1), t.label, t.findings, t.footprint)

    def fingerprint(self, state: Any) -> str:
        return super().fingerprint(state[:2]) + self._waiting(state)

    def _waiting(self, state: Any) -> str:
        return f"@{max(0, self.due - state[2])}" if state[0][self.timer] else ""

    def is_converged(self, state: Any) -> bool:
        return super().is_converged(state[:2])

    def group_key(self, state: Any, processes: frozenset[object], footprint: Footprint) -> str | None:
        return super().group_key(state[:2], processes, footprint)


@dataclass
class TimerGroups(TimerWorkers):
    """``TimerWorkers`` that say how a state of a group's own search is one node of it
    (``group_fingerprint``): by the variables and the group's pending workers (no step reads the
    clock, so the timer's delay shows nothing the group does or sees)."""

    def group_fingerprint(self, state: Any, group: frozenset[object]) -> str:
        values, pending, _clock = state
        return f"{values}|{sorted(p for p in pending if p in group)}"
