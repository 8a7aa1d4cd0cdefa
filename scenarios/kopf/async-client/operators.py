"""A kopf operator with async handlers that talk to the cluster through kubernetes_asyncio.

The create handler makes the Widget's ConfigMap; a field handler keeps its ``message`` in step with
the Widget's ``spec.message``. ``follow_buggy`` is registered for a misspelt field
(``spec.mesage``): kopf never sees that field change, the handler never runs, and the ConfigMap keeps
the old message after a user edits the Widget. ``operator_fixed.py`` names the right field.
"""

import kopf
from kubernetes_asyncio import client, config


async def _core():
    await config.load_kube_config()
    return client.ApiClient()


async def create_config(spec, name, namespace, **_):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config"},
            "data": {"message": spec.get("message", "")}}
    kopf.adopt(body)
    async with await _core() as api:
        await client.CoreV1Api(api).create_namespaced_config_map(namespace, body)


async def follow(new, name, namespace, **_):
    async with await _core() as api:
        await client.CoreV1Api(api).patch_namespaced_config_map(
            f"{name}-config", namespace, {"data": {"message": new or ""}})
