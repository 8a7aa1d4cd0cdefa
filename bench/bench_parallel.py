"""Benchmark: one large search in one process and split across two, side by side.

Run: python bench/bench_parallel.py [--requests 10] [--workers 2] [--rounds 2]

The family: one controller labelling N ConfigMaps with the reduction turned off, 3^N states
(59,049 at N = 10: the issue's "50k-state scenario"). Both runs must report the same states,
transitions and verdict (the parallel search promises the serial graph).

Each search runs in a fresh process of its own, as ``kamera check`` would (a search run after
another in the same process inherits its heap: a bigger fork, slower collections); its figures are
the search's wall time and the CPU time of its whole process tree, measured inside. Rounds
alternate the configurations and the best round of each counts, so that a burst of other work on a
shared machine does not decide the ratio.

The machine's own ceiling is measured in the same run: ``--workers`` copies of the serial search
run side by side, and ``workers × serial time / their time`` is the most any split could gain here
(two processes on two shared vCPUs each run slower than one alone: caches, steal). The split's
efficiency is its speed-up over that ceiling. Per process, the split reports what it expanded, its
CPU time, how long it sat idle and how many nodes were moved to it (their states shipped).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _one(requests: int, workers: int) -> None:
    """The child: load, search once, print the figures as JSON."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import kubernetes.client  # noqa: F401  (imported outside the timing)
    from bench_reduction import independent_requests

    from kamera_cli.runner import Overrides, explore
    from kamera_cli.scenario import load_scenario

    with tempfile.TemporaryDirectory() as tmp:
        scenario = load_scenario(independent_requests(Path(tmp), requests))
        scenario = replace(scenario, explore=replace(scenario.explore, reduction="none", max_states=1_000_000))
        cpu0, t0 = _cpu(), time.perf_counter()
        exploration = explore(scenario, overrides=Overrides(search_workers=workers))
        exploration.search.close()
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        r = exploration.result
        loads = [[p.expanded, round(p.cpu, 2), round(p.idle, 2), p.moved] for p in exploration.search.processes]
        print(json.dumps({"states": r.stats.states, "transitions": r.stats.transitions, "verdict": r.verdict.value,
                          "wall": wall, "cpu": cpu, "search": exploration.search.stats.elapsed, "loads": loads}))


def _spawn(requests: int, workers: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, "--one", str(workers), "--requests", str(requests)],
                            stdout=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, _ = proc.communicate()
    assert proc.returncode == 0, proc.returncode
    row: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args.requests, args.one)
        return
    best: dict[str, dict[str, object]] = {}
    paired: list[float] = []  # each round's serial wall over its split wall, measured back to back
    for _ in range(args.rounds):
        walls = {}
        for name, workers in (("serial", 1), ("split", args.workers)):
            row = _result(_spawn(args.requests, workers))
            walls[name] = float(row["wall"])  # type: ignore[arg-type]
            if name not in best or row["wall"] < best[name]["wall"]:  # type: ignore[operator]
                best[name] = row
        paired.append(walls["serial"] / walls["split"])
        together = [_spawn(args.requests, 1) for _ in range(args.workers)]
        rows = [_result(p) for p in together]
        wall = max(r["wall"] for r in rows)  # type: ignore[type-var]
        if "together" not in best or wall < best["together"]["wall"]:  # type: ignore[operator]
            best["together"] = {"wall": wall, "cpu": sum(r["cpu"] for r in rows) / len(rows)}  # type: ignore[misc]
    serial, split, together = best["serial"], best["split"], best["together"]
    assert (serial["states"], serial["transitions"], serial["verdict"]) == (
        split["states"], split["transitions"], split["verdict"]), (serial, split)
    print(f"{'workers':>8} {'states':>9} {'transitions':>12} {'verdict':>8} {'wall s':>8} {'cpu s':>8} {'search s':>9}")
    for workers, row in ((1, serial), (args.workers, split)):
        print(f"{workers:>8} {row['states']:>9,} {row['transitions']:>12,} {row['verdict']:>8} "
              f"{row['wall']:>8.2f} {row['cpu']:>8.2f} {row['search']:>9.2f}")
    print("split, per process (expanded, cpu s, idle s, moved in):", split["loads"])
    s_wall, p_wall, t_wall = float(serial["wall"]), float(split["wall"]), float(together["wall"])  # type: ignore[arg-type]
    speedup, ceiling = s_wall / p_wall, args.workers * s_wall / t_wall
    print(f"{args.workers} serial searches side by side: {t_wall:.2f} s, {together['cpu']:.2f} cpu s each "
          f"(the machine's ceiling: {ceiling:.2f}×)")
    print(f"speed-up with {args.workers} workers: {speedup:.2f}× ({speedup / ceiling:.0%} of the ceiling); "
          f"best of {args.rounds} rounds each")
    print("each round's speed-up (serial and split back to back): "
          + ", ".join(f"{r:.2f}×" for r in paired) + f"; median {statistics.median(paired):.2f}×")


if __name__ == "__main__":
    main()
