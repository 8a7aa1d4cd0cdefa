"""What a search returns: the explored graph plus everything found in it.

Why the graph is kept whole: the caller builds stories from it (shortest path to any node, the
loop of a livelock, a path to each converged state), and the livelock analysis runs over it after
the search. It is stored as parallel lists indexed by node id and edge id rather than as objects
per node, which keeps the explorer's inner loop to list appends; ``Edge`` values are built only
when someone asks for one.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

S = TypeVar("S")
A = TypeVar("A")

Strategy = Literal["bfs", "dfs", "random"]

# Node status codes (a bytearray entry per node).
#: discovered, successors not computed (the search stopped first)
UNEXPANDED = 0
#: every action was taken and every successor recorded
EXPANDED = 1
#: at ``max_depth`` with actions left: successors deliberately not computed
DEPTH_CUT = 2
#: expansion began but a bound stopped it: only some successors are recorded
PARTIAL = 3
#: converged and, because ``expand_converged=False``, not expanded
CONVERGED_LEAF = 4

NO_PARENT = -1


class _Remote:
    """Stands for a state a parallel search's worker holds (``Graph.state`` fetches it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "REMOTE"


REMOTE: Any = _Remote()


@dataclass(frozen=True, slots=True)
class Edge(Generic[A]):
    """One recorded transition from ``src`` to ``dst``.

    ``action_index`` is the edge's position among the recorded edges of ``src``: the index into
    ``actions(src)`` when the state was expanded fully, not when partial-order reduction took a
    subset (``action`` is always the action itself).
    """

    id: int
    src: int
    action_index: int
    action: A
    label: object
    dst: int


@dataclass(frozen=True, slots=True)
class ProcessLoad:
    """What one process of a split search did: why a split is as fast as it is, in figures.

    ``idle``: seconds it waited with nothing to expand (the coordinator: for another worker's
    result). ``moved``: nodes handed to it by another process (their states shipped)."""

    expanded: int
    cpu: float
    idle: float
    moved: int


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress report, given to ``on_progress`` at most about four times a second."""

    states: int
    transitions: int
    depth: int
    elapsed: float


@dataclass(frozen=True, slots=True)
class Stats:
    states: int
    transitions: int
    max_depth_reached: int
    converged: int
    depth_cuts: int
    deadlocks: int
    livelocks: int
    elapsed: float
    states_per_second: float
    #: states expanded through a persistent subset of their actions (partial-order reduction)
    reduced: int = 0
    #: states expanded fully because a step was global (no footprint), by the step's cause, most first
    global_causes: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Livelock(Generic[A]):
    """A closed bottom strongly connected component without a converged state.

    Once the system enters ``nodes`` it can never leave them and never converges. ``entry`` is the
    member closest to an initial state, ``path`` a shortest path to it, ``cycle`` a shortest cycle
    from ``entry`` back to itself (a single edge for a hot self-loop).
    """

    nodes: tuple[int, ...]
    entry: int
    path: tuple[Edge[A], ...]
    cycle: tuple[Edge[A], ...]


@dataclass(frozen=True, slots=True)
class FindingRecord(Generic[A]):
    """The first transition that produced a finding with this key, and how many more did."""

    key: str
    finding: object
    node: int  # the source node of the transition
    edge: Edge[A]
    count: int  # every occurrence, the first included


@dataclass(frozen=True, slots=True)
class Violation:
    """The first state that violated a property, and how many states did."""

    property: str
    kind: str
    node: int
    detail: object
    count: int  # every violating state, the first included


class Graph(Generic[S, A]):
    """The explored state graph. Node ids count from 0 in discovery order; edge ids likewise.

    Read-only once the search returns. Edges leaving node ``n`` are the contiguous id range
    ``out_range(n)``, in the order of ``actions(state)`` (under partial-order reduction: the
    persistent subset first, in that order, then the rest if the state had to be expanded fully).
    """

    __slots__ = (
        "converged_flags",
        "depths",
        "e_action",
        "e_dst",
        "e_label",
        "e_src",
        "fingerprints",
        "first_edge",
        "last_edge",
        "parents",
        "remote",
        "remote_labels",
        "states",
        "status",
    )

    def __init__(self) -> None:
        self.states: list[S] = []
        self.fingerprints: list[str] = []
        # machine integers, not lists of int objects: about 100 bytes less per state (issue #26)
        self.depths: array[int] = array("q")
        self.parents: array[int] = array("q")  # edge id, or NO_PARENT for initial states
        self.first_edge: array[int] = array("q")
        self.last_edge: array[int] = array("q")  # exclusive
        self.status = bytearray()
        self.converged_flags = bytearray()
        self.e_src: array[int] = array("q")
        self.e_action: list[A] = []
        self.e_label: list[object] = []
        self.e_dst: array[int] = array("q")
        #: a parallel search keeps states in its worker processes: ``states`` holds ``REMOTE`` for
        #: those, and this fetches them on first use (``None``: every state is here)
        self.remote: Callable[[Sequence[int]], Sequence[S]] | None = None
        #: likewise for edge labels (``e_label`` holds ``REMOTE``), by edge id
        self.remote_labels: Callable[[Sequence[int]], Sequence[object]] | None = None

    def __repr__(self) -> str:
        return f"Graph(states={len(self.states)}, edges={len(self.e_src)})"

    @property
    def num_states(self) -> int:
        return len(self.states)

    @property
    def num_edges(self) -> int:
        return len(self.e_src)

    def state(self, node: int) -> S:
        found = self.states[node]
        if found is REMOTE:
            self.prefetch((node,))
            found = self.states[node]
        return found

    def prefetch(self, nodes: Iterable[int]) -> None:
        """Bring the states of ``nodes`` here in one round trip (a parallel search's workers hold them)."""
        _fetch_into(self.states, nodes, self.remote, "states")

    def iter_states(self, nodes: Iterable[int], chunk: int = 256) -> Iterator[S]:
        """The states of ``nodes`` in order, those let go of fetched ``chunk`` at a time and not kept:
        a scan over thousands of states (the vacuity scan) must not hold them all again."""
        batch: list[int] = []
        for node in nodes:
            batch.append(node)
            if len(batch) >= chunk:
                yield from self._unkept(batch)
                batch = []
        yield from self._unkept(batch)

    def _unkept(self, nodes: list[int]) -> list[S]:
        missing = [n for n in nodes if self.states[n] is REMOTE]
        if not missing:
            return [self.states[n] for n in nodes]
        if self.remote is None:
            _fetch_into(self.states, missing, None, "states")  # raises: nothing can bring them back
        assert self.remote is not None
        fetched = dict(zip(missing, self.remote(missing), strict=True))
        return [fetched[n] if n in fetched else self.states[n] for n in nodes]

    def label(self, edge_id: int) -> object:
        found = self.e_label[edge_id]
        if found is REMOTE:
            self.prefetch_labels((edge_id,))
            found = self.e_label[edge_id]
        return found

    def prefetch_labels(self, edge_ids: Iterable[int]) -> None:
        _fetch_into(self.e_label, edge_ids, self.remote_labels, "steps")

    def prefetch_paths(self, nodes: Iterable[int]) -> None:
        """Bring the labels of the parent paths of ``nodes`` here in one batch (their shared prefixes
        derived once): for many paths at once, e.g. every converged state's."""
        parents, e_src = self.parents, self.e_src
        ids: set[int] = set()
        for node in nodes:
            e = parents[node]
            while e != NO_PARENT and e not in ids:
                ids.add(e)
                e = parents[e_src[e]]
        self.prefetch_labels(ids)

    def fingerprint(self, node: int) -> str:
        return self.fingerprints[node]

    def depth(self, node: int) -> int:
        """Length of the recorded parent path (the shortest path after a complete search)."""
        return self.depths[node]

    def is_converged(self, node: int) -> bool:
        return bool(self.converged_flags[node])

    def is_expanded(self, node: int) -> bool:
        """True when every successor of the node is recorded (so its out-edges are the whole truth)."""
        return self.status[node] == EXPANDED

    def node_status(self, node: int) -> int:
        return self.status[node]

    def edge(self, edge_id: int) -> Edge[A]:
        return Edge(
            edge_id,
            self.e_src[edge_id],
            edge_id - self.first_edge[self.e_src[edge_id]],
            self.e_action[edge_id],
            self.label(edge_id),
            self.e_dst[edge_id],
        )

    def out_range(self, node: int) -> range:
        return range(self.first_edge[node], self.last_edge[node])

    def out_edges(self, node: int) -> list[Edge[A]]:
        return [self.edge(e) for e in self.out_range(node)]

    def parent_edge(self, node: int) -> Edge[A] | None:
        e = self.parents[node]
        return None if e == NO_PARENT else self.edge(e)

    def path_to(self, node: int) -> list[Edge[A]]:
        """The parent path from an initial state to ``node`` (empty for an initial state)."""
        ids: list[int] = []
        parents, e_src = self.parents, self.e_src
        e = parents[node]
        while e != NO_PARENT:
            ids.append(e)
            e = parents[e_src[e]]
        ids.reverse()
        self.prefetch_labels(ids)
        return [self.edge(i) for i in ids]

    def initial_of(self, node: int) -> int:
        """The initial node the parent path of ``node`` starts from."""
        parents, e_src = self.parents, self.e_src
        while parents[node] != NO_PARENT:
            node = e_src[parents[node]]
        return node


def _fetch_into(column: list[Any], ids: Iterable[int], remote: Callable[[Sequence[int]], Sequence[Any]] | None,
                what: str) -> None:
    missing = sorted({i for i in ids if column[i] is REMOTE})
    if missing:
        if remote is None:
            raise RuntimeError(f"the search's {what} were let go of (its worker processes, or the model that "
                               "derived them again, are gone): they can no longer be read")
        for i, value in zip(missing, remote(missing), strict=True):
            column[i] = value


@dataclass(frozen=True, slots=True)
class SearchResult(Generic[S, A]):
    """Everything a search found. ``complete`` is False when a bound or ``stop_on_first`` ended the
    search early; ``bound_hit`` then says which, and everything found so far is still reported."""

    graph: Graph[S, A]
    strategy: Strategy
    complete: bool
    bound_hit: str | None
    #: node ids of the initial states, in ``initial_states()`` order, duplicates removed
    initial: tuple[int, ...]
    #: distinct converged states, in discovery order
    converged: tuple[int, ...]
    #: not converged at ``max_depth`` with actions left
    depth_cuts: tuple[int, ...]
    #: not converged and no action enabled
    deadlocks: tuple[int, ...]
    livelocks: tuple[Livelock[A], ...]
    findings: tuple[FindingRecord[A], ...]
    violations: tuple[Violation, ...]
    #: index of each initial node in ``initial_states()`` (for ``replay``)
    initial_index: dict[int, int]
    stats: Stats
    #: what each worker process of a parallel search reported at its end (``worker_report``)
    worker_reports: tuple[object, ...] = ()
    #: per process of a parallel search (the coordinator first), what it did
    processes: tuple[ProcessLoad, ...] = ()
    #: ends a parallel search's worker processes (``close``)
    closer: Callable[[], None] | None = None

    def path_to(self, node: int) -> list[Edge[A]]:
        return self.graph.path_to(node)

    def state(self, node: int) -> S:
        return self.graph.state(node)

    def close(self) -> None:
        """Let go of a parallel search's worker processes (states not fetched by then are gone)."""
        closer = self.closer
        if closer is not None:
            closer()

    def initial_index_of(self, node: int) -> int:
        """The position in ``initial_states()`` of the state the parent path of ``node`` starts from."""
        return self.initial_index[self.graph.initial_of(node)]
