"""A Database runs as a StatefulSet ``db``; the ConfigMap ``db-shards`` says which pod holds each shard.

Scaling down must move the shards off the pods that go away *before* the StatefulSet is scaled:
the StatefulSet controller deletes the highest ordinals as soon as it sees the new size.
``reconcile`` scales first and moves the data on its next pass (the bug); ``reconcile_fixed``
moves the data first and scales only once no shard lives on a condemned pod.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
custom = client.CustomObjectsApi()
apps = client.AppsV1Api()
core = client.CoreV1Api()


def _read(request):
    try:
        db = custom.get_namespaced_custom_object("example.com", "v1", request.namespace, "databases", request.name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    sts = apps.read_namespaced_stateful_set("db", request.namespace)
    shards = core.read_namespaced_config_map("db-shards", request.namespace)
    return db["spec"]["replicas"], sts, shards


def _scale(request, sts, want):
    if sts.spec.replicas != want:
        apps.patch_namespaced_stateful_set("db", request.namespace, {"spec": {"replicas": want}})
        return True
    return False


def _move(request, shards, want):
    """Shards on pods db-<want> and above move to db-0."""
    moved = {shard: (pod if int(pod.rsplit("-", 1)[1]) < want else "db-0") for shard, pod in shards.data.items()}
    if moved != shards.data:
        shards.data = moved
        core.replace_namespaced_config_map("db-shards", request.namespace, shards)
        return True
    return False


def reconcile(request):
    found = _read(request)
    if found is None:
        return None
    want, sts, shards = found
    if _scale(request, sts, want):
        return {"requeue": True}  # the data is moved on the next pass: too late
    _move(request, shards, want)
    return None


def reconcile_fixed(request):
    found = _read(request)
    if found is None:
        return None
    want, sts, shards = found
    if _move(request, shards, want):
        return {"requeue": True}
    _scale(request, sts, want)
    return None
