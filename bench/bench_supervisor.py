"""Benchmark: what running the search in a supervised worker process costs.

Run: python bench/bench_supervisor.py [--repeat 7]

For the quickstart scenario and for the quickstart controller over N widgets (3^N-ish states), prints
the median wall time of the same check in-process (``runner.check_paths``) and supervised
(``supervisor.supervise``: fork, new process group and network namespace, audit hook, pipe, a shared
page written before every step), the difference per scenario (start-up) and per explored state.
Figures vary with machine load; the ratios are the point.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli import runner, supervisor  # noqa: E402
from kamera_cli.model.result import CheckResult  # noqa: E402

QUICKSTART = ROOT / "scenarios" / "quickstart"


def widgets_scenario(folder: Path, n: int) -> Path:
    target = folder / f"widgets-{n}"
    shutil.copytree(QUICKSTART, target)
    text = (target / "scenario.yaml").read_text()
    start = text.index("  seed:")
    end = text.index("  invariants:")
    seed = "  seed:\n" + "".join(
        f"    - {{apiVersion: example.com/v1, kind: Widget, metadata: {{name: w{i}, namespace: default}}, "
        f"spec: {{message: m{i}}}}}\n" for i in range(n))
    (target / "scenario.yaml").write_text(text[:start] + seed + text[end:])
    return target


def timed(fn: Callable[[], CheckResult], repeat: int) -> tuple[float, CheckResult]:
    times = []
    result = fn()
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("quickstart", QUICKSTART)] + [(f"{n} widgets", widgets_scenario(Path(tmp), n)) for n in (4, 6)]
        print(f"{'scenario':<12} {'states':>7} {'in-process':>11} {'supervised':>11} {'overhead':>9} "
              f"{'ratio':>6} {'per state':>10}")
        for name, path in cases:
            inproc, r1 = timed(lambda path=path: runner.check_paths([path]), args.repeat)
            sup, r2 = timed(lambda path=path: supervisor.supervise([path]), args.repeat)
            states = r1.scenarios[0].stats.states
            assert states == r2.scenarios[0].stats.states, "supervised and in-process runs disagree"
            assert r1.verdict is r2.verdict
            extra = sup - inproc
            print(f"{name:<12} {states:>7} {inproc * 1000:>9.1f}ms {sup * 1000:>9.1f}ms {extra * 1000:>7.1f}ms "
                  f"{sup / inproc:>6.2f} {extra / max(states, 1) * 1e6:>8.1f}µs")


if __name__ == "__main__":
    main()
