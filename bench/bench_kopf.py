"""Benchmark: what a kopf step costs next to a plain reconcile making the same API calls.

Run: python bench/bench_kopf.py [--widgets 4] [--repeat 5]

Two controllers over the same Widgets do the same work per object — read the Widget, create an
owned ConfigMap, patch an annotation, patch the status: one is a kopf create handler (kopf's own
processing writes the annotation and the status), the other a plain reconcile doing those calls
itself. Both are explored with memoisation off, so every step executes; printed: executions, time
per execution and the ratio. Then the start-up cost: importing kopf in a fresh interpreter, and
loading a kopf scenario the first time in a process and again (kopf is imported once per process;
a restart re-imports only the operator's own module).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli.runner import explore  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402
from kamera_cli.sim.bootstrap import Simulation  # noqa: E402

KOPF_OPERATOR = '''
import kopf
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()

@kopf.on.create("example.com", "v1", "widgets")
def create_config(spec, name, namespace, **_):
    body = {"metadata": {"name": f"{name}-config"}, "data": {"message": spec.get("message", "")}}
    kopf.adopt(body)
    core.create_namespaced_config_map(namespace, body)
    return {"configMap": f"{name}-config"}
'''

PLAIN = '''
import json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config()
core = client.CoreV1Api()
custom = client.CustomObjectsApi()

def reconcile(request):
    w = custom.get_namespaced_custom_object("example.com", "v1", request.namespace, "widgets", request.name)
    if (w.get("metadata", {}).get("annotations") or {}).get("handled"):
        return None
    body = {"metadata": {"name": f"{request.name}-config", "ownerReferences": [{
        "apiVersion": "example.com/v1", "kind": "Widget", "name": request.name,
        "uid": w["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "data": {"message": w["spec"].get("message", "")}}
    try:
        core.create_namespaced_config_map(request.namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
    custom.patch_namespaced_custom_object("example.com", "v1", request.namespace, "widgets", request.name,
        {"metadata": {"annotations": {"handled": json.dumps(w["spec"])}}})
    custom.patch_namespaced_custom_object_status("example.com", "v1", request.namespace, "widgets",
        request.name, {"status": {"create_config": {"configMap": f"{request.name}-config"}}})
'''


def scenario(folder: Path, widgets: int, *, kopf: bool) -> Path:
    src = ROOT / "scenarios" / "kopf" / "create-child"
    folder.mkdir(parents=True)
    shutil.copytree(src / "crds", folder / "crds")
    (folder / "operator.py").write_text(KOPF_OPERATOR if kopf else PLAIN)
    seed = "".join(f"    - {{apiVersion: example.com/v1, kind: Widget, metadata: {{name: w{i}, namespace: default}}, "
                   f"spec: {{message: m{i}}}}}\n" for i in range(widgets))
    controller = ("{name: c, kopf: operator.py, for: example.com/v1/Widget, owns: [v1/ConfigMap]}" if kopf else
                  "{name: c, entrypoint: operator.py:reconcile, for: example.com/v1/Widget, owns: [v1/ConfigMap]}")
    (folder / "scenario.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {{name: bench}}
        spec:
          controllers: [{controller}]
          crds: [crds/widget.yaml]
          explore: {{memoize: false}}
          seed:
        """) + seed)
    return folder / "scenario.yaml"


def per_step(path: Path, repeat: int) -> tuple[int, int, float]:
    loaded = load_scenario(path)
    times = []
    states = executions = 0
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        result = explore(replace(loaded)).result
        times.append(time.perf_counter() - t0)
        states, executions = result.stats.states, result.stats.reconciles
    return states, executions, statistics.median(times[1:]) / max(executions, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--widgets", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import kopf"], check=True)
    bare = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    baseline = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = scenario(Path(tmp) / "startup", 1, kopf=True)
        loaded = load_scenario(path)
        loads = []
        for _ in range(3):
            t0 = time.perf_counter()
            with Simulation(loaded):
                pass
            loads.append(time.perf_counter() - t0)
        print(f"{'widgets':>7} {'controller':<8} {'states':>7} {'executions':>10} {'per execution':>14}")
        for n in sorted({1, args.widgets}):
            rows = {}
            for kopf in (False, True):
                path = scenario(Path(tmp) / f"{'kopf' if kopf else 'plain'}-{n}", n, kopf=kopf)
                states, executions, cost = per_step(path, args.repeat)
                rows[kopf] = cost
                print(f"{n:>7} {'kopf' if kopf else 'plain':<8} {states:>7} {executions:>10} {cost * 1000:>12.2f}ms")
            print(f"{'':>7} kopf / plain per execution: {rows[True] / rows[False]:.2f}x")
    print(f"import kopf in a fresh interpreter: {(bare - baseline) * 1000:.0f} ms (over an empty interpreter)")
    print("loading a kopf scenario in one process: " + ", ".join(f"{t * 1000:.0f} ms" for t in loads)
          + " (first includes importing kopf; later loads re-import only the operator module)")


if __name__ == "__main__":
    main()
