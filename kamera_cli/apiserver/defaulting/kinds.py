"""Built-in defaulting: what the real API server fills in on every write (``SetObjectDefaults_*``).

Why it matters: a controller that compares its desired spec with the live one sees these defaults in
a real cluster; without them the simulation would hide the classic "update forever because the
server added imagePullPolicy" hot loop.  The rules follow the upstream defaulters (cited per kind;
pod specs in ``defaulting/pod.py``), compiled into one function per kind, applied copy-on-write so an
already-defaulted spec stays shared with the stored object.  Create-time strategy fields
(``PrepareForCreate``) are in ``prepare_for_create``.  What is left out: docs/apiserver.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kamera_cli.apiserver.defaulting import pod as P
from kamera_cli.apiserver.defaulting.allocation import label_namespace
from kamera_cli.apiserver.defaulting.metadata import clone
from kamera_cli.apiserver.defaulting.pod import Rule, at, each, fill, mapping

Obj = dict[str, Any]


def _spec(obj: Obj, fn: Callable[[Obj], Obj]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        new = fn(spec)
        if new is not spec:
            obj["spec"] = new


def _status(obj: Obj, rules: tuple[Rule, ...] = ()) -> None:
    """A status struct the Go type always serialises: ``status: {}`` at least, with the fields that
    have no ``omitempty`` (their zero values) and the defaulted ones given as ``rules``."""
    status = obj.get("status")
    if not isinstance(status, dict):
        obj["status"] = fill({}, rules)
    elif rules:
        obj["status"] = fill(status, rules)


def _strategy(key: str, rolling: tuple[Rule, ...], *, always: bool) -> Callable[[Obj], Obj]:
    """``strategy``/``updateStrategy``: RollingUpdate unless set.  ``always``: rollingUpdate is created
    for any RollingUpdate strategy (Deployment, DaemonSet); otherwise only when the type was defaulted
    (StatefulSet: an explicit ``type: RollingUpdate`` keeps a missing rollingUpdate missing)."""
    def apply(spec: Obj) -> Obj:
        strategy = mapping(spec, key)
        out = strategy
        if not strategy.get("type"):
            out = {**strategy, "type": "RollingUpdate"}
            if "rollingUpdate" not in out:
                out["rollingUpdate"] = {}
        if out.get("type") == "RollingUpdate":
            if always and not isinstance(out.get("rollingUpdate"), dict):
                out = {**out, "rollingUpdate": {}}
            out = at(out, "rollingUpdate", lambda r: fill(r, rolling) if isinstance(r, dict) else r)
        return spec if out is spec.get(key) else {**spec, key: out}
    return apply


_DEPLOYMENT_STRATEGY = _strategy("strategy", (("maxUnavailable", "25%", False), ("maxSurge", "25%", False)),
                                 always=True)
_DAEMONSET_STRATEGY = _strategy("updateStrategy", (("maxUnavailable", 1, False), ("maxSurge", 0, False)), always=True)
_STATEFULSET_STRATEGY = _strategy("updateStrategy", (("partition", 0, False),), always=False)
_HISTORY: Rule = ("revisionHistoryLimit", 10, False)
_REPLICAS: Rule = ("replicas", 1, False)


_DEPLOYMENT: tuple[Rule, ...] = (_REPLICAS, _HISTORY, ("progressDeadlineSeconds", 600, False))


def _deployment(obj: Obj) -> None:  # apps/v1 SetDefaults_Deployment
    _spec(obj, lambda s: at(_DEPLOYMENT_STRATEGY(fill(s, _DEPLOYMENT)), "template", P.template))
    _status(obj)


_ZERO_REPLICAS: tuple[Rule, ...] = (("replicas", 0, False),)


def _replicaset(obj: Obj) -> None:  # apps/v1 SetDefaults_ReplicaSet
    _spec(obj, lambda s: at(fill(s, (_REPLICAS,)), "template", P.template))
    _status(obj, _ZERO_REPLICAS)


def _claim_template(t: Any) -> Any:  # SetDefaults_PersistentVolumeClaim(Spec) on each volumeClaimTemplate
    if not isinstance(t, dict):
        return t
    out = at(t, "spec", P.claim_spec)
    status = mapping(out, "status")
    return out if status.get("phase") else {**out, "status": {**status, "phase": "Pending"}}


_RETAIN: tuple[Rule, ...] = (("whenDeleted", "Retain", True), ("whenScaled", "Retain", True))


def _statefulset(obj: Obj) -> None:  # apps/v1 SetDefaults_StatefulSet
    def spec(s: Obj) -> Obj:
        out = _STATEFULSET_STRATEGY(fill(s, (("podManagementPolicy", "OrderedReady", True), _REPLICAS, _HISTORY,
                                             ("persistentVolumeClaimRetentionPolicy", dict, False))))
        out = at(out, "persistentVolumeClaimRetentionPolicy", lambda p: fill(p, _RETAIN) if isinstance(p, dict) else p)
        return at(at(out, "template", P.template), "volumeClaimTemplates", each(_claim_template))
    _spec(obj, spec)
    _status(obj, (*_ZERO_REPLICAS, ("availableReplicas", 0, False)))


def _daemonset(obj: Obj) -> None:  # apps/v1 SetDefaults_DaemonSet
    _spec(obj, lambda s: at(_DAEMONSET_STRATEGY(fill(s, (_HISTORY,))), "template", P.template))
    _status(obj, tuple((key, 0, False) for key in ("currentNumberScheduled", "numberMisscheduled",
                                                   "desiredNumberScheduled", "numberReady")))


def _job_spec(s: Obj) -> Obj:  # batch/v1 SetDefaults_Job (the spec part)
    rules: list[Rule] = []
    if s.get("completions") is None and s.get("parallelism") is None:
        rules.append(("completions", 1, False))
    backoff = 2147483647 if s.get("backoffLimitPerIndex") is not None else 6
    policy = "Failed" if s.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    rules += [("parallelism", 1, False), ("backoffLimit", backoff, False), ("completionMode", "NonIndexed", False),
              ("suspend", False, False), ("podReplacementPolicy", policy, False)]
    out = fill(s, rules)
    out = at(out, "podFailurePolicy", lambda p: at(p, "rules", each(lambda r: at(
        r, "onPodConditions", each(lambda c: fill(c, (("status", "True", True),)))))) if isinstance(p, dict) else p)
    return at(out, "template", P.template)


def _template_labels(spec: Any) -> Any:
    template = spec.get("template") if isinstance(spec, dict) else None
    meta = template.get("metadata") if isinstance(template, dict) else None
    return meta.get("labels") if isinstance(meta, dict) else None


def _job(obj: Obj) -> None:
    _spec(obj, _job_spec)
    meta = obj["metadata"]
    labels = _template_labels(obj.get("spec"))
    if isinstance(labels, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)  # a Job without labels takes its template's
    _status(obj)


def _cronjob(obj: Obj) -> None:  # batch/v1 SetDefaults_CronJob; the job template gets pod defaults only
    _spec(obj, lambda s: at(fill(s, (("concurrencyPolicy", "Allow", True), ("suspend", False, False),
                                     ("successfulJobsHistoryLimit", 3, False), ("failedJobsHistoryLimit", 1, False))),
                            "jobTemplate", lambda t: at(t, "spec", lambda j: at(j, "template", P.template)
                                                        if isinstance(j, dict) else j) if isinstance(t, dict) else t))
    _status(obj)


def _pod(obj: Obj) -> None:
    _spec(obj, P.pod)


def _pod_template(obj: Obj) -> None:
    tmpl = obj.get("template")
    new = P.template(tmpl)
    if new is not tmpl:
        obj["template"] = new


def _replication_controller(obj: Obj) -> None:  # core/v1 SetDefaults_ReplicationController
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    labels = _template_labels(spec)
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec = {**spec, "selector": dict(labels)}
        if not obj["metadata"].get("labels"):
            obj["metadata"]["labels"] = dict(labels)
    obj["spec"] = spec
    _replicaset(obj)


def _service_port(port: Obj) -> Obj:
    out = fill(port, (("protocol", "TCP", True),))
    if out.get("targetPort") in (None, 0, "") and "port" in out:
        out = {**out, "targetPort": out["port"]}
    return out


def _service_spec(s: Obj) -> Obj:  # core/v1 SetDefaults_Service
    out = fill(s, (("sessionAffinity", "None", True), ("type", "ClusterIP", True)))
    if out.get("sessionAffinity") == "None" and "sessionAffinityConfig" in out:
        out = {k: v for k, v in out.items() if k != "sessionAffinityConfig"}
    elif out.get("sessionAffinity") == "ClientIP":
        timeout = (((out.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds"))
        if timeout is None:
            out = {**out, "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}
    out = at(out, "ports", each(_service_port))
    kind = out.get("type")
    external = kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(out.get("externalIPs")))
    rules: list[Rule] = []
    if external:
        rules.append(("externalTrafficPolicy", "Cluster", True))
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        rules.append(("internalTrafficPolicy", "Cluster", False))
    if kind == "LoadBalancer":
        rules.append(("allocateLoadBalancerNodePorts", True, False))
    return fill(out, rules)


def _service(obj: Obj) -> None:
    _spec(obj, _service_spec)
    status = mapping(obj, "status")
    balancer = status.get("loadBalancer")
    if not isinstance(balancer, dict):
        obj["status"] = {**status, "loadBalancer": {}}
    elif mapping(obj, "spec").get("type") == "LoadBalancer" and any(
            isinstance(i, dict) and i.get("ip") and i.get("ipMode") is None for i in balancer.get("ingress") or ()):
        # SetDefaults_Service (LoadBalancerIPMode, GA in 1.32): an ingress IP without a mode is a VIP
        ingress = [{**i, "ipMode": "VIP"} if isinstance(i, dict) and i.get("ip") and i.get("ipMode") is None else i
                   for i in balancer["ingress"]]
        obj["status"] = {**status, "loadBalancer": {**balancer, "ingress": ingress}}


def _claim(obj: Obj) -> None:  # SetDefaults_PersistentVolumeClaim(Spec)
    _spec(obj, P.claim_spec)
    _status(obj, (("phase", "Pending", True),))


def _volume(obj: Obj) -> None:  # SetDefaults_PersistentVolume
    _spec(obj, lambda s: at(fill(s, (("persistentVolumeReclaimPolicy", "Retain", True),
                                     ("volumeMode", "Filesystem", False))),
                            "hostPath", lambda h: fill(h, (("type", "", False),)) if isinstance(h, dict) else h))
    # Not reproduced: status.phase Pending -- kamera's pvc-binder (controlplane/volumes.py) only binds
    # volumes whose phase is unset or Available, and nothing moves Pending to Available (docs/apiserver.md).


def _endpoints(obj: Obj) -> None:  # SetDefaults_Endpoints
    subsets = obj.get("subsets")
    new = each(lambda ss: at(ss, "ports", each(lambda p: fill(p, (("protocol", "TCP", True),)))))(subsets)
    if new is not subsets:
        obj["subsets"] = new


def _node(obj: Obj) -> None:  # SetDefaults_NodeStatus
    status = obj.get("status")
    if isinstance(status, dict) and status.get("capacity") is not None and status.get("allocatable") is None:
        obj["status"] = {**status, "allocatable": status["capacity"]}


def _namespace(obj: Obj) -> None:  # SetDefaults_NamespaceStatus: an empty phase is Active, on every write
    status = obj.get("status")
    if not isinstance(status, dict) or not status.get("phase"):
        obj["status"] = {**(status if isinstance(status, dict) else {}), "phase": "Active"}


def _limit_item(item: Obj) -> Obj:  # SetDefaults_LimitRangeItem (empty maps are not serialised)
    if item.get("type") != "Container":
        return item
    default = {**(item.get("max") or {}), **(item.get("default") or {})}
    request = {**(item.get("min") or {}), **default, **(item.get("defaultRequest") or {})}
    out = dict(item)
    for key, value in (("default", default), ("defaultRequest", request)):
        if value:
            out[key] = value
    return item if out == item else out


def _limit_range(obj: Obj) -> None:
    _spec(obj, lambda s: at(s, "limits", each(_limit_item)))


def _subject(subject: Obj) -> Obj:  # rbac/v1 SetDefaults_Subject
    if subject.get("apiGroup") or subject.get("kind") not in ("User", "Group"):
        return subject
    return {**subject, "apiGroup": "rbac.authorization.k8s.io"}


def _binding(obj: Obj) -> None:  # rbac/v1 SetDefaults_RoleBinding / _ClusterRoleBinding
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        obj["roleRef"] = {**ref, "apiGroup": "rbac.authorization.k8s.io"}
    subjects = obj.get("subjects")
    new = each(_subject)(subjects)
    if new is not subjects:
        obj["subjects"] = new


def _network_policy(obj: Obj) -> None:  # networking/v1 SetDefaults_NetworkPolicy (+ port protocols)
    def spec(s: Obj) -> Obj:
        port = each(lambda p: fill(p, (("protocol", "TCP", True),)))
        out = at(at(s, "ingress", each(lambda r: at(r, "ports", port))), "egress",
                 each(lambda r: at(r, "ports", port)))
        if not out.get("policyTypes"):
            types = ["Ingress", "Egress"] if out.get("egress") else ["Ingress"]
            out = {**out, "policyTypes": types}
        return out
    _spec(obj, spec)


_SCALE_UP: Obj = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
    {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN: Obj = {"stabilizationWindowSeconds": 300, "selectPolicy": "Max", "policies": [
    {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scaling_rules(defaults: Obj) -> Callable[[Any], Any]:
    def apply(rules: Any) -> Any:  # GenerateHPAScale{Up,Down}Rules / copyHPAScalingRules
        if not isinstance(rules, dict):
            return clone(defaults)
        return fill(rules, tuple((k, (lambda v=v: clone(v)), False) for k, v in defaults.items()))
    return apply


def _hpa(obj: Obj) -> None:  # autoscaling/v2 SetDefaults_HorizontalPodAutoscaler (+ Behavior)
    def spec(s: Obj) -> Obj:
        out = fill(s, (("minReplicas", 1, False),))
        if obj.get("apiVersion") == "autoscaling/v2" and not out.get("metrics"):
            out = {**out, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 80}}}]}
        behavior = out.get("behavior")
        if isinstance(behavior, dict):
            new = {**behavior, "scaleUp": _scaling_rules(_SCALE_UP)(behavior.get("scaleUp")),
                   "scaleDown": _scaling_rules(_SCALE_DOWN)(behavior.get("scaleDown"))}
            out = {**out, "behavior": new}
        return out
    _spec(obj, spec)
    v1 = obj.get("apiVersion") == "autoscaling/v1"
    _status(obj, (("currentReplicas", 0, False), ("desiredReplicas", 0, False)) if v1 else
            (("desiredReplicas", 0, False),))


_RULES: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("", "Pod"): _pod,
    ("", "PodTemplate"): _pod_template,
    ("", "ReplicationController"): _replication_controller,
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _claim,
    ("", "PersistentVolume"): _volume,
    ("", "Endpoints"): _endpoints,
    ("", "Node"): _node,
    ("", "Namespace"): _namespace,
    ("", "LimitRange"): _limit_range,
    ("rbac.authorization.k8s.io", "RoleBinding"): _binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _binding,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa,
}


def apply_builtin_defaults(group: str, kind: str, obj: Obj) -> None:
    """Fill the defaults of ``obj``'s kind in place: only top-level keys and metadata entries of
    ``obj`` (owned by the write) are set; everything below is replaced, never mutated."""
    rule = _RULES.get((group, kind))
    if rule is not None:
        rule(obj)


def share_template(obj: Obj, base: Any) -> None:
    """After defaulting: a pod template equal to the stored object's becomes that very object.

    Why: an update resends the whole spec, so its template is a new but usually equal object; sharing
    the stored one lets the identity memos of defaulting and validation skip it (one C-speed compare
    instead of a walk).  ``base`` must be a stored object that passed validation whole.
    """
    spec, old = obj.get("spec"), base.get("spec") if isinstance(base, dict) else None
    if not isinstance(spec, dict) or not isinstance(old, dict):
        return
    for key in ("template", "jobTemplate"):
        mine, theirs = spec.get(key), old.get(key)
        if mine is not None and mine is not theirs and mine == theirs:
            spec = {**spec, key: theirs}
            obj["spec"] = spec


def prepare_for_create(group: str, kind: str, obj: Obj) -> None:
    """Fields the kinds' ``PrepareForCreate`` strategies set on create (after defaulting)."""
    if group == "" and kind == "Namespace":
        label_namespace(obj)
        obj["spec"] = fill(mapping(obj, "spec"),
                           (("finalizers", lambda: ["kubernetes"], False),))
        obj["status"] = {"phase": "Active"}
    elif group == "" and kind == "Pod":  # podStrategy.PrepareForCreate
        obj["status"] = {"phase": "Pending", "qosClass": P.qos_class(obj.get("spec"))}
    elif group == "batch" and kind == "Job":
        _generate_job_selector(obj)


def _generate_job_selector(obj: Obj) -> None:
    """``generateSelector`` (pkg/registry/batch/job/strategy.go), unless ``manualSelector`` is true."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    meta = obj["metadata"]
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    tmpl = mapping(spec, "template")
    tmeta = mapping(tmpl, "metadata")
    labels = dict(tmeta.get("labels") or {})
    for key, value in (("job-name", name), ("batch.kubernetes.io/job-name", name), ("controller-uid", uid),
                       ("batch.kubernetes.io/controller-uid", uid)):
        labels.setdefault(key, value)  # a label the user set is kept (validation then refuses it)
    selector = mapping(spec, "selector")
    match = dict(selector.get("matchLabels") or {})
    match.setdefault("batch.kubernetes.io/controller-uid", uid)
    obj["spec"] = {**spec, "template": {**tmpl, "metadata": {**tmeta, "labels": labels}},
                   "selector": {**selector, "matchLabels": match}}


# -- list-map keys of apply configurations --------------------------------------------------------
# Server-side apply matches list items by their list-map keys. `protocol` is a key of container and
# service ports with a schema default of TCP, and the real server fills such key defaults into the
# applied configuration before merging; without that, re-applying `ports: [{containerPort: 80}]`
# would not match the stored (defaulted) item and would append a duplicate every time.

_POD_SPEC_PATHS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("", "Pod"): (("spec",),),
    ("", "PodTemplate"): (("template", "spec"),),
    ("", "ReplicationController"): (("spec", "template", "spec"),),
    ("apps", "Deployment"): (("spec", "template", "spec"),),
    ("apps", "ReplicaSet"): (("spec", "template", "spec"),),
    ("apps", "StatefulSet"): (("spec", "template", "spec"),),
    ("apps", "DaemonSet"): (("spec", "template", "spec"),),
    ("batch", "Job"): (("spec", "template", "spec"),),
    ("batch", "CronJob"): (("spec", "jobTemplate", "spec", "template", "spec"),),
}


def _ports_protocol(ports: Any) -> Any:
    """The ports with ``protocol: TCP`` filled in where missing (the list itself when none is)."""
    if not isinstance(ports, list) or all(not isinstance(p, dict) or "protocol" in p for p in ports):
        return ports
    return [{**p, "protocol": "TCP"} if isinstance(p, dict) and "protocol" not in p else p for p in ports]


def _containers_protocol(containers: Any) -> Any:
    if not isinstance(containers, list):
        return containers
    out = [c if not isinstance(c, dict) or (ports := _ports_protocol(c.get("ports"))) is c.get("ports")
           else {**c, "ports": ports} for c in containers]
    return containers if all(a is b for a, b in zip(out, containers)) else out


def _spec_protocols(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    changed = {key: filled for key in ("containers", "initContainers", "ephemeralContainers")
               if (filled := _containers_protocol(spec.get(key))) is not spec.get(key)}
    return {**spec, **changed} if changed else spec


def _at_path(obj: Any, path: tuple[str, ...], fn: Any) -> Any:
    """``obj`` with ``fn`` applied at ``path``, copying only the dicts on the way (itself when unchanged)."""
    if not path:
        return fn(obj)
    if not isinstance(obj, dict):
        return obj
    child = obj.get(path[0])
    new = _at_path(child, path[1:], fn)
    return obj if new is child else {**obj, path[0]: new}


def default_apply_keys(group: str, kind: str, applied: Obj) -> Obj:
    """The applied configuration with missing list-map key fields defaulted.

    Copy-on-write: only the dicts and lists on the way to a port that lacks its protocol are new (the
    parsed body is the journal's record of the request, so it is never changed); a configuration
    that names every protocol is returned as itself.
    """
    if (group, kind) == ("", "Service"):
        out: Obj = _at_path(applied, ("spec", "ports"), _ports_protocol)
        return out
    for path in _POD_SPEC_PATHS.get((group, kind), ()):
        applied = _at_path(applied, path, _spec_protocols)
    return applied
