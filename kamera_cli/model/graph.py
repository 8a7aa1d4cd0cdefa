"""The explored state graph as a reporter sees it: bounded, self-describing, with shared object versions.

Why a separate, bounded copy of the search graph: a picture of the state space (the HTML report, an
inspector) is the best way to see where executions split and which loop never ends, but the
explorer's graph may hold 10^6 states whose snapshots live only in the worker process.  The runner
therefore copies at most ``limit`` states into these frozen values — counterexample paths and
converged outcomes first, then the rest in discovery (breadth-first) order — and says exactly what
it left out.  States share object versions (a step changes one or two objects), so each distinct
manifest is stored once in ``StateGraph.objects`` and states list the keys of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from kamera_cli.model.objects import Manifest

#: how many states a recorded graph keeps unless told otherwise (``kamera check --graph-states``)
DEFAULT_GRAPH_STATES = 2000

#: why a state is interesting (``GraphState.tags``), in the order reporters list them
STATE_TAGS = (
    "initial",  # a state the search started from
    "converged",  # no work pending
    "outcome",  # the state a ``ConvergedState`` of the result was taken from (a distinct outcome)
    "livelock",  # a member of a livelock: execution can never leave these states and never converges
    "depth-cut",  # not converged at maxDepth with work left
    "deadlock",  # not converged and nothing can run
    "violation",  # the first state found violating an invariant
    "error",  # a step leaving this state raised (a controller error) or failed (an action)
    "unexpanded",  # the search stopped before computing its successors (a bound was hit)
)


@dataclass(frozen=True, slots=True)
class GraphState:
    """One explored state. ``id`` is the search's node id (discovery order, from 0)."""

    id: int
    depth: int
    #: the search's fingerprint of the state (cluster content plus pending work and bookkeeping)
    fingerprint: str
    #: keys into ``StateGraph.objects``, one per object of the cluster, in the cluster's object order
    objects: tuple[str, ...] = ()
    #: a subset of ``STATE_TAGS``, in that order
    tags: tuple[str, ...] = ()
    #: index into ``ScenarioResult.converged`` when this state is that outcome; -1 otherwise
    outcome: int = -1
    #: work still pending in this state ("widget default/demo", "garbage-collector"), for the viewer
    pending: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One transition between two recorded states: the step's identity without its diff.

    Why no diff: the viewer derives it from the two states' objects, which the graph already holds.
    """

    src: int
    dst: int
    kind: str
    actor: str
    request: str = ""
    note: str = ""
    #: ``Write.describe()`` of each write the step made, in order
    writes: tuple[str, ...] = ()
    #: the step raised (a controller error) or failed (an action)
    error: bool = False


@dataclass(frozen=True, slots=True)
class StateGraph:
    """A bounded copy of the explored graph (see the module docstring for what is kept)."""

    states: tuple[GraphState, ...]
    edges: tuple[GraphEdge, ...]
    #: (key, manifest) for every object version some recorded state holds, sorted by key
    objects: tuple[tuple[str, Manifest], ...] = ()
    #: states and transitions the search explored in all (recorded or not)
    total_states: int = 0
    total_edges: int = 0
    #: how many explored states there are at each depth (index = depth), recorded or not
    depth_counts: tuple[int, ...] = ()
    #: the most states this graph was allowed to keep
    limit: int = DEFAULT_GRAPH_STATES
    #: what was left out and why, in one sentence; "" when the graph is complete
    omitted: str = ""

    @property
    def complete(self) -> bool:
        return len(self.states) == self.total_states and len(self.edges) == self.total_edges
