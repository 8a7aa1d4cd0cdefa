"""A memoised step replayed at another state or instant is what a fresh run there would make.

Why: the memo matches on what a step read, which leaves out server bookkeeping (managedFields, times,
resourceVersions) and the clock. A replay that kept the first run's bookkeeping would make later
states depend on which of two equal states a process met first — and a split search's processes meet
them in other orders (docs/explorer.md, "Splitting is exact only because ...").
"""

from __future__ import annotations

from typing import Any

from kamera_cli.sim.journal import as_written_now as _with_rv
from kamera_cli.sim.memo_keys import retimed_output

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"


def _entry(manager: str, time: str, fields: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": time,
                           "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        out["subresource"] = subresource
    return out


def _obj(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "resourceVersion": "5",
                         "managedFields": list(entries)}}


SPEC = {"f:spec": {"f:replicas": {}, "f:template": {}}}
SPEC_LESS = {"f:spec": {"f:template": {}}}


def test_another_manager_s_entry_that_lost_fields_keeps_its_stored_time() -> None:
    # recorded at T0: a status write took nothing from the spec entry's time; a fresh run at T1
    # stamps only the writer's (status) entry
    recorded_before = _obj(_entry("kamera", T0, SPEC))
    recorded_after = _obj(_entry("kamera", T0, SPEC_LESS), _entry("kamera", T0, {"f:status": {}}, "status"))
    current_before = _obj(_entry("kamera", T0, SPEC))
    out = _with_rv(recorded_after, 9, (T0, T1), recorded_before, current_before)
    times = [(e.get("subresource", ""), e["time"]) for e in out["metadata"]["managedFields"]]
    assert times == [("", T0), ("status", T1)]
    assert out["metadata"]["resourceVersion"] == "9"


def test_the_writer_s_entry_that_grew_is_stamped_with_the_replay_s_time() -> None:
    recorded_before = _obj(_entry("kamera", T0, SPEC_LESS))
    recorded_after = _obj(_entry("kamera", T0, SPEC))
    out = _with_rv(recorded_after, 9, (T0, T1), recorded_before, _obj(_entry("kamera", T0, SPEC_LESS)))
    assert [e["time"] for e in out["metadata"]["managedFields"]] == [T1]


def test_a_bystander_keeps_the_time_stored_now_not_the_recorded_one() -> None:
    recorded_before = _obj(_entry("kamera", T0, SPEC))
    recorded_after = _obj(_entry("kamera", T0, SPEC_LESS), _entry("other", T2, {"f:spec": {"f:replicas": {}}}))
    current_before = _obj(_entry("kamera", T1, SPEC))
    out = _with_rv(recorded_after, 9, None, recorded_before, current_before)
    assert [(e["manager"], e["time"]) for e in out["metadata"]["managedFields"]] == [("kamera", T1), ("other", T2)]


def test_entries_come_out_in_the_server_s_order() -> None:
    # the server keeps managedFields sorted by operation, time, manager (managed_fields._render):
    # a replay whose times moved must not keep the recorded order
    recorded_before = _obj(_entry("b-status", T0, {"f:status": {}}, "status"))
    recorded_after = _obj(_entry("b-status", T0, {"f:status": {}}, "status"), _entry("a-spec", T0, SPEC))
    current_before = _obj(_entry("b-status", T2, {"f:status": {}}, "status"))
    out = _with_rv(recorded_after, 9, (T0, T1), recorded_before, current_before)
    assert [(e["manager"], e["time"]) for e in out["metadata"]["managedFields"]] == [("a-spec", T1), ("b-status", T2)]


def test_printed_times_are_re_rendered_for_the_replay_s_instant() -> None:
    text = ('127.0.0.1 - - [01/Jan/2026 00:00:04] "POST /sync HTTP/1.1" 200 -\n'
            "2026-01-01 00:00:05,120 INFO done at 2026-01-01T00:00:04Z; Thu Jan 01 00:00:04 2026")
    assert retimed_output(text, 4, 10) == (
        '127.0.0.1 - - [01/Jan/2026 00:00:10] "POST /sync HTTP/1.1" 200 -\n'
        "2026-01-01 00:00:11,120 INFO done at 2026-01-01T00:00:10Z; Thu Jan 01 00:00:10 2026")


def test_an_absolute_clock_is_read_as_format_time_reads_it() -> None:
    epoch = 1767225600  # the clock of a scenario that starts at an absolute time
    assert retimed_output("[01/Jan/2026 00:00:04]", epoch + 4, epoch + 5) == "[01/Jan/2026 00:00:05]"


def test_overlapping_times_are_each_moved_once() -> None:
    # 00:00:04 -> 00:00:05 and 00:00:05 -> 00:00:06 must not chain into 00:00:06 for both
    assert retimed_output("a 00:00:04 2026-01-01T00:00:04Z b 2026-01-01T00:00:05Z", 4, 5) == (
        "a 00:00:04 2026-01-01T00:00:05Z b 2026-01-01T00:00:06Z")


def test_output_without_the_time_is_left_alone() -> None:
    assert retimed_output("reconciled widget demo", 4, 10) == "reconciled widget demo"
    assert retimed_output("", 4, 10) == ""
    assert retimed_output("at 2026-01-01T00:00:04Z", 4, 4) == "at 2026-01-01T00:00:04Z"


def test_a_graceful_delete_s_deadline_moves_with_the_replay_s_instant() -> None:
    # recorded at T0 with a 30 s grace period (deadline T0+30); replayed at T1 the deadline is T1+30
    # (workloads/scale-down-before-move reported it one second off under the memo)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    deleted = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-01-01T00:00:30Z",
                                   "deletionGracePeriodSeconds": 30}}
    replayed = _with_rv(deleted, 9, (T0, T1), pod, pod)
    assert replayed["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:31Z"


def test_a_deadline_set_before_the_write_is_kept() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "deletionTimestamp": "2026-01-01T00:00:30Z"}}
    assert _with_rv(pod, 9, (T0, T2), pod, pod)["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"


def test_a_deletion_under_way_is_the_stored_object_s_not_the_recorded_one() -> None:
    # a finalizer removed from an object being deleted: the memoised run met it marked at 00:00:30,
    # the object it is replayed on was marked at 00:00:33; the server keeps the stored mark (a story
    # showed the patch moving deletionTimestamp back three seconds)
    def marked(at: str, finalizers: list[str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "scratch", "deletionTimestamp": at, "deletionGracePeriodSeconds": 0,
                             **({"finalizers": finalizers} if finalizers else {})}}
    recorded_before, recorded_after = marked("2026-01-01T00:00:30Z", ["x"]), marked("2026-01-01T00:00:30Z", [])
    current = marked("2026-01-01T00:00:33Z", ["x"])
    replayed = _with_rv(recorded_after, 9, (T0, T2), recorded_before, current)
    assert replayed["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:33Z"
    assert "finalizers" not in replayed["metadata"]
