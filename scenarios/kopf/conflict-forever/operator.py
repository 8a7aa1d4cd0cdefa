"""A kopf operator whose create handler is not safe to retry.

The bug (a class real kopf operators have): the child has a fixed name and the handler does not
expect it to exist already. When the operator crashes after the create but before kopf stored the
handler's success, the retried handler gets 409 AlreadyExists — and again on every retry, forever:
kopf logs the exception and backs off, the Widget never becomes handled. Fix: treat "already
exists" as done (../duplicate-child/operator_fixed.py, used by fixed/).
"""

import kopf
from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


@kopf.on.create("example.com", "v1", "widgets", backoff=30)
def create_config(spec, name, namespace, **_):
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"{name}-config", "labels": {"widget": name}},
            "data": {"message": spec.get("message", "")}}
    kopf.adopt(body)
    core.create_namespaced_config_map(namespace, body)
    return {"configMap": f"{name}-config"}
