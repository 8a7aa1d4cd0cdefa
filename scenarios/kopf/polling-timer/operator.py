"""A "keep it asleep" operator: a kopf timer on each Sleep object polls the Deployments of the
namespace it names and scales every running one to zero, remembering its replicas in an annotation.

Nothing tells the timer when a Deployment changes (it watches Sleeps, not Deployments): it finds out
at its next tick. kamera must therefore not take a tick that found nothing to do as the last word
while a Deployment it listed changes afterwards.
"""

import kopf
from kubernetes import client, config

config.load_kube_config()
apps = client.AppsV1Api()


@kopf.timer("example.com", "v1", "sleeps", interval=30, id="keep-asleep")
def keep_asleep(spec, logger, **_):
    target = spec["namespace"]
    for dep in apps.list_namespaced_deployment(target).items:
        if dep.spec.replicas:
            logger.info(f"putting {dep.metadata.name} to sleep ({dep.spec.replicas} replicas)")
            apps.patch_namespaced_deployment(dep.metadata.name, target, {"metadata": {"annotations": {
                "example.com/replicas": str(dep.spec.replicas)}}})
            apps.patch_namespaced_deployment_scale(dep.metadata.name, target, {"spec": {"replicas": 0}})
