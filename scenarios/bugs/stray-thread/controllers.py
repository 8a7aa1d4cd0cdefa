"""A ConfigMap's backup copy, written from a background thread "so that the reconcile returns at once".

The bug: when the thread's call lands — while the reconcile still runs, after it returned, in the
middle of another controller's work — is up to the OS scheduler, which no test controls.  kamera
refuses every API call from a thread a reconcile started, so nothing the thread sends is applied, and
reports where the thread was started (docs/controllers.md, "Threads a reconcile starts").
``fixed`` writes the copy in the reconcile itself.
"""

import threading

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _wanted(request):
    """The ConfigMap to back up, or None (deleted, or not labelled ``backup: wanted``)."""
    try:
        source = core.read_namespaced_config_map(request.name, request.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return source if (source.metadata.labels or {}).get("backup") == "wanted" else None


def _write_backup(namespace, source):
    name = source.metadata.name
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=f"{name}-backup", labels={"backup-of": name}), data=source.data)
    try:
        core.create_namespaced_config_map(namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def buggy(request):
    source = _wanted(request)
    if source is not None:
        threading.Thread(target=_write_backup, args=(request.namespace, source), daemon=True).start()


def fixed(request):
    source = _wanted(request)
    if source is not None:
        _write_backup(request.namespace, source)
