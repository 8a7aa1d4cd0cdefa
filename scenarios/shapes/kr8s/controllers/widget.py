"""The quickstart controller written with kr8s's synchronous API, as kr8s's own examples are.

kamera routes kr8s's httpx session into its simulated API server and runs the sync API's coroutines
on the reconcile's own thread, so ``kr8s.api()`` reads no kubeconfig and nothing leaves the process.
"""

import kr8s
from kr8s.objects import ConfigMap, new_class

Widget = new_class(kind="Widget", version="example.com/v1", namespaced=True)


def reconcile(request):
    try:
        widget = Widget.get(request.name, namespace=request.namespace)
    except kr8s.NotFoundError:
        return None  # deleted: the garbage collector removes what it owned
    if widget.metadata.get("deletionTimestamp"):
        return None

    name = f"{request.name}-config"
    wanted = {"message": widget.spec.get("message", "")}
    try:
        config_map = ConfigMap.get(name, namespace=request.namespace)
        if config_map.raw.get("data") != wanted:
            config_map.patch({"data": wanted})
    except kr8s.NotFoundError:
        ConfigMap({
            "metadata": {
                "name": name,
                "namespace": request.namespace,
                "ownerReferences": [{"apiVersion": widget.version, "kind": widget.kind, "name": widget.name,
                                     "uid": widget.metadata.uid, "controller": True, "blockOwnerDeletion": True}],
            },
            "data": wanted,
        }).create()

    status = {"phase": "Ready", "observedGeneration": widget.metadata.get("generation", 1)}
    if widget.raw.get("status") != status:
        widget.patch({"status": status}, subresource="status")
    return None
