"""CRD rules that call the Kubernetes CEL libraries, and transition rules inside map lists.

Upstream: cel-go ``ext.Strings`` (v2) and k8s.io/apiserver/pkg/cel/library — ``lists.go``,
``regex.go``, ``urls.go``, ``quantity.go``, ``ip.go``, ``cidr.go``; list correlation for ``oldSelf``
(``MakeMapList``, apiextensions-apiserver/pkg/apiserver/schema/cel ``Validator.validateArray``).
Each rule below is one that real CRDs use; without the libraries each would be an evaluation
error, i.e. a refusal no real cluster gives.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kamera_cli.apiserver import ApiError, Registry
from kamera_cli.apiserver.validation.cel.rules import available as cel_available
from kamera_cli.model.objects import ObjectRef

from .conftest import make_server
from .crds import crd

pytestmark = pytest.mark.skipif(not cel_available(), reason="cel-python (the 'cel' extra) is not installed")


def _server(rules: list[dict[str, Any]], props: dict[str, Any] | None = None):
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": rules,
        "properties": props or {"s": {"type": "string"}, "l": {"type": "array", "items": {"type": "integer"}},
                                "q": {"type": "string"}}}}}
    return make_server(Registry.builtin().with_crds([crd("Thing", "things", status=False, schema=schema)]))


def _thing(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x", "namespace": "default"},
            "spec": spec}


def _messages(server, obj, *, update: bool = False) -> list[str]:
    try:
        (server.update if update else server.create)(copy.deepcopy(obj))
    except ApiError as exc:
        assert exc.status == 422
        return [c["message"] for c in exc.body["details"]["causes"]]
    return []


@pytest.mark.parametrize(("rule", "good", "bad"), [
    # ext.Strings
    ("self.s.lowerAscii() == self.s", {"s": "web"}, {"s": "Web"}),
    ("self.s.upperAscii().startsWith('A')", {"s": "abc"}, {"s": "xyz"}),
    ("self.s.split('/').size() == 2", {"s": "team/app"}, {"s": "app"}),
    ("self.s.indexOf('-') != 0 && self.s.lastIndexOf('-') != self.s.size() - 1", {"s": "a-b"}, {"s": "a-"}),
    ("self.s.trim() == self.s", {"s": "a"}, {"s": " a"}),
    ("self.s.replace('_', '-') == self.s", {"s": "a-b"}, {"s": "a_b"}),
    ("self.s.substring(0, 4) == 'app-'", {"s": "app-1"}, {"s": "web-1"}),
    ("self.s.charAt(0) != '.'", {"s": "a"}, {"s": ".a"}),
    ("self.l.map(i, string(i)).join(',') != '0'", {"l": [1]}, {"l": [0]}),
    # lists
    ("self.l.isSorted()", {"l": [1, 2, 3]}, {"l": [3, 1]}),
    ("self.l.sum() <= 10", {"l": [4, 6]}, {"l": [6, 6]}),
    ("self.l.max() < 100 && self.l.min() > 0", {"l": [1, 99]}, {"l": [0, 5]}),
    ("self.l.indexOf(7) == -1 && self.l.lastIndexOf(7) == -1", {"l": [1]}, {"l": [7]}),
    # regex
    ("self.s.find('[0-9]+') == '42'", {"s": "v42"}, {"s": "v7"}),
    ("self.s.findAll('[a-z]').size() <= 2", {"s": "ab1"}, {"s": "abc"}),
    # URLs
    ("isURL(self.s) && url(self.s).getScheme() == 'https'", {"s": "https://example.com/x"}, {"s": "http://e.x"}),
    ("url(self.s).getHostname() == 'example.com' && url(self.s).getPort() == '8443'",
     {"s": "https://example.com:8443/"}, {"s": "https://example.com/"}),
    ("url(self.s).getEscapedPath().startsWith('/api')", {"s": "https://h/api/v1"}, {"s": "https://h/ui"}),
    ("!('debug' in url(self.s).getQuery())", {"s": "https://h/?a=1"}, {"s": "https://h/?debug=1"}),
    # quantities
    ("isQuantity(self.q) && quantity(self.q).isLessThan(quantity('2Gi'))", {"q": "1536Mi"}, {"q": "3Gi"}),
    ("quantity(self.q).compareTo(quantity('100m')) >= 0 && quantity(self.q).sign() == 1", {"q": "0.1"},
     {"q": "50m"}),
    ("quantity(self.q).isInteger() && quantity(self.q).add(1).asInteger() == 2", {"q": "1"}, {"q": "1500m"}),
    ("quantity(self.q).sub(quantity('1')).asApproximateFloat() > 0.0", {"q": "2"}, {"q": "1"}),
    # IPs and CIDRs
    ("isIP(self.s) && ip(self.s).family() == 4 && !ip(self.s).isLoopback()", {"s": "10.0.0.1"}, {"s": "127.0.0.1"}),
    ("isCIDR(self.s) && cidr(self.s).prefixLength() >= 16", {"s": "10.1.0.0/16"}, {"s": "10.0.0.0/8"}),
    ("cidr('10.0.0.0/8').containsIP(self.s) && cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
     {"s": "10.2.3.4"}, {"s": "192.168.0.1"}),
])
def test_library_functions_accept_and_refuse_as_upstream(rule: str, good: dict[str, Any], bad: dict[str, Any]):
    server = _server([{"rule": rule, "message": "no"}])
    assert _messages(server, _thing(**good)) == []
    server.delete(ObjectRef("example.com/v1", "Thing", "default", "x"))
    assert _messages(server, _thing(**bad)) == ['Invalid value: "object": no']


def test_a_library_error_is_an_evaluation_error():
    server = _server([{"rule": "quantity(self.q).isGreaterThan(quantity('1'))"}])
    assert _messages(server, _thing(q="lots")) == [
        "Invalid value: \"object\": quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: "
        "quantity(self.q).isGreaterThan(quantity('1'))"]


def test_transition_rules_compare_map_list_items_by_key():
    # listType=map items are correlated by their keys: oldSelf is the old item with the same name
    ports = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
             "items": {"type": "object", "required": ["name"], "properties": {
                 "name": {"type": "string"}, "port": {"type": "integer"}},
                 "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}
    tags = {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "string"}},
                                       "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v"}]}}
    server = _server([], {"ports": ports, "tags": tags})
    server.create(_thing(ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}], tags=[{"v": "x"}]))
    live = server.get(ObjectRef("example.com/v1", "Thing", "default", "x"))
    reordered = copy.deepcopy(live)
    reordered["spec"]["ports"] = [{"name": "b", "port": 2}, {"name": "c", "port": 9}, {"name": "a", "port": 1}]
    reordered["spec"]["tags"] = [{"v": "y"}]  # an atomic list: its items have no oldSelf, the rule is skipped
    assert _messages(server, reordered, update=True) == []
    changed = copy.deepcopy(server.get(ObjectRef("example.com/v1", "Thing", "default", "x")))
    changed["spec"]["ports"][0]["port"] = 3  # b, now first
    causes = _messages(server, changed, update=True)
    assert causes == ['Invalid value: "object": port is immutable']


def test_optional_old_self_runs_on_create_with_an_empty_optional():
    # optionalOldSelf: the transition rule runs on create too, oldSelf being optional.none()
    rule = {"rule": "!oldSelf.hasValue() || self.l.size() >= oldSelf.value().l.size()", "optionalOldSelf": True,
            "message": "l may not shrink"}
    server = _server([rule, {"rule": "self.s.size() >= oldSelf.orValue({'s': ''}).s.size()",
                             "optionalOldSelf": True, "message": "s may not shrink"}])
    server.create(_thing(l=[1, 2], s="ab"))
    live = server.get(ObjectRef("example.com/v1", "Thing", "default", "x"))
    shrunk = copy.deepcopy(live)
    shrunk["spec"]["l"], shrunk["spec"]["s"] = [1], "a"
    assert _messages(server, shrunk, update=True) == ['Invalid value: "object": l may not shrink',
                                                      'Invalid value: "object": s may not shrink']


def test_numbers_compare_across_types():
    # base.go (1.28) cel.CrossTypeNumericComparisons(true), and CEL's heterogeneous equality: a `number`
    # field holding an integral JSON value is compared with double literals by value
    rules = [{"rule": "self.ratio < 1.5 && self.ratio >= 1", "message": "ratio out of range"},
             {"rule": "self.ratio == 1.0 || !(self.ratio in [1.0, 2.0])", "message": "ratio 2 is reserved"}]
    server = _server(rules, {"ratio": {"type": "number"}})
    assert _messages(server, _thing(ratio=1)) == []
    server.delete(ObjectRef("example.com/v1", "Thing", "default", "x"))
    assert _messages(server, _thing(ratio=2)) == ['Invalid value: "object": ratio out of range',
                                                  'Invalid value: "object": ratio 2 is reserved']
