"""ownerReferences and the garbage collector as an actor: one deterministic step at a time."""

from __future__ import annotations

from kamera_cli.apiserver import ApiServer, gc_step, gc_work
from kamera_cli.model.objects import ObjectRef


def cm(name: str, owners: list[dict] | None = None, ns: str = "default") -> dict:
    meta: dict = {"name": name, "namespace": ns}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def owner_ref(obj: dict, block: bool = False) -> dict:
    ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
           "uid": obj["metadata"]["uid"], "controller": True}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def ref(name: str, ns: str = "default") -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", ns, name)


def run_gc(server: ApiServer) -> int:
    steps = 0
    while (work := gc_work(server.snapshot, server.registry)):
        gc_step(server, work[0])
        steps += 1
        assert steps < 50
    return steps


def test_nothing_happens_inline_and_background_collects_dependents_later(server):
    owner = server.create(cm("owner"))
    server.create(cm("dep", [owner_ref(owner)]))
    server.delete(ref("owner"))
    assert server.snapshot.get(ref("dep")) is not None  # nothing inline inside DELETE
    work = gc_work(server.snapshot, server.registry)
    assert [(w.actor, w.action, w.target) for w in work] == [("garbage-collector", "delete", ref("dep"))]
    assert "garbage-collector: delete v1/ConfigMap default/dep" in work[0].describe()
    gc_step(server, work[0])
    assert server.snapshot.get(ref("dep")) is None
    assert gc_work(server.snapshot, server.registry) == []


def test_a_dependent_stays_while_any_owner_remains_and_loses_the_dangling_reference(server):
    a = server.create(cm("a"))
    b = server.create(cm("b"))
    server.create(cm("dep", [owner_ref(a), {**owner_ref(b), "controller": False}]))
    server.delete(ref("a"))
    work = gc_work(server.snapshot, server.registry)
    assert [(w.action, w.target, w.detail) for w in work] == [("remove-dangling", ref("dep"), a["metadata"]["uid"])]
    gc_step(server, work[0])
    assert [o["name"] for o in server.snapshot.get(ref("dep"))["metadata"]["ownerReferences"]] == ["b"]
    assert gc_work(server.snapshot, server.registry) == []
    server.delete(ref("b"))
    assert [w.target for w in gc_work(server.snapshot, server.registry)] == [ref("dep")]


def test_a_recreated_owner_with_the_same_name_does_not_count(server):
    owner = server.create(cm("owner"))
    server.create(cm("dep", [owner_ref(owner)]))
    server.delete(ref("owner"))
    again = server.create(cm("owner"))
    assert again["metadata"]["uid"] != owner["metadata"]["uid"]
    assert [w.target for w in gc_work(server.snapshot, server.registry)] == [ref("dep")]


def test_owner_in_another_namespace_means_ownerless(server):
    owner = server.create(cm("owner", ns="kube-system"))
    server.create(cm("dep", [owner_ref(owner)]))
    assert [w.target for w in gc_work(server.snapshot, server.registry)] == [ref("dep")]


def test_foreground_deletes_dependents_then_releases_the_owner(server):
    owner = server.create(cm("owner"))
    server.create(cm("blocker", [owner_ref(owner, block=True)]))
    server.create(cm("other", [owner_ref(owner)]))
    server.delete(ref("owner"), propagation_policy="Foreground")
    assert server.snapshot.get(ref("owner"))["metadata"]["finalizers"] == ["foregroundDeletion"]
    steps = run_gc(server)
    # dependents are deleted in the foreground as well (as the real GC does), so each takes two steps:
    # delete (gets foregroundDeletion), remove its finalizer; then the owner's finalizer goes.
    assert steps == 5
    assert server.snapshot.get(ref("owner")) is None
    assert server.snapshot.get(ref("blocker")) is None


def test_foreground_waits_for_a_blocking_dependent_with_its_own_finalizer(server):
    owner = server.create(cm("owner"))
    dep = cm("blocker", [owner_ref(owner, block=True)])
    dep["metadata"]["finalizers"] = ["example.com/hold"]
    server.create(dep)
    server.delete(ref("owner"), propagation_policy="Foreground")
    run_gc(server)
    assert server.snapshot.get(ref("owner")) is not None  # still held by the terminating blocker
    held = server.get(ref("blocker"))
    held["metadata"]["finalizers"] = []
    server.update(held)
    run_gc(server)
    assert server.snapshot.get(ref("owner")) is None


def test_orphan_strips_owner_references_then_removes_the_finalizer(server):
    owner = server.create(cm("owner"))
    server.create(cm("dep", [owner_ref(owner)]))
    server.delete(ref("owner"), propagation_policy="Orphan")
    work = gc_work(server.snapshot, server.registry)
    assert [w.action for w in work] == ["orphan"]
    run_gc(server)
    assert server.snapshot.get(ref("owner")) is None
    dep = server.snapshot.get(ref("dep"))
    assert dep is not None and "ownerReferences" not in dep["metadata"]


def test_work_order_is_deterministic(server):
    owner = server.create(cm("owner"))
    for name in ("d3", "d1", "d2"):
        server.create(cm(name, [owner_ref(owner)]))
    server.delete(ref("owner"))
    assert [w.target.name for w in gc_work(server.snapshot, server.registry)] == ["d1", "d2", "d3"]


def test_a_cluster_scoped_dependent_of_a_namespaced_owner_is_left_alone(server):
    # kube's GC: "cluster-scoped objects cannot refer to namespaced owners" — the item is forgotten,
    # neither deleted nor patched, even when the owner is gone or another owner is dangling.
    owner = server.create(cm("owner"))
    ns_ref = ObjectRef("v1", "Namespace", "", "team")
    gone = {"apiVersion": "v1", "kind": "Namespace", "name": "old", "uid": "no-such-uid"}
    server.create({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "team", "ownerReferences": [owner_ref(owner), gone]}})
    assert gc_work(server.snapshot, server.registry) == []
    server.delete(ref("owner"))
    assert gc_work(server.snapshot, server.registry) == []
    assert server.snapshot.get(ns_ref) is not None


def test_a_cluster_scoped_dependent_of_a_cluster_scoped_owner_that_is_gone_is_collected(server):
    gone = {"apiVersion": "v1", "kind": "Namespace", "name": "old", "uid": "no-such-uid"}
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "ownerReferences": [gone]}})
    assert [w.target for w in gc_work(server.snapshot, server.registry)] == [ObjectRef("v1", "Namespace", "", "team")]


def test_a_dependent_naming_an_owner_kind_discovery_does_not_serve_is_never_acted_on(server):
    # kube's GC: the RESTMapper cannot map the owner's kind, so classifyReferences fails for the whole
    # object and the item is requeued until such a kind is served: no delete, no patch, even with
    # another owner gone; a foreground owner waiting for it keeps waiting.
    unknown = {"apiVersion": "nowhere.example.com/v1", "kind": "Ghost", "name": "g", "uid": "no-such-uid"}
    server.create(cm("alone", [unknown]))
    owner = server.create(cm("owner"))
    server.create(cm("mixed", [owner_ref(owner, block=True), {**unknown, "controller": False}]))
    assert gc_work(server.snapshot, server.registry) == []
    server.delete(ref("owner"), propagation_policy="Foreground")
    assert gc_work(server.snapshot, server.registry) == []
    assert server.snapshot.get(ref("owner")) is not None  # waits for "mixed", which nothing deletes
    assert server.snapshot.get(ref("alone")) is not None and server.snapshot.get(ref("mixed")) is not None


def test_an_owner_of_a_served_kind_in_another_version_is_not_known_either(server):
    # the RESTMapper maps the group and kind at the version the reference names: v2 ConfigMaps are not served
    owner = server.create(cm("owner"))
    stale = {**owner_ref(owner), "apiVersion": "v2"}
    server.create(cm("dep", [stale]))
    server.delete(ref("owner"))
    assert gc_work(server.snapshot, server.registry) == []
