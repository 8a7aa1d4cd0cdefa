"""Normalized paths said the way a reader names them: the object, then the field path inside it."""

from __future__ import annotations

import pytest

from kamera_cli.invariants import find_located, state_document
from kamera_cli.invariants.locations import locate, path_parts

DOC = state_document([
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-copy", "namespace": "shop",
                                                           "annotations": {"example.com/it's": "x"}},
     "data": {"shard-c": "0", "a.b": "1"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
])


@pytest.mark.parametrize(
    ("query", "where"),
    [
        ("$.items[?@.kind == 'ConfigMap'].data['shard-c']", "ConfigMap shop/app-copy .data.shard-c"),
        ("$.items[?@.kind == 'ConfigMap'].data['a.b']", "ConfigMap shop/app-copy .data['a.b']"),
        ("$.items[?@.kind == 'ConfigMap'].metadata.annotations.*", "ConfigMap shop/app-copy .metadata.annotations['example.com/it\\'s']"),  # noqa: E501
        ("$.items[?@.kind == 'Namespace']", "Namespace shop"),
        ("$.kind", "$.kind"),
    ],
)
def test_locate_names_the_object_and_the_field(query: str, where: str) -> None:
    ((path, _),) = find_located(query, DOC)
    assert locate(path, DOC)[0] == where


def test_path_parts_reads_escapes_and_refuses_anything_else() -> None:
    assert path_parts("$['a\\'b\\\\c\\u00e9\\n'][3]") == ("a'b\\c\u00e9\n", 3)
    assert path_parts("$") == ()
    assert path_parts("$.items[0]") is None
    assert locate("not a path", DOC) == ("not a path", None)
    assert locate("$['items'][9]['data']", DOC) == ("$.items[9].data", None)  # no such object
