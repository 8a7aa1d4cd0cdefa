"""Two versions of a kopf operator that gives every Widget a ConfigMap.

``buggy`` forgets ``kopf.adopt``: the ConfigMap has no ownerReference, so when the Widget is deleted
the garbage collector has nothing to follow and the ConfigMap is left behind. ``fixed`` adopts it.
"""

import kopf
from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


def _create(spec, name, namespace, *, adopt):
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"{name}-config", "labels": {"widget": name}},
            "data": {"message": spec.get("message", "")}}
    if adopt:
        kopf.adopt(body)
    core.create_namespaced_config_map(namespace, body)


def create_buggy(spec, name, namespace, **_):
    _create(spec, name, namespace, adopt=False)


def create_fixed(spec, name, namespace, **_):
    _create(spec, name, namespace, adopt=True)
