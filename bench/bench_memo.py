"""Benchmark: the reconcile memo when many controllers share one object.

Run: python bench/bench_memo.py [--controllers 8] [--repeat 3] [--against REV]

K controllers all reconcile the same ConfigMap; each reads it and sets its own key once. Every
subset of keys is a state (2^K), and each controller meets the shared object in many versions, so
its memo holds many entries for the same request: the case where a linear memo scan re-digests
every stored entry per lookup. Prints states, executions, memo hits and the search time.

``--against REV`` also times the same family on the code of another revision (a temporary git
worktree, run in a subprocess), alternating with this tree, so the two figures and their ratio come
from one run on one machine load. Issue #11's baseline, "today" when it was filed, is ``4a8574e``
(the memo scanned its entries; no partial-order reduction).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
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


def scenario(folder: Path, k: int, reduction: str = "") -> Path:
    (folder / "controllers.py").write_text(CONTROLLERS)
    controllers = "".join(f"    - {{name: c{i}, entrypoint: controllers.py:c{i}, for: v1/ConfigMap}}\n"
                          for i in range(k))
    (folder / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: shared}
        spec:
          explore: {maxStates: 1000000%s}
          seed:
            - {apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: default}, data: {}}
          controllers:
        """ % (f", reduction: {reduction}" if reduction else "")) + controllers)
    return folder / "scenario.yaml"


def measure(tree: Path, scenario_file: Path, repeat: int) -> tuple[float, str]:
    """Median search time of a scenario on the code in ``tree`` (in another process), and its counts."""
    code = textwrap.dedent(f"""
        import sys, time, statistics
        sys.path.insert(0, {str(tree)!r})
        from kamera_cli.runner import explore
        from kamera_cli.scenario import load_scenario
        loaded = load_scenario({str(scenario_file)!r})
        explore(loaded)
        times = []
        for _ in range({repeat}):
            t0 = time.perf_counter()
            result = explore(loaded).result
            times.append(time.perf_counter() - t0)
        s = result.stats
        print(statistics.median(times), s.states, s.transitions, s.reconciles, s.memo_hits)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tree).stdout.split()
    return float(out[0]), f"{out[1]} states, {out[2]} transitions, {out[3]} executions, {out[4]} memo hits"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--controllers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="also time this git revision, alternating")
    parser.add_argument("--reduction", choices=("none", "persistent"), default="",
                        help="this tree's explore.reduction (default: its default)")
    args = parser.parse_args()
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), args.against],
                           check=True)
            try:
                times: dict[str, list[float]] = {"this tree": [], args.against: []}
                counts: dict[str, str] = {}
                for _ in range(args.repeat):  # alternate, so both see the same machine load
                    for name, where in (("this tree", ROOT), (args.against, tree)):
                        folder = Path(tmp) / name.replace(" ", "-")
                        folder.mkdir(exist_ok=True)
                        chosen = args.reduction if where == ROOT else ""
                        t, counts[name] = measure(where, scenario(folder, args.controllers, chosen), 1)
                        times[name].append(t)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
        base, now = statistics.median(times[args.against]), statistics.median(times["this tree"])
        print(f"{args.controllers} controllers sharing one ConfigMap (median of {args.repeat}, alternating; "
              f"this tree's reduction: {args.reduction or 'its default'}):")
        print(f"  {args.against:>10}: {base:6.2f} s  {counts[args.against]}")
        print(f"  {'this tree':>10}: {now:6.2f} s  {counts['this tree']}")
        print(f"  speed-up: {base / now:.2f}x")
        return
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_scenario(scenario(Path(tmp), args.controllers, args.reduction))
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
