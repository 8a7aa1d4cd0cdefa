"""``{{ @.relative.path }}`` templates inside a ``select`` expression and inside ``expect.equals``.

Why textual substitution in ``select``: the value a template stands for is spliced in as its JSON encoding, which
is also a valid RFC 9535 literal for strings, numbers, booleans and null. The resulting expression is
then an ordinary query, compiled (and cached) like any other, so templated and plain expressions share
one code path and one dialect.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeAlias

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
    literals, refs = _split(text)
    template = Template(text, literals, refs)
    # the surrounding query must compile whatever scalar the templates stand for
    compile_query(template.render(tuple(_PLACEHOLDER for _ in refs)))
    return template


def _split(text: str) -> tuple[tuple[str, ...], tuple[TemplateRef, ...]]:
    """Literal pieces and the templates between them (one more piece than templates)."""
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
    return tuple(literals), tuple(refs)


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
        value = _lookup(ref, node)
        if not (value is None or isinstance(value, (str, bool, int))) and not (
            isinstance(value, float) and math.isfinite(value)
        ):
            raise MissingValue(ref, f"{ref.source} is not a string, number, boolean or null")
        values.append(json.dumps(value, ensure_ascii=False))
    return template.render(tuple(values))


#: where a string sits inside an ``equals`` value: keys and indexes from the value's root
ValuePath: TypeAlias = tuple["str | int", ...]


class ValueTemplateError(InvariantSyntaxError):
    """A malformed template inside ``equals``, with where it sits (so the loader can point at it)."""

    def __init__(self, message: str, where: ValuePath, hint: str = "", *, key: bool = False) -> None:
        self.where = where
        #: the problem is the key at ``where``, not its value
        self.key = key
        super().__init__(message, hint)


@dataclass(frozen=True, slots=True)
class StringTemplate:
    """One string of an ``equals`` value that holds templates.

    A string that is exactly one template (``"{{ @.data }}"``) stands for the value itself, whatever
    its type: a map or a list is then compared structurally. A template inside a longer string
    (``"{{ @.metadata.name }}-config"``) is spliced in as text, so it must name a scalar.
    """

    where: ValuePath
    literals: tuple[str, ...]
    refs: tuple[TemplateRef, ...]

    @property
    def whole(self) -> bool:
        return len(self.refs) == 1 and self.literals == ("", "")


@dataclass(frozen=True, slots=True)
class ValueTemplate:
    """An ``equals`` value with the strings that hold templates, instantiated per forEach node.

    Why a tree walk instead of textual substitution: the value is YAML data, not query text, and a
    template may stand for a whole map (``equals: "{{ @.data }}"``) or for one field of a map
    written out (``equals: {color: "{{ @.data.color }}", size: 3}``).
    """

    value: Any
    strings: tuple[StringTemplate, ...]

    @property
    def is_plain(self) -> bool:
        return not self.strings

    @property
    def first(self) -> TemplateRef:
        return self.strings[0].refs[0]


def parse_value_template(value: Any) -> ValueTemplate:
    """Find and check every template in an ``equals`` value; raises ``ValueTemplateError``.

    A template in a map key is an error (keys are never evaluated), as is a malformed one: nothing
    that looks like a template is ever compared as literal text.
    """
    strings: list[StringTemplate] = []

    def walk(node: Any, where: ValuePath) -> None:
        if isinstance(node, str):
            found = _string_template(node, where)
            if found is not None:
                strings.append(found)
        elif isinstance(node, Mapping):
            for key, item in node.items():
                if isinstance(key, str) and ("{{" in key or "}}" in key):
                    raise ValueTemplateError(f"a template in a key is not evaluated: {key!r}", (*where, key),
                                             "templates stand for values; write the key itself", key=True)
                walk(item, (*where, key))
        elif isinstance(node, (list, tuple)):
            for index, item in enumerate(node):
                walk(item, (*where, index))

    walk(value, ())
    return ValueTemplate(value, tuple(strings))


def _string_template(text: str, where: ValuePath) -> StringTemplate | None:
    if "{{" not in text and "}}" not in text:
        return None
    try:
        literals, refs = _split(text)
    except InvariantSyntaxError as exc:
        raise ValueTemplateError(exc.message, where, exc.hint) from None
    return StringTemplate(where, literals, refs)


def _scalar_text(ref: TemplateRef, value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return json.dumps(value)
    raise MissingValue(ref, f"{ref.source} is not a string, number, boolean or null, so it cannot be part of a string")


def _lookup(ref: TemplateRef, node: Any) -> Any:
    found = compile_query(ref.query).findall(node)
    if not found:
        raise MissingValue(ref, f"{ref.source} has no value")
    return found[0]


def instantiate_value(template: ValueTemplate, node: Any) -> Any:
    """The ``equals`` value for one forEach node; raises ``MissingValue`` when a value is absent."""
    if template.is_plain:
        return template.value
    filled: dict[ValuePath, Any] = {}
    for string in template.strings:
        if string.whole:
            filled[string.where] = _lookup(string.refs[0], node)
            continue
        parts = [string.literals[0]]
        for ref, literal in zip(string.refs, string.literals[1:]):
            parts.append(_scalar_text(ref, _lookup(ref, node)))
            parts.append(literal)
        filled[string.where] = "".join(parts)

    def build(value: Any, where: ValuePath) -> Any:
        if where in filled:
            return filled[where]
        if isinstance(value, Mapping):
            return {key: build(item, (*where, key)) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [build(item, (*where, index)) for index, item in enumerate(value)]
        return value

    return build(template.value, ())
