"""BUG: a deployer and an autoscaler both own a Deployment's spec.replicas.

Each write changes the spec, so the API server bumps metadata.generation, and each controller then
records status.observedGeneration — the usual "I have seen this generation" bookkeeping. The two
writes re-trigger each other forever: in a real cluster, a Deployment whose generation climbs
without end while its pods are scaled up and down.
FIX: one owner per field (the autoscaler owns replicas; the deployer leaves it out of its patch).
"""

from kubernetes import client, config

config.load_kube_config()
apps = client.AppsV1Api()


def _enforce(request, replicas):
    d = apps.read_namespaced_deployment(request.name, request.namespace)
    if d.spec.replicas != replicas:
        apps.patch_namespaced_deployment(request.name, request.namespace, {"spec": {"replicas": replicas}})
        return None
    observed = d.status.observed_generation if d.status else None
    if observed != d.metadata.generation:
        apps.patch_namespaced_deployment_status(
            request.name, request.namespace, {"status": {"observedGeneration": d.metadata.generation}})
    return None


def deployer(request):
    return _enforce(request, 3)


def autoscaler(request):
    return _enforce(request, 5)
