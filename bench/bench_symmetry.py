"""Benchmark: what the symmetry of generated names saves, next to partial-order reduction alone.

Run: python bench/bench_symmetry.py [--only NAME]

Each case is explored three ways: ``reduction: none`` (every order, states compared as they are),
partial-order reduction without the symmetry (the search before it existed) and both (the default).
States are the figure to compare (the machine is shared, so seconds vary); the verdict must be the
same on every row of a case.

Cases: the wait-for-deployment example (3 replicas; deployment, replicaset and kubelet built-ins);
a Job of 3 pods that may each fail, ``backoffLimit: 1``, no user controller; and the program with a
watch thread and a worker thread (``bench/scenarios/program-watch-worker``), which has no generated
names: its row shows what is left for programs (issue 26).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kamera_cli import runner  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402


def _job_scenario(folder: Path) -> Path:
    (folder / "ctrl.py").write_text("def reconcile(request):\n    return None\n")
    template = {"metadata": {"labels": {"app": "w"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    spec: dict[str, Any] = {
        "explore": {"maxDepth": 40, "maxStates": 200000, "timeout": "600s"},
        "cluster": {"builtins": ["job", "kubelet"], "nodes": 1, "pods": {"rules": [
            {"selector": {"matchLabels": {"app": "w"}}, "outcomes": ["succeeded", "failed"]}]}},
        "controllers": [{"name": "noop", "entrypoint": "ctrl.py:reconcile", "for": "v1/ConfigMap"}],
        "seed": [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work", "namespace": "default"},
                  "spec": {"parallelism": 3, "completions": 3, "backoffLimit": 1, "template": template}}],
    }
    path = folder / "scenario.yaml"
    path.write_text(json.dumps({"apiVersion": "kamera.dev/v1alpha1", "kind": "Scenario",
                                "metadata": {"name": "job-3-fates"}, "spec": spec}))
    return path


def _run(path: Path, mode: str) -> tuple[int, str, float]:
    scenario = load_scenario(path)
    reduction: Literal["persistent", "none"] = "none" if mode == "none" else "persistent"
    scenario = dataclasses.replace(scenario, explore=dataclasses.replace(scenario.explore, reduction=reduction))
    saved = getattr(runner, "symmetry_for")  # noqa: B009 - swapped for one run, as a test's monkeypatch does
    if mode == "por":
        setattr(runner, "symmetry_for", lambda s: (None, []))  # noqa: B010
    try:
        exploration = runner.explore(scenario)
    finally:
        setattr(runner, "symmetry_for", saved)  # noqa: B010
    # the search's own time (loading the controllers and containing them is the same in every mode)
    return exploration.search.stats.states, exploration.result.verdict.value, exploration.search.stats.elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("wait-for-deployment (3 replicas)",
                  ROOT / "scenarios" / "workloads" / "wait-for-deployment" / "scenario.yaml"),
                 ("Job of 3 pods with fates", _job_scenario(Path(tmp))),
                 ("program: watch + worker thread", ROOT / "bench" / "scenarios" / "program-watch-worker" /
                  "scenario.yaml")]
        print(f"{'case':36} {'mode':22} {'states':>8} {'verdict':>8} {'search s':>8}")
        for name, path in cases:
            if args.only and args.only not in name:
                continue
            for mode, label in (("none", "reduction: none"), ("por", "partial-order only"),
                                ("both", "partial-order + symmetry")):
                states, verdict, elapsed = _run(path, mode)
                print(f"{name:36} {label:22} {states:>8} {verdict:>8} {elapsed:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
