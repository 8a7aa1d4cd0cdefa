"""Derive kamera's compact built-in resource table from the Kubernetes OpenAPI (swagger 2) document.

Why a derived table: the package must not read ``../shared`` at run time, and the full document is
4 MB of prose the simulator never needs.  The table keeps exactly what the simulated API server
uses: resource names, scope, verbs and subresources (for routing and discovery), and, per schema
definition, property types, required fields and the patch/list metadata that strategic merge patch
and server-side apply are driven by.

Usage: python scripts/gen_registry.py [path/to/kubernetes-openapi-v2.json]
Writes kamera_cli/apiserver/data/builtin.json (sorted, deterministic).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "kubernetes-openapi-v2.json"
TARGET = ROOT / "kamera_cli" / "apiserver" / "data" / "builtin.json"

_PATH = re.compile(
    r"^/(?:api/(?P<cv>v1)|apis/(?P<g>[^/]+)/(?P<v>[^/]+))"
    r"(?P<ns>/namespaces/\{namespace\})?/(?P<plural>[a-z0-9]+)(?:/\{name\}(?:/(?P<sub>[a-z]+))?)?$"
)
_VERB = {"get": "get", "list": "list", "post": "create", "put": "update", "patch": "patch",
         "delete": "delete", "deletecollection": "deletecollection", "watch": "watch",
         "watchlist": "watch"}


def _ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _compact_property(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ref = _ref(schema)
    if ref:
        out["ref"] = ref
    elif "type" in schema:
        out["type"] = schema["type"]
    if schema.get("type") == "array":
        items = schema.get("items", {})
        out["items"] = _ref(items) or items.get("type", "object")
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        add = schema["additionalProperties"]
        out["values"] = _ref(add) or add.get("type", "object")
    for src, dst in (("x-kubernetes-patch-merge-key", "mergeKey"),
                     ("x-kubernetes-patch-strategy", "strategy"),
                     ("x-kubernetes-list-type", "listType"),
                     ("x-kubernetes-list-map-keys", "mapKeys"),
                     ("x-kubernetes-map-type", "mapType")):
        if src in schema:
            out[dst] = schema[src]
    if "format" in schema and schema["format"] in ("int-or-string", "date-time"):
        out["format"] = schema["format"]
    return out


def build(doc: dict[str, Any]) -> dict[str, Any]:
    definitions = doc["definitions"]
    resources: dict[tuple[str, str, str], dict[str, Any]] = {}
    subresources: dict[tuple[str, str, str], set[str]] = {}
    for path, item in doc["paths"].items():
        m = _PATH.match(path)
        if not m or "/watch/" in path:
            continue
        group = m.group("g") or ""
        version = m.group("cv") or m.group("v")
        plural = m.group("plural")
        sub = m.group("sub")
        for _method, op in item.items():
            if not isinstance(op, dict) or "x-kubernetes-action" not in op:
                continue
            gvk = op.get("x-kubernetes-group-version-kind")
            if not gvk:
                continue
            key = (group, version, plural)
            if sub:
                subresources.setdefault(key, set()).add(sub)
                continue
            if gvk["group"] != group or gvk["version"] != version:
                continue
            res = resources.setdefault(key, {
                "group": group, "version": version, "kind": gvk["kind"], "plural": plural,
                "singular": gvk["kind"].lower(), "namespaced": False, "verbs": set(),
            })
            if m.group("ns"):
                res["namespaced"] = True
            verb = _VERB.get(op["x-kubernetes-action"])
            if verb:
                res["verbs"].add(verb)
    # Map kinds to their schema definitions via x-kubernetes-group-version-kind.
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            by_gvk.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    out_resources = []
    needed: set[str] = set()
    for key in sorted(resources):
        res = resources[key]
        definition = by_gvk.get((res["group"], res["version"], res["kind"]))
        if definition is None or res["kind"].endswith("List"):
            continue
        if "list" in res["verbs"]:
            res["verbs"].add("watch")  # watch paths are the deprecated /watch/ prefix; every list is watchable
        res["verbs"] = sorted(res["verbs"])
        res["subresources"] = sorted(subresources.get(key, set()))
        res["definition"] = definition
        res["listKind"] = res["kind"] + "List"
        out_resources.append(res)
        needed.add(definition)
    # Closure over referenced definitions.
    compact: dict[str, Any] = {}
    stack = sorted(needed)
    while stack:
        name = stack.pop()
        if name in compact or name not in definitions:
            continue
        schema = definitions[name]
        entry: dict[str, Any] = {"type": schema.get("type", "object")}
        if schema.get("format"):
            entry["format"] = schema["format"]
        if schema.get("required"):
            entry["required"] = sorted(schema["required"])
        props = {k: _compact_property(v) for k, v in sorted(schema.get("properties", {}).items())}
        if props:
            entry["properties"] = props
        if schema.get("x-kubernetes-map-type"):
            entry["mapType"] = schema["x-kubernetes-map-type"]
        compact[name] = entry
        for prop in props.values():
            for ref in (prop.get("ref"), prop.get("items"), prop.get("values")):
                if isinstance(ref, str) and ref in definitions:
                    stack.append(ref)
    return {
        "source": "kubernetes OpenAPI v2 (swagger.json) as shipped with kubernetes-client/python",
        "resources": out_resources,
        "definitions": dict(sorted(compact.items())),
    }


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else DEFAULT_SOURCE
    doc = json.loads(source.read_text(encoding="utf-8"))
    table = build(doc)
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}: {len(table['resources'])} resources, "
          f"{len(table['definitions'])} definitions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
