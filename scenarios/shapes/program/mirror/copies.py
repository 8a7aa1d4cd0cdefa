"""What both mirrors (``mirror.py`` and its fix ``mirror_fixed.py``) do with one event, and to one copy."""

from kubernetes import client

SOURCE, TARGET = "zeta", "alpha"


def write_copy(v1, name, data):
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, namespace=TARGET, labels={"mirrored-from": SOURCE}), data=data)
    try:
        current = v1.read_namespaced_config_map(name, TARGET)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        v1.create_namespaced_config_map(TARGET, body)
        return
    if current.data != data:
        current.data = data
        v1.replace_namespaced_config_map(name, TARGET, current)


def delete_copy(v1, name):
    try:
        v1.delete_namespaced_config_map(name, TARGET)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def handle(v1, sources, kind, cm):
    """Act on one event, with ``sources`` (what the mirror knows of the sources) as its cache."""
    labels = cm.metadata.labels or {}
    if cm.metadata.namespace == SOURCE and labels.get("mirror") == "true":
        if kind == "DELETED":
            sources.pop(cm.metadata.name, None)
            delete_copy(v1, cm.metadata.name)
        else:
            sources[cm.metadata.name] = cm.data or {}
            write_copy(v1, cm.metadata.name, cm.data or {})
    elif cm.metadata.namespace == TARGET and labels.get("mirrored-from") == SOURCE:
        if kind != "DELETED" and cm.metadata.name not in sources:
            delete_copy(v1, cm.metadata.name)
