"""Benchmark: scenarios shaped like real operators (issue #26), states, seconds and memory per state.

Run: python bench/bench_operators.py [--only NAME] [--reduction persistent|none|both] [--memory]

Families: ``operator_families.py`` (its docstring says what each is), each built into a temporary
folder; ``--only NAME`` picks one.
Figures vary with machine load (the benchmark machine is shared): state counts are the comparison
that does not. ``--memory`` traces the Python heap (tracemalloc, several times slower) and prints
the peak divided by the states.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubernetes.client  # noqa: E402,F401  (import once, outside the timings)
from operator_families import (  # noqa: E402  (the builders, importable from here as before)
    FAMILIES,
    KINDS,
    KOPF_CREATE_TIMER,
    kopf_timer,
    kopf_widgets,
    owned_children,
    owned_requests,
    webapps,
)

from kamera_cli.model.scenario import Scenario  # noqa: E402
from kamera_cli.runner import Exploration, explore, outcome_key  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402

__all__ = ["FAMILIES", "KINDS", "KOPF_CREATE_TIMER", "kopf_timer", "kopf_widgets", "main", "outcomes", "owned_children",
           "owned_requests", "run", "webapps"]


def run(scenario: Scenario, reduction: str, memory: bool) -> tuple[Exploration, float, float]:
    chosen = replace(scenario, explore=replace(scenario.explore, reduction=reduction))  # type: ignore[arg-type]
    gc.collect()
    if memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    exploration = explore(chosen)
    seconds = time.perf_counter() - t0
    peak = 0.0
    if memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return exploration, seconds, peak


def outcomes(exploration: Exploration) -> set[str]:
    search = exploration.search
    return {outcome_key(search.state(n).snapshot) for n in search.converged}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", choices=sorted(FAMILIES), help="run only these families")
    parser.add_argument("--reduction", choices=["persistent", "none", "both"], default="persistent")
    parser.add_argument("--memory", action="store_true", help="trace the heap (slower): bytes per state")
    parser.add_argument("--timeout", type=int, default=0, help="override each family's search timeout (s)")
    args = parser.parse_args()
    reductions = ["none", "persistent"] if args.reduction == "both" else [args.reduction]
    print(f"{'family':20} {'reduction':11} {'states':>10} {'seconds':>8} {'B/state':>8}  verdict  (complete)  "
          "states expanded fully, by cause")
    for name in args.only or list(FAMILIES):
        build, a, b = FAMILIES[name]
        with tempfile.TemporaryDirectory() as tmp:
            scenario = load_scenario(build(Path(tmp), a, b))
            if args.timeout:
                scenario = replace(scenario, explore=replace(scenario.explore, timeout_seconds=args.timeout))
            seen: list[set[str]] = []
            for reduction in reductions:
                exploration, seconds, peak = run(scenario, reduction, args.memory)
                stats = exploration.result.stats
                per_state = f"{peak / max(stats.states, 1):8.0f}" if args.memory else f"{'-':>8}"
                why = ", ".join(f"{cause}: {n}" for cause, n in exploration.search.stats.global_causes)
                print(f"{name:20} {reduction:11} {stats.states:>10,} {seconds:>8.2f} {per_state}  "
                      f"{exploration.result.verdict.value}  ({exploration.search.complete})  {why}", flush=True)
                if exploration.search.complete:
                    seen.append(outcomes(exploration))
                else:  # a cut run's figures are not the family's: never let one pass for a whole search
                    cut = exploration.search.bound_hit or "its timeout"
                    print(f"{'':20} ^ CUT by {cut}: these states and seconds are a lower bound, not the family's",
                          flush=True)
            if len(seen) == 2:
                assert seen[0] == seen[1], f"{name}: the reduction changed the converged outcomes"
            elif len(reductions) == 2:
                print(f"{'':20} ^ the two reductions were not compared: a run was cut", flush=True)


if __name__ == "__main__":
    main()
