"""The same controller on lightkube's ``AsyncClient``: ``async def reconcile``, one client per call."""

from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

Widget = create_namespaced_resource("example.com", "v1", "Widget", "widgets")


async def reconcile(request):
    client = AsyncClient(field_manager="widget-controller")
    try:
        try:
            widget = await client.get(Widget, request.name, namespace=request.namespace)
        except ApiError as exc:
            if exc.status.code == 404:
                return None
            raise
        if widget.metadata.deletionTimestamp:
            return None

        name = f"{request.name}-config"
        wanted = {"message": widget.spec.get("message", "")}
        try:
            config_map = await client.get(ConfigMap, name, namespace=request.namespace)
            if config_map.data != wanted:
                await client.patch(ConfigMap, name, {"data": wanted}, namespace=request.namespace,
                                   patch_type=PatchType.MERGE)
        except ApiError as exc:
            if exc.status.code != 404:
                raise
            owner = OwnerReference(apiVersion="example.com/v1", kind="Widget", name=request.name,
                                   uid=widget.metadata.uid, controller=True, blockOwnerDeletion=True)
            await client.create(ConfigMap(metadata=ObjectMeta(name=name, namespace=request.namespace,
                                                              ownerReferences=[owner]), data=wanted))

        status = {"phase": "Ready", "observedGeneration": widget.metadata.generation or 1}
        if widget.status != status:
            await client.patch(Widget.Status, request.name, {"status": status}, namespace=request.namespace,
                               patch_type=PatchType.MERGE)
        return None
    finally:
        await client.close()
