"""Scaling a Dask worker group down, the dask-kubernetes way: ask the scheduler which workers to retire.

The group is a ConfigMap (``replicas``, and the scheduler's URL); its workers are Pods labelled
``dask: worker``.  With more workers than replicas, the operator asks the scheduler over HTTP to
retire the surplus (``POST /api/v1/retire_workers``), and deletes the Pods of the workers the
scheduler named.  The scheduler forgets a retired worker's tasks and sends it no more work at once.

``buggy`` trusts that the deletes follow the retirement: a crash between the two leaves a retired
worker's Pod running, and the restarted operator, still seeing one Pod too many, asks the scheduler to
retire *another* worker — whose Pod it deletes.  The group ends with its one Pod, but that Pod is a
worker the scheduler has retired: a cluster with no worker doing anything.  ``fixed`` first finishes a
retirement an earlier attempt left half done (deletes the Pods of workers the scheduler already
retired), and only then retires more.
"""

import requests
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()


def _group(request):
    try:
        group = core.read_namespaced_config_map(request.name, request.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return group if (group.metadata.labels or {}).get("dask") == "group" else None


def _worker_pods(namespace):
    pods = core.list_namespaced_pod(namespace, label_selector="dask=worker").items
    return sorted(p.metadata.name for p in pods if p.metadata.deletion_timestamp is None)


def _delete(namespace, name):
    try:
        core.delete_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _retire(namespace, scheduler, pods, replicas):
    surplus = len(pods) - replicas
    if surplus <= 0:
        return
    answer = requests.post(f"{scheduler}/api/v1/retire_workers", json={"n": surplus}, timeout=10)
    answer.raise_for_status()
    for name in answer.json()["workers"]:
        _delete(namespace, name)


def buggy(request):
    group = _group(request)
    if group is None:
        return
    _retire(request.namespace, group.data["scheduler"], _worker_pods(request.namespace), int(group.data["replicas"]))


def fixed(request):
    group = _group(request)
    if group is None:
        return
    scheduler, pods = group.data["scheduler"], _worker_pods(request.namespace)
    known = requests.get(f"{scheduler}/api/v1/workers", timeout=10)
    known.raise_for_status()
    for worker in known.json()["workers"]:  # a retirement an earlier attempt did not finish
        if worker["status"] == "retired" and worker["name"] in pods:
            _delete(request.namespace, worker["name"])
            pods.remove(worker["name"])
    _retire(request.namespace, scheduler, pods, int(group.data["replicas"]))
