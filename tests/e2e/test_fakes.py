"""Fakes end to end: the credential-leak example, requests.get, whole modules, kopf, and containment.

The example's counts are pinned in ``test_examples.py``; here, what a user reads (the counterexample
names the crash and shows the leaked key's diff), and what must hold around it: a fake of a callable
(bound at import or looked up at each call) or of a whole module answers the controller; nothing
stays replaced, or bound, once the scenario ends, so the same controller without the fake is fenced
in the next scenario of the process; what is not faked is fenced; what a fake stores at import is the
initial state; a fake keeping state in a global is named as a suspect; counts ignore the hash seed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kamera_cli
from kamera_cli.cli import app
from kamera_cli.model.result import Verdict

EXAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "shapes" / "credential-leak"


def test_the_leak_is_found_with_the_crash_and_the_key_it_leaked(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = CliRunner().invoke(app, ["check", str(EXAMPLE / "scenario.yaml"), "--json", str(out)],
                                env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "✗ invariant: one access key per namespace" in result.output
    assert "expected count 1, got 2 for Namespace team-a" in result.output
    assert "credentials reconcile team-a — crashed after write 1 → created external.kamera.dev/v1/Entry aws:AKIA" \
        in result.output
    assert '+ /value/UserName: "team-a"' in result.output  # the leaked key's diff
    (scenario,) = json.loads(out.read_text())["scenarios"]
    check = next(c for c in scenario["checks"] if c["name"] == "invariant: one access key per namespace")
    assert check["verdict"] == "failed"


def test_the_fixed_twin_passes_and_nothing_stays_replaced() -> None:
    had_boto3 = importlib.util.find_spec("boto3") is not None
    (result,) = kamera_cli.check(EXAMPLE / "fixed" / "scenario.yaml").scenarios
    assert result.verdict is Verdict.PASSED, [c.message for c in result.checks]
    if not had_boto3:
        assert "boto3" not in sys.modules and importlib.util.find_spec("boto3") is None


def test_validate_accepts_the_fakes() -> None:
    result = CliRunner().invoke(app, ["validate", str(EXAMPLE)], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output


# -- requests.get, a whole module, and the fence around what is not faked -----------------------------

HTTP_FAKE = '''
"""A fake of an inventory HTTP API: each team asked about is recorded in the external store."""
from kamera_cli import ExternalStore

asked = ExternalStore("inventory")


class Response:
    status_code = 200

    def __init__(self, payload):
        self._payload = payload

    def json(self):
        return self._payload

    def raise_for_status(self):
        return None


def get(url, **kwargs):
    team = url.rsplit("/", 1)[-1]
    asked.put(team, {"team": team, "url": url})
    return Response({"owner": team + "-owner"})
'''

HTTP_CONTROLLER = '''
import requests
from requests import get
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _owner(name, call):
    response = call(f"https://inventory.example/teams/{name}", timeout=5)
    response.raise_for_status()
    return response.json()["owner"]


def _record(name, owner):
    try:
        core.create_namespaced_config_map(name, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="team"), data={"owner": owner}))
    except ApiException as exc:
        if exc.status != 409:
            raise


def bound_at_import(request):
    if request.name.startswith("team-"):
        _record(request.name, _owner(request.name, get))


def looked_up(request):
    if request.name.startswith("team-"):
        _record(request.name, _owner(request.name, requests.get))


def also_posts(request):
    if request.name.startswith("team-"):
        _record(request.name, _owner(request.name, requests.get))
        requests.post("http://127.0.0.1:9/audit", json={"team": request.name}, timeout=2)
'''

GET_FAKE = "  fakes:\n    - {replace: requests.get, with: fakes/http.py:get}"

HTTP_SCENARIO = '''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: {name}}}
spec:
  controllers:
    - {{name: inventory, entrypoint: "controllers.py:{entry}", for: v1/Namespace, owns: [v1/ConfigMap]}}
{fakes}
  seed:
    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team-a}}}}
    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team-b}}}}
  invariants:
    - name: every team was asked about once
      forEach: "$.items[?@.kind == 'Namespace' && search(@.metadata.name, '^team-')]"
      select: "$.external.inventory[?@.team == {{{{ @.metadata.name }}}}]"
      expect: {{count: 1}}
    - name: every team has its owner
      forEach: "$.items[?@.kind == 'Namespace' && search(@.metadata.name, '^team-')]"
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.namespace == {{{{ @.metadata.name }}}}].data.owner"
      expect: {{count: 1}}
'''


def _http_scenario(tmp_path: Path, name: str, entry: str, fakes: str) -> Path:
    (tmp_path / "fakes").mkdir(exist_ok=True)
    (tmp_path / "fakes" / "http.py").write_text(HTTP_FAKE)
    (tmp_path / "fakes" / "requests_module.py").write_text(HTTP_FAKE)
    (tmp_path / "controllers.py").write_text(HTTP_CONTROLLER)
    path = tmp_path / f"{name}.yaml"
    path.write_text(HTTP_SCENARIO.format(name=name, entry=entry, fakes=fakes))
    return path


def _messages(path: Path) -> tuple[Verdict, list[str]]:
    (result,) = kamera_cli.check(path).scenarios
    return result.verdict, [f"{c.name}: {c.message}" for c in result.checks if c.verdict is not Verdict.PASSED]


@pytest.mark.parametrize("entry", ["bound_at_import", "looked_up"])
def test_a_requests_get_fake_and_nothing_left_behind(tmp_path: Path, entry: str) -> None:
    import requests

    real_get = requests.get
    faked = _http_scenario(tmp_path, "faked", entry, GET_FAKE)
    assert _messages(faked) == (Verdict.PASSED, [])
    assert requests.get is real_get
    # the same controller in the same process without the fake: its call is fenced, never sent
    unfaked = _http_scenario(tmp_path, "unfaked", entry, "")
    verdict, failed = _messages(unfaked)
    assert verdict is Verdict.FAILED
    assert any("opened a network connection of its own" in m and "inventory.example:443" in m for m in failed), failed


def test_a_whole_module_fake_in_sys_modules(tmp_path: Path) -> None:
    import requests

    path = _http_scenario(tmp_path, "whole", "bound_at_import",
                          "  fakes:\n    - {replace: requests, with: fakes/requests_module.py}")
    assert _messages(path) == (Verdict.PASSED, [])
    assert sys.modules["requests"] is requests


def test_what_is_not_faked_stays_fenced(tmp_path: Path) -> None:
    path = _http_scenario(tmp_path, "posting", "also_posts",
                          GET_FAKE)
    verdict, failed = _messages(path)
    assert verdict is Verdict.FAILED
    # the faked get answered (the invariants hold); the post that nothing fakes was refused
    assert len(failed) == 1 and "opened a network connection of its own" in failed[0], failed
    assert "to 127.0.0.1:9;" in failed[0], failed


def test_the_verdict_and_counts_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Fake state is part of the fingerprint: the same scenario explores the same states in any process."""
    seen = set()
    for seed in ("0", "12345"):
        out = tmp_path / f"r{seed}.json"
        proc = subprocess.run([sys.executable, "-m", "kamera_cli", "check", str(EXAMPLE / "scenario.yaml"),
                               "--json", str(out)], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "NO_COLOR": "1", "PYTHONHASHSEED": seed})
        assert proc.returncode == 1, proc.stdout + proc.stderr
        (scenario,) = json.loads(out.read_text())["scenarios"]
        stats = scenario["stats"]
        seen.add((stats["states"], stats["transitions"],
                  tuple(sorted(c["fingerprint"] for c in scenario["converged"]))))
    assert len(seen) == 1, seen


KOPF_OPERATOR = '''
import kopf
import requests


@kopf.on.create("example.com", "v1", "widgets")
def register(name, **_):
    return {"owner": requests.get(f"https://inventory.example/teams/{name}", timeout=5).json()["owner"]}
'''

KOPF_SCENARIO = '''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: kopf-fake}
spec:
  controllers:
    - {name: widgets, kopf: operator.py}
  fakes:
    - {replace: requests.get, with: fakes/http.py:get}
  crds: [crds/widget.yaml]
  seed: [manifests/widget.yaml]
  invariants:
    - name: each widget registered once
      forEach: "$.items[?@.kind == 'Widget']"
      select: "$.external.inventory[?@.team == {{ @.metadata.name }}]"
      expect: {count: 1}
    - name: the owner came from the fake
      select: "$.items[?@.kind == 'Widget'].status.register.owner"
      expect: {equals: demo-owner}
'''


def test_a_kopf_handler_calls_the_fake(tmp_path: Path) -> None:
    pytest.importorskip("kopf")
    source = EXAMPLE.parents[1] / "kopf" / "create-child"
    shutil.copytree(source / "crds", tmp_path / "crds")
    shutil.copytree(source / "manifests", tmp_path / "manifests")
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "http.py").write_text(HTTP_FAKE)
    (tmp_path / "operator.py").write_text(KOPF_OPERATOR)
    (tmp_path / "scenario.yaml").write_text(KOPF_SCENARIO)
    assert _messages(tmp_path / "scenario.yaml") == (Verdict.PASSED, [])


def test_what_a_fake_stores_at_import_is_the_initial_external_state(tmp_path: Path) -> None:
    seeded = HTTP_FAKE + '\nasked.put("team-z", {"team": "team-z", "url": "before the scenario"})\n'
    path = _http_scenario(tmp_path, "seeded", "looked_up", GET_FAKE)
    (tmp_path / "fakes" / "http.py").write_text(seeded)
    (result,) = kamera_cli.check(path).scenarios
    assert result.verdict is Verdict.PASSED, [c.message for c in result.checks]
    (state,) = result.converged
    entries = sorted(o["metadata"]["name"] for o in state.objects if o["kind"] == "Entry")
    assert entries == ["inventory:team-a", "inventory:team-b", "inventory:team-z"]


def test_a_fake_keeping_state_in_a_global_is_a_determinism_finding_that_says_so(tmp_path: Path) -> None:
    target = tmp_path / "credential-leak"
    shutil.copytree(EXAMPLE, target)
    fake = target / "fakes" / "aws.py"
    text = fake.read_text().replace('keys = ExternalStore("aws")', 'keys = ExternalStore("aws")\nCOUNTER = [0]')
    fake.write_text(text.replace(
        "        key_id = next(k for k in (_key_id(UserName, n) for n in range(1, 1000)) if k not in keys)",
        "        COUNTER[0] += 1  # shared by every branch of the exploration\n"
        "        key_id = _key_id(UserName, COUNTER[0])"))
    assert "COUNTER[0] += 1" in fake.read_text()
    (result,) = kamera_cli.check(target / "fixed" / "scenario.yaml").scenarios
    check = next(c for c in result.checks if c.name == "deterministic")
    assert check.verdict is Verdict.FAILED
    summaries = [cex.summary for cex in check.counterexamples]
    assert any("a fake's state outside its ExternalStore?" in s for s in summaries), summaries


def test_a_fake_that_cannot_be_put_in_place_is_a_usage_error(tmp_path: Path) -> None:
    path = _http_scenario(tmp_path, "typo", "looked_up", GET_FAKE.replace("requests.get", "requests.gett"))
    result = CliRunner().invoke(app, ["check", str(path)], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "fake for 'requests.gett': cannot replace it: 'requests' has no attribute 'gett'" in result.output
    assert "Traceback" not in result.output


def test_memoization_sees_the_fakes_reads(tmp_path: Path) -> None:
    """After a crash the cluster is as before but the fake's state is not: a memo blind to the store's
    reads would replay the first outcome there (the same key id) and miss the leak."""
    target = tmp_path / "credential-leak"
    shutil.copytree(EXAMPLE, target)
    scenario = target / "scenario.yaml"
    text = scenario.read_text().replace("  perturbations:", "  explore: {memoize: false}\n  perturbations:")
    scenario.write_text(text)
    runs = [kamera_cli.check(path).scenarios[0] for path in (EXAMPLE / "scenario.yaml", scenario)]
    memo, plain = ((r.verdict, r.stats.states, r.stats.transitions, sorted(c.fingerprint for c in r.converged))
                   for r in runs)
    assert memo == plain and memo[0] is Verdict.FAILED
    assert runs[0].stats.memo_hits > 0 and runs[1].stats.memo_hits == 0


ALLOCATOR_FAKE = '''
from kamera_cli import ExternalStore

ids = ExternalStore("ids")


def allocate(owner):
    number = str(len(ids.items()) + 1)  # the next free number: who asks first gets 1
    ids.put(number, owner)
    return number
'''

ALLOCATOR_CONTROLLER = '''
import kamera_absent_ipam
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def reconcile(request):
    if not request.name.startswith("team-"):
        return None
    try:
        core.read_namespaced_config_map("id", request.name)
        return None
    except ApiException as exc:
        if exc.status != 404:
            raise
    number = kamera_absent_ipam.allocate(request.name)
    core.create_namespaced_config_map(request.name, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="id"), data={"id": number}))
'''

ALLOCATOR_SCENARIO = '''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: allocator-{reduction}}}
spec:
  controllers:
    - {{name: ids, entrypoint: "controllers.py:reconcile", for: v1/Namespace, owns: [v1/ConfigMap]}}
  fakes:
    - {{replace: kamera_absent_ipam.allocate, with: fakes/ipam.py:allocate}}
  seed:
    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team-a}}}}
    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team-b}}}}
  explore: {{reduction: {reduction}}}
'''


def test_partial_order_reduction_sees_two_steps_touching_the_same_store(tmp_path: Path) -> None:
    """Which team gets number 1 depends on the order: both orders must be explored, with or without
    reduction, so both report the two outcomes."""
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "ipam.py").write_text(ALLOCATOR_FAKE)
    (tmp_path / "controllers.py").write_text(ALLOCATOR_CONTROLLER)
    outcomes = []
    for reduction in ("none", "persistent"):
        path = tmp_path / f"{reduction}.yaml"
        path.write_text(ALLOCATOR_SCENARIO.format(reduction=reduction))
        (result,) = kamera_cli.check(path).scenarios
        deterministic = next(c for c in result.checks if c.name == "deterministic")
        outcomes.append((deterministic.verdict, sorted(c.fingerprint for c in result.converged)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] is Verdict.FAILED and len(outcomes[0][1]) == 2
