"""Benchmark: the reconcile memo when many controllers share one object.

Run: python bench/bench_memo.py [--controllers 8] [--repeat 3]

K controllers all reconcile the same ConfigMap; each reads it and sets its own key once. Every
subset of keys is a state (2^K), and each controller meets the shared object in many versions, so
its memo holds many entries for the same request: the case where a linear memo scan re-digests
every stored entry per lookup. Prints states, executions, memo hits and the search time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli.runner import explore  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402

CONTROLLERS = '''
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()

def make(key):
    def reconcile(request):
        cm = core.read_namespaced_config_map(request.name, request.namespace)
        if (cm.data or {}).get(key) != "done":
            core.patch_namespaced_config_map(request.name, request.namespace, {"data": {key: "done"}})
    return reconcile
''' + "".join(f"c{i} = make('k{i}')\n" for i in range(16))


def scenario(folder: Path, k: int) -> Path:
    (folder / "controllers.py").write_text(CONTROLLERS)
    controllers = "".join(f"    - {{name: c{i}, entrypoint: controllers.py:c{i}, for: v1/ConfigMap}}\n"
                          for i in range(k))
    (folder / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: shared}
        spec:
          explore: {maxStates: 1000000}
          seed:
            - {apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: default}, data: {}}
          controllers:
        """) + controllers)
    return folder / "scenario.yaml"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--controllers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_scenario(scenario(Path(tmp), args.controllers))
        explore(loaded)  # imports and warm-up outside the timing
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = explore(loaded).result
            times.append(time.perf_counter() - t0)
        s = result.stats
        print(f"{args.controllers} controllers sharing one ConfigMap: {s.states} states, {s.transitions} transitions, "
              f"{s.reconciles} executions, {s.memo_hits} memo hits; search {statistics.median(times):.2f} s "
              f"(median of {args.repeat})")


if __name__ == "__main__":
    main()
