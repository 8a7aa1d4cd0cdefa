"""The scenario families ``bench_operators.py`` runs: each builder writes one family's scenario folder.

Families (each built into a folder the caller gives; nothing here copies an example's text):
  - ``webapps-N-R``: an operator whose N WebApps (one namespace) each own a Deployment of R
    replicas, with the deployment, replicaset and kubelet built-ins on two nodes; the WebApp
    reports ready once its Deployment is available;
  - ``owned-6``: 6 controllers, each over an object of its own kind, each creating one ConfigMap
    owned by that object;
  - ``owned-requests-10``: one controller, 10 ConfigMaps, each creating an owned Secret;
  - ``kopf-timer-N``: a kopf timer on Namespaces that annotates each with its ConfigMap count, over
    N user namespaces (each with one ConfigMap) plus the 4 built-in ones (N = 1, 3, 5);
  - ``kopf-retry-N``: N Widgets whose kopf create handler fails once (``TemporaryError`` with a
    5 s backoff), then makes an owned ConfigMap;
  - ``kopf-create-timer-N``: N Widgets whose create handler makes an owned ConfigMap and labels the
    Widget, which starts a timer (filtered on that label) that copies the ConfigMap into an annotation;
  - ``kopf-daemon-N``: N Widgets, each with a kopf daemon that reports itself alive, then waits 45 s;
  - ``kopf-timer-retry-N``: N Widgets, each with a kopf timer (every 60 s) whose tick fails until the
    Widget's owned ConfigMap exists (``TemporaryError`` with a 7 s backoff: kopf's retry state, with
    its absolute instants, carried to the next tick), which an on.create handler makes;
  - ``kopf-timer-flaky-N``: N Widgets, each with a kopf timer (every 30 s) whose every tick fails
    on its first attempt (a 7 s backoff) and succeeds on the retry;
  - ``kopf-fail-once-N``: N Widgets under one kopf handler (on.create, on.resume and a 60 s sharp
    timer) that reads the Widget's annotations and makes an owned ConfigMap; the even-numbered
    Widgets have no annotations, so its first attempt on them fails (``KeyError``: kopf's default
    60 s backoff) and the retry, which finds kopf's own progress annotation, succeeds (the shape of
    a public limit-range operator tried as a user would);
  - ``kopf-apps-N``: N Widgets whose kopf on.create renders a Deployment (1 replica) and a Service
    with no ownerReferences, and whose 60 s timer reads both back and puts the Deployment's
    replicas back to 1 if they drifted; deployment, replicaset and kubelet built-ins on one node (the
    shape of issue #26's user trial, written here);
  - ``kopf-scaler-R``: a kopf operator whose Widget names a namespace to put to sleep: its 30 s timer
    (also run on create and resume) lists the namespace's Deployments and, for each still running,
    records its replicas and the instant in annotations, then scales it to zero through the scale
    subresource; one Deployment of R replicas, with the deployment, replicaset and kubelet built-ins
    on one node (the shape of a public "shut the namespace down" operator tried as a user would);
  - ``kopf-index-N`` (``bench/kopf_index.py``): a kopf operator with an index over Namespaces (their
    names), a Widget handler that reads it and handlers on Namespaces (kopf's finalizer and annotations
    on each), over N user namespaces plus the 4 built-in ones; ``kopf-index-body-N``: the index holds
    whole bodies (every write is seen by the Widget's step);
  - ``*-perturbed``: a family above with perturbations on its controllers (``PERTURBED``): stale
    reads of every kind they watch (``maxLag`` 1) and one crash after any number of writes; the
    WebApp operator (owned Deployments, built-ins) and the kopf timer also get one injected conflict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench_reduction import KINDS as LABELLED_KINDS
from kopf_index import kopf_index, variant

HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: %s}
spec:
  explore: {maxStates: 2000000, maxDepth: 400, timeout: %d}
"""

def crd(kind: str, schema: str) -> str:
    """A namespaced custom resource ``kind`` of group bench.kamera.dev with a status subresource."""
    plural = kind.lower() + "s"
    return f"""\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.bench.kamera.dev}}
spec:
  group: bench.kamera.dev
  scope: Namespaced
  names: {{plural: {plural}, singular: {kind.lower()}, kind: {kind}, listKind: {kind}List}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema:
        openAPIV3Schema:
          type: object
{schema}"""


WEBAPP_CRD = crd("WebApp", """\
          properties:
            spec:
              type: object
              properties:
                image: {type: string}
                replicas: {type: integer}
            status:
              type: object
              properties:
                ready: {type: boolean}
""")

WEBAPP_OPERATOR = '''
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
custom = client.CustomObjectsApi()
apps = client.AppsV1Api()
G, V, P = "bench.kamera.dev", "v1", "webapps"


def reconcile(request):
    try:
        web = custom.get_namespaced_custom_object(G, V, request.namespace, P, request.name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    try:
        dep = apps.read_namespaced_deployment(request.name, request.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
        labels = {"webapp": request.name}
        owner = client.V1OwnerReference(api_version=f"{G}/{V}", kind="WebApp", name=request.name,
                                        uid=web["metadata"]["uid"], controller=True, block_owner_deletion=True)
        dep = apps.create_namespaced_deployment(request.namespace, client.V1Deployment(
            metadata=client.V1ObjectMeta(name=request.name, owner_references=[owner]),
            spec=client.V1DeploymentSpec(
                replicas=web["spec"]["replicas"], selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="web", image=web["spec"]["image"])])))))
    ready = bool(dep.status and (dep.status.available_replicas or 0) == dep.spec.replicas)
    if (web.get("status") or {}).get("ready") != ready:
        custom.patch_namespaced_custom_object_status(G, V, request.namespace, P, request.name,
                                                     {"status": {"ready": ready}})
    return None
'''


def webapps(folder: Path, n: int, r: int) -> Path:
    (folder / "crd.yaml").write_text(WEBAPP_CRD)
    (folder / "operator.py").write_text(WEBAPP_OPERATOR)
    text = HEAD % (f"webapps-{n}-{r}", 120) + """\
  cluster: {builtins: [deployment, replicaset, kubelet], nodes: 2}
  crds: [crd.yaml]
  controllers:
    - {name: webapp, entrypoint: operator.py:reconcile, for: bench.kamera.dev/v1/WebApp, owns: [apps/v1/Deployment]}
  invariants:
    - {name: every webapp is ready, select: "$.items[?@.kind == 'WebApp'].status.ready", expect: {equals: true}}
  seed:
"""
    text += "".join(f"    - {{apiVersion: bench.kamera.dev/v1, kind: WebApp, metadata: {{name: web{i}, "
                    f"namespace: default}}, spec: {{image: 'web:{i}', replicas: {r}}}}}\n" for i in range(n))
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


#: parents: bench_reduction.py's kinds but ConfigMap (the children's kind), and Service
KINDS = [k for k in LABELLED_KINDS if k[0] != "ConfigMap"] + [("Service", "service")]

PARENT_CHILD = '''
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config()
core = client.CoreV1Api()


def make(snake, kind, child):
    read = getattr(core, f"read_namespaced_{snake}")
    def reconcile(request):
        obj = read(request.name, request.namespace)
        owner = {"apiVersion": "v1", "kind": kind, "name": request.name, "uid": obj.metadata.uid,
                 "controller": True}
        body = {"metadata": {"name": f"{request.name}-{kind.lower()}", "ownerReferences": [owner]},
                "data": {"from": "eA=="}}
        try:
            getattr(core, f"create_namespaced_{child}")(request.namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
    return reconcile
'''


def seed_entry(kind: str, name: str, namespace: str = "default") -> str:
    """One seed object of a built-in ``kind``, with the spec the server requires of it (``bench_memory.py`` too)."""
    extra = {"PersistentVolumeClaim": ", spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}",
             "ResourceQuota": ", spec: {}", "LimitRange": ", spec: {limits: []}",
             "Service": ", spec: {ports: [{port: 80}]}",
             "PodTemplate": ", template: {spec: {containers: [{name: c, image: busybox}]}}"}
    meta = f"{{name: {name}, namespace: {namespace}}}"
    return f"    - {{apiVersion: v1, kind: {kind}, metadata: {meta}{extra.get(kind, '')}}}\n"


def owned_children(folder: Path, k: int, _unused: int = 0) -> Path:
    chosen = KINDS[:k]
    (folder / "controllers.py").write_text(PARENT_CHILD + "".join(
        f"c_{snake} = make({snake!r}, {kind!r}, 'config_map')\n" for kind, snake in chosen))
    text = HEAD % (f"owned-{k}", 60) + "  seed:\n" + "".join(seed_entry(kind, "mine") for kind, _ in chosen)
    text += "  controllers:\n" + "".join(
        f"    - {{name: {snake.replace('_', '-')}, entrypoint: controllers.py:c_{snake}, for: v1/{kind}, "
        "owns: [v1/ConfigMap]}\n" for kind, snake in chosen)
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def owned_requests(folder: Path, n: int, _unused: int = 0) -> Path:
    (folder / "controllers.py").write_text(PARENT_CHILD + "c = make('config_map', 'ConfigMap', 'secret')\n")
    text = HEAD % (f"owned-requests-{n}", 60) + "  seed:\n"
    text += "".join(seed_entry("ConfigMap", f"cm{i}") for i in range(n))
    text += "  controllers:\n    - {name: parent, entrypoint: controllers.py:c, for: v1/ConfigMap, owns: [v1/Secret]}\n"
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


KOPF_TIMER = '''
import kopf
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()


@kopf.timer("", "v1", "namespaces", interval=60)
def count_config_maps(name, meta, **_):
    count = str(len(core.list_namespaced_config_map(name).items))
    if (meta.get("annotations") or {}).get("bench.kamera.dev/config-maps") != count:
        core.patch_namespace(name, {"metadata": {"annotations": {"bench.kamera.dev/config-maps": count}}})
'''


def kopf_timer(folder: Path, n: int, _unused: int = 0) -> Path:
    (folder / "operator.py").write_text(KOPF_TIMER)
    text = HEAD % (f"kopf-timer-{n}", 120) + "  controllers:\n    - {name: counter, kopf: operator.py}\n  seed:\n"
    for i in range(n):
        text += f"    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team{i}}}}}\n"
        text += seed_entry("ConfigMap", "settings", f"team{i}")
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


KOPF_WIDGETS = crd("Widget", "          x-kubernetes-preserve-unknown-fields: true\n")

KOPF_HEAD = '''
import kopf
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config()
core = client.CoreV1Api()
G, V, P = "bench.kamera.dev", "v1", "widgets"


def child(name, namespace, message):
    """The Widget's ConfigMap, made once (adopted: owned by the Widget)."""
    try:
        return core.read_namespaced_config_map(f"{name}-config", namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
    body = {"metadata": {"name": f"{name}-config"}, "data": {"message": message}}
    kopf.adopt(body)
    return core.create_namespaced_config_map(namespace, body)
'''

#: on.create fails once (kopf's backoff), then makes an owned ConfigMap
KOPF_RETRY = KOPF_HEAD + '''

@kopf.on.create(G, V, P, id="make")
def make(spec, name, namespace, retry, **_):
    if retry == 0:
        raise kopf.TemporaryError("the backing store is not ready", delay=5)
    child(name, namespace, spec.get("message", ""))
'''

#: on.create makes an owned ConfigMap and labels the Widget; a timer on labelled Widgets starts then
KOPF_CREATE_TIMER = KOPF_HEAD + '''

@kopf.on.create(G, V, P, id="make")
def make(spec, name, namespace, patch, **_):
    child(name, namespace, spec.get("message", ""))
    patch.metadata.labels["bench.kamera.dev/managed"] = "yes"


@kopf.timer(G, V, P, interval=60, labels={"bench.kamera.dev/managed": "yes"}, id="check")
def check(name, namespace, meta, **_):
    seen = core.read_namespaced_config_map(f"{name}-config", namespace).data["message"]
    if (meta.get("annotations") or {}).get("bench.kamera.dev/seen") != seen:
        client.CustomObjectsApi().patch_namespaced_custom_object(
            G, V, namespace, P, name, {"metadata": {"annotations": {"bench.kamera.dev/seen": seen}}})
'''

#: a daemon per Widget that reports a heartbeat count in its status, then sleeps
KOPF_DAEMON = KOPF_HEAD + '''

@kopf.daemon(G, V, P, id="beat")
def beat(stopped, name, namespace, status, patch, **_):
    while not stopped:
        if (status.get("beat") or {}).get("alive") is not True:
            patch.status["beat"] = {"alive": True}
        stopped.wait(45)
'''


#: a timer that fails (kopf's backoff) until on.create has made the Widget's ConfigMap
KOPF_TIMER_RETRY = KOPF_HEAD + '''

@kopf.on.create(G, V, P, id="make")
def make(spec, name, namespace, **_):
    child(name, namespace, spec.get("message", ""))


@kopf.timer(G, V, P, interval=60, id="check")
def check(name, namespace, patch, **_):
    try:
        seen = core.read_namespaced_config_map(f"{name}-config", namespace).data["message"]
    except ApiException as exc:
        raise kopf.TemporaryError("no ConfigMap yet", delay=7) from exc
    patch.metadata.annotations["bench.kamera.dev/seen"] = seen
'''


#: a timer whose every tick fails once, then succeeds on kopf's retry
KOPF_TIMER_FLAKY = KOPF_HEAD + '''

@kopf.timer(G, V, P, interval=30, id="check")
def check(spec, retry, patch, **_):
    if retry == 0:
        raise kopf.TemporaryError("flaky", delay=7)
    patch.metadata.annotations["bench.kamera.dev/seen"] = spec.get("message", "")
'''


#: a handler that fails on its first attempt where the object has no annotations (a KeyError: kopf retries
#: it after its default backoff, and kopf's progress annotation is there by then)
KOPF_FAIL_ONCE = KOPF_HEAD + '''

@kopf.on.resume(G, V, P, id="size")
@kopf.on.create(G, V, P, id="size")
@kopf.timer(G, V, P, interval=60, sharp=True, id="size-loop")
def size(name, namespace, meta, **_):
    size = meta["annotations"].get("bench.kamera.dev/size", "1")
    child(name, namespace, size)
'''


#: an app operator's shape (issue #26's user trial): on.create renders a Deployment and a Service with
#: no ownerReferences; a timer per object reads them back and reports what it saw
KOPF_APPS = KOPF_HEAD + '''
apps = client.AppsV1Api()


@kopf.on.create(G, V, P, id="render")
def render(spec, name, namespace, **_):
    labels = {"app": name}
    apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "app", "image": spec.get("message", "app")}]}}}})
    core.create_namespaced_service(namespace, {
        "metadata": {"name": f"{name}-svc", "labels": labels},
        "spec": {"selector": labels, "ports": [{"port": 80}]}})


@kopf.timer(G, V, P, interval=60, id="drift")
def drift(name, namespace, **_):
    try:
        dep = apps.read_namespaced_deployment(name, namespace)
        core.read_namespaced_service(f"{name}-svc", namespace)
    except ApiException as exc:
        if exc.status == 404:
            return
        raise
    if dep.spec.replicas != 1:
        apps.patch_namespaced_deployment(name, namespace, {"spec": {"replicas": 1}})
'''


def kopf_apps(folder: Path, n: int, _unused: int = 0) -> Path:
    """``kopf-apps-N``: N Widgets under ``KOPF_APPS`` with the deployment, replicaset and kubelet built-ins."""
    (folder / "crd.yaml").write_text(KOPF_WIDGETS)
    (folder / "operator.py").write_text(KOPF_APPS)
    text = HEAD % (f"kopf-apps-{n}", 600) + """\
  cluster: {builtins: [deployment, replicaset, kubelet], nodes: 1}
  crds: [crd.yaml]
  controllers:
    - {name: op, kopf: operator.py, for: bench.kamera.dev/v1/Widget}
  invariants:
    - {name: every deployment is available, select: "$.items[?@.kind == 'Deployment'].status.availableReplicas",
       expect: {equals: 1}}
  seed:
"""
    text += "".join(f"    - {{apiVersion: bench.kamera.dev/v1, kind: Widget, metadata: {{name: app{i}, "
                    f"namespace: default}}, spec: {{message: 'app:{i}'}}}}\n" for i in range(n))
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


#: a namespace put to sleep by a timer that polls its Deployments (no event tells it of a change)
KOPF_SCALER = KOPF_HEAD + '''
import datetime
apps = client.AppsV1Api()


@kopf.on.resume(G, V, P)
@kopf.on.create(G, V, P)
@kopf.timer(G, V, P, interval=30, sharp=True)
def sleep(spec, **_):
    target = spec.get("namespace", "default")
    for dep in apps.list_namespaced_deployment(target).items:
        if dep.spec.replicas:
            stamp = datetime.datetime.utcnow().isoformat() + "Z"
            apps.patch_namespaced_deployment(dep.metadata.name, target, {"metadata": {"annotations": {
                "bench.kamera.dev/replicas": str(dep.spec.replicas), "bench.kamera.dev/asleep-since": stamp}}})
            apps.patch_namespaced_deployment_scale(dep.metadata.name, target, {"spec": {"replicas": 0}})
'''


def kopf_scaler(folder: Path, replicas: int, _unused: int = 0) -> Path:
    """``kopf-scaler-R``: ``KOPF_SCALER`` over one Deployment of ``replicas`` replicas in its own namespace."""
    (folder / "crd.yaml").write_text(KOPF_WIDGETS)
    (folder / "operator.py").write_text(KOPF_SCALER)
    text = HEAD % (f"kopf-scaler-{replicas}", 600) + f"""\
  cluster: {{builtins: [deployment, replicaset, kubelet], nodes: 1}}
  crds: [crd.yaml]
  controllers:
    - {{name: op, kopf: operator.py, for: bench.kamera.dev/v1/Widget}}
  invariants:
    - {{name: asleep, select: "$.items[?@.kind == 'Deployment'].spec.replicas", expect: {{equals: 0}}}}
    - {{name: no pod left, select: "$.items[?@.kind == 'Pod']", expect: {{count: 0}}}}
  seed:
    - {{apiVersion: v1, kind: Namespace, metadata: {{name: apps}}}}
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: web, namespace: apps}}
      spec:
        replicas: {replicas}
        selector: {{matchLabels: {{app: web}}}}
        template: {{metadata: {{labels: {{app: web}}}}, spec: {{containers: [{{name: web, image: web}}]}}}}
    - apiVersion: bench.kamera.dev/v1
      kind: Widget
      metadata: {{name: night, namespace: apps}}
      spec: {{namespace: apps}}
"""
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def kopf_widgets(operator: str) -> Callable[[Path, int, int], Path]:
    """A family of ``n`` Widgets in one namespace under a kopf ``operator``."""
    def build(folder: Path, n: int, _unused: int = 0) -> Path:
        (folder / "crd.yaml").write_text(KOPF_WIDGETS)
        (folder / "operator.py").write_text(operator)
        name = {KOPF_RETRY: "kopf-retry", KOPF_CREATE_TIMER: "kopf-create-timer", KOPF_DAEMON: "kopf-daemon",
                KOPF_TIMER_RETRY: "kopf-timer-retry", KOPF_TIMER_FLAKY: "kopf-timer-flaky",
                KOPF_FAIL_ONCE: "kopf-fail-once"}[operator]
        text = HEAD % (f"{name}-{n}", 120) + """\
  crds: [crd.yaml]
  controllers:
    - {name: op, kopf: operator.py, for: bench.kamera.dev/v1/Widget, owns: [v1/ConfigMap]}
  seed:
"""
        text += "".join(f"    - {{apiVersion: bench.kamera.dev/v1, kind: Widget, metadata: {{name: w{i}, "
                        f"namespace: default{_annotated(operator, i)}}}, spec: {{message: 'm{i}'}}}}\n"
                        for i in range(n))
        (folder / "scenario.yaml").write_text(text)
        return folder / "scenario.yaml"
    return build


def _annotated(operator: str, i: int) -> str:
    """``kopf-fail-once``'s odd-numbered Widgets carry an annotation (its handler fails on the others)."""
    return ", annotations: {bench.kamera.dev/size: '2'}" if operator == KOPF_FAIL_ONCE and i % 2 else ""


def perturbed(build: Callable[[Path, int, int], Path], conflicts: bool = True) -> Callable[[Path, int, int], Path]:
    """``build``'s family with its controllers perturbed: stale reads of what they watch, one crash
    (and one injected 409 Conflict)."""
    def wrapped(folder: Path, a: int, b: int) -> Path:
        path = build(folder, a, b)
        text = path.read_text() + ("  perturbations:\n    staleReads: [{controller: '*', maxLag: 1}]\n"
                                   "    crashes: [{controller: '*', max: 1}]\n")
        if conflicts:
            text += "    conflicts: [{controller: '*', max: 1}]\n"
        path.write_text(text)
        return path
    return wrapped


FAMILIES: dict[str, tuple[Callable[[Path, int, int], Path], int, int]] = {
    "webapps-1-2": (webapps, 1, 2),
    "webapps-2-2": (webapps, 2, 2),
    "webapps-3-2": (webapps, 3, 2),
    "webapps-1-3": (webapps, 1, 3),
    "webapps-3-3": (webapps, 3, 3),
    "owned-6": (owned_children, 6, 0),
    "owned-requests-10": (owned_requests, 10, 0),
    "kopf-timer-1": (kopf_timer, 1, 0),
    "kopf-timer-3": (kopf_timer, 3, 0),
    "kopf-timer-5": (kopf_timer, 5, 0),
    "kopf-retry-1": (kopf_widgets(KOPF_RETRY), 1, 0),
    "kopf-retry-2": (kopf_widgets(KOPF_RETRY), 2, 0),
    "kopf-retry-3": (kopf_widgets(KOPF_RETRY), 3, 0),
    "kopf-create-timer-1": (kopf_widgets(KOPF_CREATE_TIMER), 1, 0),
    "kopf-create-timer-2": (kopf_widgets(KOPF_CREATE_TIMER), 2, 0),
    "kopf-create-timer-3": (kopf_widgets(KOPF_CREATE_TIMER), 3, 0),
    "kopf-daemon-1": (kopf_widgets(KOPF_DAEMON), 1, 0),
    "kopf-daemon-2": (kopf_widgets(KOPF_DAEMON), 2, 0),
    "kopf-daemon-3": (kopf_widgets(KOPF_DAEMON), 3, 0),
    "kopf-timer-retry-1": (kopf_widgets(KOPF_TIMER_RETRY), 1, 0),
    "kopf-timer-retry-2": (kopf_widgets(KOPF_TIMER_RETRY), 2, 0),
    "kopf-timer-flaky-1": (kopf_widgets(KOPF_TIMER_FLAKY), 1, 0),
    "kopf-timer-flaky-2": (kopf_widgets(KOPF_TIMER_FLAKY), 2, 0),
    "kopf-fail-once-1": (kopf_widgets(KOPF_FAIL_ONCE), 1, 0),
    "kopf-fail-once-2": (kopf_widgets(KOPF_FAIL_ONCE), 2, 0),
    "kopf-fail-once-3": (kopf_widgets(KOPF_FAIL_ONCE), 3, 0),
    "kopf-apps-1": (kopf_apps, 1, 0),
    "kopf-apps-2": (kopf_apps, 2, 0),
    "kopf-apps-3": (kopf_apps, 3, 0),
    "kopf-scaler-1": (kopf_scaler, 1, 0),
    "kopf-scaler-2": (kopf_scaler, 2, 0),
    "kopf-index-0": (kopf_index, 0, 0),
    "kopf-index-1": (kopf_index, 1, 0),
    "kopf-index-3": (kopf_index, 3, 0),
    "kopf-index-body-0": (variant("body"), 0, 0),
    "webapps-1-1-perturbed": (perturbed(webapps), 1, 1),
    "webapps-2-1-perturbed": (perturbed(webapps), 2, 1),
    "webapps-2-2-perturbed": (perturbed(webapps), 2, 2),
    "owned-3-perturbed": (perturbed(owned_children, conflicts=False), 3, 0),
    "owned-requests-4-perturbed": (perturbed(owned_requests, conflicts=False), 4, 0),
    "kopf-timer-1-perturbed": (perturbed(kopf_timer), 1, 0),
    "kopf-timer-3-perturbed": (perturbed(kopf_timer), 3, 0),
}
