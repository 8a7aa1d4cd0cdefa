"""The ``kopf-index-N`` families: a kopf operator whose handlers read an index over Namespaces (issue #26).

The shape of a public cloning operator tried as a user would (written here, not copied): an
``@kopf.index`` over Namespaces, a handler on the operator's own resource (a Widget) that reads the
index, and kopf handlers on Namespaces (an on.create that annotates, and an on.delete, so kopf puts
its finalizer on every Namespace). Each Namespace thus gets kopf's finalizer, its
last-handled-configuration annotation and the handler's annotation written, one step after another.

Variants (``entry``):

- ``name``: the index holds each Namespace's name; no write of kopf's changes it;
- ``body``: the index holds each Namespace's whole body: every write changes it, and what the
  Widget's handler records (which Namespaces were greeted when it ran) depends on the order;
- ``label``: the index selects Namespaces labelled ``bench.kamera.dev/team``, which the Namespace
  handler puts on the ``team`` ones: a write moves a Namespace into the index, and the Widget's
  record depends on the order.

N user Namespaces (``team0``..) plus the cluster's 4 built-in ones; one Widget in ``default``.
"""

from __future__ import annotations

from pathlib import Path

OPERATOR = '''
import kopf

G, V, P = "bench.kamera.dev", "v1", "widgets"
TEAM = "bench.kamera.dev/team"


@kopf.index("", "v1", "namespaces"{filters})
def spaces(name, body, **_):
    return {entry}


@kopf.on.create("", "v1", "namespaces", id="greet"{managed})
def greet(name, patch, **_):
    patch.metadata.annotations["bench.kamera.dev/greeted"] = "yes"
    if name.startswith("team"):
        patch.metadata.labels[TEAM] = "yes"


@kopf.on.delete("", "v1", "namespaces", id="farewell"{managed})
def farewell(name, **_):
    pass


@kopf.on.create(G, V, P, id="place")
def place(spaces, **_):
    return sorted(describe(entry) for entry in spaces.get(None, []))


def describe(entry):
    if isinstance(entry, str):
        return entry
    meta = entry.get("metadata") or {{}}
    return meta.get("name", "") + ":" + (meta.get("annotations") or {{}}).get("bench.kamera.dev/greeted", "no")
'''

#: what the index handler returns, and its filters, per variant
ENTRIES = {
    "name": ("name", ""),
    "body": ("{None: dict(body)}", ""),
    "label": ("name", ", labels={TEAM: 'yes'}"),
}

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.bench.kamera.dev}
spec:
  group: bench.kamera.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


def kopf_index(folder: Path, n: int, _unused: int = 0, entry: str = "name", timeout: int = 300,
               max_states: int = 2_000_000, managed: bool = False) -> Path:
    """The family's scenario in ``folder`` (``entry``: the variant, above; ``managed``: the Namespace
    handlers select only the user Namespaces, labelled ``bench.kamera.dev/managed``, so that the
    built-in ones take no steps: the tests' size)."""
    returned, filters = ENTRIES[entry]
    (folder / "crd.yaml").write_text(CRD)
    only = ', labels={"bench.kamera.dev/managed": "yes"}' if managed else ""
    (folder / "operator.py").write_text(OPERATOR.format(entry=returned, filters=filters, managed=only))
    label = ", labels: {bench.kamera.dev/managed: 'yes'}" if managed else ""
    text = (f"apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {{name: kopf-index-{entry}-{n}}}\n"
            f"spec:\n  explore: {{maxStates: {max_states}, maxDepth: 400, timeout: {timeout}}}\n"
            "  crds: [crd.yaml]\n  controllers:\n    - {name: op, kopf: operator.py}\n  seed:\n")
    text += "".join(f"    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team{i}{label}}}}}\n"
                    for i in range(n))
    text += "    - {apiVersion: bench.kamera.dev/v1, kind: Widget, metadata: {name: w, namespace: default}}\n"
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def variant(entry: str):  # type: ignore[no-untyped-def]
    """``kopf_index`` with its ``entry`` fixed (a family builder of ``bench_operators.FAMILIES``)."""
    def build(folder: Path, n: int, _unused: int = 0) -> Path:
        return kopf_index(folder, n, entry=entry)
    return build
