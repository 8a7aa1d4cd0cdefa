"""A fresh cluster's own objects (``spec.cluster.systemObjects``): node Leases, ``kube-root-ca.crt`` and
the ``default`` ServiceAccount in every namespace when their built-ins run; switchable off."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.model.result import Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario
from tests.sim.test_programs import HEAD


def _converged(tmp_path: Path, cluster: str, seed: str = "[]") -> Any:
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(f"""\
        cluster: {cluster}
        controllers: []
        seed: {seed}
        """), "  "))
    result = explore(load_scenario(path)).result
    assert result.verdict is Verdict.PASSED, [(c.name, c.message) for c in result.checks]
    (converged,) = result.converged
    return converged


def _names(objects: Any, kind: str) -> list[str]:
    return sorted(f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objects if o["kind"] == kind)


def test_the_cluster_starts_with_what_its_built_ins_would_have_published(tmp_path: Path) -> None:
    converged = _converged(tmp_path, "{builtins: [root-ca-publisher, serviceaccount], nodes: 2}",
                           "[{apiVersion: v1, kind: Namespace, metadata: {name: shop}}]")
    assert not any(step.writes for step in converged.path)  # the built-ins' first syncs find nothing to do
    namespaces = ["default", "kube-node-lease", "kube-public", "kube-system", "shop"]
    assert _names(converged.objects, "ConfigMap") == [f"{ns}/kube-root-ca.crt" for ns in namespaces]
    assert _names(converged.objects, "ServiceAccount") == [f"{ns}/default" for ns in namespaces]
    leases = [o for o in converged.objects if o["kind"] == "Lease"]
    assert _names(leases, "Lease") == ["kube-node-lease/node-1", "kube-node-lease/node-2"]
    nodes = {o["metadata"]["name"]: o["metadata"]["uid"] for o in converged.objects if o["kind"] == "Node"}
    for lease in leases:
        (owner,) = lease["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("Node", nodes[lease["metadata"]["name"]])
        assert lease["spec"]["holderIdentity"] == lease["metadata"]["name"]
        assert lease["spec"]["renewTime"] == "2026-01-01T00:00:00.000000Z"


def test_without_the_built_ins_only_the_leases_are_seeded(tmp_path: Path) -> None:
    converged = _converged(tmp_path, "{builtins: [endpoints], nodes: 1}")
    assert _names(converged.objects, "Lease") == ["kube-node-lease/node-1"]
    assert _names(converged.objects, "ConfigMap") == [] and _names(converged.objects, "ServiceAccount") == []


@pytest.mark.parametrize("cluster", ["{builtins: [root-ca-publisher, serviceaccount], nodes: 1, systemObjects: false}"])
def test_switched_off_the_built_ins_publish_them_as_steps(tmp_path: Path, cluster: str) -> None:
    converged = _converged(tmp_path, cluster)
    assert _names(converged.objects, "Lease") == []
    assert len(_names(converged.objects, "ConfigMap")) == 4 and any(step.writes for step in converged.path)


def test_a_seeded_object_of_that_name_is_kept(tmp_path: Path) -> None:
    seed = "[{apiVersion: v1, kind: ServiceAccount, metadata: {name: default, labels: {mine: 'yes'}}}]"
    converged = _converged(tmp_path, "{builtins: [serviceaccount]}", seed)
    mine = next(o for o in converged.objects
                if o["kind"] == "ServiceAccount" and o["metadata"]["namespace"] == "default")
    assert mine["metadata"]["labels"] == {"mine": "yes"}
