"""The kind pushdown is invisible: for any document and query, ``find``/``find_located`` give exactly
what the library gives over the whole document (nodes, order, normalized paths)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.invariants import compile_query, find, find_located
from kamera_cli.invariants.pushdown import kind_scope

QUERIES = [
    "$.items[?@.kind == 'A']",
    "$.items[?'A' == @.kind]",
    "$.items[?@.kind == 'A' && @.n > 1].n",
    "$.items[?@.n > 1 && @.kind == 'B' && @.tag == 'x']",
    "$.items[?@.kind == 'A' || @.kind == 'B']",
    "$.items[?@.kind == 'A' && @.n == $.items[0].n]",
    "$.items[?@.kind == 'A' && @.tag == '$']",
    "$.items[?@.kind == 'A'][?@ == 'x']",
    "$.items[?!(@.kind == 'A')]",
    "$.items[?@.kind != 'A']",
    "$..items[?@.kind == 'A']",
    "$.items[?@.kind == 'A', ?@.kind == 'B']",
    "$.items[?@.kind == 'C'].n",
    "$.items[?@.kind == 1]",
]

items = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["A", "B", "C"])},
        optional={"n": st.integers(0, 3), "tag": st.sampled_from(["x", "y", "$"])},
    ),
    st.fixed_dictionaries({"n": st.integers(0, 3)}),
    st.integers(0, 2),
    st.just("A"),
)
documents = st.fixed_dictionaries({"kind": st.just("List"), "items": st.lists(items, max_size=8)})


@settings(max_examples=200, deadline=None)
@given(document=documents, text=st.sampled_from(QUERIES))
def test_pushdown_is_invisible(document: dict[str, Any], text: str) -> None:
    query = compile_query(text)
    expected_paths = [(m.path, m.obj) for m in query.finditer(document)]
    assert find_located(text, document) == expected_paths
    assert find(text, document) == [obj for _, obj in expected_paths]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("$.items[?@.kind == 'A']", "A"),
        ("$.items[?'A' == @.kind]", "A"),
        ("$.items[?@.n > 1 && @.kind == 'B' && @.tag == 'x']", "B"),
        ("$.items[?@.kind == 'A' && @.n > 1].n", "A"),
        ("$.items[?@.kind == 'A' || @.kind == 'B']", None),
        ("$.items[?@.kind == 'A' && @.n == $.items[0].n]", None),  # refers to the root again
        ("$.items[?@.kind == 'A' && @.tag == '$']", None),  # conservative about '$' anywhere
        ("$.items[?!(@.kind == 'A')]", None),
        ("$..items[?@.kind == 'A']", None),
        ("$.items[?@.kind == 'A', ?@.kind == 'B']", None),
        ("$.items[*]", None),
        ("$.spec[?@.kind == 'A']", None),
    ],
)
def test_which_queries_qualify(text: str, kind: str | None) -> None:
    assert kind_scope(compile_query(text)) == kind
