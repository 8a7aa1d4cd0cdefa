"""BUG: the controller copies the app's message into its Secret only when it creates the Secret.

A user who edits the app after that moment — in the middle of the controller's chain of reconciles
or any time later — is never heard: the Secret keeps the old message forever.
FIX (`fixed`): compare and update the child on every reconcile (level-triggered, not edge-triggered).
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _reconcile(request, update):
    if request.name != "app":
        return None
    app = core.read_namespaced_config_map(request.name, request.namespace)
    wanted = {"message": (app.data or {}).get("message", "")}
    name = f"{request.name}-copy"
    try:
        copy = core.read_namespaced_config_map(name, request.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        owner = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name=app.metadata.name,
                                        uid=app.metadata.uid, controller=True)
        core.create_namespaced_config_map(request.namespace, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, owner_references=[owner]), data=wanted))
        return None
    if update and copy.data != wanted:
        core.patch_namespaced_config_map(name, request.namespace, {"data": wanted})
    return None


def buggy(request):
    return _reconcile(request, update=False)


def fixed(request):
    return _reconcile(request, update=True)
