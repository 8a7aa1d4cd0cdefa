"""User actions in a scenario (``spec.actions``): what the user does to the cluster, checked as the
loader checks everything — every problem recorded with its line, nothing imported or run."""

from __future__ import annotations

from typing import Any, Literal, cast

from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import ActionSpec
from kamera_cli.scenario.manifests import Sources
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.reading import Reader
from kamera_cli.scenario.schema import json_type
from kamera_cli.scenario.values import as_dict, as_int, as_list, as_str

_JSON_PATCH_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def target_ref(ld: Reader, raw: Any, path: Path_) -> ObjectRef | None:
    raw = as_dict(raw)
    api_version, kind, name = raw.get("apiVersion"), raw.get("kind"), raw.get("name")
    if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
        return None
    ref = KindRef.of(api_version, kind)
    ld.check_known(ref, lambda message, hint: ld.add((*path, "kind"), message, hint))
    namespace = as_str(raw.get("namespace"))
    namespace = (namespace or "default") if ld.oracle.namespaced(ref) else ""
    return ObjectRef(api_version, kind, namespace, name)

def read_actions(ld: Reader, sources: Sources, spec: dict[str, Any]) -> tuple[ActionSpec, ...]:
    actions: list[ActionSpec] = []
    for i, raw in enumerate(as_list(spec.get("actions"))):
        path: Path_ = ("spec", "actions", i)
        if not isinstance(raw, dict):
            continue
        verbs = [verb for verb in ("apply", "replace", "delete", "patch") if verb in raw]
        if len(verbs) != 1:
            got = "none" if not verbs else " and ".join(verbs)
            hint = "split it into several actions" if verbs else ""
            ld.add(path, f"an action needs exactly one of apply, replace, delete, patch; got {got}", hint)
            continue
        verb = cast(Literal["apply", "replace", "delete", "patch"], verbs[0])
        at_raw = raw.get("at", "converged")
        at: Literal["converged", "any"] | int = "converged"
        if at_raw == "any":
            at = "any"
        elif isinstance(at_raw, dict):
            at = as_int(at_raw.get("afterSteps"), 0)
        name = as_str(raw.get("name")) or f"action {i + 1} ({verb})"
        position = ld.position(path)
        may_fail = raw.get("mayFail", False)
        codes = tuple(sorted(c for c in may_fail if isinstance(c, int))) if isinstance(may_fail, list) else ()
        refusals: dict[str, Any] = {"may_fail": may_fail is True or bool(codes), "may_fail_codes": codes}
        if verb in ("apply", "replace"):
            entry = raw[verb]
            before = len(ld.problems)
            located = sources.resolve(entry, (*path, verb))
            if isinstance(entry, str) and entry and not located and len(ld.problems) == before:
                ld.add((*path, verb), f"{entry!r} holds no object to {verb}")
            objects = tuple(obj for _, obj in ld.objects(located))
            actions.append(ActionSpec(name, verb, at, objects=objects, position=position, **refusals))
        elif verb == "delete":
            target = target_ref(ld, raw["delete"], (*path, "delete"))
            if target is not None:
                actions.append(ActionSpec(name, "delete", at, target=target, position=position, **refusals))
        else:
            patch = as_dict(raw["patch"])
            target = target_ref(ld, patch.get("target"), (*path, "patch", "target"))
            patch_type = patch.get("type", "merge")
            body = patch.get("patch")
            check_patch_body(ld, patch_type, body, (*path, "patch", "patch"))
            if patch_type == "apply" and isinstance(body, dict) and target is not None:
                check_apply_body(ld, body, target, (*path, "patch", "patch"))
            if target is not None and patch_type in ("merge", "json", "strategic", "apply"):
                actions.append(
                    ActionSpec(
                        name, "patch", at, target=target, patch_type=patch_type, patch=body, position=position,
                        subresource=as_str(patch.get("subresource")), field_manager=as_str(patch.get("fieldManager")),
                        force=patch.get("force") is True, **refusals,
                    )
                )
    return tuple(actions)

def check_apply_body(ld: Reader, body: dict[str, Any], target: ObjectRef, path: Path_) -> None:
    """A server-side apply body names its object; it must be the target (the server answers 400 otherwise)."""
    name = as_dict(body.get("metadata")).get("name")
    if body.get("apiVersion") != target.api_version or body.get("kind") != target.kind or name != target.name:
        ld.add(path, f"an apply patch carries apiVersion, kind and metadata.name of its target "
                       f"({target.api_version}, {target.kind}, {target.name})")

def check_patch_body(ld: Reader, patch_type: Any, body: Any, path: Path_) -> None:
    if patch_type in ("merge", "strategic", "apply") and not isinstance(body, dict):
        article = "an" if patch_type == "apply" else "a"
        ld.add(path, f"{article} {patch_type} patch is an object, got {json_type(body)}")
    elif patch_type == "json":
        if not isinstance(body, list):
            ld.add(path, f"a json patch is a list of RFC 6902 operations, got {json_type(body)}")
            return
        for j, op in enumerate(body):
            valid = isinstance(op, dict) and op.get("op") in _JSON_PATCH_OPS and isinstance(op.get("path"), str)
            if not valid:
                ld.add(
                    (*path, j),
                    "a json patch operation is {op: add|remove|replace|move|copy|test, path: /json/pointer, ...}",
                )
                continue
            pointers = [("path", op["path"])]
            if op["op"] in ("move", "copy"):
                if not isinstance(op.get("from"), str):
                    ld.add((*path, j), f"a json patch {op['op']} operation needs 'from' (a JSON Pointer)")
                else:
                    pointers.append(("from", op["from"]))
            elif op["op"] in ("add", "replace", "test") and "value" not in op:
                ld.add((*path, j), f"a json patch {op['op']} operation needs 'value'")
            for key, pointer in pointers:
                if pointer and not pointer.startswith("/"):
                    ld.add((*path, j, key),
                             f"{pointer!r} is not a JSON Pointer: it must start with '/' (or be empty)")
