"""The mirror of ``mirror.py``, fixed: it lists every ConfigMap first (its cache is in sync before
it acts, as an informer's ``HasSynced``), then watches from the list's resourceVersion."""

from copies import SOURCE, handle, write_copy
from kubernetes import client, config, watch


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    listed = v1.list_config_map_for_all_namespaces()
    sources = {cm.metadata.name: cm.data or {} for cm in listed.items
               if cm.metadata.namespace == SOURCE and (cm.metadata.labels or {}).get("mirror") == "true"}
    for name, data in sorted(sources.items()):
        write_copy(v1, name, data)
    for cm in listed.items:
        handle(v1, sources, "ADDED", cm)
    stream = watch.Watch().stream(v1.list_config_map_for_all_namespaces,
                                  resource_version=listed.metadata.resource_version)
    for event in stream:
        handle(v1, sources, event["type"], event["object"])
