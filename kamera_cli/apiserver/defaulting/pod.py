"""Defaulting of pod specs, as ``SetObjectDefaults_Pod`` / ``_PodTemplate`` apply it on every decode.

Upstream: pkg/apis/core/v1/defaults.go (``SetDefaults_PodSpec``, ``SetDefaults_Pod``,
``SetDefaults_Container``, ``SetDefaults_Probe``, ``SetDefaults_HTTPGetAction``,
``SetDefaults_Volume`` and the volume sources, ``SetDefaults_ObjectFieldSelector``,
``SetDefaults_ServiceAccountTokenProjection``, ``SetDefaults_PersistentVolumeClaimSpec``) and the
``+default`` markers of k8s.io/api/core/v1/types.go collected in zz_generated.defaults.go.

Copy-on-write throughout: every function returns its argument itself when it adds nothing, so a
spec that is already defaulted stays shared with the stored object (the validation and
managedFields shortcuts rely on that identity) and costs no copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from kamera_cli.apiserver.validation.quantity import QuantityError, value_of

Obj = dict[str, Any]
#: (field, default, the Go zero value -- "" or 0 -- also counts as unset)
Rule = tuple[str, Any, bool]


class Memo:
    """Objects (by identity) already known to pass a check unchanged -- defaulted, or valid.

    Why: a patch or an update of a workload shares its untouched template with the stored object, and
    stored objects are never mutated, so a template that was a fixed point once still is.  Entries keep
    their objects alive (an id cannot be reused while listed); the memo is cleared when full.
    """

    __slots__ = ("_seen",)
    _LIMIT = 4096

    def __init__(self) -> None:
        self._seen: dict[tuple[int, Any], Any] = {}

    def has(self, obj: Any, key: Any = None) -> bool:
        return self._seen.get((id(obj), key)) is obj

    def add(self, obj: Any, key: Any = None) -> None:
        if len(self._seen) >= self._LIMIT:
            self._seen.clear()
        self._seen[(id(obj), key)] = obj


_DEFAULTED = Memo()


def fill(d: Obj, rules: Sequence[Rule]) -> Obj:
    """``d`` with each rule's default where the field is unset (a copy only if one is added)."""
    out: Obj | None = None
    for key, default, zero in rules:
        value = d.get(key)
        if value is None or (zero and not isinstance(value, bool) and value in ("", 0)):
            if out is None:
                out = dict(d)
            out[key] = default() if callable(default) else default
    return d if out is None else out


def mapping(d: Obj, key: str) -> Obj:
    """``d[key]`` when it is an object, else an empty one (a Go struct's zero value)."""
    value = d.get(key)
    return value if isinstance(value, dict) else {}


def at(d: Obj, key: str, fn: Callable[[Any], Any]) -> Obj:
    """``d`` with ``d[key]`` replaced by ``fn(d[key])`` when that is a new object."""
    child = d.get(key)
    if child is None:
        return d
    new = fn(child)
    if new is child:
        return d
    out = dict(d)
    out[key] = new
    return out


def each(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` over the dict items of a list, returning the list itself when no item changed."""
    def apply(items: Any) -> Any:
        if not isinstance(items, list):
            return items
        new = [fn(i) if isinstance(i, dict) else i for i in items]
        return items if all(a is b for a, b in zip(new, items)) else new
    return apply


def image_pull_policy(image: Any) -> str:
    """``SetDefaults_Container``: Always for the ``latest`` tag (also implied by no tag and no digest)."""
    if not isinstance(image, str):
        return "IfNotPresent"
    name = image.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    return "Always" if "@" not in image and tag in ("", "latest") else "IfNotPresent"


_PROBE: Sequence[Rule] = (("timeoutSeconds", 1, True), ("periodSeconds", 10, True), ("successThreshold", 1, True),
                          ("failureThreshold", 3, True))
_HTTP_GET: Sequence[Rule] = (("path", "/", True), ("scheme", "HTTP", True))
_FIELD_REF: Sequence[Rule] = (("apiVersion", "v1", True),)
_PORT: Sequence[Rule] = (("protocol", "TCP", True),)
_MODE: Sequence[Rule] = (("defaultMode", 420, False),)


def _http_get(handler: Any) -> Any:
    return at(handler, "httpGet", lambda h: fill(h, _HTTP_GET) if isinstance(h, dict) else h) \
        if isinstance(handler, dict) else handler


def _probe(probe: Any) -> Any:
    return _http_get(fill(probe, _PROBE)) if isinstance(probe, dict) else probe


def _env(env: Obj) -> Obj:
    return at(env, "valueFrom", lambda v: at(v, "fieldRef", lambda f: fill(f, _FIELD_REF))
              if isinstance(v, dict) else v)


def _lifecycle(lifecycle: Any) -> Any:
    if not isinstance(lifecycle, dict):
        return lifecycle
    return at(at(lifecycle, "postStart", _http_get), "preStop", _http_get)


_CONTAINER: Sequence[Rule] = (("terminationMessagePath", "/dev/termination-log", True),
                              ("terminationMessagePolicy", "File", True), ("resources", dict, False))
_PORTS = each(lambda p: fill(p, _PORT))
_ENVS = each(_env)
#: the nested fields of a container that have defaults below them
_CONTAINER_NESTED: Sequence[tuple[str, Callable[[Any], Any]]] = (
    ("ports", _PORTS), ("env", _ENVS), ("livenessProbe", _probe), ("readinessProbe", _probe),
    ("startupProbe", _probe), ("lifecycle", _lifecycle))


def container(c: Obj) -> Obj:
    out = c
    if not c.get("imagePullPolicy"):
        out = {**c, "imagePullPolicy": image_pull_policy(c.get("image"))}
    out = fill(out, _CONTAINER)
    for key, fn in _CONTAINER_NESTED:
        if key in out:
            out = at(out, key, fn)
    return out


def _items_field_ref(source: Any) -> Any:
    return at(source, "items", each(lambda i: at(i, "fieldRef", lambda f: fill(f, _FIELD_REF)))) \
        if isinstance(source, dict) else source


def _projection(source: Obj) -> Obj:
    out = at(source, "downwardAPI", _items_field_ref)
    return at(out, "serviceAccountToken", lambda t: fill(t, (("expirationSeconds", 3600, False),))
              if isinstance(t, dict) else t)


def claim_spec(spec: Any) -> Any:
    """``SetDefaults_PersistentVolumeClaimSpec``."""
    return fill(spec, (("volumeMode", "Filesystem", True),)) if isinstance(spec, dict) else spec


def _source(rules: Sequence[Rule], then: Callable[[Any], Any] | None = None) -> Callable[[Any], Any]:
    def apply(source: Any) -> Any:
        if not isinstance(source, dict):
            return source
        out = fill(source, rules)
        return then(out) if then is not None else out
    return apply


#: Volume sources with defaults (SetDefaults_*VolumeSource and the +default markers).
_VOLUME_SOURCES: dict[str, Callable[[Any], Any]] = {
    "secret": _source(_MODE),
    "configMap": _source(_MODE),
    "downwardAPI": _source(_MODE, _items_field_ref),
    "projected": _source(_MODE, lambda p: at(p, "sources", each(_projection))),
    "hostPath": _source((("type", "", False),)),
    "iscsi": _source((("iscsiInterface", "default", True),)),
    "rbd": _source((("pool", "rbd", True), ("user", "admin", True), ("keyring", "/etc/ceph/keyring", True))),
    "azureDisk": _source((("cachingMode", "ReadWrite", False), ("fsType", "ext4", False), ("readOnly", False, False),
                          ("kind", "Shared", False))),
    "scaleIO": _source((("storageMode", "ThinProvisioned", True), ("fsType", "xfs", True))),
    "ephemeral": _source((), lambda e: at(e, "volumeClaimTemplate",
                                          lambda t: at(t, "spec", claim_spec) if isinstance(t, dict) else t)),
}


def _volume(volume: Obj) -> Obj:
    if all(key == "name" or value is None for key, value in volume.items()):
        return {**volume, "emptyDir": {}}  # SetDefaults_Volume: no source is an emptyDir
    out = volume
    for key, fn in _VOLUME_SOURCES.items():
        out = at(out, key, fn)
    return out


_POD_SPEC: Sequence[Rule] = (("dnsPolicy", "ClusterFirst", True), ("restartPolicy", "Always", True),
                             ("securityContext", dict, False), ("terminationGracePeriodSeconds", 30, False),
                             ("schedulerName", "default-scheduler", True))


_CONTAINERS = each(container)
_VOLUMES = each(_volume)


def pod_spec(spec: Any) -> Any:
    """A pod template's spec (``SetDefaults_PodSpec`` and everything nested)."""
    if not isinstance(spec, dict):
        return spec
    out = fill(spec, _POD_SPEC)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        if key in out:
            out = at(out, key, _CONTAINERS)
    return at(out, "volumes", _VOLUMES)


def _requests_from_limits(c: Obj) -> Obj:
    resources = c.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return c
    requests = mapping(resources, "requests")
    missing = {k: v for k, v in resources["limits"].items() if k not in requests}
    if not missing and "requests" in resources:
        return c
    return {**c, "resources": {**resources, "requests": {**requests, **missing}}}


def _host_ports(c: Obj) -> Obj:
    return at(c, "ports", each(lambda p: p if p.get("hostPort") or "containerPort" not in p
                               else {**p, "hostPort": p["containerPort"]}))


def pod(spec: Any) -> Any:
    """A Pod's own spec: the template defaults plus ``SetDefaults_Pod`` (requests from limits,
    ``enableServiceLinks``, host ports under host networking), which templates do not get."""
    if not isinstance(spec, dict) or _DEFAULTED.has(spec, "pod"):
        return spec
    out = pod_spec(spec)
    for key in ("containers", "initContainers"):
        out = at(out, key, each(_requests_from_limits))
        if out.get("hostNetwork") is True:
            out = at(out, key, each(_host_ports))
    out = fill(out, (("enableServiceLinks", True, False),))
    _DEFAULTED.add(out, "pod")
    return out


def template(tmpl: Any) -> Any:
    """A ``PodTemplateSpec``: only its spec has defaults (a template seen defaulted is returned at once).
    Go's template holds its spec by value, so a template without one is defaulted as an empty spec
    (``restartPolicy: Always`` and the rest) before validation sees it."""
    if not isinstance(tmpl, dict) or _DEFAULTED.has(tmpl):
        return tmpl
    out = at(tmpl if isinstance(tmpl.get("spec"), dict) else {**tmpl, "spec": {}}, "spec", pod_spec)
    _DEFAULTED.add(out)
    return out


def qos_class(spec: Any) -> str:
    """``qos.ComputePodQOS`` (pkg/apis/core/helper/qos): the pod's cpu/memory requests and limits, each
    summed over its containers and init containers (positive values only); Guaranteed when every
    container limits both and the sums of requests equal the sums of limits."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for key in ("containers", "initContainers"):
        for c in (spec or {}).get(key) or ():
            if not isinstance(c, dict):
                continue
            res = c.get("resources") or {}
            _add_positive(res.get("requests"), requests)
            if _add_positive(res.get("limits"), limits) != {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) \
            and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _add_positive(resources: Any, into: dict[str, Fraction]) -> set[str]:
    """Add the positive cpu/memory quantities of one ResourceList into ``into``; the names found."""
    found: set[str] = set()
    for name, text in (resources or {}).items() if isinstance(resources, dict) else ():
        if name not in ("cpu", "memory"):
            continue
        try:
            value = value_of(text)
        except QuantityError:
            continue
        if value > 0:
            found.add(name)
            into[name] = into.get(name, Fraction(0)) + value
    return found
