"""``kamera import`` of cluster dumps: what is stripped, kept, skipped and added, and located errors.

The inputs under tests/fixtures/import are written from what kubectl prints (a ``v1 List`` with
server metadata, status and managedFields; a CRD dump with its status).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.apiserver import Registry, gc_work
from kamera_cli.errors import ScenarioError, UsageError
from kamera_cli.importer import ImportOptions, import_scenario
from kamera_cli.importer.cleaning import Options
from kamera_cli.importer.cluster import Imported, import_objects
from kamera_cli.scenario import load_scenario
from kamera_cli.scenario.yamldoc import read_documents
from kamera_cli.sim.bootstrap import initial_snapshot

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
CLUSTER = str(FIXTURES / "cluster.yaml")
CRDS = str(FIXTURES / "crds.yaml")


def by_name(imported: Imported, kind: str, name: str) -> dict[str, Any]:
    for s in imported.objects:
        if s.ref.kind == kind and s.ref.name == name:
            return s.obj
    raise AssertionError(f"no {kind} {name} in {[str(s.ref) for s in imported.objects]}")


def names(imported: Imported) -> list[str]:
    return [f"{s.ref.kind} {s.ref.key}" for s in imported.objects]


def write(root: Path, name: str, text: str) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return str(path)


def test_server_owned_metadata_status_and_last_applied_are_stripped() -> None:
    imported = import_objects([CLUSTER, CRDS], [], Options())
    widget = by_name(imported, "Widget", "demo")
    assert widget == {"apiVersion": "example.com/v1", "kind": "Widget",
                      "metadata": {"name": "demo", "namespace": "shop"}, "spec": {"message": "hello", "size": 1}}
    deployment = by_name(imported, "Deployment", "web")
    assert deployment["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert "status" not in deployment and deployment["spec"]["replicas"] == 1
    namespace = by_name(imported, "Namespace", "shop")
    assert set(namespace["metadata"]) == {"name", "labels"} and "status" not in namespace
    crd = imported.crds[0].obj
    assert "status" not in crd and set(crd["metadata"]) == {"name"}


def test_service_cluster_ips_are_reallocated_but_headless_stays_headless() -> None:
    imported = import_objects([CLUSTER, CRDS], [], Options())
    web = by_name(imported, "Service", "web")["spec"]
    assert "clusterIP" not in web and "clusterIPs" not in web and web["ports"][0]["port"] == 80
    headless = by_name(imported, "Service", "web-headless")["spec"]
    assert headless["clusterIP"] == "None" and headless["clusterIPs"] == ["None"]


def test_pod_node_name_goes_with_status_unless_kept() -> None:
    pod = by_name(import_objects([CLUSTER, CRDS], [], Options()), "Pod", "web-6d4cf56db6-x2x7q")
    assert "nodeName" not in pod["spec"] and "status" not in pod
    kept = by_name(import_objects([CLUSTER, CRDS], [], Options(keep_status=True)), "Pod", "web-6d4cf56db6-x2x7q")
    assert kept["spec"]["nodeName"] == "worker-2" and kept["status"]["phase"] == "Running"
    assert "uid" not in kept["metadata"]


def test_events_are_skipped_with_a_note_and_dangling_owners_are_dropped_with_a_warning() -> None:
    imported = import_objects([CLUSTER, CRDS], [], Options())
    assert not any(s.ref.kind == "Event" for s in imported.objects)
    assert any("skipped 1 object(s): Events" in n for n in imported.notes)
    pod = by_name(imported, "Pod", "web-6d4cf56db6-x2x7q")
    assert "ownerReferences" not in pod["metadata"]
    [warning] = [w for w in imported.warnings if "ReplicaSet 'web-6d4cf56db6'" in w.message]
    assert warning.file.endswith("cluster.yaml") and warning.line == 86
    assert warning.path == "$.items[2].metadata.ownerReferences[0]"


def test_owner_uids_point_at_the_simulated_owner_so_the_collector_keeps_the_child(tmp_path: Path) -> None:
    out = tmp_path / "scenario"
    import_scenario(ImportOptions(inputs=(CLUSTER, CRDS), out_dir=str(out)))
    text = (out / "scenario.yaml").read_text(encoding="utf-8")
    (out / "scenario.yaml").write_text(text.replace("    builtins: [deployment, kubelet]", "    builtins: [endpoints]"),
                                       encoding="utf-8")
    scenario = load_scenario(out / "scenario.yaml")
    registry = Registry.builtin().with_crds(scenario.crds)
    snapshot = initial_snapshot(scenario, registry)
    stored = {(o["kind"], o["metadata"]["name"]): o for _, o in snapshot.iter_entries()}
    widget = stored[("Widget", "demo")]
    config = stored[("ConfigMap", "demo-config")]
    assert config["metadata"]["ownerReferences"][0]["uid"] == widget["metadata"]["uid"]
    assert gc_work(snapshot, registry) == []


def test_namespace_filter_keeps_cluster_scoped_objects_and_the_named_namespaces(tmp_path: Path) -> None:
    other = write(tmp_path, "other.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings, namespace: billing, uid: 6e1c8f0a-aaaa-4bbb-8ccc-dddd00001111}
        data: {mode: fast}
        ---
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata: {name: reader, resourceVersion: "12"}
        rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
    """)
    imported = import_objects([CLUSTER, CRDS, other], ["billing"], Options())
    assert names(imported) == ["Namespace billing", "ConfigMap billing/settings", "ClusterRole reader"]
    assert any("added 1 Namespace(s) the objects live in: billing" in n for n in imported.notes)
    assert any("in a namespace not named by --namespace" in n for n in imported.notes)
    both = import_objects([CLUSTER, CRDS, other], ["billing", "shop"], Options())
    assert "Namespace shop" in names(both) and "Widget shop/demo" in names(both)


def test_multi_document_files_folders_and_default_namespace(tmp_path: Path) -> None:
    write(tmp_path, "dump/a.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: one}
        ---
        ---
        apiVersion: v1
        kind: Secret
        metadata: {name: two, namespace: default}
        stringData: {token: abc}
    """)
    write(tmp_path, "dump/sub/b.json", '{"apiVersion": "v1", "kind": "ConfigMapList", "items": '
                                        '[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "three"}}]}')
    write(tmp_path, "dump/notes.txt", "not a manifest")
    imported = import_objects([str(tmp_path / "dump")], [], Options())
    assert names(imported) == ["ConfigMap default/one", "Secret default/two", "ConfigMap default/three"]
    assert imported.warnings == [] and imported.notes == []


def test_builtin_namespaces_are_not_seeded_and_duplicates_warn(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", """
        apiVersion: v1
        kind: Namespace
        metadata: {name: kube-system}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a, namespace: kube-system}
        data: {v: "1"}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a, namespace: kube-system}
        data: {v: "2"}
    """)
    imported = import_objects([path], [], Options())
    assert names(imported) == ["ConfigMap kube-system/a"]
    assert by_name(imported, "ConfigMap", "a")["data"] == {"v": "1"}
    [dup] = imported.warnings
    assert (dup.line, dup.message.split(":")[0]) == (12, "v1/ConfigMap kube-system/a appears twice")


def test_terminating_objects_and_unknown_kinds_warn(tmp_path: Path) -> None:
    path = write(tmp_path, "odd.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: going, deletionTimestamp: "2025-11-20T10:00:00Z", finalizers: [example.com/hold]}
        ---
        apiVersion: example.com/v1
        kind: Gadget
        metadata: {name: g1, namespace: default}
    """)
    imported = import_objects([path], [], Options())
    messages = sorted(w.message for w in imported.warnings)
    assert messages[0].startswith("this object was being deleted")
    assert messages[1].startswith("unknown kind 'example.com/v1/Gadget'")
    assert by_name(imported, "ConfigMap", "going")["metadata"] == {
        "name": "going", "finalizers": ["example.com/hold"]}


@pytest.mark.parametrize(("text", "where", "message"), [
    ("kind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}\n", (4, 1), "invalid YAML"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n", (3, 11), "missing metadata.name"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, name: b}\n", (3, 21), "duplicate key 'name'"),
    ("- just\n- a list\n", (1, 1), "expected a Kubernetes object"),
])
def test_bad_input_is_a_located_error(tmp_path: Path, text: str, where: tuple[int, int], message: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(ScenarioError) as info:
        import_objects([path], [], Options())
    problem = info.value.problems[0]
    assert (problem.file, problem.line, problem.column) == (path, *where)
    assert message in problem.message


def test_missing_input_and_an_invalid_crd_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file or folder"):
        import_objects([str(tmp_path / "nope.yaml")], [], Options())
    crd = write(tmp_path, "crd.yaml", """
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: broken.example.com}
        spec: {group: example.com, scope: Namespaced, names: {kind: Broken}, versions: []}
    """)
    with pytest.raises(ScenarioError, match="invalid CustomResourceDefinition") as info:
        import_objects([crd], [], Options())
    assert info.value.problems[0].line == 1


def test_written_manifests_read_back_exactly(tmp_path: Path) -> None:
    tricky = write(tmp_path, "tricky.yaml", """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: tricky, labels: {"on": "yes"}}
        data:
          enabled: "on"
          date: "2026-01-01"
          octal: "010"
          empty: ""
          script: |
            #!/bin/sh
            echo "hi"  {trailing}
          nothing: "null"
    """.replace("{trailing}", " "))
    out = tmp_path / "out"
    report = import_scenario(ImportOptions(inputs=(CLUSTER, CRDS, tricky), out_dir=str(out)))
    imported = import_objects([CLUSTER, CRDS, tricky], [], Options())
    read: list[Any] = []
    for rel in report.files:
        if rel.startswith("seed/"):
            docs = read_documents(str(out / rel), rel, problems := [])
            assert problems == [] and docs is not None
            read.extend(d.data for d in docs)
    assert read == [s.obj for s in imported.objects[:1]] + [
        s.obj for s in imported.objects[1:] if s.ref.namespace == "default"] + [
        s.obj for s in imported.objects[1:] if s.ref.namespace == "shop"]
    assert by_name(imported, "ConfigMap", "tricky")["data"]["script"] == '#!/bin/sh\necho "hi"   \n'


def test_output_folder_rules(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(UsageError, match=r"not empty.*--force"):
        import_scenario(ImportOptions(inputs=(CLUSTER, CRDS), out_dir=str(out)))
    report = import_scenario(ImportOptions(inputs=(CLUSTER, CRDS), out_dir=str(out), force=True, name="shop"))
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert sorted(report.files) == ["crds/widgets.example.com.yaml", "scenario.yaml", "seed/_cluster.yaml",
                                    "seed/shop.yaml"]
    with pytest.raises(UsageError, match="is a file"):
        import_scenario(ImportOptions(inputs=(CLUSTER,), out_dir=str(out / "keep.txt")))
    with pytest.raises(UsageError, match="--name 'Shop!'"):
        import_scenario(ImportOptions(inputs=(CLUSTER, CRDS), out_dir=str(tmp_path / "x"), name="Shop!"))


def test_the_scaffold_enables_the_workload_builtins_and_loads(tmp_path: Path) -> None:
    out = tmp_path / "My Shop"
    report = import_scenario(ImportOptions(inputs=(CLUSTER, CRDS), out_dir=str(out)))
    text = (out / "scenario.yaml").read_text(encoding="utf-8")
    assert 'name: "my-shop"' in text and "#   example.com/v1/Widget (1)" in text
    assert "\n  cluster:\n    builtins: [deployment, kubelet]\n" in text
    assert "# endpoints, endpointslice: left off" in text
    assert report.builtins == ("deployment", "kubelet")
    scenario = load_scenario(out / "scenario.yaml")
    assert scenario.controllers == ()


def test_without_workload_kinds_the_scaffold_loads_with_one_clear_problem(tmp_path: Path) -> None:
    only = tmp_path / "cm.yaml"
    only.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\n", encoding="utf-8")
    out = tmp_path / "plain"
    assert import_scenario(ImportOptions(inputs=(str(only),), out_dir=str(out))).builtins == ()
    text = (out / "scenario.yaml").read_text(encoding="utf-8")
    assert "cluster:" not in text
    with pytest.raises(ScenarioError) as info:
        load_scenario(out / "scenario.yaml")
    [problem] = info.value.problems
    assert problem.path == "$.spec.controllers" and problem.message == "no controllers to check"
    assert text.splitlines()[problem.line - 1].strip() == "controllers: []"
