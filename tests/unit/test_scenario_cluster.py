"""``spec.cluster``: built-ins, nodes and pod rules, and each mistake located at its field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kamera_cli.errors import ScenarioError
from kamera_cli.scenario import load_scenario

HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  controllers: [{name: app, entrypoint: "app.py:reconcile", for: v1/ConfigMap}]
  seed: []
"""


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cluster: str, head: str = HEAD) -> object:
    (tmp_path / "scenario.yaml").write_text(head + textwrap.indent(textwrap.dedent(cluster), "  "))
    monkeypatch.chdir(tmp_path)
    return load_scenario("scenario.yaml", known_kind=lambda kind: True,  # type: ignore[arg-type]
                         check_entrypoint=lambda entrypoint, base_dir: None)


def _problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cluster: str, head: str = HEAD) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        _load(tmp_path, monkeypatch, cluster, head)
    return [p.render() for p in info.value.problems]


def test_defaults_all_and_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _load(tmp_path, monkeypatch, """\
        cluster:
          builtins: all
          pods:
            default: {ready: false}
            rules:
              - selector: {matchLabels: {app: db}}
                outcomes: [ready, crashLoop]
        """)
    cluster = s.cluster  # type: ignore[attr-defined]
    assert cluster.builtins == ("cronjob", "daemonset", "deployment", "endpoints", "endpointslice", "job", "kubelet",
                                "pvc-binder", "replicaset", "root-ca-publisher", "serviceaccount", "statefulset")
    assert [n["metadata"]["name"] for n in cluster.nodes] == ["node-1"]  # one node when the kubelet runs
    assert cluster.pod_default == ("running",)
    assert cluster.pod_rules[0].outcomes == ("ready", "crashLoop")
    assert cluster.pod_rules[0].position.line == 12


def test_deployment_brings_the_replicaset_controller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _load(tmp_path, monkeypatch, "cluster: {builtins: [deployment], nodes: 3}\n")
    assert s.cluster.builtins == ("deployment", "replicaset")  # type: ignore[attr-defined]
    assert len(s.cluster.nodes) == 3  # type: ignore[attr-defined]


def test_mistakes_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problems = _problems(tmp_path, monkeypatch, """\
        cluster:
          builtins: [deploymnet]
        """)
    assert len(problems) == 1 and problems[0].startswith("scenario.yaml:8:") and "builtins" in problems[0]


def test_rules_need_the_kubelet_and_valid_selectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problems = _problems(tmp_path, monkeypatch, """\
        cluster:
          builtins: [job]
          pods:
            rules:
              - selector: {matchExpressions: [{key: app, operator: Equals}]}
                outcomes: [failed]
        """)
    assert any("unknown operator 'Equals'" in p and "$.spec.cluster.pods.rules[0].selector.matchExpressions[0]"
               ".operator" in p for p in problems)
    assert any("pod outcomes need the kubelet built-in" in p for p in problems)


def test_a_controller_may_not_take_a_builtin_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = HEAD.replace("name: app", "name: job")
    problems = _problems(tmp_path, monkeypatch, "cluster: {builtins: [job]}\n", head)
    assert problems == ["scenario.yaml:5:24: $.spec.controllers[0].name: controller name 'job' is taken by a "
                        "built-in controller (rename the controller, or drop the built-in from "
                        "spec.cluster.builtins)"]


def test_no_controllers_and_no_builtins_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = HEAD.replace('[{name: app, entrypoint: "app.py:reconcile", for: v1/ConfigMap}]', "[]")
    assert any("no controllers to check" in p for p in _problems(tmp_path, monkeypatch, "", head))
    assert _load(tmp_path, monkeypatch, "cluster: {builtins: [kubelet]}\n", head) is not None


def test_nodes_must_be_node_manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problems = _problems(tmp_path, monkeypatch, """\
        cluster:
          builtins: [kubelet]
          nodes: [{apiVersion: v1, kind: Pod, metadata: {name: x}}]
        """)
    assert any("$.spec.cluster.nodes[0]" in p and "v1 Node manifest" in p for p in problems)


def test_a_rule_may_set_the_exit_code_of_failing_containers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _load(tmp_path, monkeypatch, """\
        cluster:
          builtins: [job, kubelet]
          pods:
            rules:
              - selector: {matchLabels: {app: batch}}
                outcomes: [failed, succeeded]
                exitCode: 42
              - selector: {}
                outcomes: [failed]
        """)
    rules = s.cluster.pod_rules  # type: ignore[attr-defined]
    assert [r.exit_code for r in rules] == [42, 1]
    problems = _problems(tmp_path, monkeypatch, """\
        cluster:
          builtins: [kubelet]
          pods:
            rules:
              - selector: {}
                outcomes: [failed]
                exitCode: 0
        """)
    assert len(problems) == 1 and "exitCode" in problems[0] and problems[0].startswith("scenario.yaml:13:")
