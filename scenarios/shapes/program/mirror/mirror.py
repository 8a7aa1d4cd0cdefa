"""A mirror, written as a plain watch loop: copies ConfigMaps labelled ``mirror: "true"`` from the
``zeta`` namespace into ``alpha``, and deletes copies in ``alpha`` whose source it does not know.

The bug: it acts on each event as it arrives, using what earlier events told it. During the initial
listing the copy ``alpha/settings`` is delivered before its source ``zeta/settings`` (events come in
namespace/name order), so the mirror deletes a copy whose source exists — then recreates it. A
real informer-based controller waits for its cache to sync (``HasSynced``) before acting.
"""

from copies import handle
from kubernetes import client, config, watch


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    sources = {}  # name -> data, as the events told it
    for event in watch.Watch().stream(v1.list_config_map_for_all_namespaces):
        # event["object"] is a V1ConfigMap, as the official client deserializes it
        handle(v1, sources, event["type"], event["object"])
