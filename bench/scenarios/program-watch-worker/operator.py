"""A pod-cleanup operator in the shape of real watch-loop operators: the main thread watches the Pods
of ``apps`` and hands every event to a worker thread through a ``queue.Queue``; the worker keeps one
ConfigMap ``<pod>-meta`` per pod (created on ADDED, deleted with its pod on DELETED) and a summary
ConfigMap ``pods`` listing the pods it knows, rewritten after each event it handles."""

import queue
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NAMESPACE = "apps"


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    events = queue.Queue()
    threading.Thread(target=work, args=(v1, events), name="worker", daemon=True).start()
    for event in watch.Watch().stream(v1.list_namespaced_pod, NAMESPACE):
        events.put((event["type"], event["object"].metadata.name))


def work(v1, events):
    known = set()
    while True:
        kind, name = events.get()
        if kind == "DELETED":
            known.discard(name)
            try:
                v1.delete_namespaced_config_map(f"{name}-meta", NAMESPACE)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        else:
            known.add(name)
            try:
                v1.create_namespaced_config_map(NAMESPACE, client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name=f"{name}-meta"), data={"pod": name}))
            except ApiException as exc:
                if exc.status != 409:
                    raise
        summary = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="pods"),
                                     data={"pods": ",".join(sorted(known))})
        try:
            v1.replace_namespaced_config_map("pods", NAMESPACE, summary)
        except ApiException as exc:
            if exc.status != 404:
                raise
            v1.create_namespaced_config_map(NAMESPACE, summary)
