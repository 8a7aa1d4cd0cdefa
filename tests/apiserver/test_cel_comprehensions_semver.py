"""CRD rules using the CEL features Kubernetes enabled in 1.32-1.34 (k8s.io/apiserver/pkg/cel/
environment/base.go): cel-go's two-variable comprehensions (ext/comprehensions.go, 1.32), the
semver library (library/semverlib.go at version 1, 1.33), cel-go's ``ext.Lists`` version 3
(ext/lists.go, 1.34), and the standard macros cel-python lacks (parser/macro.go: ``existsOne``,
``map`` with a filter).  Each case names the upstream function whose behaviour it pins.
"""

from __future__ import annotations

from typing import Any

import pytest

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.errors import CRDError
from kamera_cli.apiserver.validation.cel.rules import available as cel_available
from kamera_cli.apiserver.validation.cel.semver import SemverError, normalize_and_parse, parse

from .conftest import make_server
from .crds import crd, thing_refusals

pytestmark = pytest.mark.skipif(not cel_available(), reason="cel-python (the 'cel' extra) is not installed")


def _schema(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": rules,
        "properties": {"s": {"type": "string"}, "v": {"type": "string"},
                       "l": {"type": "array", "items": {"type": "integer"}},
                       "a": {"type": "array", "items": {"type": "string"}},
                       "m": {"type": "object", "additionalProperties": {"type": "string"}}}}}}


def _server(rules: list[dict[str, Any]]):
    return make_server(Registry.builtin().with_crds([crd("Thing", "things", status=False, schema=_schema(rules))]))


#: Each case: a rule, a spec it accepts, a spec it refuses (None: no refused case); the id names the upstream
#: function it follows.
_CASES = [
    pytest.param("self.l.all(i, v, i == 0 || v > self.l[i - 1])",
                 {"l": [1, 2, 5]}, {"l": [1, 3, 2]}, id="quantifierAll (list: index, value)"),
    pytest.param("self.m.all(k, v, v.startsWith(k))",
                 {"m": {"a": "ab", "x": "xy"}}, {"m": {"a": "b"}}, id="quantifierAll (map: key, value)"),
    pytest.param("self.m.all(k, v, self.a.all(p, !v.startsWith(p)))",
                 {"m": {"k": "v"}, "a": ["x"]}, {"m": {"k": "xv"}, "a": ["x"]},
                 id="a one-variable all nested in quantifierAll"),
    pytest.param("self.m.exists(k, v, k == 'primary' && v != '')",
                 {"m": {"primary": "a"}}, {"m": {"primary": ""}}, id="quantifierExists"),
    pytest.param("self.l.existsOne(i, v, v == 0)", {"l": [1, 0, 2]}, {"l": [0, 1, 0]}, id="quantifierExistsOne"),
    pytest.param("self.a.exists_one(i, v, i > 0 && v == 'x')",
                 {"a": ["x", "x", "y"]}, {"a": ["x", "x", "x"]}, id="quantifierExistsOne under exists_one"),
    pytest.param("self.m.transformList(k, v, k + '=' + v).join(',') == self.s",
                 {"m": {"a": "1"}, "s": "a=1"}, {"m": {"a": "1"}, "s": "a"}, id="transformList"),
    pytest.param("self.l.transformList(i, v, i % 2 == 0, v).sum() < 10",
                 {"l": [1, 100, 2]}, {"l": [5, 0, 5]}, id="transformList with a filter"),
    pytest.param("self.a.transformMap(i, v, v.size())[0] == 3", {"a": ["abc"]}, {"a": ["ab"]}, id="transformMap"),
    pytest.param("self.m.transformMap(k, v, k != 'skip', v.size()).all(k, n, n > 0)",
                 {"m": {"a": "x", "skip": ""}}, {"m": {"a": ""}}, id="transformMap with a filter"),
    pytest.param("self.m.transformMapEntry(k, v, {v: k}).size() == self.m.size()",
                 {"m": {"a": "1", "b": "2"}}, None, id="transformMapEntry"),
    pytest.param("self.a.existsOne(x, x == 'main')",
                 {"a": ["main", "b"]}, {"a": ["main", "main"]}, id="MakeExistsOne (existsOne, one variable)"),
    pytest.param("self.l.map(x, x > 0, x * 2).sum() <= 10",
                 {"l": [-100, 5]}, {"l": [3, 3]}, id="MakeMap (map with a filter)"),
    pytest.param("isSemver(self.v)", {"v": "1.2.3-rc.1+build.5"}, {"v": "v1.2.3"}, id="semverlib isSemver"),
    pytest.param("isSemver(self.v, true)", {"v": "v01.2"}, {"v": "1.2-rc"}, id="semverlib isSemver normalized"),
    pytest.param("semver(self.v).major() == 1 && semver(self.v).minor() >= 2 && semver(self.v).patch() == 0",
                 {"v": "1.3.0"}, {"v": "1.1.0"}, id="semverlib major/minor/patch"),
    pytest.param("semver(self.v).isGreaterThan(semver('1.0.0-rc.1'))",
                 {"v": "1.0.0-rc.2"}, {"v": "1.0.0-beta.9"}, id="semverlib isGreaterThan (blang Compare)"),
    pytest.param("semver(self.v).isLessThan(semver('1.0.0'))",
                 {"v": "1.0.0-alpha"}, {"v": "1.0.0+build"}, id="semverlib isLessThan (pre-release below release)"),
    pytest.param("semver(self.v).compareTo(semver('1.0.0-1')) == 1",
                 {"v": "1.0.0-a"}, {"v": "1.0.0-0"}, id="semverlib compareTo (numeric below alphanumeric)"),
    pytest.param("semver(self.v) == semver('2.0.0')",
                 {"v": "2.0.0+abc"}, {"v": "2.0.0-abc"}, id="Semver.Equal (build ignored)"),
    pytest.param("quantity(self.s).isLessThan(quantity('1Gi'))",
                 {"s": "512Mi"}, {"s": "2Gi"}, id="quantity comparisons still dispatch"),
    pytest.param("self.l.slice(0, 2) == [1, 2]", {"l": [1, 2, 3]}, {"l": [2, 1]}, id="ext.Lists slice"),
    pytest.param("self.a.distinct().size() == self.a.size()",
                 {"a": ["x", "y"]}, {"a": ["x", "y", "x"]}, id="ext.Lists distinct"),
    pytest.param("self.a.sort() == self.a", {"a": ["a", "b"]}, {"a": ["b", "a"]}, id="ext.Lists sort"),
    pytest.param("self.l.reverse()[0] == 3", {"l": [1, 3]}, {"l": [3, 1]}, id="ext.Lists reverse"),
    pytest.param("[self.l, [9]].flatten().size() == 3", {"l": [1, 2]}, {"l": [1]}, id="ext.Lists flatten"),
    pytest.param("lists.range(self.l.size()).all(i, self.l[i] == i)",
                 {"l": [0, 1]}, {"l": [1, 0]}, id="ext.Lists lists.range"),
    pytest.param("self.a.sortBy(x, x.size())[0] == 'z'",
                 {"a": ["abc", "z"]}, {"a": ["ab", "xy"]}, id="ext.Lists sortBy"),
]


@pytest.mark.parametrize(("rule", "good", "bad"), _CASES)
def test_rules_accept_and_refuse_as_upstream(rule: str, good: dict[str, Any], bad: dict[str, Any] | None):
    server = _server([{"rule": rule, "message": "no"}])
    assert thing_refusals(server, **good) == []
    if bad is not None:
        assert thing_refusals(server, **bad) == ['Invalid value: "object": no']


def _error(rule: str, **spec: Any) -> str:
    messages = thing_refusals(_server([{"rule": rule}]), **spec)
    assert len(messages) == 1 and messages[0].endswith(f" evaluating rule: {rule}"), messages
    return messages[0].removeprefix('Invalid value: "object": ').removesuffix(f" evaluating rule: {rule}")


def test_comprehension_errors_travel_as_in_cel_go():
    # quantifierAll: `accu && p` -- a later false decides over an earlier error; no false leaves the error
    assert thing_refusals(_server([{"rule": "!self.l.all(i, v, 10 / v > 1)"}]), l=[0, 20]) == []
    assert _error("self.l.all(i, v, 10 / v > 1)", l=[0, 1]) == "modulus or divide by zero"
    # quantifierExistsOne never stops: an error anywhere is the result, even after the count passed 1
    assert _error("self.l.existsOne(i, v, 10 / v > 1)", l=[1, 2, 0]) == "modulus or divide by zero"
    # transformMapEntry inserts with cel.@mapInsert, which refuses a repeated key
    assert _error("self.m.transformMapEntry(k, v, {v: k}).size() > 0", m={"a": "x", "b": "x"}) == \
        "insert failed: key x already exists"


def test_semver_errors_are_blang_semvers():
    # blang/semver/v4 Parse, as stringToSemver wraps it
    assert _error("semver(self.v).major() > 0", v="v1.0.0") == 'Invalid character(s) found in major number "v1"'
    assert _error("semver(self.v, true).major() > 0", v="1.0-rc") == \
        "short version cannot contain PreRelease/Build meta data"
    assert _error("semver(self.v).major() > 0", v="1.0") == "No Major.Minor.Patch elements found"


@pytest.mark.parametrize(("text", "error"), [
    ("", "Version string empty"),
    ("1.01.0", 'Minor number must not contain leading zeroes "01"'),
    ("1..0", 'strconv.ParseUint: parsing "": invalid syntax'),  # containsOnly("") is true in blang
    ("1.0.0-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("1.0.0-a..b", "Prerelease is empty"),
    ("1.0.0+a_b", 'Invalid character(s) found in build meta data "a_b"'),
    ("1.0.0+", "Build meta data is empty"),
    ("1.0.x", 'Invalid character(s) found in patch number "x"'),
    ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
])
def test_semver_parse_refuses_as_blang(text: str, error: str):
    with pytest.raises(SemverError) as caught:
        parse(text)
    assert str(caught.value) == error


def test_semver_normalization_is_semverlibs():
    # normalizeAndParse: one leading v, leading zeros trimmed, minor/patch filled, no whitespace trimming
    assert str(normalize_and_parse("v01.02")) == "1.2.0"
    assert str(normalize_and_parse("1.0.00-rc.1+b")) == "1.0.0-rc.1+b"
    with pytest.raises(SemverError):
        normalize_and_parse(" 1.0.0")
    with pytest.raises(SemverError):
        normalize_and_parse("vv1")


def test_list_library_errors_are_cel_gos():
    # ext/lists.go: slice bounds, flatten depth, sort's comparable same-typed elements
    assert _error("self.l.slice(1, 5).size() > 0", l=[1]) == "cannot slice(1, 5), list is length 1"
    assert _error("self.l.flatten(-1).size() > 0", l=[1]) == "level must be non-negative"
    assert _error("[self.l, 'x'].sort().size() > 0", l=[1]) == "list elements must be comparable"
    assert _error("[1, 'x'].sort().size() > 0", l=[1]) == "list elements must have the same type"


@pytest.mark.parametrize(("rule", "error"), [
    ("self.m.all(k, k, true)", "duplicate variable name: k"),  # extractIterVars
    ("self.m.all(k.x, v, true)", "argument must be a simple name"),  # extractIterVar
    ("self.l.map(x.y, x)", "argument is not an identifier"),  # MakeMap
    ("self.l.exists(__result__, true)", "iteration variable overwrites accumulator variable"),
])
def test_a_macro_cel_go_cannot_expand_refuses_the_crd(rule: str, error: str):
    with pytest.raises(CRDError, match=error):
        Registry.builtin().with_crds([crd("Thing", "things", status=False, schema=_schema([{"rule": rule}]))])
