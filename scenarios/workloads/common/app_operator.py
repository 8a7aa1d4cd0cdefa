"""An App gets a Deployment; the App reports ready once the Deployment is available.

The pattern almost every operator has: create a workload, then wait for the control plane to roll
it out. Without built-in controllers nothing would ever make the Deployment available.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
custom = client.CustomObjectsApi()
apps = client.AppsV1Api()

GROUP, VERSION, PLURAL = "example.com", "v1", "apps"


def desired(app):
    name = app["metadata"]["name"]
    labels = {"app.kubernetes.io/name": name}
    owner = client.V1OwnerReference(api_version=f"{GROUP}/{VERSION}", kind="App", name=name,
                                    uid=app["metadata"]["uid"], controller=True, block_owner_deletion=True)
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name, namespace=app["metadata"]["namespace"], owner_references=[owner]),
        spec=client.V1DeploymentSpec(
            replicas=app["spec"].get("replicas", 1),
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="app", image=app["spec"]["image"])]),
            ),
        ),
    )


def get_app(request):
    try:
        return custom.get_namespaced_custom_object(GROUP, VERSION, request.namespace, PLURAL, request.name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def get_or_create_deployment(app, request):
    try:
        return apps.read_namespaced_deployment(request.name, request.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
    return apps.create_namespaced_deployment(request.namespace, desired(app))


def set_status(app, request, status):
    if app.get("status") != status:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, request.namespace, PLURAL, request.name,
                                                     {"status": status})


def reconcile(request):
    """Ready exactly when every desired replica is available."""
    app = get_app(request)
    if app is None:
        return None
    dep = get_or_create_deployment(app, request)
    want = dep.spec.replicas or 0
    available = (dep.status.available_replicas or 0) if dep.status else 0
    set_status(app, request, {"ready": available == want, "message": f"{available}/{want} available"})
    return None


def reconcile_by_conditions(request):
    """Waits until the Deployment controller observed the spec, then reads its conditions.

    There is no null check on ``status.conditions``: once ``observedGeneration`` is set, the
    Deployment controller has always written the Available condition (it is never null).
    """
    app = get_app(request)
    if app is None:
        return None
    dep = get_or_create_deployment(app, request)
    if dep.status is None or dep.status.observed_generation != dep.metadata.generation:
        return None  # the Deployment's next status write brings us back
    available = next(c for c in dep.status.conditions if c.type == "Available")
    set_status(app, request, {"ready": available.status == "True", "message": available.reason})
    return None
