"""Benchmark: programs with threads, before and after positions up to renaming (issue 26).

Run: python bench/bench_programs.py [--only NAME] [--timeout SECONDS]

Each case is explored twice, each in a fresh process (so that its peak memory is its own):
``before`` keeps every program's input log exactly in the fingerprint and every program step global
(``kamera_cli.sim.positions.ENABLED = False``: the search before issue 26's programs part); ``after``
is the default (a program's position up to resourceVersions, timestamps and input times, converged
states merged whatever their programs' positions, a clock-blind program's steps reordered, program
steps memoised); ``--threads`` compares ``after`` with ``one-process`` (the same, with a program's
threads one process of the partial-order reduction: ``kamera_cli.sim.traces.THREADS = False``);
``--memo`` compares ``after`` with ``no-memo`` (the same, with ``explore.memoize:
false``: every program step runs), reporting executions and memo hits too. States are
the figure to compare (the machine is shared, so seconds vary); the verdict must be the same on both
rows of a case, unless ``before`` ran out of time.

Cases: ``bench/scenarios/program-watch-worker`` (a watch loop handing pods to a worker thread through a
``queue.Queue``, three pods, one deleted by a user at any step), ``bench/scenarios/program-pod-watcher``
(a watch thread and a worker thread joined by the program's own de-duplicating work queue under a
``threading.Condition``, the worker reading each pod before it acts, two pods, one deleted at any
step), the ``scenarios/shapes/program/workqueue`` example (two workers updating one index) and
``bench/scenarios/program-independent-workers`` (three workers each creating a ConfigMap of its own).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = [
    ("watch + worker, queue.Queue (3 pods)", ROOT / "bench" / "scenarios" / "program-watch-worker"),
    ("watch thread + worker, own work queue (2 pods)", ROOT / "bench" / "scenarios" / "program-pod-watcher"),
    ("workqueue example (2 workers, 1 index)", ROOT / "scenarios" / "shapes" / "program" / "workqueue"),
    ("3 independent workers (1 ConfigMap each)", ROOT / "bench" / "scenarios" / "program-independent-workers"),
]


def _one(path: Path, mode: str, timeout: float) -> dict[str, object]:
    """One exploration in this process: states, verdict, search seconds, peak resident memory."""
    from kamera_cli import runner
    from kamera_cli.scenario import load_scenario
    from kamera_cli.sim import positions, traces

    positions.ENABLED = mode != "before"
    traces.THREADS = mode != "one-process"
    scenario = load_scenario(path / "scenario.yaml")
    scenario = dataclasses.replace(scenario, explore=dataclasses.replace(scenario.explore, timeout_seconds=timeout,
                                                                         memoize=mode != "no-memo"))
    started = time.perf_counter()
    exploration = runner.explore(scenario)
    stats = exploration.search.stats
    return {"states": stats.states, "verdict": exploration.result.verdict.value,
            "converged": len(exploration.search.converged), "seconds": round(time.perf_counter() - started, 1),
            "executions": exploration.result.stats.reconciles, "memo_hits": exploration.result.stats.memo_hits,
            "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--memo", action="store_true", help="compare the program memo off and on")
    parser.add_argument("--threads", action="store_true", help="compare threads as one process and as processes")
    parser.add_argument("--one", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(Path(args.one[0]), args.one[1], args.timeout)))
        return
    print(f"{'case':48} {'mode':11} {'states':>8} {'converged':>9} {'verdict':>13} {'seconds':>8} {'peak MiB':>8} "
          f"{'runs':>6} {'hits':>6}")
    for name, path in CASES:
        if args.only and args.only not in name:
            continue
        modes = ("no-memo", "after") if args.memo else ("one-process", "after") if args.threads else ("before", "after")
        for mode in modes:
            out = subprocess.run([sys.executable, __file__, "--one", str(path), mode, "--timeout", str(args.timeout)],
                                 capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{name:48} {mode:11} {row['states']:>8} {row['converged']:>9} {row['verdict']:>13} "
                  f"{row['seconds']:>8} {row['peak_mib']:>8} {row['executions']:>6} {row['memo_hits']:>6}", flush=True)


if __name__ == "__main__":
    main()
