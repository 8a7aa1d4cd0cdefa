"""Malformed requests get a 4xx Status, never a Python exception and never a 500 (which would be a kamera bug)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import make_server

SERVER = make_server()
SERVER.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["metadata", "name", "namespace", "data", "spec", "labels", "finalizers", "ownerReferences", "kind",
         "apiVersion", "resourceVersion", "op", "path", "value", "status", "preconditions", "propagationPolicy"]),
        inner, max_size=4),
    max_leaves=12,
)
paths = st.sampled_from([
    "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps/a",
    "/api/v1/namespaces/default/configmaps/a/status", "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/p/status", "/api/v1/namespaces", "/api/v1/namespaces/default",
    "/apis/apps/v1/namespaces/default/deployments", "/api/v1/configmaps", "/api/v1/nodes/n",
    "/api/v1/namespaces/x/configmaps/a", "/apis", "/api/v1/namespaces/default/configmaps/a/scale",
])
queries = st.lists(st.tuples(st.sampled_from(["watch", "labelSelector", "fieldSelector", "limit", "continue",
                                              "resourceVersion", "dryRun", "propagationPolicy", "force",
                                              "fieldManager", "timeoutSeconds"]),
                             st.text(alphabet="a=!,()01-Tx ", max_size=6)), max_size=3)
ctypes = st.sampled_from(["application/json", "application/merge-patch+json", "application/json-patch+json",
                          "application/strategic-merge-patch+json", "application/apply-patch+yaml", "text/plain",
                          ""])


@given(method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]), path=paths, query=queries,
       ctype=ctypes, body=st.one_of(st.none(), json_values.map(lambda v: json.dumps(v).encode()),
                                    st.binary(max_size=8)))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_request_crashes_or_answers_500(fake_patching_module, method, path, query, ctype, body):
    resp = SERVER.handle(method, path, query, {"Content-Type": ctype} if ctype else {}, body)
    if resp.stream is not None:
        list(resp.stream)
        return
    payload = json.loads(resp.body)
    assert resp.status != 500, payload
    if resp.status >= 400:
        assert payload["kind"] == "Status" and payload["code"] == resp.status


def test_the_fuzzer_reaches_the_write_paths(fake_patching_module):
    server = make_server()
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    statuses = set()
    for body in (b'{"metadata":{"name":"z"}}', b'{"data": {"a": 1}}', b"[]", b"{"):
        for method, path in (("POST", "/api/v1/namespaces/default/configmaps"),
                             ("PUT", "/api/v1/namespaces/default/configmaps/a")):
            statuses.add(server.handle(method, path, [], {}, body).status)
    assert {201, 422, 400} <= statuses
