"""config-mirror: every selected ConfigMap gets a Secret with its data (over the namespace's defaults).

Hooks as plain functions: each takes metacontroller's request (a dict) and returns its response.
"""

import base64

DEFAULTS = "mirror-defaults"


def customize(request):
    """The namespace's defaults ConfigMap is a related object: its data is merged under each mirror."""
    return {"relatedResources": [{"apiVersion": "v1", "resource": "configmaps", "names": [DEFAULTS]}]}


def sync(request):
    config = request["object"]
    data = {}
    for related in request["related"].get("ConfigMap.v1", {}).values():
        data.update(related.get("data", {}))
    data.update(config.get("data", {}))
    name = f"{config['metadata']['name']}-mirror"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {"mirror-of": config["metadata"]["name"]}},
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in sorted(data.items())},
    }
    return {
        "labels": {"mirrored": "true"},
        "annotations": {"mirror.example.com/secret": name},
        "attachments": [secret],
    }


def finalize(request):
    """On deletion: no attachments any more; finalized once metacontroller has deleted the Secret."""
    return {"attachments": [], "finalized": not request["attachments"].get("Secret.v1")}
