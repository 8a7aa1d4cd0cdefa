"""Snapshot: immutability, fork isolation, order-independent fingerprint that ignores bookkeeping."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import immutables
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.apiserver import Snapshot
from kamera_cli.apiserver.storage.snapshot import LOG_SIZE
from kamera_cli.model.objects import KindRef, ObjectRef

CM = KindRef("", "v1", "ConfigMap")


def cm(name: str, ns: str = "default", **extra) -> tuple[ObjectRef, dict]:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, **extra}
    return ObjectRef.of(obj), obj


def build(items) -> Snapshot:
    snap = Snapshot.empty()
    for ref, obj in items:
        snap = snap.with_object(ref, obj)
    return snap


@given(st.permutations([cm(n, data={"k": n}) for n in "abcdef"]))
@settings(max_examples=30)
def test_fingerprint_does_not_depend_on_insertion_order(order):
    assert build(order).fingerprint() == build(sorted(order, key=lambda e: e[0])).fingerprint()


def test_fingerprint_ignores_rv_managed_fields_uid_and_timestamps():
    ref, a = cm("a", data={"x": "1"})
    b = {**a, "metadata": {**a["metadata"], "resourceVersion": "77", "uid": "u-1", "managedFields": [{"m": 1}],
                           "creationTimestamp": "2026-01-01T00:00:09Z"}}
    a2 = {**a, "metadata": {**a["metadata"], "creationTimestamp": "2026-05-05T10:00:00Z"}}
    assert build([(ref, a2)]).fingerprint() == build([(ref, b)]).fingerprint()


def test_fingerprint_keeps_owner_reference_uids_and_content():
    ref, a = cm("a")
    own1 = {**a, "metadata": {**a["metadata"], "ownerReferences": [{"uid": "1", "name": "o"}]}}
    own2 = {**a, "metadata": {**a["metadata"], "ownerReferences": [{"uid": "2", "name": "o"}]}}
    assert build([(ref, own1)]).fingerprint() != build([(ref, own2)]).fingerprint()
    assert build([cm("a", data={"x": "1"})]).fingerprint() != build([cm("a", data={"x": "2"})]).fingerprint()


def test_removing_an_object_restores_the_fingerprint():
    base = build([cm("a"), cm("b")])
    ref, obj = cm("c")
    assert base.with_object(ref, obj).with_object(ref, None).fingerprint() == base.fingerprint()


def test_fork_isolation():
    base = build([cm("a")])
    ref, obj = cm("b")
    fork1 = base.with_object(ref, obj)
    fork2 = base.with_object(*cm("c"))
    assert base.get(ref) is None and fork1.get(ref) is obj and fork2.get(ref) is None
    assert [o["metadata"]["name"] for o in fork2.objects()] == ["a", "c"]
    assert base.resource_version == 1 and fork1.resource_version == 2


def test_objects_sorted_and_filtered():
    snap = build([cm("b", "y"), cm("a", "z"), cm("c", "y")])
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in snap.objects_of(CM)] == [
        ("y", "b"), ("y", "c"), ("z", "a")]
    assert [o["metadata"]["name"] for o in snap.objects_of(CM, "y")] == ["b", "c"]


def test_write_log_is_bounded_and_not_in_the_fingerprint():
    snap = Snapshot.empty()
    ref, obj = cm("a")
    for i in range(LOG_SIZE + 10):
        snap = snap.with_object(ref, {**obj, "data": {"i": str(i)}})
    assert len(snap.log()) == LOG_SIZE
    assert snap.writes_since(1) is None
    assert [w.rv for w in snap.writes_since(snap.resource_version - 2)] == [
        snap.resource_version - 1, snap.resource_version]
    fresh = Snapshot.empty().with_object(ref, {**obj, "data": {"i": str(LOG_SIZE + 9)}})
    assert fresh.fingerprint() == snap.fingerprint()


@given(st.lists(st.tuples(st.sampled_from(["write", "delete", "counter", "view", "fork"]), st.sampled_from("abc"),
                          st.integers(0, 150)), min_size=LOG_SIZE, max_size=4 * LOG_SIZE))
@settings(max_examples=30, deadline=None)
def test_the_write_log_is_the_last_writes_of_every_lineage(ops):
    """A snapshot keeps its log as a shared part and a short tail of its latest writes; read back, it
    must be exactly the last ``LOG_SIZE`` writes of its lineage (a reference list kept beside it),
    whatever the forks, views and counters in between, and so must what is read from it."""
    snap, log = Snapshot.empty(), []
    for i in range(LOG_SIZE - 8):  # a log nearly full from the start, so that the draws overflow it
        snap = snap.with_object(*cm(f"seed{i}"))
        log = [*log, snap.log()[-1]]
    lineages = [(snap, log)]
    for op, name, n in ops:
        if op in ("write", "delete"):
            ref, obj = cm(name, data={"v": str(n)})
            if op == "delete" and snap.get(ref) is None:
                continue
            snap = snap.with_object(ref, obj if op == "write" else None)
            log = [*log, snap.log()[-1]][-LOG_SIZE:]
            assert snap.log()[-1].rv == snap.resource_version and snap.log()[-1].after == (obj if op == "write"
                                                                                           else None)
        elif op == "counter":
            snap = snap.with_counter(name, n)
        elif op == "view":
            undone = snap.recent_writes(CM, n % 4)
            snap = snap.before_writes(CM, n % 4)
            log = [w for w in log if not undone or w.rv < undone[0].rv]
        else:
            snap, log = lineages[n % len(lineages)]
        lineages.append((snap, log))
        assert list(snap.log()) == log
        assert snap.oldest_logged_rv() == (log[0].rv if log else snap.resource_version)
        since = snap.resource_version - 3
        reaches = since >= snap.resource_version or (log and log[0].rv <= since + 1)
        assert snap.writes_since(since) == ([w for w in log if w.rv > since] if reaches else None)
        assert snap.recent_writes(CM, 5) == log[-5:]
    for state, expected in lineages:
        assert list(state.log()) == expected
        again = Snapshot.from_parts(*state.parts()[:6], fp=state.fingerprint(), derived={})
        assert again.log() == state.log() and again.fingerprint() == state.fingerprint()


def test_recent_writes_of_a_kind_carry_the_previous_state():
    snap = build([cm("a", data={"v": "1"})])
    ref, obj = cm("a", data={"v": "2"})
    snap = snap.with_object(ref, obj)
    snap = snap.with_object(*cm("x"))
    writes = snap.recent_writes(CM, 2)
    assert [w.type for w in writes] == ["MODIFIED", "ADDED"]
    assert writes[0].before["data"] == {"v": "1"} and writes[0].after["data"] == {"v": "2"}
    assert snap.recent_writes(KindRef("", "v1", "Secret"), 5) == []


def _fork_cost(n: int) -> float:
    snap = build([cm(f"o{i}", data={"i": str(i)}) for i in range(n)])
    snap.fingerprint()  # as every state the explorer forks from is: its objects' digests are then known
    ref, obj = cm("new")
    start = time.process_time()  # CPU time: robust against other processes on a shared machine
    for _ in range(500):
        snap.with_object(ref, obj).fingerprint()
    return time.process_time() - start


def _eager_fingerprint(snap: Snapshot) -> str:
    """The fingerprint from scratch: every object's member computed now, as the first version did on writes."""
    import hashlib

    from kamera_cli.apiserver.storage.snapshot import _MOD, _member, is_record, object_digest

    acc = count = 0
    for ref, obj in snap.iter_entries():
        if not is_record(ref.api_version, ref.kind):
            acc = (acc + _member(ref, object_digest(obj))) % _MOD
            count += 1
    return hashlib.sha256(f"{count}:{acc:064x}".encode()).hexdigest()


_OPS = st.lists(st.tuples(st.sampled_from(["write", "delete", "event", "counter", "view", "fingerprint", "fork",
                                           "back"]),
                          st.sampled_from("abcd"), st.integers(0, 3)), max_size=40)


@given(_OPS)
@settings(max_examples=150, deadline=None)
def test_lazy_fingerprint_equals_the_fingerprint_from_scratch(ops):
    """Members are digested when a fingerprint is asked for, not at writes, and filled in the entries
    shared by every snapshot holding them; whatever the order of writes, deletes, views, forks of
    unfingerprinted parents and fingerprints, the value must be the same."""
    snap = Snapshot.empty()
    parents = [snap]
    for op, name, n in ops:
        if op == "write":
            snap = snap.with_object(*cm(name, data={"v": str(n)}))
        elif op == "delete":
            snap = snap.with_object(cm(name)[0], None)
        elif op == "event":
            ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"}, "n": n}
            snap = snap.with_object(ObjectRef.of(ev), ev)
        elif op == "counter":
            snap = snap.with_counter(name, n)
        elif op == "view":
            snap = snap.before_writes(CM, n)
        elif op == "fingerprint":
            assert snap.fingerprint() == _eager_fingerprint(snap)
        elif op == "fork":  # go back to an early state, fingerprinted or not, and write from there
            snap = parents[n % len(parents)]
        else:  # go back to a recent one: siblings sharing entries their parent has not settled yet
            snap = parents[-1 - n % len(parents)]
        parents.append(snap)
    for state in parents:
        assert state.fingerprint() == _eager_fingerprint(state)


def test_an_entry_settled_by_one_snapshot_is_still_pending_for_a_sibling():
    """A fingerprint fills an entry's member in place, in the map its siblings share; a sibling whose
    sum never counted that member must neither count it twice nor take it away when it overwrites it."""
    first = Snapshot.empty().with_object(*cm("a", data={"v": "1"}))
    sibling = first.with_object(*cm("b", data={"v": "1"}))  # derived before ``first`` was fingerprinted
    first.fingerprint()
    for later in (sibling, sibling.with_object(*cm("a", data={"v": "2"})), sibling.with_object(cm("a")[0], None)):
        assert later.fingerprint() == _eager_fingerprint(later)


def test_forking_a_large_snapshot_costs_about_the_same_as_a_small_one():
    small, large = min(_fork_cost(10) for _ in range(5)), min(_fork_cost(1000) for _ in range(5))
    assert large < small * 3  # O(log n) HAMT write plus O(1) fingerprint update


def test_stored_objects_are_never_mutated_by_later_requests(fake_patching):
    import copy

    from .conftest import make_server

    server = make_server()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"},
                                                           "finalizers": ["x.io/f"]},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    server.create(pod)
    ref = ObjectRef.of(pod)
    held = server.snapshot.get(ref)
    frozen = copy.deepcopy(held)
    server.update({**server.get(ref), "spec": {"containers": [{"name": "c", "image": "j"}]}})
    server.update({**server.get(ref), "status": {"phase": "Running"}}, subresource="status")
    server.patch(ref, "merge", {"metadata": {"labels": {"a": "c"}}})
    server.patch(ref, "json", [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}])
    server.delete(ref)
    assert held == frozen
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    ns = server.snapshot.get(ObjectRef("v1", "Namespace", "", "team"))
    frozen_ns = copy.deepcopy(ns)
    server.delete(ObjectRef("v1", "Namespace", "", "team"))
    assert ns == frozen_ns


def test_before_writes_gives_a_lagging_view_with_an_older_rv():
    snap = build([cm("a", data={"v": "1"}), cm("b")])
    ref, obj = cm("a", data={"v": "2"})
    snap = snap.with_object(ref, obj)
    snap = snap.with_object(*cm("c"))
    view = snap.before_writes(CM, 2)
    assert view.get(ref)["data"] == {"v": "1"} and view.get(cm("c")[0]) is None
    assert view.resource_version == 2 < snap.resource_version
    assert view.fingerprint() == build([cm("a", data={"v": "1"}), cm("b")]).fingerprint()
    assert [w.rv for w in snap.writes_since(view.resource_version)] == [3, 4]  # what the lagging cache missed
    assert snap.before_writes(KindRef("", "v1", "Secret"), 3) is snap


def _deployment(generation: int, observed: int | None, replicas: int = 3) -> dict[str, object]:
    obj: dict[str, object] = {"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web", "namespace": "default", "generation": generation},
                              "spec": {"replicas": replicas}}
    if observed is not None:
        obj["status"] = {"observedGeneration": observed,
                         "conditions": [{"type": "Available", "status": "True", "observedGeneration": observed}]}
    return obj


def test_generation_counts_only_through_its_relation_to_observed_generation():
    from kamera_cli.apiserver.storage.snapshot import object_digest

    # the same relation at different counts: one state (a fight that repeats is a loop, not progress)
    assert object_digest(_deployment(2, 2)) == object_digest(_deployment(7, 7))
    assert object_digest(_deployment(3, 2)) == object_digest(_deployment(9, 4))
    assert object_digest(_deployment(2, None)) == object_digest(_deployment(5, None))
    # a different relation, or different content, is a different state
    assert object_digest(_deployment(3, 2)) != object_digest(_deployment(3, 3))
    assert object_digest(_deployment(3, 4)) != object_digest(_deployment(3, 3))
    assert object_digest(_deployment(2, 2, replicas=5)) != object_digest(_deployment(2, 2))


def test_events_are_kept_but_leave_the_fingerprint_alone() -> None:
    """Events are records: two clusters that differ only in Events are the same state."""
    from kamera_cli.apiserver.storage.snapshot import Snapshot, is_record
    from kamera_cli.model.objects import ObjectRef

    base = Snapshot.empty()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}}
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "d"}, "reason": "X"}
    one = base.with_object(ObjectRef.of(cm), cm)
    two = one.with_object(ObjectRef.of(ev), ev)
    assert two.get(ObjectRef.of(ev)) == ev
    assert two.fingerprint() == one.fingerprint()
    assert two.with_object(ObjectRef.of(ev), None).fingerprint() == one.fingerprint()
    assert is_record("events.k8s.io/v1", "Event") and not is_record("v1", "ConfigMap")


def test_counters_read_back_and_travel():
    snap = Snapshot.empty()
    for i in range(40):
        snap = snap.with_counter(f"inc\0v1\0Pod\0ns\0p{i}", i + 1)
    assert snap.counter("inc\0v1\0Pod\0ns\0p7") == 8 and snap.counter("never written") == 0
    shipped = pickle.loads(pickle.dumps(snap.parts()))
    again = Snapshot.from_parts(*shipped[:6], fp=snap.fingerprint(), derived={})
    plain = Snapshot.from_parts(*shipped[:5], immutables.Map({str(k): v for k, v in shipped[5].items()}),
                                fp=snap.fingerprint(), derived={})
    for i in range(40):
        assert again.counter(f"inc\0v1\0Pod\0ns\0p{i}") == plain.counter(f"inc\0v1\0Pod\0ns\0p{i}") == i + 1


_COUNTER_MEMORY = """
import tracemalloc
from kamera_cli.apiserver import Snapshot
names = [f"inc\\0v1\\0Pod\\0ns\\0pod-{i}" for i in range(48)]
tracemalloc.start()
snap, held = Snapshot.empty(), []
for round in range(3):
    for name in names:
        snap = snap.with_counter(name, round + 1)
        held.append(snap)
print(tracemalloc.get_traced_memory()[0])
"""


def test_what_counters_keep_does_not_move_with_the_hash_seed():
    """Issue #26: a search's memory per state moved with PYTHONHASHSEED because the counters' map laid its
    nodes out by the names' string hashes; each state keeps the path its counter write copied."""
    root = Path(__file__).resolve().parents[2]
    sizes = set()
    for seed in ("0", "1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        out = subprocess.run([sys.executable, "-c", _COUNTER_MEMORY], env=env, capture_output=True, text=True,
                             check=True)
        sizes.add(int(out.stdout))
    assert len(sizes) == 1, sizes
