"""BUG (Sieve's "intermediate state"): the controller records "provisioned" BEFORE creating the Secret.

If it crashes between the two writes, the restarted controller trusts the flag and never creates
the Secret. Without a crash every execution is fine, which is why tests on a calm cluster pass.
FIX (`fixed`): create the Secret first (tolerating 409 AlreadyExists on a retry), then set the flag —
or better, never trust the flag: check the Secret itself on every reconcile.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
FLAG = "example.com/provisioned"


def _secret(request):
    return client.V1Secret(metadata=client.V1ObjectMeta(name=f"{request.name}-creds", labels={"app": request.name}),
                           string_data={"password": "generated"})


def buggy(request):
    if request.name != "app":
        return None
    app = core.read_namespaced_config_map(request.name, request.namespace)
    if (app.metadata.annotations or {}).get(FLAG) == "true":
        return None
    core.patch_namespaced_config_map(request.name, request.namespace, {"metadata": {"annotations": {FLAG: "true"}}})
    core.create_namespaced_secret(request.namespace, _secret(request))
    return None


def fixed(request):
    if request.name != "app":
        return None
    app = core.read_namespaced_config_map(request.name, request.namespace)
    try:
        core.create_namespaced_secret(request.namespace, _secret(request))
    except ApiException as exc:
        if exc.status != 409:  # AlreadyExists: created before a crash — fine
            raise
    if (app.metadata.annotations or {}).get(FLAG) != "true":
        core.patch_namespaced_config_map(request.name, request.namespace,
                                         {"metadata": {"annotations": {FLAG: "true"}}})
    return None
