"""A namespace-cleanup sweep in the shape of the public ones: its settings come from a file its Helm
chart mounts from a ConfigMap (``/config/settings.yaml``, read once at import), and it never deletes
the namespace it runs in, which it reads from its service-account mount, as in-cluster code does.

Each tick deletes every namespace that holds nothing: no ConfigMap except the ``kube-root-ca.crt``
every namespace gets, and no Lease, unless the settings protect it.
"""

from pathlib import Path

import yaml
from kubernetes import client, config

SETTINGS = yaml.safe_load(Path("/config/settings.yaml").read_text())
OWN_NAMESPACE = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read().strip()
PROTECTED = {OWN_NAMESPACE, *SETTINGS["protected"]}


def is_empty(v1, coordination, namespace):
    config_maps = [cm for cm in v1.list_namespaced_config_map(namespace).items
                   if cm.metadata.name != "kube-root-ca.crt"]
    return not config_maps and not coordination.list_namespaced_lease(namespace).items


def main():
    config.load_incluster_config()
    v1 = client.CoreV1Api()
    coordination = client.CoordinationV1Api()
    for ns in v1.list_namespace().items:
        name = ns.metadata.name
        if name in PROTECTED or ns.status.phase != "Active":
            continue
        if is_empty(v1, coordination, name):
            print(f"deleting empty namespace {name}")
            v1.delete_namespace(name)
