"""Two versions of a kopf operator that gives every Widget a ConfigMap it owns.

``buggy``: the child's name comes from ``generateName``, so the create handler is not idempotent.
When the operator crashes after creating the child but before kopf stored the handler's success
(kopf writes its progress in one patch after the handlers ran), kopf runs the handler again after
the restart and a second ConfigMap appears.

``fixed``: a fixed child name, and "already exists" treated as done — running the handler twice
does what running it once does.
"""

import kopf
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def child(name, spec, *, generate):
    meta = {"generateName": f"{name}-config-"} if generate else {"name": f"{name}-config"}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**meta, "labels": {"widget": name}},
            "data": {"message": spec.get("message", "")}}
    kopf.adopt(body)
    return body


def create_buggy(spec, name, namespace, **_):
    created = core.create_namespaced_config_map(namespace, child(name, spec, generate=True))
    return {"configMap": created.metadata.name}


def create_fixed(spec, name, namespace, **_):
    try:
        core.create_namespaced_config_map(namespace, child(name, spec, generate=False))
    except ApiException as exc:
        if exc.status != 409:  # already there: a previous attempt created it
            raise
    return {"configMap": f"{name}-config"}
