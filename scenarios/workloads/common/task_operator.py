"""A Task runs a Job; the Task is Done when the Job succeeded.

``reconcile`` has the bug: it only ever looks for success, so a Job that fails leaves the Task
Running forever. ``reconcile_first_failure`` has another: it calls the Task Failed at the Job's first
failed pod, but a Job with retries (``spec.retries`` → ``backoffLimit``) is still running — after its
failure backoff it starts a replacement pod, which may succeed. ``reconcile_counting_failures``
recomputes the Job's verdict from its counters (failed pods beyond ``backoffLimit``), which misses a
Job that ran out of time (``spec.timeoutSeconds`` → ``activeDeadlineSeconds``): one pod stopped,
Failed with reason DeadlineExceeded. ``reconcile_fixed`` waits for the Job's own verdict, its
Complete or Failed condition.
"""

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
custom = client.CustomObjectsApi()
batch = client.BatchV1Api()

GROUP, VERSION, PLURAL = "example.com", "v1", "tasks"


def _job(task):
    name = task["metadata"]["name"]
    owner = client.V1OwnerReference(api_version=f"{GROUP}/{VERSION}", kind="Task", name=name,
                                    uid=task["metadata"]["uid"], controller=True, block_owner_deletion=True)
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name, namespace=task["metadata"]["namespace"], owner_references=[owner]),
        spec=client.V1JobSpec(
            backoff_limit=int(task["spec"].get("retries") or 0),
            active_deadline_seconds=task["spec"].get("timeoutSeconds"),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"task": name}),
                spec=client.V1PodSpec(restart_policy="Never",
                                      containers=[client.V1Container(name="run", image=task["spec"]["image"])]),
            ),
        ),
    )


def _observe(request, judge):
    try:
        task = custom.get_namespaced_custom_object(GROUP, VERSION, request.namespace, PLURAL, request.name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    try:
        job = batch.read_namespaced_job(request.name, request.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        job = batch.create_namespaced_job(request.namespace, _job(task))
    phase = judge(job)
    if (task.get("status") or {}).get("phase") != phase:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, request.namespace, PLURAL, request.name,
                                                     {"status": {"phase": phase}})
    return None


def _condition(job, kind):
    return any(c.type == kind and c.status == "True" for c in (job.status.conditions or [])) if job.status else False


def reconcile(request):
    return _observe(request, lambda job: "Done" if job.status and (job.status.succeeded or 0) >= 1 else "Running")


def reconcile_first_failure(request):
    def judge(job):
        if job.status and (job.status.failed or 0) >= 1:
            return "Failed"  # the bug: one failed pod is not a failed Job
        return "Done" if job.status and (job.status.succeeded or 0) >= 1 else "Running"

    return _observe(request, judge)


def reconcile_counting_failures(request):
    def judge(job):
        if job.status and (job.status.succeeded or 0) >= 1:
            return "Done"
        if job.status and (job.status.failed or 0) > job.spec.backoff_limit:
            return "Failed"  # the bug: running out of time is a failure too, after fewer failed pods
        return "Running"

    return _observe(request, judge)


def reconcile_fixed(request):
    def judge(job):
        if _condition(job, "Complete"):
            return "Done"
        if _condition(job, "Failed"):
            return "Failed"
        return "Running"

    return _observe(request, judge)
