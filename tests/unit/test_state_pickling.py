"""States pickle to equal states (a split search ships them between processes, by ``__reduce__``)."""

from __future__ import annotations

import pickle
from dataclasses import replace

from kamera_cli.apiserver.storage.snapshot import Snapshot, WriteRecord
from kamera_cli.model.objects import ObjectRef
from kamera_cli.sim.model import Act
from kamera_cli.sim.runs import Fault
from kamera_cli.sim.state import FaultBook, PendingItem, SimState


def test_every_field_survives_a_round_trip() -> None:
    ref = ObjectRef("v1", "ConfigMap", "default", "a")
    record = WriteRecord(3, "MODIFIED", ref, {"data": {"k": "1"}}, {"data": {"k": "2"}})
    item = PendingItem("c", "default", "a", 7, "timer", stable=True, fresh=("v1/ConfigMap",), relist=True,
                       woken=True, carry="x")
    book = FaultBook(1, 2, (("c", "v1/ConfigMap", 1),))
    snapshot = Snapshot.empty().with_object(ref, {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "a", "namespace": "default"}})
    state = SimState(snapshot, (item,), 9, 1, 2, book, "halted", "extra", (("a", "b"),), (("o", "k", "v"),))
    act = Act("reconcile", "c", "default", "a", 0, Fault("stale", 0, (("v1/ConfigMap", 2),)), "Succeeded")
    for value in (ref, record, item, book, act):
        assert pickle.loads(pickle.dumps(value)) == value
    again = pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    # a snapshot compares by identity: compare what it holds
    assert again.snapshot.fingerprint() == snapshot.fingerprint()
    assert list(again.snapshot.objects()) == list(snapshot.objects())
    assert again.snapshot.log() == snapshot.log()
    assert replace(again, snapshot=snapshot) == state
    assert again.fingerprint(True) == state.fingerprint(True)


def test_shipped_objects_are_interned_on_arrival() -> None:
    """A state received twice, or two states sharing an object, share it in the receiving process:
    identity caches (digests, canonical text, replays) then hit as they do in a lone search."""
    from kamera_cli.sim.shipping import Shipping

    ref = ObjectRef("v1", "ConfigMap", "default", "a")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"},
           "data": {"k": "1"}}
    one = Snapshot.empty().with_object(ref, obj)
    two = one.with_object(ObjectRef("v1", "ConfigMap", "default", "b"),
                          {**obj, "metadata": {"name": "b", "namespace": "default"}})
    sender, receiver = Shipping(), Shipping()
    first, _ = receiver.loads(sender.dumps(SimState(one, (), 0)))
    second, _ = receiver.loads(sender.dumps(SimState(two, (), 1)))
    assert first.snapshot.get(ref) == obj
    assert first.snapshot.get(ref) is second.snapshot.get(ref)  # one object for one content
    assert first.snapshot.get(ref) is not obj  # another process's copy, not the sender's
    assert second.snapshot.fingerprint() == two.fingerprint()
    # the sender pickles an object once per identity
    assert sender.pickled[id(obj)][0] is obj


def test_shipping_keeps_what_the_sender_knew() -> None:
    """A shipped state arrives with the derived values its model named (so the receiver does not
    rescan the cluster for the built-in actors' work), its fingerprint, and write records shared
    with states received before."""
    from kamera_cli.sim.shipping import Shipping

    ref = ObjectRef("v1", "ConfigMap", "default", "a")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}
    one = Snapshot.empty().with_object(ref, obj)
    two = one.with_counter("n", 1)  # the same log: the same record objects
    one.derived("shipped", lambda s: ([], []))
    one.derived("local", lambda s: "not shipped")
    item = PendingItem("c", "default", "a", 7, "timer", stable=True, fresh=("v1/ConfigMap",), carry="x")
    state = SimState(one, (item,), 3, memory=(("o", "k", "v"),))
    state.fingerprint(True)
    sender, receiver = Shipping(derived=("shipped",)), Shipping(derived=("shipped",))
    got, extra = receiver.loads(sender.dumps(state, ("log",)))
    assert extra == ("log",)
    assert got.snapshot.cached("shipped") == ([], [])
    assert got.snapshot.cached("local") is None
    assert got._fp == state._fp
    assert replace(got, snapshot=one) == state
    assert got.snapshot.counter("n") == 0
    again, _ = receiver.loads(sender.dumps(SimState(two, (), 4)))
    assert again.snapshot.counter("n") == 1
    assert again.snapshot.log()[0] is got.snapshot.log()[0]
    assert again.snapshot.log() == one.log()
