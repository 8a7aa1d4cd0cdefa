"""Microseconds per ``ApiServer.handle`` call for ``bench_apiserver.py``'s operations (no client).

The wall-clock companion of ``profile_apiserver.py``: best of several rounds, so a run on a shared
box reads its quietest moments.  Run once per checkout (``PYTHONPATH=<checkout>``) to compare.

Usage: python bench/time_apiserver.py [--requests N] [--rounds R] [--only "Deployment apply"]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profile_apiserver import _handle, _requests, _server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    for kind in ("ConfigMap", "Deployment"):
        for op, make in _requests(kind).items():
            if args.only and args.only != f"{kind} {op}":
                continue
            server = _server(kind)
            for i in range(20):
                _handle(server, make(100_000 + i))
            best = float("inf")
            counter = 0
            for _ in range(args.rounds):
                start = time.perf_counter()
                for _ in range(args.requests):
                    _handle(server, make(counter))
                    counter += 1
                best = min(best, (time.perf_counter() - start) / args.requests * 1e6)
            print(f"{kind:<11} {op:<18} {best:>8.1f} µs")


if __name__ == "__main__":
    main()
