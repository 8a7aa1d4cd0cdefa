"""A kopf operator: every Widget gets a ConfigMap it owns.

The bug (a class real kopf operators have): the child's name comes from ``generateName``, so the
create handler is not idempotent. When the operator crashes after the create but before kopf stored
the handler's success, kopf runs the handler again on restart and a second ConfigMap appears.
"""

import kopf
from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


@kopf.on.create("example.com", "v1", "widgets")
def create_config(spec, name, namespace, **_):
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": f"{name}-config-", "labels": {"widget": name}},
        "data": {"message": spec.get("message", "")},
    }
    kopf.adopt(body)
    created = core.create_namespaced_config_map(namespace, body)
    return {"configMap": created.metadata.name}
