"""BUG: the controller announces "ready" first and creates what "ready" promises afterwards.

It converges to a correct state, but between two reconciles a reader sees an app marked ready whose
credentials do not exist yet (and if the controller crashed there, it would stay that way).
FIX: create the Secret first, then mark the app ready — in the same reconcile.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def reconcile(request):
    if request.name != "web":
        return None
    app = core.read_namespaced_config_map(request.name, request.namespace)
    annotations = app.metadata.annotations or {}
    if annotations.get("example.com/ready") != "true":
        core.patch_namespaced_config_map(
            request.name, request.namespace, {"metadata": {"annotations": {"example.com/ready": "true"}}}
        )
        return None  # the annotation write triggers the next reconcile, which creates the secret
    try:
        core.read_namespaced_secret(f"{request.name}-creds", request.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        core.create_namespaced_secret(
            request.namespace,
            client.V1Secret(metadata=client.V1ObjectMeta(name=f"{request.name}-creds"),
                            string_data={"password": "generated"}),
        )
    return None
