"""Built-in defaulting: the fields the real apiserver fills in on every write of common workload kinds.

Why it matters: a controller that compares its desired spec with the live one sees these defaults in
a real cluster; without them the simulation would hide the classic "update forever because the server
added imagePullPolicy" hot loop.  Only widely relied-on defaults are reproduced (docs/apiserver.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kamera_cli.apiserver.semantics import clone

Obj = dict[str, Any]


def _image_pull_policy(image: Any) -> str:
    if not isinstance(image, str):
        return "IfNotPresent"
    name = image.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    return "Always" if "@" not in image and tag in ("", "latest") else "IfNotPresent"


def _container(c: Any) -> None:
    if not isinstance(c, dict):
        return
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("imagePullPolicy", _image_pull_policy(c.get("image")))
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def pod_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            _container(c)


def _template(spec: Obj) -> None:
    template = spec.get("template")
    if isinstance(template, dict):
        pod_spec(template.get("spec"))


def _deployment(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(spec)


def _replicaset(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        _template(spec)


def _rolling_update(spec: Obj, **defaults: Any) -> None:
    """StatefulSet/DaemonSet ``updateStrategy``: RollingUpdate unless set, with its parameters defaulted."""
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                for key, value in defaults.items():
                    rolling.setdefault(key, value)


def _statefulset(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    _rolling_update(spec, partition=0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)


def _daemonset(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    _rolling_update(spec, maxUnavailable=1, maxSurge=0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)


def _job(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    _template(spec)


def _pod(obj: Obj) -> None:
    pod_spec(obj.get("spec"))


def _service(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])


_RULES: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("", "Pod"): _pod,
    ("", "ReplicationController"): _replicaset,
    ("", "Service"): _service,
}


def apply_builtin_defaults(group: str, kind: str, obj: Obj) -> None:
    """Fill the defaults of ``obj``'s kind in place; ``spec`` is copied first (it may be shared).

    Subtrees the rule left alone are swapped back for the originals afterwards, so a spec that
    shares most of its values with the stored object still does after defaulting (what the
    identity shortcuts of validation and managedFields bookkeeping rely on).
    """
    rule = _RULES.get((group, kind))
    if rule is None or not isinstance(obj.get("spec"), dict):
        return
    original = obj["spec"]
    obj["spec"] = _copy_along(original, _TOUCHED)
    rule(obj)
    obj["spec"] = _reshare(original, obj["spec"])


# Where the rules above set keys, below a spec: only these containers are copied before they run
# (``*``: every item of a list), everything else stays shared and is never written to.
_POD_SPEC_TOUCHED: dict[str, Any] = {"containers": {"*": {"ports": {"*": {}}}},
                                     "initContainers": {"*": {"ports": {"*": {}}}}}
_TOUCHED: dict[str, Any] = {"strategy": {"rollingUpdate": {}}, "updateStrategy": {"rollingUpdate": {}},
                            "template": {"spec": _POD_SPEC_TOUCHED}, "ports": {"*": {}}, **_POD_SPEC_TOUCHED}


def _copy_along(value: Any, touched: dict[str, Any]) -> Any:
    """A copy of ``value`` whose dicts and lists named by ``touched`` are copies too (shallowly)."""
    if isinstance(value, dict):
        out = dict(value)
        for key, below in touched.items():
            child = out.get(key)
            if isinstance(child, (dict, list)):
                out[key] = _copy_along(child, below)
        return out
    if isinstance(value, list):
        items = touched.get("*")
        return [_copy_along(v, items) if items is not None and isinstance(v, (dict, list)) else v for v in value]
    return value


def _reshare(original: Any, copy: Any) -> Any:
    """``copy`` (a defaulted clone of ``original``) with every subtree it did not extend replaced by
    the original one.  Rules only add missing keys, so an unextended subtree compares equal; an
    extended one has more keys and does not."""
    if copy is original or copy == original:
        return original
    if isinstance(copy, dict) and isinstance(original, dict):
        for key, value in copy.items():
            if key in original and isinstance(value, (dict, list)):
                copy[key] = _reshare(original[key], value)
    elif isinstance(copy, list) and isinstance(original, list) and len(copy) == len(original):
        for index, value in enumerate(copy):
            if isinstance(value, (dict, list)):
                copy[index] = _reshare(original[index], value)
    return copy


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


def _ports_protocol(ports: Any) -> None:
    for port in ports if isinstance(ports, list) else ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def default_apply_keys(group: str, kind: str, applied: Obj) -> Obj:
    """The applied configuration with missing list-map key fields defaulted (a copy when anything changes)."""
    paths = _POD_SPEC_PATHS.get((group, kind), ())
    if not paths and (group, kind) != ("", "Service"):
        return applied
    obj: Obj = clone(applied)
    if (group, kind) == ("", "Service"):
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _ports_protocol(spec.get("ports"))
        return obj
    for path in paths:
        node: Any = obj
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            for key in ("containers", "initContainers", "ephemeralContainers"):
                for c in node.get(key) or ():
                    if isinstance(c, dict):
                        _ports_protocol(c.get("ports"))
    return obj
