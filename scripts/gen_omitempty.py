"""Generate ``kamera_cli/apiserver/data/omitempty.json`` from the Go sources of the Kubernetes API types.

Why: the real API server answers what Go's ``encoding/json`` writes from its typed objects, and a field
tagged ``omitempty`` whose value is the zero of a map, slice, string, bool or number is not written at
all — so ``metadata.labels: {}``, ``spec.nodeSelector: {}``, ``args: []`` or ``hostNetwork: false``
sent by a controller are *absent* when it reads the object back.  The OpenAPI document kamera's schema
table comes from does not say which fields are tagged so, nor which are pointers (a ``*bool`` false or a
``*int32`` 0 is written), so this reads the struct tags themselves.

Usage: ``python scripts/gen_omitempty.py API_DIR APIMACHINERY_DIR`` with checkouts of
``k8s.io/api`` and ``k8s.io/apimachinery``; it prints a summary and rewrites the data file, keeping
only definitions and properties that ``builtin.json`` knows.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "kamera_cli" / "apiserver" / "data"
_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_NAMED = re.compile(r"^type (\w+) ([^\s{=][^\n{]*)$", re.M)
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([^\s`]+)\s+`([^`]*)`")
_JSON_TAG = re.compile(r'json:"([^"]*)"')
_NUMBERS = {"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64"}
#: every category is recorded: a null sent for any of them but a struct decodes to a zero value that
#: ``omitempty`` drops; a non-null zero value is dropped only for the first six (a pointer to a zero
#: value is written, a struct always is)
_OMITTABLE = {"map", "slice", "bytes", "string", "bool", "number", "pointer"}


def _packages(api: Path, machinery: Path) -> dict[str, Path]:
    """Definition-name prefix → package directory."""
    out = {}
    for types in sorted(api.glob("*/*/types.go")):
        group, version = types.parent.parent.name, types.parent.name
        out[f"io.k8s.api.{group}.{version}"] = types.parent
    out["io.k8s.apimachinery.pkg.apis.meta.v1"] = machinery / "pkg" / "apis" / "meta" / "v1"
    return out


def _sources(directory: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(directory.glob("*.go"))
                     if not p.name.endswith("_test.go") and "generated" not in p.name)


def _category(go_type: str, named: dict[str, str], structs: set[str], depth: int = 0) -> str:
    if go_type.startswith("*"):
        return "pointer"
    if go_type.startswith("map["):
        return "map"
    if go_type == "[]byte":
        return "bytes"
    if go_type.startswith("[]"):
        return "slice"
    if go_type == "string":
        return "string"
    if go_type == "bool":
        return "bool"
    if go_type in _NUMBERS:
        return "number"
    base = go_type.rsplit(".", 1)[-1]
    if base in structs or depth > 8:
        return "struct"
    underlying = named.get(base)
    if underlying is None:
        return "struct"  # types of packages not read (Quantity, IntOrString, Time, …) are structs
    return _category(underlying, named, structs, depth + 1)


def generate(api: Path, machinery: Path) -> dict[str, dict[str, str]]:
    packages = _packages(api, machinery)
    texts = {prefix: _sources(path) for prefix, path in packages.items()}
    named: dict[str, str] = {}
    structs: set[str] = set()
    bodies: dict[str, dict[str, str]] = {}
    for prefix, text in texts.items():
        for m in _NAMED.finditer(text):
            named.setdefault(m.group(1), m.group(2).strip())
        for m in _STRUCT.finditer(text):
            structs.add(m.group(1))
            bodies[f"{prefix}.{m.group(1)}"] = {"": m.group(2)}
    known = json.loads((DATA / "builtin.json").read_text())["definitions"]
    out: dict[str, dict[str, str]] = {}
    for definition, body in sorted(bodies.items()):
        if definition not in known:
            continue
        prefix = definition.rsplit(".", 1)[0]
        fields = _fields(body[""], prefix, bodies, named, structs, (definition,))
        props = known[definition].get("properties") or {}
        keep = {name: cat for name, cat in sorted(fields.items()) if name in props}
        if keep:
            out[definition] = keep
    return out


def _fields(body: str, prefix: str, bodies: dict[str, dict[str, str]], named: dict[str, str],
            structs: set[str], seen: tuple[str, ...]) -> dict[str, str]:
    """JSON name → category for the ``omitempty`` fields of one struct, inline members included."""
    out: dict[str, str] = {}
    for line in body.splitlines():
        line = line.split("//", 1)[0] if not line.strip().startswith("//") else ""
        m = _FIELD.match(line)
        if not m:
            continue
        member, go_type, tags = m.groups()
        tag = _JSON_TAG.search(tags)
        options = tag.group(1).split(",") if tag else []
        if member is None or (options and options[0] == "" and "inline" in options):
            embedded = go_type.lstrip("*").rsplit(".", 1)[-1]
            for candidate in (f"{prefix}.{embedded}", f"io.k8s.apimachinery.pkg.apis.meta.v1.{embedded}"):
                if candidate in bodies and candidate not in seen:
                    out.update(_fields(bodies[candidate][""], candidate.rsplit(".", 1)[0], bodies, named, structs,
                                       (*seen, candidate)))
                    break
            continue
        if not options or options[0] == "-" or "omitempty" not in options[1:]:
            continue
        category = _category(go_type, named, structs)
        if category in _OMITTABLE:
            out[options[0]] = category
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    table = generate(Path(argv[1]), Path(argv[2]))
    target = DATA / "omitempty.json"
    target.write_text(json.dumps({"source": "struct tags of k8s.io/api and k8s.io/apimachinery (meta/v1)",
                                  "definitions": table}, indent=0, sort_keys=True) + "\n")
    print(f"{sum(len(v) for v in table.values())} omitempty fields in {len(table)} definitions -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
