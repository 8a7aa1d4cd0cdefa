"""A namespace-cleanup operator in the shape of the public ones: a kopf timer on every Namespace
labelled ``cleanup: "true"`` deletes it once it holds no Pods.

The bug (a class real cleanup operators have): the timer decides on what its client read, and a
read can lag behind the cluster — a Pod created a moment ago is not in the list yet — so the timer
deletes a namespace that is in use, and the namespace's deletion takes the new Pod with it.
"""

import kopf
from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


@kopf.timer("namespaces", interval=300, labels={"cleanup": "true"}, id="cleanup")
def cleanup(name, logger, **_):
    pods = core.list_namespaced_pod(name).items
    if pods:
        return {"pods": len(pods)}
    logger.info(f"namespace {name} is empty: deleting it")
    core.delete_namespace(name)
    return {"deleted": True}
