"""The quickstart controller written for kubernetes_asyncio: ``async def reconcile``.

kamera runs each step on a fresh event loop whose time is virtual, so the ``asyncio.sleep`` below
(a controller "waiting for things to settle") costs nothing and keeps runs deterministic.
"""

import asyncio

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


async def reconcile(request):
    await config.load_kube_config()
    async with client.ApiClient() as api:
        custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
        try:
            widget = await custom.get_namespaced_custom_object(GROUP, VERSION, request.namespace, PLURAL,
                                                               request.name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        name = f"{request.name}-config"
        wanted = {"message": widget["spec"].get("message", "")}
        try:
            cm = await core.read_namespaced_config_map(name, request.namespace)
            if cm.data != wanted:
                cm.data = wanted
                await core.replace_namespaced_config_map(name, request.namespace, cm)
        except ApiException as exc:
            if exc.status != 404:
                raise
            owner = client.V1OwnerReference(api_version=f"{GROUP}/{VERSION}", kind="Widget", name=request.name,
                                            uid=widget["metadata"]["uid"], controller=True,
                                            block_owner_deletion=True)
            await core.create_namespaced_config_map(request.namespace, client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=name, namespace=request.namespace, owner_references=[owner]),
                data=wanted))
        await asyncio.sleep(5)  # virtual: no wall-clock time passes
        status = {"phase": "Ready", "observedGeneration": widget["metadata"].get("generation", 1)}
        if widget.get("status") != status:
            # kubernetes_asyncio sends a dict as a JSON Patch unless told otherwise (a real API server
            # answers 400 "a JSON Patch must be a JSON array", and so does kamera's)
            await custom.patch_namespaced_custom_object_status(GROUP, VERSION, request.namespace, PLURAL,
                                                               request.name, {"status": status},
                                                               _content_type="application/merge-patch+json")
    return None
