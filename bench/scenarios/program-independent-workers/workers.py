"""Three worker threads, each writing a ConfigMap of its own once; the main thread joins them, then
watches Secrets (a kind nobody writes here) as a program's main loop does."""

import threading

from kubernetes import client, config, watch

WORKERS = 3


def work(v1, i):
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"out-{i}"), data={"worker": str(i)})
    v1.create_namespaced_config_map("default", body)


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    threads = [threading.Thread(target=work, args=(v1, i), name=f"worker-{i}") for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _event in watch.Watch().stream(v1.list_namespaced_secret, "default"):
        pass
