"""Apply bodies that are plain JSON skip PyYAML; they must read exactly as YAML reads them."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.apiserver.server.base import _NOT_PLAIN, _plain_json

_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=12)
_values: st.SearchStrategy[Any] = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from([(",", ":"), (", ", ": ")]), st.booleans())
def test_a_json_apply_body_reads_as_yaml_reads_it(value: Any, separators: tuple[str, str], ascii_only: bool) -> None:
    body = json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode()
    parsed = _plain_json(body)
    if parsed is _NOT_PLAIN:
        return
    assert parsed == yaml.safe_load(body.decode())
    assert json.dumps(parsed, sort_keys=True) == json.dumps(yaml.safe_load(body.decode()), sort_keys=True)


def test_texts_yaml_reads_differently_from_json_fall_back_to_yaml() -> None:
    for body in (b'{"a": 1e5}', b'{"a": 1.5}', b'{"a": NaN}', b'{"a": "x\\ny"}', b'{"a":\t1}', b'{"a"\n: 1}',
                 b'{"a": "\x7f"}', ('{"' + "k" * 1100 + '": 1}').encode(), b'{"a"' + b" " * 1200 + b": 1}",
                 b'{"a":' * 200 + b"1" + b"}" * 200, b'{"a": 1} # comment', b"a: 1", b""):
        assert _plain_json(body) is _NOT_PLAIN, body


def test_a_float_in_an_apply_body_stays_as_yaml_1_1_reads_it() -> None:
    # YAML 1.1 (PyYAML) reads 1e3 as a string: the fast path must not turn it into a number.
    assert yaml.safe_load('{"a": 1e3}') == {"a": "1e3"}
    assert _plain_json(b'{"a": 1e3}') is _NOT_PLAIN
