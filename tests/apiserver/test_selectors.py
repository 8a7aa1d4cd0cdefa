"""Label and field selectors: the real grammar, 400 for malformed ones and unsupported fields."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver.server.selectors import SelectorError, parse_label_selector

LABELS = {"a": {"app": "web", "tier": "front"}, "b": {"app": "db"}, "c": {}}


@pytest.fixture
def core(api_client):
    core = client.CoreV1Api(api_client)
    for name, labels in LABELS.items():
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels}})
    return core


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=web", ["a"]),
    ("app==web", ["a"]),
    ("app!=web", ["b", "c"]),  # != also matches objects without the label
    ("app in (web,db)", ["a", "b"]),
    ("app notin (web)", ["b", "c"]),
    ("tier", ["a"]),
    ("!tier", ["b", "c"]),
    ("app,!tier", ["b"]),
    ("", ["a", "b", "c"]),
])
def test_label_selectors(core, selector, expected):
    out = core.list_namespaced_config_map("default", label_selector=selector)
    assert [i.metadata.name for i in out.items] == expected


@pytest.mark.parametrize("selector", ["app=(", "app in web", "=x", "app in ()", "app,", "a b"])
def test_malformed_label_selector_is_400(core, selector):
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_config_map("default", label_selector=selector)
    assert exc.value.status == 400


def test_field_selector_on_name(core):
    out = core.list_namespaced_config_map("default", field_selector="metadata.name!=a")
    assert [i.metadata.name for i in out.items] == ["b", "c"]


def test_unsupported_field_label_is_400_with_the_real_message(core):
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_config_map("default", field_selector="data.x=1")
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["message"] == "field label not supported: data.x"


def test_pod_field_selectors(api_client):
    core = client.CoreV1Api(api_client)
    for name, node in (("p1", "n1"), ("p2", "n2")):
        core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {
            "nodeName": node, "containers": [{"name": "c", "image": "i"}]}})
    out = core.list_namespaced_pod("default", field_selector="spec.nodeName=n2,status.phase=Pending")
    assert [p.metadata.name for p in out.items] == ["p2"]


_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


@given(st.lists(st.tuples(_names, st.sampled_from(["=", "!=", "in", "notin", "exists", "!"]),
                          st.lists(_names, min_size=1, max_size=3)), min_size=1, max_size=4))
@settings(max_examples=40, deadline=None)
def test_rendered_selectors_parse_back(reqs):
    parts = []
    for key, op, values in reqs:
        if op in ("=", "!="):
            parts.append(f"{key}{op}{values[0]}")
        elif op in ("in", "notin"):
            parts.append(f"{key} {op} ({','.join(values)})")
        elif op == "exists":
            parts.append(key)
        else:
            parts.append(f"!{key}")
    parsed = parse_label_selector(",".join(parts))
    assert [(r.key, r.op) for r in parsed] == [(k, o) for k, o, _ in reqs]


@given(st.text(alphabet="ab=!(), ", max_size=12))
def test_parser_never_raises_anything_but_selector_error(text):
    with contextlib.suppress(SelectorError):
        parse_label_selector(text)
