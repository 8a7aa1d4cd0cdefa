"""A pod-annotation operator in the shape most hand-written Python operators have: a watch thread
feeding a de-duplicating work queue (a list and a ``dirty`` set under a ``threading.Condition``), and a
worker thread that takes one pod name at a time and reconciles it level-triggered — it reads the Pod
(a 404 means it is gone), keeps a ConfigMap ``<pod>-info`` per live pod and removes the one of a
deleted pod, and rewrites an index ConfigMap listing the pods it has seen alive. The main thread
starts both and joins them, as a real entry point does."""

import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NAMESPACE = "apps"


class WorkQueue:
    """Keys waiting for the worker; a key already waiting is not queued twice."""

    def __init__(self):
        self.cond = threading.Condition(threading.Lock())
        self.items = []
        self.dirty = set()

    def add(self, key):
        with self.cond:
            if key not in self.dirty:
                self.dirty.add(key)
                self.items.append(key)
                self.cond.notify()

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            key = self.items.pop(0)
            self.dirty.discard(key)
            return key


def watcher(v1, queue):
    for event in watch.Watch().stream(v1.list_namespaced_pod, NAMESPACE):
        queue.add(event["object"].metadata.name)


def reconcile(v1, name, alive):
    try:
        pod = v1.read_namespaced_pod(name, NAMESPACE)
    except ApiException as exc:
        if exc.status != 404:
            raise
        pod = None
    if pod is None:
        alive.discard(name)
        try:
            v1.delete_namespaced_config_map(f"{name}-info", NAMESPACE)
        except ApiException as exc:
            if exc.status != 404:
                raise
    else:
        alive.add(name)
        info = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"{name}-info", labels={"pod": name}),
                                  data={"image": pod.spec.containers[0].image})
        try:
            v1.create_namespaced_config_map(NAMESPACE, info)
        except ApiException as exc:
            if exc.status != 409:
                raise
    index = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="index"), data={"pods": ",".join(sorted(alive))})
    try:
        v1.replace_namespaced_config_map("index", NAMESPACE, index)
    except ApiException as exc:
        if exc.status != 404:
            raise
        v1.create_namespaced_config_map(NAMESPACE, index)


def worker(v1, queue):
    alive = set()
    while True:
        reconcile(v1, queue.get(), alive)


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    queue = WorkQueue()
    threads = [threading.Thread(target=watcher, args=(v1, queue), name="watcher", daemon=True),
               threading.Thread(target=worker, args=(v1, queue), name="worker", daemon=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
