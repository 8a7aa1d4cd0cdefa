"""CRD rules calling the namespaced Kubernetes CEL libraries (``validation/cel/ext.py``).

Upstream, as k8s.io/apiserver/pkg/cel/environment/base.go enables them: cel-go ``ext.Sets`` (1.29),
``ext.Strings`` v2's ``strings.quote``, ``cel.OptionalTypes`` (1.28), library/format.go (1.31),
library/ip.go and library/cidr.go (1.30).  Each case is a rule of the kind CRDs use.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.validation.cel.ext import parse_cidr, parse_ip
from kamera_cli.apiserver.validation.cel.rules import available as cel_available

from .conftest import make_server
from .crds import crd, thing_refusals

pytestmark = pytest.mark.skipif(not cel_available(), reason="cel-python (the 'cel' extra) is not installed")


def _server(rules: list[dict[str, Any]]):
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": rules,
        "properties": {"s": {"type": "string"}, "a": {"type": "array", "items": {"type": "string"}},
                       "b": {"type": "array", "items": {"type": "string"}}}}}}
    return make_server(Registry.builtin().with_crds([crd("Thing", "things", status=False, schema=schema)]))


#: One case a line: the rule ;; a spec it accepts ;; a spec it refuses (JSON; null: no refused case).
_CASES = r"""
sets.contains(self.a, self.b) ;; {"a": ["x", "y"], "b": ["y"]} ;; {"a": ["x"], "b": ["y"]}
sets.equivalent(self.a, self.b) ;; {"a": ["x", "y", "x"], "b": ["y", "x"]} ;; {"a": ["x"], "b": ["x", "y"]}
!sets.intersects(self.a, self.b) ;; {"a": ["x"], "b": ["y"]} ;; {"a": ["x", "z"], "b": ["z"]}
sets.contains([1, 2.0], [2]) ;; {} ;; null
self.s.contains('-') ;; {"s": "a-b"} ;; {"s": "ab"}
strings.quote(self.s) == '"a\\nb"' ;; {"s": "a\nb"} ;; {"s": "ab"}
!format.dns1123Label().validate(self.s).hasValue() ;; {"s": "web-1"} ;; {"s": "Web_1"}
format.named('dns1035Label').value().validate(self.s) == optional.none() ;; {"s": "a1"} ;; {"s": "1a"}
!format.named('nonsense').hasValue() && !format.uuid().validate(self.s).hasValue() ;; {"s": "UUID"} ;; {"s": "no"}
!format.dns1123SubdomainPrefix().validate(self.s).hasValue() ;; {"s": "my-prefix-"} ;; {"s": "-bad"}
optional.of(self.s).orValue('') == self.s && optional.none().or(optional.of(1)).value() == 1 ;; {"s": "a"} ;; null
optional.ofNonZeroValue(self.s).hasValue() ;; {"s": "a"} ;; {"s": ""}
self.?s.orValue('none') != 'x' ;; {"a": []} ;; {"s": "x"}
self.?a[?1].orValue('-') == '-' && self.?nope.?deeper.hasValue() == false ;; {"a": ["x"]} ;; {"a": ["x", "y"]}
ip(self.s).isGlobalUnicast() ;; {"s": "192.168.0.1"} ;; {"s": "255.255.255.255"}
ip(self.s).isLinkLocalUnicast() || ip(self.s).isLinkLocalMulticast() ;; {"s": "ff02::1"} ;; {"s": "ff05::1"}
ip.isCanonical(self.s) ;; {"s": "2001:db8::1"} ;; {"s": "2001:db8:0::1"}
string(ip(self.s)) == '::1' ;; {"s": "0::1"} ;; {"s": "::2"}
cidr(self.s).ip() == ip('10.0.0.1') && cidr(self.s).masked() == cidr('10.0.0.0/24') ;; {"s": "10.0.0.1/24"} ;; null
cidr(self.s).ip() == ip('10.0.0.1') ;; {"s": "10.0.0.1/24"} ;; {"s": "10.0.0.2/24"}
string(cidr(self.s)) == '10.0.0.1/24' ;; {"s": "10.0.0.1/24"} ;; {"s": "10.0.0.0/24"}
cidr('10.0.0.0/8').containsCIDR(self.s) ;; {"s": "10.1.0.0/16"} ;; {"s": "10.0.0.0/7"}
""".replace("UUID", "123e4567-e89b-12d3-a456-426614174000")


def _cases() -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    out = []
    for line in _CASES.strip().splitlines():
        rule, good, bad = line.split(" ;; ")
        out.append((rule, json.loads(good), json.loads(bad)))
    return out


@pytest.mark.parametrize(("rule", "good", "bad"), _cases())
def test_namespaced_functions_accept_and_refuse_as_upstream(rule: str, good: dict[str, Any],
                                                           bad: dict[str, Any] | None):
    server = _server([{"rule": rule, "message": "no"}])
    assert thing_refusals(server, **good) == []
    if bad is not None:
        assert thing_refusals(server, **bad) == ['Invalid value: "object": no']


def test_format_errors_can_feed_a_message_expression():
    # the library's documented use: the validation errors become the message
    server = _server([{"rule": "!format.dns1123Label().validate(self.s).hasValue()",
                       "messageExpression": "format.dns1123Label().validate(self.s).value().join('; ')"}])
    assert thing_refusals(server, s="a.b") == ['Invalid value: "object": must not contain dots']


def test_string_format_builds_messages_as_cel_go_does():
    # ext.Strings' <string>.format (cel-go ext/formatting.go): clauses, list/map rendering, Go's 'g' doubles
    server = _server([{"rule": "self.s.size() < 3",
                       "messageExpression": "'%s is %d long; %.2f, %s, %s, %x'.format([self.s, self.s.size(), "
                                            "1234.5, [1, 'a', 2.5], 1000000.0, 255])"}])
    assert thing_refusals(server, s="abcd") == [
        'Invalid value: "object": abcd is 4 long; 1,234.50, [1, "a", 2.500000], 1e+06, ff']
    bad = _server([{"rule": "'%d'.format([self.s]) == ''"}])
    assert thing_refusals(bad, s="x") == [
        "Invalid value: \"object\": error during formatting: decimal clause can only be used on integers, was given "
        "string evaluating rule: '%d'.format([self.s]) == ''"]


def test_optional_selection_is_rewritten_outside_string_literals():
    # cel-python's grammar lacks x.?f and x[?k]; they become method calls, string literals untouched
    from kamera_cli.apiserver.validation.cel.ext import rewrite_optional_syntax
    assert rewrite_optional_syntax("self.?a[?0].orValue('.?b[?c]')") == \
        "self.optField('a').optIndex(0).orValue('.?b[?c]')"
    assert rewrite_optional_syntax("self.l[0] == 1") == "self.l[0] == 1"


def test_ip_and_cidr_parse_errors_are_worded_as_upstream():
    # parseIPAddr / parseCIDR over Go's netip
    assert parse_ip("10.0.0") == ('IP Address "10.0.0" parse error during conversion from string: '
                                  'ParseAddr("10.0.0"): IPv4 address too short')
    assert parse_ip("010.0.0.1").endswith("IPv4 field has octet with leading zero")
    assert parse_ip("::ffff:1.2.3.4") == 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'
    assert parse_ip("fe80::1%eth0") == 'IP address "fe80::1%eth0" with zone value is not allowed'
    assert parse_cidr("10.0.0.0") == ("network address parse error during conversion from string: "
                                      "netip.ParsePrefix(\"10.0.0.0\"): no '/'")
    assert parse_cidr("10.0.0.0/33").endswith("prefix length out of range")
    server = _server([{"rule": "ip(self.s).family() == 4"}])
    assert thing_refusals(server, s="nope") == [
        'Invalid value: "object": IP Address "nope" parse error during conversion from string: '
        'ParseAddr("nope"): unable to parse IP evaluating rule: ip(self.s).family() == 4']
