"""``{{ @.relative.path }}`` templates inside a ``select`` expression.

Why textual substitution: the value a template stands for is spliced in as its JSON encoding, which
is also a valid RFC 9535 literal for strings, numbers, booleans and null. The resulting expression is
then an ordinary query, compiled (and cached) like any other, so templated and plain expressions share
one code path and one dialect.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kamera_cli.invariants.queries import InvariantSyntaxError, compile_query

_TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
#: what a template is replaced with when only the syntax of the surrounding query is checked
_PLACEHOLDER = '""'


@dataclass(frozen=True, slots=True)
class TemplateRef:
    """One ``{{ @... }}``: its source text and the query that reads it from the forEach node."""

    source: str
    query: str  # rooted at ``$`` = the forEach node


@dataclass(frozen=True, slots=True)
class Template:
    """A select expression split into literal text and template references (alternating)."""

    text: str
    literals: tuple[str, ...]  # len(refs) + 1 pieces
    refs: tuple[TemplateRef, ...]

    @property
    def is_plain(self) -> bool:
        return not self.refs

    def render(self, values: tuple[str, ...]) -> str:
        parts = [self.literals[0]]
        for value, literal in zip(values, self.literals[1:]):
            parts.append(value)
            parts.append(literal)
        return "".join(parts)


class MissingValue(Exception):
    """A template names a value the forEach node does not have (reported as a violation)."""

    def __init__(self, ref: TemplateRef, reason: str) -> None:
        self.ref = ref
        self.reason = reason
        super().__init__(reason)


@lru_cache(maxsize=1024)
def parse_template(text: str) -> Template:
    """Split and check a select expression; raises ``InvariantSyntaxError`` for a malformed template."""
    literals: list[str] = []
    refs: list[TemplateRef] = []
    last = 0
    for match in _TEMPLATE.finditer(text):
        literal = text[last : match.start()]
        _no_stray_braces(literal, text, last)
        literals.append(literal)
        refs.append(_parse_ref(match.group(0), match.group(1).strip()))
        last = match.end()
    tail = text[last:]
    _no_stray_braces(tail, text, last)
    literals.append(tail)
    template = Template(text, tuple(literals), tuple(refs))
    # the surrounding query must compile whatever scalar the templates stand for
    compile_query(template.render(tuple(_PLACEHOLDER for _ in refs)))
    return template


def _no_stray_braces(piece: str, text: str, offset: int) -> None:
    for token, other in (("{{", "}}"), ("}}", "{{")):
        index = piece.find(token)
        if index >= 0:
            raise InvariantSyntaxError(
                f"malformed template in {text!r}: {token!r} at character {offset + index + 1} has no matching {other!r}"
            )


def _parse_ref(source: str, body: str) -> TemplateRef:
    if not body:
        raise InvariantSyntaxError(
            f"empty template {source!r}: write a relative path such as {{{{ @.metadata.name }}}}"
        )
    if not body.startswith("@"):
        raise InvariantSyntaxError(
            f"template {source!r} must be a path relative to the forEach node, starting with @ "
            "(e.g. {{ @.metadata.name }})"
        )
    query = "$" + body[1:]
    try:
        compiled = compile_query(query)
    except InvariantSyntaxError as exc:
        raise InvariantSyntaxError(f"template {source!r}: {exc.message}", exc.hint) from None
    if not compiled.singular_query():
        raise InvariantSyntaxError(
            f"template {source!r} must name a single value (names and indexes only, e.g. @.spec.items[0].name)"
        )
    return TemplateRef(source, query)


def instantiate(template: Template, node: Any) -> str:
    """The select expression for one forEach node; raises ``MissingValue`` when a value is absent."""
    values = []
    for ref in template.refs:
        found = compile_query(ref.query).findall(node)
        if not found:
            raise MissingValue(ref, f"{ref.source} has no value")
        value = found[0]
        if not (value is None or isinstance(value, (str, bool, int))) and not (
            isinstance(value, float) and math.isfinite(value)
        ):
            raise MissingValue(ref, f"{ref.source} is not a string, number, boolean or null")
        values.append(json.dumps(value, ensure_ascii=False))
    return template.render(tuple(values))
