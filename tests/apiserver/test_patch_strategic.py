"""Strategic merge patch on real built-in shapes, driven by the shipped schema table."""

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
    merge_patch,
    strategic_merge_patch,
)

DEFS: dict[str, Any] = json.loads(
    (Path(apiserver_pkg.__file__).parent / "data" / "builtin.json").read_text(encoding="utf-8"))["definitions"]
DEPLOYMENT = builtin_field_lookup(DEFS, "io.k8s.api.apps.v1.Deployment")
POD = builtin_field_lookup(DEFS, "io.k8s.api.core.v1.Pod")
PDB = builtin_field_lookup(DEFS, "io.k8s.api.policy.v1.PodDisruptionBudget")


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web", "tier": "fe"},
                     "finalizers": ["example.com/a", "example.com/b"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "app:1",
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                        {"name": "sidecar", "image": "side:1"},
                    ],
                    "volumes": [{"name": "cfg", "emptyDir": {}}, {"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "a", "operator": "Exists"}],
                    "nodeSelector": {"disk": "ssd", "zone": "a"},
                },
            },
        },
    }


def smp(obj: dict[str, Any], patch: dict[str, Any], fields: FieldLookup = DEPLOYMENT) -> dict[str, Any]:
    before = copy.deepcopy((obj, patch))
    out = strategic_merge_patch(obj, patch, fields)
    assert (obj, patch) == before, "strategic_merge_patch mutated an input"
    return out


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def tpl(spec_patch: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec_patch}}}


def test_containers_merge_by_name_keeping_others_and_position() -> None:
    out = smp(deployment(), tpl({"containers": [{"name": "sidecar", "image": "side:2"}]}))
    containers = pod_spec(out)["containers"]
    assert [c["name"] for c in containers] == ["app", "sidecar"]
    assert containers[1] == {"name": "sidecar", "image": "side:2"}
    assert containers[0]["image"] == "app:1"


def test_new_item_without_set_element_order_goes_first_as_in_the_apiserver() -> None:
    out = smp(deployment(), tpl({"containers": [{"name": "new", "image": "n:1"}]}))
    assert [c["name"] for c in pod_spec(out)["containers"]] == ["new", "app", "sidecar"]


def test_set_element_order_decides_the_final_order() -> None:
    patch = tpl({"$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}, {"name": "new"}],
                 "containers": [{"name": "new", "image": "n:1"}]})
    out = smp(deployment(), patch)
    assert [c["name"] for c in pod_spec(out)["containers"]] == ["app", "sidecar", "new"]
    reorder = tpl({"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]})
    assert [c["name"] for c in pod_spec(smp(deployment(), reorder))["containers"]] == ["sidecar", "app"]


def test_env_merges_by_name_and_ports_by_container_port() -> None:
    patch = tpl({"containers": [{"name": "app",
                                 "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}],
                                 "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]})
    app = pod_spec(smp(deployment(), patch))["containers"][0]
    assert app["image"] == "app:1"
    assert {e["name"]: e["value"] for e in app["env"]} == {"A": "1", "B": "two", "C": "3"}
    assert app["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}]


def test_list_item_delete_directive() -> None:
    patch = tpl({"containers": [{"name": "sidecar", "$patch": "delete"}],
                 "volumes": [{"name": "data", "$patch": "delete"}]})
    out = smp(deployment(), patch)
    assert [c["name"] for c in pod_spec(out)["containers"]] == ["app"]
    assert pod_spec(out)["volumes"] == [{"name": "cfg", "emptyDir": {}}]


def test_list_replace_directive() -> None:
    patch = tpl({"containers": [{"name": "only", "image": "o:1"}, {"$patch": "replace"}]})
    assert pod_spec(smp(deployment(), patch))["containers"] == [{"name": "only", "image": "o:1"}]


def test_map_replace_and_delete_directives() -> None:
    out = smp(deployment(), tpl({"nodeSelector": {"zone": "b", "$patch": "replace"}}))
    assert pod_spec(out)["nodeSelector"] == {"zone": "b"}
    out = smp(deployment(), {"spec": {"strategy": {"$patch": "delete"}}})
    assert out["spec"]["strategy"] == {}


def test_merge_directive_is_rejected_as_by_the_apiserver() -> None:
    with pytest.raises(PatchError) as err:
        smp(deployment(), tpl({"containers": [{"name": "app", "image": "x"}, {"$patch": "merge"}]}))
    assert err.value.status == 422 and "merging lists cannot yet be specified" in err.value.message
    with pytest.raises(PatchError) as err:
        smp(deployment(), tpl({"nodeSelector": {"$patch": "merge"}}))
    assert "unknown patch type" in err.value.message


def test_tolerations_have_no_merge_key_and_are_replaced() -> None:
    out = smp(deployment(), tpl({"tolerations": [{"key": "b", "operator": "Exists"}]}))
    assert pod_spec(out)["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_finalizers_merge_as_an_ordered_set_per_the_table() -> None:
    # ObjectMeta.finalizers carries x-kubernetes-patch-strategy: merge in the shipped table.
    out = smp(deployment(), {"metadata": {"finalizers": ["example.com/b", "example.com/c"]}})
    assert sorted(out["metadata"]["finalizers"]) == ["example.com/a", "example.com/b", "example.com/c"]
    out = smp(deployment(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}})
    assert out["metadata"]["finalizers"] == ["example.com/b"]
    out = smp(deployment(), {"metadata": {"finalizers": None}})
    assert "finalizers" not in out["metadata"]


def test_primitive_set_element_order_with_deletions() -> None:
    patch = {"metadata": {"$setElementOrder/finalizers": ["example.com/c", "example.com/b"],
                          "$deleteFromPrimitiveList/finalizers": ["example.com/a"],
                          "finalizers": ["example.com/c"]}}
    assert smp(deployment(), patch)["metadata"]["finalizers"] == ["example.com/c", "example.com/b"]


def test_labels_null_deletes_and_adds() -> None:
    out = smp(deployment(), {"metadata": {"labels": {"tier": None, "env": "prod", "absent": None}}})
    assert out["metadata"]["labels"] == {"app": "web", "env": "prod"}


def test_retain_keys_on_deployment_strategy() -> None:
    out = smp(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    with pytest.raises(PatchError) as err:
        smp(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}})
    assert err.value.status == 400


def test_retain_keys_inside_a_volume_item_switches_source() -> None:
    patch = tpl({"volumes": [{"name": "cfg", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c"}}]})
    vols = pod_spec(smp(deployment(), patch))["volumes"]
    assert {"name": "cfg", "configMap": {"name": "c"}} in vols and len(vols) == 2


def test_replace_strategy_map_field_is_replaced_not_merged() -> None:
    pdb = {"spec": {"selector": {"matchLabels": {"a": "1"}, "matchExpressions": []}, "minAvailable": 1}}
    out = smp(pdb, {"spec": {"selector": {"matchLabels": {"b": "2"}}}}, PDB)
    assert out["spec"]["selector"] == {"matchLabels": {"b": "2"}}


def test_new_values_lose_nulls_and_directives() -> None:
    out = smp(deployment(), {"metadata": {"annotations": {"a": "1", "b": None}},
                             "spec": {"paused": True, "revisionHistoryLimit": None}})
    assert out["metadata"]["annotations"] == {"a": "1"}
    assert out["spec"]["paused"] is True and "revisionHistoryLimit" not in out["spec"]


def test_type_change_replaces() -> None:
    out = smp(deployment(), {"spec": {"replicas": "3"}})
    assert out["spec"]["replicas"] == "3"


def test_pod_container_image_patch_shares_untouched_subtrees() -> None:
    obj = deployment()
    out = smp(obj, tpl({"containers": [{"name": "app", "image": "app:2"}]}))
    assert out["metadata"] is obj["metadata"]
    assert pod_spec(out)["volumes"] is pod_spec(obj)["volumes"]


@pytest.mark.parametrize(("patch", "status"), [
    ([{"op": "add"}], 400),
    ({"metadata": {"$retainKeys": "x"}}, 400),
    ({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}, 400),
    (tpl({"containers": [{"image": "no-name"}]}), 422),
    (tpl({"containers": [["nested"]]}), 422),
    (tpl({"containers": [{"name": "app", "$patch": "bogus"}]}), 422),
    (tpl({"$setElementOrder/containers": [{"name": "app"}], "containers": [{"name": "other"}]}), 422),
])
def test_bad_patches_are_rejected_with_the_apiservers_codes(patch: Any, status: int) -> None:
    with pytest.raises(PatchError) as err:
        smp(deployment(), patch)
    assert err.value.status == status


def test_pod_lookup_reaches_init_containers_and_unknown_fields() -> None:
    pod = {"spec": {"initContainers": [{"name": "i", "image": "1"}], "containers": [{"name": "c"}]}}
    out = smp(pod, {"spec": {"initContainers": [{"name": "j", "image": "2"}], "x-unknown": [1, 2]}}, POD)
    assert [c["name"] for c in out["spec"]["initContainers"]] == ["j", "i"]
    assert out["spec"]["x-unknown"] == [1, 2]


def _no_meta(_path: tuple[str, ...]) -> None:
    return None


keys = st.sampled_from(["a", "b", "c", "spec"])
scalars = st.one_of(st.booleans(), st.integers(-3, 3), st.text("xy", max_size=2))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(scalars, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=10)
patches = st.recursive(st.one_of(scalars, st.none()), lambda inner: st.one_of(
    st.lists(scalars, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=10)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(keys, values, max_size=4), st.dictionaries(keys, patches, max_size=4))
def test_without_directives_or_merge_lists_smp_equals_merge_patch(obj: dict[str, Any], patch: dict[str, Any]) -> None:
    assert strategic_merge_patch(obj, patch, _no_meta) == merge_patch(obj, patch)


names = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, max_size=5)


def _containers(chosen: list[str], image: str) -> list[dict[str, Any]]:
    return [{"name": n, "image": f"{n}:{image}"} for n in chosen]


@settings(max_examples=80, deadline=None)
@given(names, names, st.randoms(use_true_random=False))
def test_merge_list_union_with_patch_order_kept(live: list[str], patch: list[str], rnd: Any) -> None:
    obj = {"spec": {"template": {"spec": {"containers": _containers(live, "1")}}}}
    out = pod_spec(smp(obj, tpl({"containers": _containers(patch, "2")})))["containers"]
    got = [c["name"] for c in out]
    assert sorted(got) == sorted(set(live) | set(patch))
    assert [n for n in got if n in patch] == patch  # patch items keep the patch's order
    assert [n for n in got if n not in patch] == [n for n in live if n not in patch]  # live-only keep theirs
    assert all(c["image"] == (f"{c['name']}:2" if c["name"] in patch else f"{c['name']}:1") for c in out)
    # With a full $setElementOrder the final order is exactly the one asked for.
    order = sorted(set(live) | set(patch))
    rnd.shuffle(order)
    patch_in_order = [n for n in order if n in patch]
    ordered = smp(obj, tpl({"$setElementOrder/containers": [{"name": n} for n in order],
                            "containers": _containers(patch_in_order, "2")}))
    assert [c["name"] for c in pod_spec(ordered)["containers"]] == order
