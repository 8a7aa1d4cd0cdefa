"""The mirror of ``../mirror`` as an event handler: kamera calls ``handle(event_type, obj)`` once per
event of one ConfigMap, in every order across objects. It keeps no cache: before deleting a copy it
asks the API server whether the source still exists."""

from kubernetes import client, config

SOURCE, TARGET = "zeta", "alpha"

config.load_kube_config()
v1 = client.CoreV1Api()


def handle(event_type, cm):
    labels = cm.metadata.labels or {}
    name = cm.metadata.name
    if cm.metadata.namespace == SOURCE and labels.get("mirror") == "true":
        if event_type == "DELETED":
            remove(name)
        else:
            copy(name, cm.data or {})
    elif cm.metadata.namespace == TARGET and labels.get("mirrored-from") == SOURCE and event_type != "DELETED":
        try:
            v1.read_namespaced_config_map(name, SOURCE)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            remove(name)  # an orphan: its source is gone


def copy(name, data):
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, namespace=TARGET, labels={"mirrored-from": SOURCE}), data=data)
    try:
        v1.replace_namespaced_config_map(name, TARGET, body)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        v1.create_namespaced_config_map(TARGET, body)


def remove(name):
    try:
        v1.delete_namespaced_config_map(name, TARGET)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
