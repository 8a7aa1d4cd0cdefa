"""A report script a CronJob runs every five minutes, in the shape of many cluster-hygiene jobs: it
reads each Deployment's conditions and records the unavailable ones in a ConfigMap.

It has no null check on ``status.conditions``, which a Deployment lacks until the Deployment
controller first syncs it. As a CronJob that never matters: its first run is at the first schedule
point after it is created, long after that sync. Run at the start (a sweep's default first tick) it
races the built-ins and fails on the seeded Deployment: a false alarm, which ``schedule:`` removes.
"""

from kubernetes import client, config


def main():
    config.load_incluster_config()
    apps = client.AppsV1Api()
    v1 = client.CoreV1Api()
    unavailable = []
    for dep in apps.list_namespaced_deployment("default").items:
        available = next(c for c in dep.status.conditions if c.type == "Available")
        if available.status != "True":
            unavailable.append(dep.metadata.name)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="availability-report"),
                              data={"unavailable": ",".join(sorted(unavailable))})
    try:
        v1.replace_namespaced_config_map("availability-report", "default", body)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        v1.create_namespaced_config_map("default", body)
