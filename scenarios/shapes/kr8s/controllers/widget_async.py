"""The same controller on kr8s's asyncio API: ``async def reconcile`` with ``await``ed kr8s objects."""

import kr8s
from kr8s.asyncio.objects import ConfigMap, new_class

Widget = new_class(kind="Widget", version="example.com/v1", namespaced=True, asyncio=True)


async def reconcile(request):
    try:
        widget = await Widget.get(request.name, namespace=request.namespace)
    except kr8s.NotFoundError:
        return None
    if widget.metadata.get("deletionTimestamp"):
        return None

    name = f"{request.name}-config"
    wanted = {"message": widget.spec.get("message", "")}
    try:
        config_map = await ConfigMap.get(name, namespace=request.namespace)
        if config_map.raw.get("data") != wanted:
            await config_map.patch({"data": wanted})
    except kr8s.NotFoundError:
        config_map = await ConfigMap({
            "metadata": {
                "name": name,
                "namespace": request.namespace,
                "ownerReferences": [{"apiVersion": widget.version, "kind": widget.kind, "name": widget.name,
                                     "uid": widget.metadata.uid, "controller": True, "blockOwnerDeletion": True}],
            },
            "data": wanted,
        })
        await config_map.create()

    status = {"phase": "Ready", "observedGeneration": widget.metadata.get("generation", 1)}
    if widget.raw.get("status") != status:
        await widget.patch({"status": status}, subresource="status")
    return None
