"""A created object's story shows what the controller sent; the server's defaults are folded."""

from __future__ import annotations

from kamera_cli.judging.story import write_of
from kamera_cli.model.objects import ObjectRef
from kamera_cli.sim.labels import WriteRec

SENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
STORED = {**SENT, "spec": {"replicas": 2, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                           "strategy": {"type": "RollingUpdate"},
                           "template": {"spec": {"containers": [{"name": "c", "image": "nginx",
                                                                 "imagePullPolicy": "Always"}],
                                                 "restartPolicy": "Always"}}}}
REF = ObjectRef("apps/v1", "Deployment", "default", "web")


def test_defaults_are_folded_into_a_count() -> None:
    write = write_of(WriteRec("create", REF, "", None, STORED, sent=SENT))
    paths = [d.path for d in write.diff]
    assert "/spec/replicas" in paths and "/spec/template/spec/containers" in paths
    assert "/spec/revisionHistoryLimit" not in paths and "/spec/strategy/type" not in paths
    assert write.defaulted == 4  # revisionHistoryLimit, progressDeadlineSeconds, strategy.type, restartPolicy


def test_without_the_sent_body_every_leaf_is_shown() -> None:
    write = write_of(WriteRec("create", REF, "", None, STORED))
    assert "/spec/revisionHistoryLimit" in [d.path for d in write.diff]
    assert write.defaulted == 0
