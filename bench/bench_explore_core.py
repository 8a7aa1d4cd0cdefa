"""Throughput of the explorer core on trivial models (run: python bench/bench_explore_core.py [N]).

Reports CPU time (best of three) so that other load on the machine distorts the figure less.
The figures in docs/explorer.md come from this script.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kamera_cli.explore import Model, Transition, search


class Counter:
    def __init__(self, n: int) -> None:
        self.n = n

    def initial_states(self) -> Sequence[int]:
        return (0,)

    def actions(self, state: int) -> Sequence[str]:
        return ("inc",) if state < self.n else ()

    def successor(self, state: int, action: str) -> Transition[int]:
        return Transition(state + 1)

    def fingerprint(self, state: int) -> str:
        return str(state)

    def is_converged(self, state: int) -> bool:
        return state == self.n


class Torus:
    """Two wrapping counters: two actions per state, one strongly connected component."""

    def __init__(self, n: int) -> None:
        self.n = n

    def initial_states(self) -> Sequence[tuple[int, int]]:
        return ((0, 0),)

    def actions(self, state: tuple[int, int]) -> Sequence[str]:
        return ("x", "y")

    def successor(self, state: tuple[int, int], action: str) -> Transition[tuple[int, int]]:
        x, y = state
        return Transition(((x + 1) % self.n, y) if action == "x" else (x, (y + 1) % self.n))

    def fingerprint(self, state: tuple[int, int]) -> str:
        return f"{state[0]},{state[1]}"

    def is_converged(self, state: tuple[int, int]) -> bool:
        return False


def model_calls_only(m: Counter) -> float:
    t = time.process_time()
    s = 0
    while True:
        acts = m.actions(s)
        if not acts:
            break
        for a in acts:
            tr = m.successor(s, a)
            m.fingerprint(tr.state)
            m.is_converged(tr.state)
        s = tr.state
    return time.process_time() - t


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    models: list[tuple[str, Model[object, str]]] = [
        ("counter", Counter(n)),  # type: ignore[list-item]
        ("torus", Torus(int((n / 2) ** 0.5))),  # type: ignore[list-item]
    ]
    for name, model in models:
        for strategy in ("bfs", "dfs"):
            best = None
            for _ in range(3):
                t = time.process_time()
                r = search(model, strategy=strategy, max_depth=10**9, max_states=10**9)
                cpu = time.process_time() - t
                if best is None or cpu < best[0]:
                    best = (cpu, r.stats.states, r.stats.transitions, len(r.livelocks))
            assert best is not None
            cpu, states, transitions, livelocks = best
            print(
                f"{name:8} {strategy}: {states:,} states, {transitions:,} transitions, {cpu:.2f}s CPU, "
                f"{states / cpu:,.0f} states/s, {transitions / cpu:,.0f} transitions/s, livelocks={livelocks}"
            )
    alone = min(model_calls_only(Counter(n)) for _ in range(3))
    print(f"counter model calls alone: {n / alone:,.0f} states/s")


if __name__ == "__main__":
    main()
