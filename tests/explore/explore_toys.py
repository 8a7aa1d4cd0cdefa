"""Tiny abstract models for the explorer's tests (nothing Kubernetes here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kamera_cli.explore import Transition


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
