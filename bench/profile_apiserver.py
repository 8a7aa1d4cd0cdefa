"""Python function calls per request of the simulated API server -- the noise-free write-path figure.

Wall-clock ratios on a shared box vary by a third between identical runs; the number of Python calls
a request makes does not.  This runs ``bench_apiserver.py``'s operations straight into
``ApiServer.handle`` (no client, so only the server's own work counts) under cProfile and prints the
calls per request, and with ``--top OP`` the functions that op calls most.  Run it once per checkout
(``PYTHONPATH=<checkout>``) to compare two versions side by side.

Usage: python bench/profile_apiserver.py [--requests N] [--top "Deployment apply"]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_apiserver import NS, _configmap, _deployment, _load_apiserver, _new_server

_JSON = {"Content-Type": "application/json"}


def _requests(kind: str) -> dict[str, Callable[[int], tuple[str, str, dict[str, str], bytes]]]:
    """op -> i -> (method, path, headers, body), as the typed client would send them."""
    group, plural, make = (("/api/v1", "configmaps", _configmap) if kind == "ConfigMap"
                           else ("/apis/apps/v1", "deployments", _deployment))
    base = f"{group}/namespaces/{NS}/{plural}"

    def body(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    def small(i: int) -> Any:
        return {"data": {"key": str(i)}} if kind == "ConfigMap" else {"spec": {"replicas": 1 + i % 5}}

    def changed(i: int) -> Any:
        return make("obj", str(i)) if kind == "ConfigMap" else make("obj", 1 + i % 5)

    return {
        "get": lambda i: ("GET", f"{base}/obj", {}, b""),
        "list": lambda i: ("GET", base, {}, b""),
        "create": lambda i: ("POST", base, _JSON, body(make(f"new-{i}"))),
        "update": lambda i: ("PUT", f"{base}/obj", _JSON, body(changed(i))),
        "patch (strategic)": lambda i: ("PATCH", f"{base}/obj",
                                        {"Content-Type": "application/strategic-merge-patch+json"}, body(small(i))),
        "patch (merge)": lambda i: ("PATCH", f"{base}/obj", {"Content-Type": "application/merge-patch+json"},
                                    body(small(i))),
        "apply": lambda i: ("PATCH", f"{base}/obj?fieldManager=bench&force=true",
                            {"Content-Type": "application/apply-patch+yaml"}, body(changed(i))),
    }


def _server(kind: str) -> Any:
    api_server_cls, registry_cls, snapshot_cls = _load_apiserver()
    server = _new_server(api_server_cls, registry_cls.builtin(), snapshot_cls)
    make = _configmap if kind == "ConfigMap" else _deployment
    server.create(make("obj"))
    for n in range(9):
        server.create(make(f"other-{n}"))
    return server


def _handle(server: Any, request: tuple[str, str, dict[str, str], bytes]) -> None:
    method, target, headers, body = request
    response = server.handle(method, target, (), headers, body)
    if response.status >= 300:
        raise SystemExit(f"{method} {target} answered {response.status}: {response.body!r}"[:400])


def calls_per_request(kind: str, op: str, requests: int) -> tuple[float, pstats.Stats]:
    server = _server(kind)
    make = _requests(kind)[op]
    for i in range(20):  # warm the caches a long-running simulation has warm
        _handle(server, make(10_000 + i))
    profile = cProfile.Profile()
    profile.enable()
    for i in range(requests):
        _handle(server, make(i))
    profile.disable()
    stats = pstats.Stats(profile)
    return stats.total_calls / requests, stats  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--top", default="", help='print the most-called functions of one op, e.g. "ConfigMap apply"')
    args = parser.parse_args()
    for kind in ("ConfigMap", "Deployment"):
        for op in _requests(kind):
            per, stats = calls_per_request(kind, op, args.requests)
            print(f"{kind:<11} {op:<18} {per:>8.0f} calls/request")
            if args.top == f"{kind} {op}":
                stats.sort_stats("ncalls").print_stats(25)


if __name__ == "__main__":
    main()
