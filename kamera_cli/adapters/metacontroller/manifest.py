"""Reading a metacontroller ``CompositeController`` or ``DecoratorController`` manifest.

Why a parser of its own with located problems: the manifest is the user's real one, written for
metacontroller (``metacontroller.k8s.io/v1alpha1``, ``pkg/apis/metacontroller/v1alpha1/types.go``);
kamera reads the parts the engine acts on and reports every other problem (not a controller of
these kinds, a hook without a Python mapping, an unknown update strategy, a v2 hook) with the path
inside the manifest, so the scenario loader can turn it into ``file:line`` — never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "HOOK_NAMES",
    "UPDATE_METHODS",
    "ChildRule",
    "ManifestProblem",
    "MetaSpec",
    "ParentRule",
    "parse_manifest",
]

API_VERSION = "metacontroller.k8s.io/v1alpha1"
KINDS = ("CompositeController", "DecoratorController")
#: the hooks a manifest may name (``spec.hooks``)
HOOK_NAMES = ("sync", "finalize", "customize")
#: ``ChildUpdateMethod`` values (an empty method is OnDelete)
UPDATE_METHODS = ("OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace")

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class ManifestProblem:
    """One problem, with the path of the field inside the manifest document."""

    path: Path
    message: str
    hint: str = ""


@dataclass(frozen=True, slots=True)
class ChildRule:
    """A child (Composite) or attachment (Decorator) resource and how its children are updated."""

    api_version: str
    resource: str
    update_method: str = "OnDelete"
    #: a rolling update's ``statusChecks.conditions`` ({type, status?, reason?}), as JSON
    status_checks: str = ""

    @property
    def rolling(self) -> bool:
        return self.update_method in ("RollingRecreate", "RollingInPlace")


@dataclass(frozen=True, slots=True)
class ParentRule:
    """A parent resource with its label (and, for a Decorator, annotation) selector, as JSON."""

    api_version: str
    resource: str
    label_selector: str = ""
    annotation_selector: str = ""
    #: ``ignoreStatusChanges``: an update that changes neither generation, labels, annotations nor
    #: deletion does not enqueue the parent
    ignore_status_changes: bool = False


@dataclass(frozen=True, slots=True)
class MetaSpec:
    """What the engine needs from the manifest (the rest of the manifest is sent to the hooks)."""

    kind: Literal["CompositeController", "DecoratorController"]
    name: str
    parents: tuple[ParentRule, ...]
    children: tuple[ChildRule, ...]
    #: the hooks the manifest defines, each with the path of its webhook (the handler's request path)
    hooks: tuple[tuple[str, str], ...]
    #: each hook's version (v1 or v2: how children and related objects are keyed in its request)
    versions: tuple[tuple[str, str], ...] = ()
    generate_selector: bool = False
    resync_period_seconds: float = 0.0
    #: ``parentResource.revisionHistory.fieldPaths``: what a ControllerRevision records of the parent
    revision_field_paths: tuple[str, ...] = ("spec",)

    @property
    def composite(self) -> bool:
        return self.kind == "CompositeController"

    def hook_path(self, hook: str) -> str | None:
        return dict(self.hooks).get(hook)

    def hook_version(self, hook: str) -> str:
        return dict(self.versions).get(hook, "v1")

    @property
    def finalizer(self) -> str:
        """The finalizer metacontroller puts on parents when a finalize hook is defined."""
        prefix = "compositecontroller" if self.composite else "decoratorcontroller"
        return f"metacontroller.io/{prefix}-{self.name}"


def parse_manifest(obj: Any, mapped_hooks: Mapping[str, Any]) -> tuple[MetaSpec | None, list[ManifestProblem]]:
    """The manifest's engine spec, or None with the problems (``mapped_hooks``: the scenario's ``hooks``)."""
    problems: list[ManifestProblem] = []

    def add(path: Path, message: str, hint: str = "") -> None:
        problems.append(ManifestProblem(path, message, hint))

    if not isinstance(obj, dict):
        add((), "a metacontroller manifest must be one object (a CompositeController or DecoratorController)")
        return None, problems
    kind = obj.get("kind")
    if obj.get("apiVersion") != API_VERSION or kind not in KINDS:
        add(("kind",), f"{obj.get('apiVersion')}/{kind} is not a metacontroller CompositeController or "
                       "DecoratorController", f"the manifest must have apiVersion {API_VERSION} and one of these kinds")
        return None, problems
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    if not isinstance(name, str) or not name:
        add(("metadata",), "the manifest has no metadata.name (metacontroller names its finalizer after it)")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        add(("spec",), "the manifest has no spec")
        return None, problems
    composite = kind == "CompositeController"
    parents: list[ParentRule] = []
    if composite:
        parent = spec.get("parentResource")
        if isinstance(parent, dict) and _resource_ok(parent, ("spec", "parentResource"), add):
            parents.append(ParentRule(parent["apiVersion"], parent["resource"], _selector(parent.get("labelSelector")),
                                      ignore_status_changes=parent.get("ignoreStatusChanges") is True))
        elif not isinstance(parent, dict):
            add(("spec",), "a CompositeController needs spec.parentResource {apiVersion, resource}")
    else:
        resources = spec.get("resources")
        if not isinstance(resources, list) or not resources:
            add(("spec",), "a DecoratorController needs spec.resources: [{apiVersion, resource}]")
        for i, rule in enumerate(resources if isinstance(resources, list) else []):
            if isinstance(rule, dict) and _resource_ok(rule, ("spec", "resources", i), add):
                parents.append(ParentRule(rule["apiVersion"], rule["resource"], _selector(rule.get("labelSelector")),
                                          _annotation_selector(rule.get("annotationSelector")),
                                          rule.get("ignoreStatusChanges") is True))
    children = _children(spec, "childResources" if composite else "attachments", add)
    hooks, versions = _hooks(spec, mapped_hooks, add)
    resync = spec.get("resyncPeriodSeconds", 0)
    if not isinstance(resync, (int, float)) or isinstance(resync, bool) or resync < 0:
        add(("spec", "resyncPeriodSeconds"), f"resyncPeriodSeconds must be a number of seconds, not {resync!r}")
        resync = 0
    generate = spec.get("generateSelector", False) if composite else False
    history = (spec.get("parentResource") or {}).get("revisionHistory") if composite else None
    paths = history.get("fieldPaths") if isinstance(history, dict) else None
    field_paths = tuple(str(p) for p in paths) if isinstance(paths, list) and paths else ("spec",)
    if problems:
        return None, problems
    return MetaSpec(kind="CompositeController" if composite else "DecoratorController", name=str(name),
                    parents=tuple(parents), children=children, hooks=hooks, versions=versions,
                    generate_selector=generate is True,
                    resync_period_seconds=float(resync), revision_field_paths=field_paths), problems


def _resource_ok(rule: dict[str, Any], path: Path, add: Any) -> bool:
    ok = True
    for key in ("apiVersion", "resource"):
        if not isinstance(rule.get(key), str) or not rule.get(key):
            add(path, f"{key} is missing (a resource rule names apiVersion and the plural resource, e.g. pods)")
            ok = False
    return ok


def _selector(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else ""


def _annotation_selector(value: Any) -> str:
    """An annotationSelector as a label selector (``matchAnnotations`` reads as ``matchLabels``)."""
    if not isinstance(value, dict):
        return ""
    return _selector({"matchLabels": value.get("matchAnnotations") or {},
                      "matchExpressions": value.get("matchExpressions") or []})


def _children(spec: dict[str, Any], key: str, add: Any) -> tuple[ChildRule, ...]:
    raw = spec.get(key) or []
    if not isinstance(raw, list):
        add(("spec", key), f"spec.{key} must be a list of {{apiVersion, resource}}")
        return ()
    out: list[ChildRule] = []
    for i, rule in enumerate(raw):
        path: Path = ("spec", key, i)
        if not isinstance(rule, dict) or not _resource_ok(rule, path, add):
            continue
        strategy = rule.get("updateStrategy") or {}
        method = (strategy.get("method") if isinstance(strategy, dict) else None) or "OnDelete"
        if method not in UPDATE_METHODS:
            add((*path, "updateStrategy", "method"), f"unknown update method {method!r}",
                "one of " + ", ".join(UPDATE_METHODS))
            continue
        checks = (strategy.get("statusChecks") or {}).get("conditions") if isinstance(strategy, dict) else None
        out.append(ChildRule(rule["apiVersion"], rule["resource"], method,
                             json.dumps(checks, sort_keys=True) if isinstance(checks, list) else ""))
    return tuple(out)


def _hooks(spec: dict[str, Any], mapped: Mapping[str, Any],
           add: Any) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The hooks with their request paths, and with their versions."""
    hooks = spec.get("hooks")
    if not isinstance(hooks, dict) or not hooks:
        add(("spec",), "the manifest defines no hooks (metacontroller: 'no hooks defined')")
        return (), ()
    out: list[tuple[str, str]] = []
    versions: list[tuple[str, str]] = []
    for hook in sorted(hooks):
        path: Path = ("spec", "hooks", hook)
        if hook not in HOOK_NAMES:
            add(path, f"unknown hook {hook!r}", "metacontroller's hooks are " + ", ".join(HOOK_NAMES))
            continue
        value = hooks[hook]
        if not isinstance(value, dict):
            continue  # a null hook is no hook
        version = value.get("version") or "v1"
        if version not in ("v1", "v2"):
            add((*path, "version"), f"unknown hook version {version!r}", "v1 (the default) or v2")
        if hook not in mapped:
            add(path, f"the manifest's {hook} hook has no Python mapping in the scenario's hooks",
                f"add `{hook}: path/to/hook.py:function_or_handler` to the controller's hooks")
        out.append((hook, _webhook_path(value.get("webhook"))))
        versions.append((hook, str(version)))
    if "sync" not in dict(out):
        add(("spec", "hooks"), "the manifest has no sync hook")
    for hook in sorted(mapped):
        if hook not in dict(out) and hook in HOOK_NAMES:
            add(("spec", "hooks"), f"the scenario maps a {hook} hook the manifest does not define",
                "metacontroller only calls the hooks its manifest defines")
    return tuple(out), tuple(versions)


def _webhook_path(webhook: Any) -> str:
    """The request path a hook server sees: the URL's path, or the service reference's ``path``."""
    if not isinstance(webhook, dict):
        return "/"
    url = webhook.get("url")
    if isinstance(url, str) and url:
        from urllib.parse import urlsplit

        split = urlsplit(url)
        return (split.path or "/") + (f"?{split.query}" if split.query else "")
    path = webhook.get("path")
    return path if isinstance(path, str) and path else "/"
