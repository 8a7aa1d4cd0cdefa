"""A small, correct controller: every Widget gets a ConfigMap it owns, then reports Ready.

Written exactly as it would run in a cluster, with the official client and a kubeconfig; kamera
routes every call to its simulated API server.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
custom = client.CustomObjectsApi()
core = client.CoreV1Api()

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


def reconcile(request):
    try:
        widget = custom.get_namespaced_custom_object(GROUP, VERSION, request.namespace, PLURAL, request.name)
    except ApiException as exc:
        if exc.status == 404:
            return None  # deleted: the garbage collector removes what it owned
        raise
    if widget["metadata"].get("deletionTimestamp"):
        return None

    name = f"{request.name}-config"
    wanted = {"message": widget["spec"].get("message", "")}
    try:
        cm = core.read_namespaced_config_map(name, request.namespace)
        if cm.data != wanted:
            cm.data = wanted
            core.replace_namespaced_config_map(name, request.namespace, cm)
    except ApiException as exc:
        if exc.status != 404:
            raise
        owner = client.V1OwnerReference(
            api_version=f"{GROUP}/{VERSION}", kind="Widget", name=request.name,
            uid=widget["metadata"]["uid"], controller=True, block_owner_deletion=True,
        )
        body = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, namespace=request.namespace, owner_references=[owner]),
            data=wanted,
        )
        core.create_namespaced_config_map(request.namespace, body)

    status = {"phase": "Ready", "observedGeneration": widget["metadata"].get("generation", 1)}
    if widget.get("status") != status:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, request.namespace, PLURAL, request.name, {"status": status}
        )
    return None
