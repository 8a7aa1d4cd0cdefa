"""BUG: two controllers each enforce their own desired value of the same field.

Each write re-triggers the other one; the cluster never settles. In a real cluster this shows as
a ConfigMap whose resourceVersion climbs forever and API-server load from nowhere.
FIX: one owner per field (e.g. the autoscaler owns `replicas`, the deployer stops writing it).
"""

from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


def _enforce(request, value):
    if request.name != "web":
        return None
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if (cm.data or {}).get("replicas") != value:
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"replicas": value}})
    return None


def deployer(request):
    return _enforce(request, "3")


def autoscaler(request):
    return _enforce(request, "5")
