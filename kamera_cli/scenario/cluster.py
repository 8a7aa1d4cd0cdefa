"""``spec.cluster``: which built-in controllers run, the fake nodes, and how pods end.

Why its own module: the section is checked beyond the schema (Node manifests, selector operators,
names that clash with the scenario's own controllers), each problem located at its field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.controlplane.nodes import node_manifests
from kamera_cli.model.objects import Manifest
from kamera_cli.model.scenario import ClusterSpec, PodRuleSpec, Position
from kamera_cli.scenario.paths import Path_

#: every name ``builtins:`` takes, and the built-ins each one needs to do anything useful
KNOWN = ("cronjob", "daemonset", "deployment", "endpoints", "endpointslice", "job", "kubelet", "pvc-binder",
         "replicaset", "root-ca-publisher", "serviceaccount", "statefulset")
_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")




def _outcomes(raw: Mapping[str, Any] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if not raw:
        return default
    if raw.get("outcomes"):
        return tuple(str(o) for o in raw["outcomes"])
    return ("ready",) if raw.get("ready", True) is not False else ("running",)


def _node(index: int, raw: Any, path: Path_, add: Callable[[Path_, str, str], None]) -> Manifest | None:
    if not isinstance(raw, Mapping) or raw.get("kind") != "Node" or raw.get("apiVersion") != "v1":
        add(path, "a node must be a v1 Node manifest (apiVersion: v1, kind: Node)", "or give a count: nodes: 2")
        return None
    name = (raw.get("metadata") or {}).get("name") if isinstance(raw.get("metadata"), Mapping) else None
    if not isinstance(name, str) or not name:
        add((*path, "metadata", "name"), "a Node needs metadata.name", "")
        return None
    return dict(raw)


def _selector(raw: Any, path: Path_, add: Callable[[Path_, str, str], None]) -> bool:
    if raw is None:
        return True
    if not isinstance(raw, Mapping):
        add(path, "a selector must be a mapping", "matchLabels: {app: web} and/or matchExpressions: [...]")
        return False
    ok = True
    for key in raw:
        if key not in ("matchLabels", "matchExpressions"):
            add((*path, key), f"unknown selector field {key!r}", "a selector has matchLabels and matchExpressions")
            ok = False
    labels = raw.get("matchLabels")
    if labels is not None and (not isinstance(labels, Mapping)
                               or not all(isinstance(v, str) for v in labels.values())):
        add((*path, "matchLabels"), "matchLabels must map label names to string values", "quote numbers: '1'")
        ok = False
    expressions = raw.get("matchExpressions") or ()
    if not isinstance(expressions, (list, tuple)):
        add((*path, "matchExpressions"), "matchExpressions must be a list", "[{key: app, operator: Exists}]")
        return False
    for i, expr in enumerate(expressions):
        where: Path_ = (*path, "matchExpressions", i)
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            add(where, "a match expression needs a key", "")
            ok = False
        elif expr.get("operator") not in _SELECTOR_OPS:
            add((*where, "operator"), f"unknown operator {expr.get('operator')!r}",
                "one of " + ", ".join(_SELECTOR_OPS))
            ok = False
    return ok


def parse_cluster(raw: Mapping[str, Any], *, add: Callable[[Path_, str, str], None],
                  position: Callable[[Path_], Position], controller_names: list[str]) -> ClusterSpec:
    """The validated section (the schema has already checked its shape)."""
    base: Path_ = ("spec", "cluster")
    if not raw:
        return ClusterSpec()
    given = raw.get("builtins") or ()
    if not isinstance(given, (list, tuple, str)):
        given = ()  # the schema has said what is wrong with it
    names = set(KNOWN) if given == "all" or "all" in given else {str(n) for n in given}
    for i, name in enumerate(controller_names):
        if name in names:
            add(("spec", "controllers", i, "name"), f"controller name {name!r} is taken by a built-in controller",
                "rename the controller, or drop the built-in from spec.cluster.builtins")
    if "deployment" in names and "replicaset" not in names:
        names.add("replicaset")  # a Deployment does nothing visible without ReplicaSets becoming pods
    if "cronjob" in names and "job" not in names:
        names.add("job")  # a CronJob's Jobs would never run
    nodes: list[Manifest] = []
    raw_nodes = raw.get("nodes")
    if isinstance(raw_nodes, list):
        for i, item in enumerate(raw_nodes):
            node = _node(i, item, (*base, "nodes", i), add)
            if node is not None:
                nodes.append(node)
    else:
        count = raw_nodes if isinstance(raw_nodes, int) else (1 if "kubelet" in names else 0)
        nodes.extend(node_manifests(count))
    pods = raw.get("pods") or {}
    if not isinstance(pods, Mapping):
        pods = {}  # the schema has said what is wrong with it
    default = _outcomes(pods.get("default"), ("ready",))
    rules: list[PodRuleSpec] = []
    given_rules = pods.get("rules") or ()
    for i, rule in enumerate(given_rules if isinstance(given_rules, (list, tuple)) else ()):
        path: Path_ = (*base, "pods", "rules", i)
        if not isinstance(rule, Mapping):
            continue  # the schema has said what is wrong with it
        selector = rule.get("selector")
        if not _selector(selector, (*path, "selector"), add):
            continue
        code = rule.get("exitCode", 1)
        rules.append(PodRuleSpec(dict(selector or {}), _outcomes(rule, default),
                                 tuple(str(n) for n in rule.get("namespaces") or ()), position(path),
                                 exit_code=code if isinstance(code, int) and not isinstance(code, bool) else 1))
    if (pods.get("rules") or pods.get("default")) and "kubelet" not in names:
        add((*base, "pods"), "pod outcomes need the kubelet built-in", "add kubelet to spec.cluster.builtins")
    runs = raw.get("cronJobRuns", 2)
    return ClusterSpec(tuple(sorted(names)), tuple(nodes), default, tuple(rules), position(base),
                       cronjob_runs=runs if isinstance(runs, int) and not isinstance(runs, bool) else 2,
                       system_objects=raw.get("systemObjects", True) is not False)
