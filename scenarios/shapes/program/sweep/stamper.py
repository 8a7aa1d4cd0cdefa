"""A periodic sweep: every tick, label each ConfigMap of the ``default`` namespace that lacks the
``owner`` label with the team named in the ``teams`` ConfigMap. Written as a cron-style job's body."""

from kubernetes import client, config


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    team = v1.read_namespaced_config_map("teams", "kube-system").data.get("default", "unowned")
    for cm in v1.list_namespaced_config_map("default").items:
        labels = cm.metadata.labels or {}
        if labels.get("owner") != team:
            v1.patch_namespaced_config_map(cm.metadata.name, "default", {"metadata": {"labels": {"owner": team}}})
