"""A kopf operator in the shape of crate-operator: its ``@kopf.on.login`` handler configures the
kubernetes_asyncio client every handler uses, and gives kopf the official client's credentials; a
``@kopf.on.startup`` handler takes its settings from the environment the Deployment sets.

Nothing here builds a client per call: without the login handler's ``load_kube_config()`` the
asyncio client would address its default host (localhost).  The finalizer's name comes from
``WIDGET_FINALIZER``; without it the startup handler fails and the operator never starts.
"""

import os

import kopf
from kubernetes_asyncio import client, config


@kopf.on.login()
async def login(**kwargs):
    try:
        config.load_incluster_config()
    except config.ConfigException:
        await config.load_kube_config()
    return kopf.login_via_client(**kwargs)


@kopf.on.startup()
def configure(settings, **_):
    settings.persistence.finalizer = os.environ["WIDGET_FINALIZER"]


@kopf.on.create("widgets")
async def create_config(spec, name, namespace, **_):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config"},
            "data": {"message": spec.get("message", "")}}
    kopf.adopt(body)
    async with client.ApiClient() as api:
        await client.CoreV1Api(api).create_namespaced_config_map(namespace, body)


@kopf.on.delete("widgets")
async def farewell(name, namespace, **_):
    async with client.ApiClient() as api:
        await client.CoreV1Api(api).delete_namespaced_config_map(f"{name}-config", namespace)
