"""Benchmark: partial-order reduction, states and seconds with and without it, side by side.

Run: python bench/bench_reduction.py [--repeat 1]

Families (every one also asserts that both searches agree on the verdict and converged outcomes):
  - k independent controllers (k = 4, 6, 8), each owning one object of its own kind: it labels the
    object, and its own watch brings it back once more to find nothing to do (3^k states unreduced);
  - 10 independent requests: one controller, ten ConfigMaps (3^10 = 59,049 states unreduced);
  - 8 controllers sharing one ConfigMap (bench_memo.py's family: nearly every step conflicts, so the
    reduction must cost little and change nothing reported);
  - the generation fight (scenarios/bugs/generation-fight): a livelock although metadata.generation
    grows on every write.
Figures vary with machine load; the ratios are the point.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubernetes.client  # noqa: E402,F401  (import once, outside the timings)
from bench_memo import scenario as shared_configmap  # noqa: E402  (bench_memo.py's family, unchanged)

from kamera_cli.model.scenario import Scenario  # noqa: E402
from kamera_cli.runner import Exploration, explore, outcome_key  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402

#: (kind, snake-case name in the Python client): namespaced core kinds that take arbitrary labels
KINDS = [("ConfigMap", "config_map"), ("Secret", "secret"), ("ServiceAccount", "service_account"),
         ("PodTemplate", "pod_template"), ("Endpoints", "endpoints"), ("LimitRange", "limit_range"),
         ("ResourceQuota", "resource_quota"), ("PersistentVolumeClaim", "persistent_volume_claim")]

LABELLER = '''
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()

def make(snake):
    read = getattr(core, f"read_namespaced_{snake}")
    patch = getattr(core, f"patch_namespaced_{snake}")
    def reconcile(request):
        obj = read(request.name, request.namespace)
        if (obj.metadata.labels or {}).get("seen") != "yes":
            patch(request.name, request.namespace, {"metadata": {"labels": {"seen": "yes"}}})
    return reconcile
''' + "".join(f"c_{snake} = make({snake!r})\n" for _kind, snake in KINDS)

HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: %s}
spec:
  explore: {maxStates: 1000000, maxDepth: 100}
"""


def _seed(kind: str, name: str) -> str:
    extra = {"PersistentVolumeClaim": ", spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}",
             "ResourceQuota": ", spec: {}", "LimitRange": ", spec: {limits: []}",
             "PodTemplate": ", template: {spec: {containers: [{name: c, image: busybox}]}}"}
    meta = f"{{name: {name}, namespace: default}}"
    return f"    - {{apiVersion: v1, kind: {kind}, metadata: {meta}{extra.get(kind, '')}}}\n"


def independent_controllers(folder: Path, k: int) -> Path:
    (folder / "controllers.py").write_text(LABELLER)
    text = HEAD % f"independent-{k}" + "  seed:\n" + "".join(_seed(kind, "mine") for kind, _ in KINDS[:k])
    text += "  controllers:\n" + "".join(
        f"    - {{name: {snake.replace('_', '-')}, entrypoint: controllers.py:c_{snake}, for: v1/{kind}}}\n"
        for kind, snake in KINDS[:k])
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def independent_requests(folder: Path, n: int) -> Path:
    (folder / "controllers.py").write_text(LABELLER)
    text = HEAD % f"requests-{n}" + "  seed:\n" + "".join(_seed("ConfigMap", f"cm{i}") for i in range(n))
    text += "  controllers:\n    - {name: labeller, entrypoint: controllers.py:c_config_map, for: v1/ConfigMap}\n"
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def generation_fight(folder: Path, _k: int) -> Path:
    return ROOT / "scenarios" / "bugs" / "generation-fight" / "scenario.yaml"


def timed(scenario: Scenario, reduction: str, repeat: int) -> tuple[Exploration, float]:
    chosen = replace(scenario, explore=replace(scenario.explore, reduction=reduction))  # type: ignore[arg-type]
    times = []
    exploration = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        exploration = explore(chosen)
        times.append(time.perf_counter() - t0)
    assert exploration is not None
    return exploration, statistics.median(times)


def outcomes(exploration: Exploration) -> set[str]:
    search = exploration.search
    return {outcome_key(search.state(n).snapshot) for n in search.converged}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    families = [(f"{k} independent controllers", independent_controllers, k) for k in (4, 6, 8)]
    families += [("10 independent requests", independent_requests, 10),
                 ("8 controllers sharing a ConfigMap", shared_configmap, 8),
                 ("generation fight (livelock)", generation_fight, 0)]
    print(f"{'family':36} {'states (none → persistent)':>28} {'seconds (none → persistent)':>30} {'speed-up':>9}")
    for title, build, k in families:
        with tempfile.TemporaryDirectory() as tmp:
            scenario = load_scenario(build(Path(tmp), k))
            explore(scenario)  # imports and warm-up outside the timing
            full, t_full = timed(scenario, "none", args.repeat)
            reduced, t_reduced = timed(scenario, "persistent", args.repeat)
            assert full.result.verdict == reduced.result.verdict, title
            assert outcomes(full) == outcomes(reduced), title
            s_full, s_red = full.result.stats.states, reduced.result.stats.states
            print(f"{title:36} {s_full:>12,} → {s_red:<13,} {t_full:>12.2f} s → {t_reduced:<8.2f} s "
                  f"{t_full / t_reduced:>8.1f}×  {reduced.result.verdict.value}")


if __name__ == "__main__":
    main()
