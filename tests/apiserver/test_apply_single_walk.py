"""Apply's joint walk (``merge_applied``) answers exactly as the two walks it replaced: the field set
of ``config_fields`` and the object of ``merge_config``, and the same first error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kamera_cli.apiserver as apiserver_pkg
from kamera_cli.apiserver.patch.apply import WalkContext, config_fields, merge_applied, merge_config
from kamera_cli.apiserver.patch.errors import PatchError
from kamera_cli.apiserver.patch.fieldmeta import builtin_field_lookup
from kamera_cli.apiserver.patch.fieldsv1 import Path as FieldPath

DEFS: dict[str, Any] = json.loads(
    (Path(apiserver_pkg.__file__).parent / "data" / "builtin.json").read_text(encoding="utf-8"))["definitions"]
DEPLOY = builtin_field_lookup(DEFS, "io.k8s.api.apps.v1.Deployment")


def _deploy(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", **meta}, "spec": spec}


def _pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list(containers), **spec}}}


C1 = {"name": "app", "image": "app:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
C2 = {"name": "side", "image": "side:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": None}]}
LIVE = _deploy({"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, **_pod(C1, C2)},
               labels={"a": "1"}, finalizers=["x"], uid="u", resourceVersion="3",
               ownerReferences=[{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "1"}])

CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, LIVE),  # a create: everything is new
    (LIVE, LIVE),  # a re-apply of what is stored
    (LIVE, _deploy({"replicas": 3, **_pod(C1)})),  # a scalar changes, a container is dropped
    (LIVE, _deploy({"replicas": None, **_pod({**C1, "image": "app:2", "ports": [{"containerPort": 81}]},
                                               {"name": "new", "image": "n", "args": ["a"]})})),
    (LIVE, _deploy({**_pod(C2, C1, tolerations=[{"key": "k"}])}, finalizers=["y", "x"],
                   ownerReferences=[{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "2"}])),
    (LIVE, _deploy({"selector": {"matchLabels": {"b": "2"}, "matchExpressions": []}, "strategy": {}},
                   labels={"a": None, "b": {"nested": 1}})),
    (_deploy({"replicas": {"odd": 1}, "template": "text"}), _deploy({"replicas": 2, **_pod(C1)})),
    (_deploy({"template": {"spec": {"containers": "text"}}}), _deploy(_pod(C1, C2))),
]


@pytest.mark.parametrize("live, config", CASES)
def test_joint_walk_matches_the_separate_walks(live: dict[str, Any], config: dict[str, Any]) -> None:
    expected: set[FieldPath] = set()
    config_fields(config, None, (), (), WalkContext(DEPLOY), expected)
    merged_alone = merge_config(live, config, None, (), (), WalkContext(DEPLOY))
    merged, fields = merge_applied(live, config, WalkContext(DEPLOY))
    assert fields == expected
    assert merged == merged_alone
    assert (merged is live) == (merged_alone is live)


def test_joint_walk_reports_the_first_error_of_config_fields() -> None:
    # The joint walk collects the new container "b" before merging into the stored "a", so it meets
    # b's broken env first; config_fields (and so the error) names a's ports, the first in order.
    live = _deploy(_pod({"name": "a"}))
    config = _deploy(_pod({"name": "a", "ports": [{"containerPort": 1}, {"containerPort": 1}]},
                          {"name": "b", "env": [{"value": "no name"}]}))
    with pytest.raises(PatchError) as alone:
        config_fields(config, None, (), (), WalkContext(DEPLOY), set())
    with pytest.raises(PatchError) as joint:
        merge_applied(live, config, WalkContext(DEPLOY))
    assert str(joint.value) == str(alone.value)
    assert joint.value.causes == alone.value.causes
