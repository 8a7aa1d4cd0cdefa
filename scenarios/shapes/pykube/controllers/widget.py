"""The quickstart controller written with pykube-ng, as pykube's README writes them.

kamera routes pykube's requests adapter into its simulated API server: ``KubeConfig.from_env()``
reads no kubeconfig and no service account, and nothing leaves the process.  Custom resources take
a merge patch (``update(is_strategic=False)``): a real API server refuses a strategic merge patch on
them with 415, and so does kamera's.
"""

import pykube

api = pykube.HTTPClient(pykube.KubeConfig.from_env())
Widget = pykube.object_factory(api, "example.com/v1", "Widget")


def reconcile(request):
    try:
        widget = Widget.objects(api, namespace=request.namespace).get(name=request.name)
    except pykube.exceptions.ObjectDoesNotExist:
        return None  # deleted: the garbage collector removes what it owned
    if widget.metadata.get("deletionTimestamp"):
        return None

    name = f"{request.name}-config"
    wanted = {"message": widget.obj["spec"].get("message", "")}
    config_map = pykube.ConfigMap.objects(api, namespace=request.namespace).get_or_none(name=name)
    if config_map is None:
        pykube.ConfigMap(api, {
            "metadata": {
                "name": name,
                "namespace": request.namespace,
                "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget", "name": request.name,
                                     "uid": widget.metadata["uid"], "controller": True,
                                     "blockOwnerDeletion": True}],
            },
            "data": wanted,
        }).create()
    elif config_map.obj.get("data") != wanted:
        config_map.obj["data"] = wanted
        config_map.update()

    status = {"phase": "Ready", "observedGeneration": widget.metadata.get("generation", 1)}
    if widget.obj.get("status") != status:
        widget.obj["status"] = status
        widget.update(is_strategic=False, subresource="status")
    return None
