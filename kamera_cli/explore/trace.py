"""Re-running a recorded path, to catch a model that is not a function of its state.

Why: every story kamera prints is a path through the graph. If replaying the path's actions from
its initial state does not reach the recorded fingerprints, the model (usually a user's controller
reading the clock, randomness or a module-level cache) is non-deterministic, and the story would
be a lie. The caller replays before reporting and says so when the path diverges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from kamera_cli.explore.model import ExploreError, Model, Transition
from kamera_cli.explore.result import SearchResult

S = TypeVar("S")
A = TypeVar("A")


def replay(model: Model[S, A], initial_index: int, actions: Sequence[A]) -> list[Transition[S]]:
    """Take ``actions`` one after another from ``initial_states()[initial_index]``."""
    initial = model.initial_states()
    if not 0 <= initial_index < len(initial):
        raise ExploreError(f"initial state {initial_index} does not exist (the model has {len(initial)})")
    state = initial[initial_index]
    out: list[Transition[S]] = []
    for a in actions:
        t = model.successor(state, a)
        out.append(t)
        state = t.state
    return out


def first_divergence(model: Model[S, A], result: SearchResult[S, A], node: int) -> int | None:
    """Replay the recorded path to ``node``; ``None`` when it reproduces every recorded fingerprint.

    Otherwise the position of the first state that differs along the path: 0 is the initial state,
    ``k`` the state after the path's k-th step.
    """
    graph = result.graph
    path = graph.path_to(node)
    start = graph.initial_of(node)
    i0 = result.initial_index[start]
    initial = model.initial_states()
    if i0 >= len(initial) or model.fingerprint(initial[i0]) != graph.fingerprint(start):
        return 0
    transitions = replay(model, i0, [e.action for e in path])
    for k, (edge, t) in enumerate(zip(path, transitions), start=1):
        if model.fingerprint(t.state) != graph.fingerprint(edge.dst):
            return k
    return None
