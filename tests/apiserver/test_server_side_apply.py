"""Server-side apply and managedFields: ownership, conflicts, force, pruning, list types, Update writes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kamera_cli.apiserver as apiserver_pkg
from kamera_cli.apiserver.patch.functions import (
    FieldLookup,
    PatchError,
    builtin_field_lookup,
    decode_fields_v1,
    encode_fields_v1,
    openapi_field_lookup,
    server_side_apply,
    update_managed_fields,
)

DEFS: dict[str, Any] = json.loads(
    (Path(apiserver_pkg.__file__).parent / "data" / "builtin.json").read_text(encoding="utf-8"))["definitions"]
DEPLOY = builtin_field_lookup(DEFS, "io.k8s.api.apps.v1.Deployment")
CM = builtin_field_lookup(DEFS, "io.k8s.api.core.v1.ConfigMap")
T0, T1, T2, T3 = (f"2026-01-01T00:0{n}:00Z" for n in range(4))


def deployment(replicas: int = 2, image: str = "app:1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": image}]}}, **spec},
    }


def apply(live: dict[str, Any] | None, cfg: dict[str, Any], manager: str = "kubectl", *, force: bool = False,
          now: str = T0, fields: FieldLookup = DEPLOY, api_version: str = "apps/v1") -> dict[str, Any]:
    before = copy.deepcopy((live, cfg))
    out = server_side_apply(live, cfg, manager=manager, force=force, fields=fields, now=now, api_version=api_version)
    assert (live, cfg) == before, "server_side_apply mutated an input"
    return out


def update(before: dict[str, Any] | None, after: dict[str, Any], manager: str, now: str = T1,
           fields: FieldLookup = DEPLOY, subresource: str = "") -> dict[str, Any]:
    out = copy.deepcopy(after)
    out["metadata"]["managedFields"] = update_managed_fields(
        before, after, manager=manager, operation="Update", now=now, api_version="apps/v1",
        subresource=subresource, fields=fields)
    return out


def entry(obj: dict[str, Any], manager: str, operation: str | None = None) -> dict[str, Any]:
    found: list[dict[str, Any]] = [e for e in obj["metadata"].get("managedFields", [])
             if e["manager"] == manager and (operation is None or e["operation"] == operation)]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    return found[0]


def owned(obj: dict[str, Any], manager: str) -> set[str]:
    from kamera_cli.apiserver.patch.functions import path_string
    return {path_string(p) for p in decode_fields_v1(entry(obj, manager)["fieldsV1"])}


def test_apply_creates_with_real_fieldsv1_notation() -> None:
    out = apply(None, deployment())
    assert out["spec"]["replicas"] == 2
    e = entry(out, "kubectl")
    assert {k: e[k] for k in ("manager", "operation", "apiVersion", "time", "fieldsType")} == {
        "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0, "fieldsType": "FieldsV1"}
    assert e["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:replicas": {}, "f:selector": {},
                   "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                                  "f:spec": {"f:containers": {'k:{"name":"app"}': {
                                      ".": {}, "f:image": {}, "f:name": {}}}}}}}


def test_reapplying_the_same_config_is_a_noop_keeping_the_time() -> None:
    first = apply(None, deployment())
    again = apply(first, deployment(), now=T2)
    assert again == first


def test_conflict_with_an_updater_and_the_real_message() -> None:
    live = apply(None, deployment())
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    scaled = update(live, scaled, "hpa")
    assert owned(scaled, "hpa") == {".spec.replicas"}
    assert ".spec.replicas" not in owned(scaled, "kubectl")
    with pytest.raises(PatchError) as err:
        apply(scaled, deployment(replicas=3), now=T2)
    exc = err.value
    assert (exc.status, exc.reason) == (409, "Conflict")
    assert exc.message == 'Apply failed with 1 conflict: conflict with "hpa" using apps/v1: .spec.replicas'
    assert exc.causes == [{"type": "FieldManagerConflict", "message": 'conflict with "hpa" using apps/v1',
                           "field": ".spec.replicas"}]


def test_applying_the_value_already_there_shares_ownership_without_conflict() -> None:
    live = apply(None, deployment(), manager="a")
    out = apply(live, deployment(), manager="b", now=T1)
    assert ".spec.replicas" in owned(out, "a") and ".spec.replicas" in owned(out, "b")


def test_conflict_between_appliers_lists_every_field_and_force_moves_ownership() -> None:
    live = apply(None, deployment(), manager="a")
    with pytest.raises(PatchError) as err:
        apply(live, deployment(replicas=3, image="app:2"), manager="b", now=T1)
    assert err.value.message == ('Apply failed with 2 conflicts: conflicts with "a":\n- .spec.replicas\n'
                                 '- .spec.template.spec.containers[name="app"].image')
    assert [c["field"] for c in err.value.causes] == [
        ".spec.replicas", '.spec.template.spec.containers[name="app"].image']
    forced = apply(live, deployment(replicas=3, image="app:2"), manager="b", force=True, now=T1)
    assert forced["spec"]["replicas"] == 3
    assert ".spec.replicas" not in owned(forced, "a")
    assert ".spec.replicas" in owned(forced, "b")
    assert ".metadata.labels.app" in owned(forced, "a")  # shared, unchanged fields stay shared


def test_first_apply_to_an_unmanaged_object_meets_before_first_apply() -> None:
    unmanaged = deployment(replicas=1)
    with pytest.raises(PatchError) as err:
        apply(unmanaged, deployment(replicas=3))
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: '
                                 ".spec.replicas")
    same = apply(unmanaged, deployment(replicas=1))
    assert {e["manager"] for e in same["metadata"]["managedFields"]} == {"kubectl", "before-first-apply"}
    forced = apply(unmanaged, deployment(replicas=3), force=True)
    assert forced["spec"]["replicas"] == 3 and ".spec.replicas" not in owned(forced, "before-first-apply")


def test_dropped_field_is_removed_only_when_nobody_else_owns_it() -> None:
    cfg = deployment()
    cfg["metadata"]["labels"]["tier"] = "fe"
    live = apply(None, cfg)
    out = apply(live, deployment(), now=T1)
    assert out["metadata"]["labels"] == {"app": "web"}
    assert ".metadata.labels.tier" not in owned(out, "kubectl")
    # Co-owned by another applier: dropping it keeps the value.
    shared = apply(live, cfg, manager="other", now=T1)
    kept = apply(shared, deployment(), now=T2)
    assert kept["metadata"]["labels"] == {"app": "web", "tier": "fe"}


def test_dropped_list_item_is_removed_but_others_items_stay() -> None:
    two = deployment()
    two["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "s:1"})
    live = apply(None, two)
    third = copy.deepcopy(live)
    third["spec"]["template"]["spec"]["containers"].append({"name": "mesh", "image": "m:1"})
    third = update(live, third, "injector")
    out = apply(third, deployment(), now=T2)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["app", "mesh"]


def test_dropped_item_kept_alive_by_another_manager_keeps_its_key() -> None:
    two = deployment()
    two["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "s:1", "args": ["x"]})
    live = apply(None, two)
    bumped = copy.deepcopy(live)
    bumped["spec"]["template"]["spec"]["containers"][1]["image"] = "s:2"
    bumped = update(live, bumped, "bumper")
    out = apply(bumped, deployment(), now=T2)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "app", "image": "app:1"},
                                                             {"name": "side", "image": "s:2"}]


def test_fields_never_applied_by_the_manager_survive_a_reapply() -> None:
    live = apply(None, deployment())
    edited = copy.deepcopy(live)
    edited["spec"]["paused"] = True
    edited = update(live, edited, "kubectl-edit")
    out = apply(edited, deployment(), now=T2)
    assert out["spec"]["paused"] is True


def test_list_map_merge_keeps_live_only_items_in_place_and_follows_config_order() -> None:
    live = deployment()
    live["spec"]["template"]["spec"]["containers"] = [
        {"name": "a", "image": "1"}, {"name": "x", "image": "x"}, {"name": "b", "image": "1"}]
    cfg = deployment()
    cfg["spec"]["template"]["spec"]["containers"] = [{"name": "b", "image": "2"}, {"name": "a", "image": "2"},
                                                     {"name": "c", "image": "2"}]
    out = apply(live, cfg, force=True)
    assert [(c["name"], c["image"]) for c in out["spec"]["template"]["spec"]["containers"]] == [
        ("x", "x"), ("b", "2"), ("a", "2"), ("c", "2")]


def test_set_and_atomic_lists_and_atomic_maps() -> None:
    live = apply(None, {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "finalizers": ["a/x", "a/y"]}}, fields=CM, api_version="v1")
    assert owned(live, "kubectl") == {'.metadata.finalizers[="a/x"]', '.metadata.finalizers[="a/y"]'}
    out = apply(live, {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c", "finalizers": ["a/z"]}}, manager="other", fields=CM,
                api_version="v1", now=T1)
    assert out["metadata"]["finalizers"] == ["a/x", "a/y", "a/z"]
    tol = deployment()
    tol["spec"]["template"]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    first = apply(None, tol)
    assert ".spec.template.spec.tolerations" in owned(first, "kubectl")  # atomic: owned as one value
    assert ".spec.selector" in owned(first, "kubectl")  # LabelSelector is an atomic map


def test_ports_keyed_by_both_list_map_keys() -> None:
    cfg = deployment()
    cfg["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]
    out = apply(None, cfg)
    paths = owned(out, "kubectl")
    assert '.spec.template.spec.containers[name="app"].ports[containerPort=53,protocol="UDP"]' in paths
    fv1 = entry(out, "kubectl")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
    assert 'k:{"containerPort":53,"protocol":"TCP"}' in fv1["f:ports"]


def test_duplicate_keys_in_config_are_invalid() -> None:
    cfg = deployment()
    cfg["spec"]["template"]["spec"]["containers"].append({"name": "app", "image": "again"})
    with pytest.raises(PatchError) as err:
        apply(None, cfg)
    assert err.value.status == 422


@pytest.mark.parametrize(("cfg", "status"), [
    ({"kind": "Deployment", "metadata": {"name": "x"}}, 400),
    ({"apiVersion": "apps/v1", "metadata": {"name": "x"}}, 400),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "managedFields": []}}, 400),
])
def test_bad_apply_configurations(cfg: dict[str, Any], status: int) -> None:
    with pytest.raises(PatchError) as err:
        apply(None, cfg)
    assert err.value.status == status


def test_server_set_metadata_is_not_taken_from_the_config() -> None:
    live = apply(None, deployment())
    live["metadata"].update({"uid": "u-1", "resourceVersion": "7", "creationTimestamp": T0, "generation": 1})
    cfg = deployment(replicas=4)
    cfg["metadata"].update({"uid": "forged", "resourceVersion": "1", "generation": 9})
    out = apply(live, cfg, now=T1)
    assert {k: out["metadata"][k] for k in ("uid", "resourceVersion", "generation")} == {
        "uid": "u-1", "resourceVersion": "7", "generation": 1}
    assert out["spec"]["replicas"] == 4
    assert ".metadata.uid" not in owned(out, "kubectl")


def test_update_moves_changed_fields_and_drops_empty_entries() -> None:
    live = apply(None, deployment(), manager="a")
    after = copy.deepcopy(live)
    after["spec"]["replicas"] = 9
    after["spec"]["template"]["spec"]["containers"][0]["image"] = "app:9"
    after["metadata"]["labels"] = {}
    after["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    out = update(live, after, "ctl")
    assert owned(out, "ctl") == {".spec.replicas", '.spec.template.spec.containers[name="app"].image'}
    assert ".metadata.labels.app" not in owned(out, "a")  # removed: leaves every manager
    only_ctl = update(live, {**deployment(), "metadata": {"name": "web"}, "spec": {}}, "ctl")
    assert [e["manager"] for e in only_ctl["metadata"].get("managedFields", [])] == []


def test_update_records_dot_for_added_maps_and_lists_as_the_apiserver_does() -> None:
    created = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}},
               "data": {"k": "v"}}
    out = update(None, created, "kubectl-create", fields=CM)
    assert entry(out, "kubectl-create")["fieldsV1"] == {
        "f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}


def test_update_on_the_status_subresource_is_a_separate_entry() -> None:
    live = apply(None, deployment())
    after = copy.deepcopy(live)
    after["status"] = {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    out = update(live, after, "controller", subresource="status")
    e = entry(out, "controller")
    assert e["subresource"] == "status"
    assert e["fieldsV1"] == {"f:status": {"f:conditions": {".": {}, 'k:{"type":"Available"}': {
        ".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}}


def test_update_with_no_change_keeps_entries_untouched() -> None:
    live = update(None, deployment(), "ctl", now=T0)
    again = update(live, copy.deepcopy(live), "ctl", now=T3)
    assert again["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_update_of_an_existing_unmanaged_object_stays_untracked_but_a_create_is_tracked() -> None:
    existing = deployment()
    existing["metadata"]["uid"] = "u-1"
    after = copy.deepcopy(existing)
    after["spec"]["replicas"] = 7
    assert update_managed_fields(existing, after, manager="x", operation="Update", now=T1, api_version="apps/v1",
                                 fields=DEPLOY) == []
    created = update_managed_fields(None, deployment(), manager="x", operation="Update", now=T1,
                                    api_version="apps/v1", fields=DEPLOY)
    assert [e["manager"] for e in created] == ["x"]


def test_update_honours_managed_fields_sent_by_the_client_and_reset() -> None:
    live = apply(None, deployment())
    after = copy.deepcopy(live)
    after["metadata"]["managedFields"] = [{}]
    assert update_managed_fields(live, after, manager="x", operation="Update", now=T1, api_version="apps/v1") == []


def test_entries_are_sorted_apply_first_then_time_then_manager() -> None:
    live = apply(None, deployment(), manager="z-apply", now=T0)
    after = copy.deepcopy(live)
    after["spec"]["paused"] = True
    live = update(live, after, "b-upd", now=T2)
    after = copy.deepcopy(live)
    after["spec"]["minReadySeconds"] = 3
    live = update(live, after, "a-upd", now=T1)
    assert [(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]] == [
        ("z-apply", "Apply"), ("a-upd", "Update"), ("b-upd", "Update")]


def test_fieldsv1_round_trip() -> None:
    fv1 = {"f:metadata": {"f:labels": {".": {}, "f:a": {}}},
           "f:spec": {"f:list": {'k:{"name":"x"}': {".": {}, "f:v": {}}}, "f:set": {'v:"s"': {}}}}
    assert encode_fields_v1(decode_fields_v1(fv1)) == fv1
    with pytest.raises(ValueError):
        decode_fields_v1({"x:bad": {}})


CRD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                      "items": {"type": "object", "properties": {"id": {"type": "string"},
                                                                 "v": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "ref": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "properties": {"name": {"type": "string"}, "ns": {"type": "string"}}},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}},
        }},
    },
}


def test_custom_resource_list_and_map_types_from_the_crd_schema() -> None:
    fields = openapi_field_lookup(CRD_SCHEMA)
    base = {"apiVersion": "ex.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    mine = {**base, "spec": {"items": [{"id": "a", "v": 1}], "tags": ["x"], "args": ["1"], "ref": {"name": "r"}}}
    live = apply(None, mine, fields=fields, api_version="ex.com/v1")
    assert owned(live, "kubectl") == {
        '.spec.items[id="a"]', '.spec.items[id="a"].id', '.spec.items[id="a"].v', '.spec.tags[="x"]',
        ".spec.args", ".spec.ref"}
    theirs = {**base, "spec": {"items": [{"id": "b", "v": 2}], "tags": ["y"], "extra": {"k": "v"}}}
    both = apply(live, theirs, manager="other", fields=fields, api_version="ex.com/v1", now=T1)
    assert both["spec"]["items"] == [{"id": "a", "v": 1}, {"id": "b", "v": 2}]
    assert both["spec"]["tags"] == ["x", "y"]
    with pytest.raises(PatchError):
        apply(both, {**base, "spec": {"args": ["2"]}}, manager="other", fields=fields, api_version="ex.com/v1")
    dropped = apply(both, {**base, "spec": {"tags": ["x"]}}, fields=fields, api_version="ex.com/v1", now=T2)
    assert dropped["spec"] == {"items": [{"id": "b", "v": 2}], "tags": ["x", "y"], "extra": {"k": "v"}}


# -- properties ---------------------------------------------------------------------------------


WIDGET_FIELDS = openapi_field_lookup({**CRD_SCHEMA, "properties": {"spec": {
    **CRD_SCHEMA["properties"]["spec"],
    "properties": {**CRD_SCHEMA["properties"]["spec"]["properties"],
                   "nested": {"type": "object", "properties": {"x": {"type": "integer"},
                                                               "y": {"type": "object"}}}}}}})


@st.composite
def widget_specs(draw: st.DrawFn, ids: str = "abcd", tags: str = "pqrs", extra: str = "klmn") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(ids), unique=True, max_size=3))
        spec["items"] = [{"id": i, "v": draw(st.integers(0, 3))} for i in chosen]
    if draw(st.booleans()):
        spec["tags"] = draw(st.lists(st.sampled_from(tags), unique=True, max_size=3))
    if draw(st.booleans()):
        spec["args"] = draw(st.lists(st.sampled_from("123"), max_size=3))
    if draw(st.booleans()):
        spec["extra"] = draw(st.dictionaries(st.sampled_from(extra), st.sampled_from(["u", "w"]), max_size=3))
    if draw(st.booleans()):
        spec["nested"] = {"x": draw(st.integers(0, 2)), "y": {"z": draw(st.sampled_from(["a", "b"]))}}
    return spec


def widget(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "ex.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def wapply(live: dict[str, Any] | None, spec: dict[str, Any], manager: str, force: bool = False,
           now: str = T1) -> dict[str, Any]:
    return server_side_apply(live, widget(spec), manager=manager, force=force, fields=WIDGET_FIELDS, now=now,
                             api_version="ex.com/v1")


def body(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].pop("managedFields", None)
    return out


@settings(max_examples=60, deadline=None)
@given(widget_specs())
def test_apply_creates_exactly_the_config_and_reapply_is_a_noop(spec: dict[str, Any]) -> None:
    created = wapply(None, spec, "m", now=T0)
    assert body(created) == widget(spec)
    again = wapply(created, spec, "m", now=T2)
    assert body(again) == body(created)
    if "managedFields" in created["metadata"]:  # else the re-apply meets "before-first-apply" (as real)
        assert again == created


@settings(max_examples=60, deadline=None)
@given(widget_specs(ids="ab", tags="pq", extra="kl"), widget_specs(ids="cd", tags="rs", extra="mn"),
       widget_specs(ids="ab", tags="pq", extra="kl"))
def test_disjoint_managers_keep_each_others_fields(a1: dict[str, Any], b: dict[str, Any],
                                                  a2: dict[str, Any]) -> None:
    """A applies, B applies disjoint fields, A re-applies something else: B's values all survive and
    whatever A dropped (and B never applied) is gone."""
    for spec in (a1, a2, b):
        spec.pop("args", None)  # one atomic value: not disjoint by construction
    a1.pop("nested", None)
    a2.pop("nested", None)
    live = wapply(wapply(None, a1, "a", now=T0), b, "b", now=T1)
    final = wapply(live, a2, "a", now=T2)
    spec = final["spec"]
    for item in b.get("items", []):
        assert item in spec["items"]
    for tag in b.get("tags", []):
        assert tag in spec["tags"]
    for key, value in b.get("extra", {}).items():
        assert spec["extra"][key] == value
    if "nested" in b:
        assert spec["nested"] == b["nested"]
    for item in a2.get("items", []):
        assert item in spec["items"]
    kept_ids = {i["id"] for i in a2.get("items", [])} | {i["id"] for i in b.get("items", [])}
    assert {i["id"] for i in spec.get("items", [])} == kept_ids
    assert set(spec.get("tags", [])) == set(a2.get("tags", [])) | set(b.get("tags", []))


def test_status_appliers_are_separate_managers_named_with_their_subresource() -> None:
    live = apply(None, deployment())
    status_cfg = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "status": {"replicas": 2}}
    with_status = server_side_apply(live, status_cfg, manager="ctl", force=False, fields=DEPLOY, now=T1,
                                    api_version="apps/v1", subresource="status")
    assert entry(with_status, "ctl")["subresource"] == "status"
    with pytest.raises(PatchError) as err:
        server_side_apply(with_status, {**status_cfg, "status": {"replicas": 3}}, manager="other", force=False,
                          fields=DEPLOY, now=T2, api_version="apps/v1", subresource="status")
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "ctl" with subresource "status": '
                                 ".status.replicas")
