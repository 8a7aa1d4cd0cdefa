"""The inventory script, fixed: a DELETED event takes the pod off the list."""

from kubernetes import client, config, watch

from listing import publish

config.load_kube_config()
core = client.CoreV1Api()
pods = set()

for event in watch.Watch().stream(core.list_namespaced_pod, "shop"):
    name = event["object"].metadata.name
    if event["type"] == "DELETED":
        pods.discard(name)
    else:
        pods.add(name)
    publish(core, pods)
