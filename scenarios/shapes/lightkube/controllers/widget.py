"""The quickstart controller written with lightkube's ``Client``, as lightkube's documentation writes them.

kamera routes lightkube's httpx client into its simulated API server: ``Client()`` reads no
kubeconfig and no service account, and nothing leaves the process.
"""

from lightkube import ApiError, Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

Widget = create_namespaced_resource("example.com", "v1", "Widget", "widgets")
client = Client(field_manager="widget-controller")


def reconcile(request):
    try:
        widget = client.get(Widget, request.name, namespace=request.namespace)
    except ApiError as exc:
        if exc.status.code == 404:
            return None  # deleted: the garbage collector removes what it owned
        raise
    if widget.metadata.deletionTimestamp:
        return None

    name = f"{request.name}-config"
    wanted = {"message": widget.spec.get("message", "")}
    try:
        config_map = client.get(ConfigMap, name, namespace=request.namespace)
        if config_map.data != wanted:
            client.patch(ConfigMap, name, {"data": wanted}, namespace=request.namespace,
                         patch_type=PatchType.MERGE)
    except ApiError as exc:
        if exc.status.code != 404:
            raise
        owner = OwnerReference(apiVersion="example.com/v1", kind="Widget", name=request.name,
                               uid=widget.metadata.uid, controller=True, blockOwnerDeletion=True)
        client.create(ConfigMap(metadata=ObjectMeta(name=name, namespace=request.namespace,
                                                    ownerReferences=[owner]), data=wanted))

    status = {"phase": "Ready", "observedGeneration": widget.metadata.generation or 1}
    if widget.status != status:
        client.patch(Widget.Status, request.name, {"status": status}, namespace=request.namespace,
                     patch_type=PatchType.MERGE)
    return None
