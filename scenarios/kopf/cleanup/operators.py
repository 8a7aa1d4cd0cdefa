"""Two versions of a kopf operator whose ``@kopf.on.cleanup`` handler hands its widgets over.

Every Widget gets a ConfigMap. When the operator stops (its pod is deleted or rolled: SIGTERM),
its cleanup handler marks each Widget's ConfigMap with the annotation ``HANDOVER_ANNOTATION`` (from
the Deployment's environment) so that the next operator knows what it takes over.

``hand_over_buggy`` assumes every Widget still has its ConfigMap. A user who deleted one (kopf's
create handler ran already: nothing makes it again) makes the patch answer 404, and kopf retries the
cleanup handler until the pod is killed. ``hand_over_fixed`` skips a Widget whose ConfigMap is gone.
"""

import os

import kopf
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
custom = client.CustomObjectsApi()


def create_config(spec, name, namespace, **_):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config"},
            "data": {"message": spec.get("message", "")}}
    kopf.adopt(body)
    core.create_namespaced_config_map(namespace, body)


def _mark(widget, annotation):
    meta = widget["metadata"]
    core.patch_namespaced_config_map(f"{meta['name']}-config", meta["namespace"],
                                     {"metadata": {"annotations": {annotation: "released"}}})


def hand_over_buggy(**_):
    annotation = os.environ["HANDOVER_ANNOTATION"]
    for widget in custom.list_cluster_custom_object("example.com", "v1", "widgets")["items"]:
        _mark(widget, annotation)


def hand_over_fixed(logger, **_):
    annotation = os.environ["HANDOVER_ANNOTATION"]
    for widget in custom.list_cluster_custom_object("example.com", "v1", "widgets")["items"]:
        try:
            _mark(widget, annotation)
        except ApiException as exc:
            if exc.status != 404:
                raise
            logger.info(f"{widget['metadata']['name']} has no config map to hand over")
