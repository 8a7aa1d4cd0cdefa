"""Benchmark: exploration throughput, memoization, and the price of perturbations.

Run: python bench/bench_explore.py [--quick]

Prints, for every example scenario under scenarios/:
  - explored states, transitions, reconcile executions, memo hit rate, states/s (memo on);
  - the same search with memoization off (executions and time), and the size of the
    full-interleaving baseline: the number of nodes a search without deduplication would visit
    up to maxDepth (computed exactly from the explored graph, which is what such a search unfolds);
then a scaling series (the quickstart controller with 1..N widgets), and for every perturbation
example its state count and time with and without its perturbation.
Figures vary with machine load; the ratios are the point.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubernetes.client  # noqa: E402,F401  (import once, outside the timings)

from kamera_cli.model.scenario import Perturbations, Scenario  # noqa: E402
from kamera_cli.runner import Exploration, explore  # noqa: E402
from kamera_cli.scenario import discover, load_scenario  # noqa: E402


def tree_size(exploration: Exploration, max_depth: int, cap: int = 10**12) -> int:
    """Nodes of the unfolded search tree (no deduplication) up to max_depth, by dynamic programming."""
    graph = exploration.search.graph
    n = graph.num_states
    memo: list[dict[int, int]] = [dict() for _ in range(n)]

    def size(node: int, depth: int) -> int:
        # iterative would be nicer; depths here are small
        if depth == 0:
            return 1
        hit = memo[node].get(depth)
        if hit is not None:
            return hit
        total = 1
        for e in graph.out_range(node):
            total += size(graph.e_dst[e], depth - 1)
            if total > cap:
                total = cap
                break
        memo[node][depth] = total
        return total

    sys.setrecursionlimit(max(10000, max_depth * 10 + 1000))
    return sum(size(i, max_depth) for i in exploration.search.initial)


def run(scenario: Scenario, memoize: bool) -> tuple[Exploration, float]:
    s = replace(scenario, explore=replace(scenario.explore, memoize=memoize))
    start = time.perf_counter()
    ex = explore(s)
    return ex, time.perf_counter() - start


def fmt(n: float) -> str:
    return f"{n:,.0f}" if n >= 100 else f"{n:.1f}"


def examples(quick: bool) -> None:
    print("== example scenarios (memo on vs off; baseline = unfolded tree without dedup, up to maxDepth)")
    print(f"{'scenario':44} {'states':>7} {'trans':>7} {'execs':>6} {'memo':>6} {'st/s':>7} "
          f"{'execs(off)':>10} {'time on':>8} {'time off':>8} {'tree baseline':>14}")
    for path in discover([ROOT / "scenarios"]):
        scenario = load_scenario(path)
        on, t_on = run(scenario, True)
        off, t_off = (on, t_on) if quick else run(scenario, False)
        st = on.result.stats
        tree = tree_size(on, scenario.explore.max_depth)
        tree_text = f"{tree:,}" if tree < 10**12 else ">1e12"
        print(f"{scenario.name:44} {st.states:>7} {st.transitions:>7} {st.reconciles:>6} "
              f"{st.memo_hit_rate:>6.0%} {fmt(st.states / st.elapsed_seconds):>7} "
              f"{off.result.stats.reconciles:>10} {t_on:>7.2f}s {t_off:>7.2f}s {tree_text:>14}")


def scaling(max_widgets: int) -> None:
    print("\n== scaling: quickstart controller with N widgets (memo on)")
    print("   objects = states x objects per state; versions = distinct stored object versions (shared")
    print("   between states); memory = traced peak during the search, per state")
    base = load_scenario(ROOT / "scenarios" / "quickstart" / "scenario.yaml")
    print(f"{'N':>3} {'states':>8} {'trans':>8} {'execs':>6} {'memo':>6} {'search s':>9} {'states/s':>9} "
          f"{'trans/s':>9} {'objects':>9} {'versions':>9} {'KiB/state':>9}")
    for n in range(1, max_widgets + 1):
        seed = tuple({"apiVersion": "example.com/v1", "kind": "Widget",
                      "metadata": {"name": f"w{i}", "namespace": "default"}, "spec": {"message": f"m{i}"}}
                     for i in range(n))
        scenario = replace(base, seed=seed, invariants=())
        explore(replace(scenario, seed=seed[:1]))  # load the controller once, outside the measurement
        ex = explore(scenario)  # timed run
        tracemalloc.start()  # a second run for memory: tracing slows everything down
        explore(scenario)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        st = ex.result.stats
        graph = ex.search.graph
        total = 0
        versions: set[int] = set()
        for node in range(graph.num_states):
            objs = graph.state(node).snapshot.objects()
            total += len(objs)
            versions.update(id(o) for o in objs)
        print(f"{n:>3} {st.states:>8} {st.transitions:>8} {st.reconciles:>6} {st.memo_hit_rate:>6.0%} "
              f"{st.elapsed_seconds:>9.2f} {fmt(st.states / st.elapsed_seconds):>9} "
              f"{fmt(st.transitions / st.elapsed_seconds):>9} {total:>9,} {len(versions):>9,} "
              f"{peak / 1024 / st.states:>9.1f}")


def perturbations() -> None:
    print("\n== perturbations: the same scenario with and without its perturbation")
    print(f"{'scenario':36} {'bounds':28} {'states':>7} {'time':>7} {'states w/o':>10} {'time w/o':>8} {'ratio':>6}")
    for path in discover([ROOT / "scenarios" / "bugs"]):
        scenario = load_scenario(path)
        p = scenario.perturbations
        if not p.any and not scenario.actions:
            continue
        with_p, t_with = run(scenario, True)
        bare = replace(scenario, perturbations=Perturbations(), actions=())
        without, t_without = run(bare, True)
        bounds = ", ".join(
            [f"staleReads maxLag={s.max_lag}" for s in p.stale_reads]
            + [f"crashes max={c.max}" for c in p.crashes]
            + [f"conflicts max={c.max}" for c in p.conflicts]
            + ([f"{len(scenario.actions)} action(s) at {scenario.actions[0].at}"] if scenario.actions else [])
        )
        a, b = with_p.result.stats.states, without.result.stats.states
        print(f"{scenario.name:36} {bounds:28} {a:>7} {t_with:>6.2f}s {b:>10} {t_without:>7.2f}s {a / b:>5.1f}x")


def bounds() -> None:
    print("\n== growth with the bounds (states explored; the perturbation examples with their bound swept)")
    cases = [
        ("bugs/stale-read", "staleReads maxLag", lambda p, n: replace(
            p, stale_reads=tuple(replace(s, max_lag=n) for s in p.stale_reads))),
        ("bugs/crash-between-writes", "crashes max", lambda p, n: replace(
            p, crashes=tuple(replace(c, max=n) for c in p.crashes))),
        ("bugs/swallowed-conflict", "conflicts max", lambda p, n: replace(
            p, conflicts=tuple(replace(c, max=n) for c in p.conflicts))),
    ]
    for folder, label, sweep in cases:
        scenario = load_scenario(ROOT / "scenarios" / folder / "scenario.yaml")
        counts = []
        for n in range(0, 4):
            p = sweep(scenario.perturbations, n) if n else Perturbations()
            counts.append(explore(replace(scenario, perturbations=p)).result.stats.states)
        print(f"{folder:30} {label:18} 0..3: " + ", ".join(str(c) for c in counts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="skip the memo-off runs")
    parser.add_argument("--widgets", type=int, default=5, help="largest N in the scaling series")
    args = parser.parse_args(argv)
    examples(args.quick)
    scaling(args.widgets)
    perturbations()
    bounds()
    return 0




if __name__ == "__main__":
    raise SystemExit(main())
