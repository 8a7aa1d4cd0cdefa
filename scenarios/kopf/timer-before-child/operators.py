"""Two versions of a kopf operator whose timer reports on the ConfigMap the create handler makes.

The bug (a class real kopf operators have): kopf starts an object's timers when it first sees the
object — before, or while, the create handler runs. ``report_keys_buggy``'s first tick can come
before the ConfigMap exists, and ``read_namespaced_config_map`` raises a 404 nobody handles.
``report_keys_fixed`` treats "not created yet" as a temporary condition and lets kopf retry.
"""

import kopf
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def create_config(name, namespace, **_):
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config"}, "data": {"ready": "yes"}}
    kopf.adopt(child)
    core.create_namespaced_config_map(namespace, child)


def report_keys_buggy(name, namespace, **_):
    config_map = core.read_namespaced_config_map(f"{name}-config", namespace)
    return {"keys": len(config_map.data or {})}


def report_keys_fixed(name, namespace, **_):
    try:
        return report_keys_buggy(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            raise kopf.TemporaryError("the ConfigMap is not created yet", delay=10) from exc
        raise
