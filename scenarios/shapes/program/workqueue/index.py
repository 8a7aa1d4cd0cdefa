"""What both programs (``workqueue.py`` and its fix ``workqueue_fixed.py``) share: the main thread
that watches ConfigMaps in ``zeta`` and puts each change (its name and ``owner``) on a queue for two
worker threads, and what a worker does with one change: record the owner in ``alpha/owners``."""

import queue
import threading

from kubernetes import client, config, watch

SOURCE = "zeta"


def serve(work):
    """Start two daemon workers running ``work(v1, changes)``, then feed them from a watch, forever."""
    config.load_kube_config()
    v1 = client.CoreV1Api()
    changes = queue.Queue()
    for i in (1, 2):
        threading.Thread(target=work, args=(v1, changes), name=f"worker-{i}", daemon=True).start()
    for event in watch.Watch().stream(v1.list_namespaced_config_map, SOURCE):
        source = event["object"]
        owner = None if event["type"] == "DELETED" else (source.data or {}).get("owner", "")
        changes.put((source.metadata.name, owner))


def record(v1, name, owner):
    """Read the index, change one entry, write it back: the write carries the resourceVersion it read,
    so a write by someone else in between makes it fail with 409 Conflict."""
    index = v1.read_namespaced_config_map("owners", "alpha")
    data = dict(index.data or {})
    if owner is None:
        data.pop(name, None)
    else:
        data[name] = owner
    if data != (index.data or {}):
        index.data = data
        v1.replace_namespaced_config_map("owners", "alpha", index)
