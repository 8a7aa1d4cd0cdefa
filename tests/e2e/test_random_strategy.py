"""``spec.explore.strategy: random`` through the CLI: reproducible, and plainly not exhaustive."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kamera_cli.cli import app
from tests.e2e.jsonstable import stable

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


_stable = stable


def _swarm(path: Path, out: Path, *extra: str) -> tuple[int, str, dict[str, object]]:
    result = CliRunner().invoke(app, ["check", str(path), "--swarm", "3", "--json", str(out), *extra],
                                env={"NO_COLOR": "1"})
    return result.exit_code, result.output, json.loads(out.read_text())


def test_a_swarm_is_members_with_their_own_seeds_the_same_with_any_number_of_workers(tmp_path: Path) -> None:
    path = _scenario(tmp_path)
    code, output, alone = _swarm(path, tmp_path / "one.json")
    assert code == 4, output  # every member inconclusive: walks prove nothing
    names = [s["name"] for s in alone["scenarios"]]  # type: ignore[index]
    assert names == ["walks [swarm 1/3, seed 5]", "walks [swarm 2/3, seed 6]", "walks [swarm 3/3, seed 7]"]
    assert all("not exhaustive" in n for s in alone["scenarios"] for n in s["notes"] if "swarm" in n)  # type: ignore[index]
    # the members are different searches: different seeds reach different numbers of states
    assert len({s["stats"]["states"] for s in alone["scenarios"]}) > 1  # type: ignore[index]
    # and each member is the search its seed gives, whoever runs it
    code2, output2, spread = _swarm(path, tmp_path / "two.json", "--workers", "2")
    assert code2 == code, output2
    assert _stable(spread) == _stable(alone)


def test_a_swarm_member_is_the_random_search_with_its_seed(tmp_path: Path) -> None:
    """Member i of a swarm is exactly ``strategy: random`` with seed ``seed + i`` (so it can be rerun alone)."""
    path = _scenario(tmp_path)
    _code, _output, swarm = _swarm(path, tmp_path / "swarm.json")
    path.write_text(path.read_text().replace("seed: 5,", "seed: 6,"))
    out = tmp_path / "alone.json"
    CliRunner().invoke(app, ["check", str(path), "--json", str(out)], env={"NO_COLOR": "1"})
    alone = json.loads(out.read_text())["scenarios"][0]
    member = swarm["scenarios"][1]  # type: ignore[index]
    assert member["stats"]["states"] == alone["stats"]["states"]
    assert member["stats"]["transitions"] == alone["stats"]["transitions"]
    assert [c["verdict"] for c in member["checks"]] == [c["verdict"] for c in alone["checks"]]


def test_a_walk_that_reaches_everything_says_so(tmp_path: Path) -> None:
    (tmp_path / "controllers.py").write_text(CONTROLLER)
    (tmp_path / "scenario.yaml").write_text(
        "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: small}\nspec:\n"
        "  controllers:\n    - {name: c, entrypoint: controllers.py:reconcile, for: v1/ConfigMap}\n"
        "  seed:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}, data: {}}\n")
    code, output, doc = _swarm(tmp_path / "scenario.yaml", tmp_path / "small.json")
    assert code == 0, output
    notes = [n for s in doc["scenarios"] for n in s["notes"] if "swarm" in n]  # type: ignore[index]
    assert len(notes) == 3 and all("exhaustive after all" in n for n in notes)
