"""Benchmark: what the built-in control plane costs in states and seconds.

Run: python bench/bench_builtins.py [--repeat 3]

The issue's target case — one operator, one Deployment of 3 replicas, the deployment, replicaset
and kubelet built-ins (scenarios/workloads/wait-for-deployment) — then the same scenario with each
built-in dropped in turn, and with 1 and 2 replicas, side by side: states, transitions, executions,
memo hits and the median search time. Without the kubelet no pod ever runs (the operator never sees
its app ready); without the replicaset controller no pod is ever created.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli.runner import explore  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402

SCENARIO = ROOT / "scenarios" / "workloads" / "wait-for-deployment" / "scenario.yaml"


def variant(builtins: tuple[str, ...], replicas: int) -> object:
    loaded = load_scenario(SCENARIO)
    seed = [dict(o) for o in loaded.seed]
    seed[0] = {**seed[0], "spec": {**seed[0]["spec"], "replicas": replicas}}
    cluster = dataclasses.replace(loaded.cluster, builtins=builtins)
    # only the readiness invariant: the pod count one is written for 3 replicas
    return dataclasses.replace(loaded, seed=tuple(seed), cluster=cluster, invariants=loaded.invariants[:1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    full = ("deployment", "kubelet", "replicaset")
    cases = [
        ("all three, 3 replicas (the target: < 5 s)", full, 3),
        ("all three, 2 replicas", full, 2),
        ("all three, 1 replica", full, 1),
        ("without kubelet, 3 replicas", ("deployment", "replicaset"), 3),
        ("without replicaset, 3 replicas", ("deployment", "kubelet"), 3),
        ("without deployment (nothing rolls out)", ("kubelet", "replicaset"), 3),
        ("no built-ins", (), 3),
    ]
    explore(variant(full, 1))  # imports and warm-up outside the timing
    print(f"{'case':45} {'states':>7} {'transitions':>11} {'execs':>6} {'memo':>6} {'search s':>9} {'verdict':>8}")
    for label, builtins, replicas in cases:
        scenario = variant(builtins, replicas)
        times = []
        outcome = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            outcome = explore(scenario)  # type: ignore[arg-type]
            times.append(time.perf_counter() - t0)
        assert outcome is not None
        s = outcome.result.stats
        print(f"{label:45} {s.states:>7} {s.transitions:>11} {s.reconciles:>6} {s.memo_hits:>6} "
              f"{statistics.median(times):>9.2f} {outcome.result.verdict.value:>8}")


if __name__ == "__main__":
    main()
