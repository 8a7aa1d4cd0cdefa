"""BUG (Sieve's "stale state"): the controller decides from a cached list whether a child exists.

It names the child with `generateName` and then records the request on the app; that update
re-triggers it, and when its Secret cache has not yet seen the child it created a moment ago, it
creates a second one. (A reconcile caused by a Secret event would see that Secret: informers update
their cache before they deliver the event. The app's own update gives no such guarantee.) With a
fresh view every time, it never happens.
FIX (`fixed`): give the child a deterministic name (`<app>-token`) so a second create answers 409
AlreadyExists instead of duplicating — creation becomes idempotent whatever the cache says.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _reconcile(request, deterministic_name):
    if request.name != "app":
        return None
    app = core.read_namespaced_config_map(request.name, request.namespace)
    tokens = core.list_namespaced_secret(request.namespace, label_selector=f"app={request.name}").items
    if tokens:
        return None
    owner = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name=app.metadata.name,
                                    uid=app.metadata.uid, controller=True)
    meta = client.V1ObjectMeta(labels={"app": request.name}, owner_references=[owner])
    if deterministic_name:
        meta.name = f"{request.name}-token"
    else:
        meta.generate_name = f"{request.name}-token-"
    try:
        core.create_namespaced_secret(request.namespace, client.V1Secret(metadata=meta, string_data={"t": "x"}))
    except ApiException as exc:
        if exc.status != 409:
            raise
        return None  # it exists already
    requested = int((app.metadata.annotations or {}).get("example.com/tokens-created", "0")) + 1
    core.patch_namespaced_config_map(request.name, request.namespace, {"metadata": {"annotations": {
        "example.com/tokens-created": str(requested)}}})
    return None


def buggy(request):
    return _reconcile(request, deterministic_name=False)


def fixed(request):
    return _reconcile(request, deterministic_name=True)
