"""Instructions per request, simulator against the client's floor: ``bench_apiserver.py``'s ratio without the clock.

A wall-clock ratio on a shared box moves with the speed of its vCPUs; the number of instructions a
call executes does not.  This runs the same typed-client calls as ``bench_apiserver.py`` under
valgrind's cachegrind (``--cache-sim=no``: instruction counts only), twice per side -- after 20 warm-up
calls and after 220 -- and divides the difference by 200, so that start-up and set-up cancel out.
Memory and branch behaviour are not in an instruction count, so the wall-clock ratio is higher (by
~0.3 here): this is a floor under it and the noise-free way to compare two checkouts.

Needs ``valgrind`` on the PATH; each operation takes ~4 minutes on a 2-core box.

Usage: python bench/count_apiserver.py [--ops "ConfigMap create" "Deployment apply" ...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

_WARM, _COUNTED = 20, 200


def _child(kind: str, op: str, side: str, calls: int) -> None:
    """Set up as ``bench_apiserver.bench_requests`` does, then make ``calls`` calls of one side."""
    from bench_apiserver import _ops, clients

    call, answer = _ops(kind)[op]
    with clients(kind, answer) as (api, floor_client):
        target = api if side == "sim" else floor_client
        for i in range(_WARM):
            call(target, 100_000 + i)
        for i in range(calls):
            call(target, i)


def _instructions(kind: str, op: str, side: str, calls: int) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    run = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", kind, op, side, str(calls)],
        capture_output=True, text=True, env=env, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if found is None:
        sys.exit(f"no instruction count in valgrind's output:\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="*", default=None, help='e.g. "ConfigMap create" (default: every write)')
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, op, side, calls = args.child
        _child(kind, op, side, int(calls))
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: nothing to count")
    ops = args.ops or [f"{kind} {op}" for kind in ("ConfigMap", "Deployment")
                       for op in ("create", "update", "patch (strategic)", "patch (merge)", "apply")]
    print(f"instructions per call (cachegrind, PYTHONHASHSEED=0, calls {_WARM + _COUNTED} minus {_WARM})")
    print(f"{'kind':<11} {'operation':<18} {'simulator':>11} {'floor':>11} {'ratio':>6}")
    for spec in ops:
        kind, op = spec.split(" ", 1)
        sim, floor = ((_instructions(kind, op, side, _COUNTED) - _instructions(kind, op, side, 0)) / _COUNTED
                      for side in ("sim", "floor"))
        print(f"{kind:<11} {op:<18} {sim:>11,.0f} {floor:>11,.0f} {sim / floor:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
