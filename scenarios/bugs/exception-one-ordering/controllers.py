"""BUG: the consumer assumes the producer has already filled in the shared endpoint.

In most orders the producer runs first and all is well; when the consumer runs first it raises
KeyError. Controller-runtime-style requeue hides it in production — until the retry storm.
FIX: treat a missing key as "not ready yet": `endpoint = shared.data.get("endpoint")`, and return
(the producer's write re-triggers this controller through its watch).
"""

from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


def producer(request):
    if request.name != "shared":
        return None
    shared = core.read_namespaced_config_map("shared", request.namespace)
    if "endpoint" not in (shared.data or {}):
        core.patch_namespaced_config_map("shared", request.namespace, {"data": {"endpoint": "10.0.0.7:443"}})
    return None


def consumer(request):
    if request.name != "client":
        return None
    shared = core.read_namespaced_config_map("shared", request.namespace)
    endpoint = shared.data["endpoint"]  # the bug: KeyError when the producer has not run yet
    mine = core.read_namespaced_config_map("client", request.namespace)
    if (mine.data or {}).get("endpoint") != endpoint:
        core.patch_namespaced_config_map("client", request.namespace, {"data": {"endpoint": endpoint}})
    return None
