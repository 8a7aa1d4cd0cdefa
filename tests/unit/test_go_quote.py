"""Go's ``%q`` (``strconv.Quote``), which upstream messages use for names and values: one helper
for every message kamera writes that way (managedFields conflicts, pod annotations, CEL)."""

from __future__ import annotations

import pytest

from kamera_cli.apiserver.errors import go_quote


@pytest.mark.parametrize(("text", "quoted"), [
    ("plain", '"plain"'),
    ('say "hi"\\', '"say \\"hi\\"\\\\"'),
    ("tab\tnew\nline\r\a\b\f\v", '"tab\\tnew\\nline\\r\\a\\b\\f\\v"'),
    ("nul\x00esc\x1b", '"nul\\x00esc\\x1b"'),
    ("caf\u00e9 \u4e16", '"caf\u00e9 \u4e16"'),  # printable runes stay as they are
    ("\u200b", '"\\u200b"'),  # a zero-width space is not printable
])
def test_strings_are_quoted_as_go_quotes_them(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_a_conflict_names_the_manager_as_go_quotes_it() -> None:
    from kamera_cli.apiserver.patch.managed_fields import _Entry

    entry = _Entry('tab\t"x"', "Update", "v1", "", "status", frozenset())
    assert entry.describe() == '"tab\\t\\"x\\"" with subresource "status" using v1'
