"""Custom resources beyond the schema's types, each case naming the upstream behaviour it follows.

``format`` checks (kube-openapi strfmt ``IsDateTime`` and friends, reported as validate's
``InvalidType``), ``PruneNonNullableNullsWithoutDefaults`` and defaulting of nulls
(apiextensions-apiserver structural schema), CEL ``x-kubernetes-validations``
(apiextensions-apiserver/pkg/apiserver/schema/cel ``Validator``), and a root schema that only
preserves unknown fields (``type`` omitted).
"""

from __future__ import annotations

import copy

import pytest

from kamera_cli.apiserver import ApiError, Registry
from kamera_cli.apiserver.errors import CRDError
from kamera_cli.apiserver.validation.cel.rules import available as cel_available
from kamera_cli.model.objects import ObjectRef

from .conftest import make_server
from .crds import crd

SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "startedAt": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "owner": {"type": "string", "format": "email"},
        "id": {"type": "string", "format": "uuid"},
        "note": {"type": "string"},
        "maybe": {"type": "string", "nullable": True},
        "size": {"type": "string", "default": "small"},
        "replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
    }, "x-kubernetes-validations": [
        {"rule": "!has(self.replicas) || !has(self.maxReplicas) || self.replicas <= self.maxReplicas",
         "message": "replicas must not exceed maxReplicas"},
        {"rule": "!has(self.note) || self.note != 'forbidden'",
         "messageExpression": "'note may not be ' + self.note", "reason": "FieldValueForbidden"},
        {"rule": "!has(oldSelf.id) || self.id == oldSelf.id", "message": "id is immutable"},
    ]},
    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
}}
TASK = crd("Task", "tasks", status=True, schema=SCHEMA)
needs_cel = pytest.mark.skipif(not cel_available(), reason="cel-python (the 'cel' extra) is not installed")


def _without_rules(node):
    """The schema less its CEL rules: what the tests of formats and pruning use without cel-python, where
    a CRD with rules is refused (an extra never decides a verdict)."""
    if isinstance(node, dict):
        return {k: _without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [_without_rules(v) for v in node]
    return node


@pytest.fixture
def tasks():
    task = TASK if cel_available() else crd("Task", "tasks", status=True, schema=_without_rules(SCHEMA))
    return make_server(Registry.builtin().with_crds([task]))


def _task(**spec):
    return {"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": "t", "namespace": "default"},
            "spec": spec}


def _refused(server, obj, *, update=False):
    with pytest.raises(ApiError) as exc:
        (server.update if update else server.create)(copy.deepcopy(obj))
    assert exc.value.status == 422
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


def test_a_date_time_without_a_zone_is_refused(tasks):
    # what datetime.utcnow().isoformat() writes; strfmt.IsDateTime wants "Z" or an offset
    assert _refused(tasks, _task(startedAt="2026-01-01T10:00:00.123456")) == [(
        "FieldValueTypeInvalid", "spec.startedAt",
        'Invalid value: "2026-01-01T10:00:00.123456": spec.startedAt in body must be of type date-time: '
        '"2026-01-01T10:00:00.123456"')]


@pytest.mark.parametrize("value", ["2026-01-01T10:00:00Z", "2026-01-01T10:00:00.5+02:00", "2026-01-01t10:00:00z"])
def test_date_times_with_a_zone_are_accepted(tasks, value):
    assert tasks.create(_task(startedAt=value))["spec"]["startedAt"] == value


@pytest.mark.parametrize(("field", "value", "fmt"), [("day", "2026-02-30", "date"), ("owner", "nobody", "email"),
                                                     ("id", "not-a-uuid", "uuid")])
def test_other_formats_are_checked(tasks, field, value, fmt):
    (reason, path, message), = _refused(tasks, _task(**{field: value}))
    assert (reason, path) == ("FieldValueTypeInvalid", f"spec.{field}")
    assert message.endswith(f'in body must be of type {fmt}: "{value}"')


def test_nulls_of_non_nullable_fields_are_pruned_and_nullable_ones_kept(tasks):
    # PruneNonNullableNullsWithoutDefaults; a null with a default takes the default
    out = tasks.create(_task(note=None, maybe=None, size=None))
    assert out["spec"] == {"maybe": None, "size": "small"}


@needs_cel
def test_a_failed_rule_reports_its_message_on_the_declaring_node(tasks):
    assert _refused(tasks, _task(replicas=5, maxReplicas=3)) == [
        ("FieldValueInvalid", "spec", 'Invalid value: "object": replicas must not exceed maxReplicas')]


@needs_cel
def test_message_expression_and_reason(tasks):
    assert _refused(tasks, _task(note="forbidden")) == [
        ("FieldValueForbidden", "spec", "Forbidden: note may not be forbidden")]


@needs_cel
def test_transition_rules_run_only_on_update(tasks):
    tasks.create(_task(id="0d1f8c4e-0000-4000-8000-000000000001"))  # no oldSelf on create: the rule is skipped
    current = tasks.get(ObjectRef("example.com/v1", "Task", "default", "t"))
    changed = copy.deepcopy(current)
    changed["spec"]["id"] = "0d1f8c4e-0000-4000-8000-000000000002"
    assert _refused(tasks, changed, update=True) == [
        ("FieldValueInvalid", "spec", 'Invalid value: "object": id is immutable')]


@needs_cel
def test_a_rule_without_message_says_failed_rule(tasks):
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "integer"}}}}, "x-kubernetes-validations": [{"rule": "self.spec.a > 0"}]}
    server = make_server(Registry.builtin().with_crds([crd("Thing", "things", status=False, schema=schema)]))
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x", "namespace": "default"},
             "spec": {"a": 0}}
    assert _refused(server, thing) == [("FieldValueInvalid", "<nil>",
                                        'Invalid value: "object": failed rule: self.spec.a > 0')]


@needs_cel
def test_a_crd_whose_rule_does_not_compile_is_refused():
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.replicas <="}]
    with pytest.raises(CRDError, match="does not compile"):
        Registry.builtin().with_crds([crd("Task", "tasks", status=True, schema=schema)])


def test_a_root_that_only_preserves_unknown_fields_is_accepted():
    schema = {"x-kubernetes-preserve-unknown-fields": True}
    server = make_server(Registry.builtin().with_crds([crd("Blob", "blobs", status=False, schema=schema)]))
    out = server.create({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b",
                                                                                     "namespace": "default"},
                         "anything": {"goes": 1}})
    assert out["anything"] == {"goes": 1}


def test_without_cel_python_a_crd_with_rules_is_refused_not_checked_unenforced(monkeypatch):
    """An extra never decides a verdict: without cel-python the rules would silently accept what a
    cluster refuses, so the CRD is refused at load naming the extra (issue #28)."""
    from kamera_cli.apiserver import CRDError
    from kamera_cli.apiserver.validation.cel import rules

    monkeypatch.setattr(rules, "celpy", None)
    with pytest.raises(CRDError, match=r"x-kubernetes-validations \(CEL rules\), and cel-python.*"
                                       r"pip install 'kamera-cli\[cel\]'"):
        Registry.builtin().with_crds([TASK])
    plain = crd("Plain", "plains", status=False, schema={"type": "object", "properties": {"spec": {"type": "object"}}})
    assert Registry.builtin().with_crds([plain]).lookup("example.com/v1", "Plain") is not None
