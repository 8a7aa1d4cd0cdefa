"""Benchmark: one large search in one process and split across two, side by side.

Run: python bench/bench_parallel.py [--requests 10] [--workers 2]

The family: one controller labelling N ConfigMaps with the reduction turned off, 3^N states
(59,049 at N = 10: the issue's "50k-state scenario"). Both runs must report the same states,
transitions and verdict (the parallel search promises the serial graph); the figures are wall time
and CPU time of the whole process tree. On a 2-vCPU machine shared with other work the ratio moves
with the load; the CPU columns show the split's overhead.

The machine's own ceiling is measured in the same run: ``--workers`` copies of the serial search run
side by side in forked processes, and ``workers × serial time / their time`` is the most any split
could gain here (two processes on two shared vCPUs each run slower than one alone: caches, steal).
The split's efficiency is its speed-up over that ceiling.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import kubernetes.client  # noqa: E402,F401  (import once, outside the timings)
from bench_reduction import independent_requests  # noqa: E402

from kamera_cli.runner import Overrides, explore  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _serial_copy(scenario: object) -> None:
    exploration = explore(scenario, overrides=Overrides(search_workers=1))  # type: ignore[arg-type]
    exploration.search.close()


def _side_by_side(scenario: object, copies: int) -> float:
    """Wall time of ``copies`` serial searches run at once, each in a forked process of its own."""
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_serial_copy, args=(scenario,)) for _ in range(copies)]
    t0 = time.perf_counter()
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0, proc.exitcode
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = load_scenario(independent_requests(Path(tmp), args.requests))
        scenario = replace(scenario, explore=replace(scenario.explore, reduction="none"))
        explore(scenario)  # imports and warm-up outside the timing
        rows = []
        for workers in (1, args.workers):
            cpu0, t0 = _cpu(), time.perf_counter()
            exploration = explore(scenario, overrides=Overrides(search_workers=workers))
            exploration.search.close()
            wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
            r = exploration.result
            rows.append((workers, r.stats.states, r.stats.transitions, r.verdict.value, wall, cpu))
        assert rows[0][1:4] == rows[1][1:4], rows
        print(f"{'workers':>8} {'states':>9} {'transitions':>12} {'verdict':>8} {'wall s':>8} {'cpu s':>8}")
        for workers, states, transitions, verdict, wall, cpu in rows:
            print(f"{workers:>8} {states:>9,} {transitions:>12,} {verdict:>8} {wall:>8.2f} {cpu:>8.2f}")
        together = _side_by_side(scenario, args.workers)
        speedup, ceiling = rows[0][4] / rows[1][4], args.workers * rows[0][4] / together
        print(f"{args.workers} serial searches side by side: {together:.2f} s (the machine's ceiling: {ceiling:.2f}×)")
        print(f"speed-up with {args.workers} workers: {speedup:.2f}× ({speedup / ceiling:.0%} of the ceiling)")


if __name__ == "__main__":
    main()
