"""Benchmark: memory per explored state.

Run: python bench/bench_memory.py [--requests 8]

Traces the Python heap (tracemalloc) during one search of each family and prints the peak divided by
the states explored — the figure issue #11 asks to halve (about 9 KB per state at the time). The
families: independent requests without reduction (3^N states, every edge a memo replay), the same
with partial-order reduction, and 8 controllers sharing one ConfigMap (many versions of one object).
Tracing slows the search several-fold; the times printed are traced times, for comparison only.
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
sys.path.insert(0, str(ROOT / "bench"))

from bench_memo import scenario as shared_configmap  # noqa: E402
from bench_reduction import independent_requests  # noqa: E402

from kamera_cli.model.scenario import Scenario  # noqa: E402
from kamera_cli.runner import explore  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402


def measure(label: str, scenario: Scenario) -> None:
    explore(replace(scenario, seed=scenario.seed[:1]))  # imports outside the measurement
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    result = explore(scenario).result
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    s = result.stats
    print(f"{label:44} {s.states:>8,} {s.transitions:>9,} {peak / 1024 / s.states:>10.2f} {peak / 2**20:>9.1f} "
          f"{elapsed:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=8)
    args = parser.parse_args()
    print(f"{'family':44} {'states':>8} {'edges':>9} {'KiB/state':>10} {'peak MiB':>9} {'traced s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "requests"
        folder.mkdir()
        base = load_scenario(independent_requests(folder, args.requests))
        for reduction in ("none", "persistent"):
            measured = replace(base, explore=replace(base.explore, reduction=reduction, max_states=2_000_000))
            measure(f"{args.requests} independent requests ({reduction})", measured)
        folder = Path(tmp) / "shared"
        folder.mkdir()
        shared = load_scenario(shared_configmap(folder, 8))
        measure("8 controllers sharing a ConfigMap (none)",
                replace(shared, explore=replace(shared.explore, reduction="none")))


if __name__ == "__main__":
    main()
