"""``spec.explore.strategy: random`` through the CLI: reproducible, and plainly not exhaustive."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kamera_cli.cli import app

CONTROLLER = '''
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()

def reconcile(request):
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if (cm.data or {}).get("done") != "yes":
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"done": "yes"}})
'''


def _scenario(folder: Path) -> Path:
    (folder / "controllers.py").write_text(CONTROLLER)
    seeds = "".join(f"    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: cm{i}}}, data: {{}}}}\n"
                    for i in range(6))
    (folder / "scenario.yaml").write_text(
        "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: walks}\nspec:\n"
        "  explore: {strategy: random, seed: 5, walks: 3, reduction: none}\n"
        "  controllers:\n    - {name: c, entrypoint: controllers.py:reconcile, for: v1/ConfigMap}\n"
        "  seed:\n" + seeds)
    return folder / "scenario.yaml"


def test_random_walks_are_inconclusive_and_reproducible(tmp_path: Path) -> None:
    path = _scenario(tmp_path)
    docs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        result = CliRunner().invoke(app, ["check", str(path), "--json", str(out)], env={"NO_COLOR": "1"})
        assert result.exit_code == 4, result.output  # inconclusive: a passing check proves nothing here
        assert "not exhaustive" in result.output
        docs.append(json.loads(out.read_text())["scenarios"][0]["stats"])
    assert docs[0]["states"] == docs[1]["states"] < 3 ** 6
    assert "not exhaustive" in docs[0]["bound_hit"]
