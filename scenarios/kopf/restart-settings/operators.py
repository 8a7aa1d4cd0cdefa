"""Two versions of a kopf operator that takes a setting from a ConfigMap.

Every Widget gets a ConfigMap carrying a greeting, set by an admin in the ``widgets-settings``
ConfigMap (a common shape: settings edited without a new rollout).

``load_settings`` (the buggy operator's ``@kopf.on.startup`` handler) reads the settings once, when
the operator starts, and requires them. The operator starts fine and goes on running when an admin
deletes the settings; but the next time it restarts (a crash, an eviction) its startup handler
fails, kopf starts no watch, and the operator never comes back. The fixed operator has no startup
handler: it reads the settings when it needs them, and falls back to a default when they are gone.
"""

import kopf
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _greeting():
    return core.read_namespaced_config_map("widgets-settings", "default").data["greeting"]


def load_settings(memo, **_):
    memo.greeting = _greeting()


def _create(name, namespace, greeting):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config", "labels": {"widget": name}},
            "data": {"greeting": greeting}}
    kopf.adopt(body)
    core.create_namespaced_config_map(namespace, body)


def create_config_buggy(name, namespace, memo, **_):
    _create(name, namespace, memo.greeting)


def create_config_fixed(name, namespace, **_):
    try:
        greeting = _greeting()
    except ApiException as exc:
        if exc.status != 404:
            raise
        greeting = "hello"
    _create(name, namespace, greeting)
