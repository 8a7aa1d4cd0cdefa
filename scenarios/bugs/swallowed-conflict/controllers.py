"""BUG: the controller catches 409 Conflict on its update and gives up silently.

When another writer wins the race, the update is lost and nothing ever retries it: the app stays
unconfigured. On a calm cluster there is never a conflict, so it never shows.
FIX (`fixed`): let the ApiException propagate (or return `Result(requeue=True)`): the request is
retried and the next attempt, built on a fresh read, succeeds.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _reconcile(request, swallow):
    if request.name != "app":
        return None
    app = core.read_namespaced_config_map(request.name, request.namespace)
    if (app.data or {}).get("configured") == "true":
        return None
    app.data = {**(app.data or {}), "configured": "true"}
    try:
        core.replace_namespaced_config_map(request.name, request.namespace, app)
    except ApiException as exc:
        if exc.status == 409 and swallow:
            return None  # the bug: the update is lost and nothing retries it
        raise
    return None


def buggy(request):
    return _reconcile(request, swallow=True)


def fixed(request):
    return _reconcile(request, swallow=False)
