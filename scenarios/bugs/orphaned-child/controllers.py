"""BUG: the controller creates a child Secret without an ownerReference to its parent.

Deleting the parent leaves the Secret behind forever: nothing owns it, so the garbage collector
never collects it.
FIX: set `owner_references=[V1OwnerReference(api_version="v1", kind="ConfigMap", name=parent.name,
uid=parent.metadata.uid, controller=True)]` on the child (see `fixed` below).
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _reconcile(request, with_owner):
    if not request.name.startswith("db-"):
        return None
    try:
        parent = core.read_namespaced_config_map(request.name, request.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    if parent.metadata.deletion_timestamp:
        return None
    name = f"{request.name}-password"
    try:
        core.read_namespaced_secret(name, request.namespace)
        return None
    except ApiException as exc:
        if exc.status != 404:
            raise
    owners = None
    if with_owner:
        owners = [client.V1OwnerReference(api_version="v1", kind="ConfigMap", name=parent.metadata.name,
                                          uid=parent.metadata.uid, controller=True)]
    meta = client.V1ObjectMeta(name=name, labels={"parent": request.name}, owner_references=owners)
    core.create_namespaced_secret(request.namespace, client.V1Secret(metadata=meta, string_data={"pw": "x"}))
    return None


def buggy(request):
    return _reconcile(request, with_owner=False)


def fixed(request):
    return _reconcile(request, with_owner=True)
