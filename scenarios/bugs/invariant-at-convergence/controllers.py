"""BUG: the controller lists the apps but only ever provisions the first one it finds.

Every execution converges, to the same state, with no error — and one app has no credentials.
Only a domain invariant catches it.
FIX: provision the app named by the request (`request.name`), not `items[0]` of a list.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def reconcile(request):
    apps = core.list_namespaced_config_map(request.namespace, label_selector="role=app").items
    if not apps:
        return None
    app = apps[0]  # the bug
    name = f"{app.metadata.name}-creds"
    try:
        core.read_namespaced_secret(name, request.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        secret = client.V1Secret(
            metadata=client.V1ObjectMeta(name=name, labels={"app": app.metadata.name}),
            string_data={"password": "generated"},
        )
        core.create_namespaced_secret(request.namespace, secret)
    return None
