"""A pod inventory written as many small operators are: a script whose top level is the watch loop,
run with `python inventory.py` (no main function). It keeps a ConfigMap listing the pods of the
`shop` namespace, but forgets to take a deleted pod off the list."""

from kubernetes import client, config, watch

from listing import publish

config.load_kube_config()
core = client.CoreV1Api()
pods = set()

for event in watch.Watch().stream(core.list_namespaced_pod, "shop"):
    name = event["object"].metadata.name
    if event["type"] in ("ADDED", "MODIFIED"):
        pods.add(name)
    publish(core, pods)
