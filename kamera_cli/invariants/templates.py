"""``{{ @.relative.path }}`` templates inside a ``select`` expression and inside ``expect.equals``.

Why textual substitution in ``select``: the value a template stands for is spliced in as its JSON encoding, which
is also a valid RFC 9535 literal for strings, numbers, booleans and null. The resulting expression is
then an ordinary query, compiled (and cached) like any other, so templated and plain expressions share
one code path and one dialect. A template *inside* a string literal (``'{{ @.metadata.name }}-copy'``)
is spliced in as that string's text instead, escaped for its quotes: RFC 9535 has no string
concatenation, and splicing a JSON literal there would silently compare with ``'"a"-copy'``.
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
    #: per template, the quote of the string literal it sits in ("'" or '"'), or "" outside one
    quotes: tuple[str, ...] = ()

    @property
    def is_plain(self) -> bool:
        return not self.refs

    def render(self, values: tuple[str, ...]) -> str:
        parts = [self.literals[0]]
        for value, literal in zip(values, self.literals[1:]):
            parts.append(value)
            parts.append(literal)
        return "".join(parts)

    def placeholders(self) -> tuple[str, ...]:
        """What each template stands for when only the query's syntax is checked."""
        return tuple("" if quote else _PLACEHOLDER for quote in self.quotes or ("",) * len(self.refs))

    def original_position(self, index: int) -> int:
        """The character of ``text`` at character ``index`` of the query rendered with placeholders
        (a character inside a placeholder maps to its template's start)."""
        rendered = original = 0
        for i, literal in enumerate(self.literals):
            if index < rendered + len(literal):
                return original + index - rendered
            rendered += len(literal)
            original += len(literal)
            if i < len(self.refs):
                size = len(self.placeholders()[i])
                if index < rendered + size:
                    return original
                rendered += size
                original += len(self.refs[i].source)
        return original + max(index - rendered, 0)


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
    template = Template(text, literals, refs, _quotes(literals))
    # the surrounding query must compile whatever scalar the templates stand for; a problem is told
    # in the user's text, not in the placeholders' (which they never wrote)
    rendered = template.render(template.placeholders())
    try:
        compile_query(rendered)
    except InvariantSyntaxError as exc:
        message = exc.message.replace(repr(rendered), repr(text))
        at = _AT_CHARACTER.search(message)
        if at is not None:
            where = template.original_position(int(at.group(1)) - 1) + 1
            message = message[: at.start()] + f" at character {where}" + message[at.end():]
        raise InvariantSyntaxError(message, exc.hint) from None
    return template


_AT_CHARACTER = re.compile(r" at character (\d+)$")


def _quotes(literals: tuple[str, ...]) -> tuple[str, ...]:
    """The quote of the string literal each template (between two pieces) sits in, "" when none:
    the pieces are scanned in order as the query's lexer would, backslash escapes included."""
    out: list[str] = []
    quote = ""
    for piece in literals[:-1]:
        escaped = False
        for char in piece:
            if quote:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == quote:
                    quote = ""
            elif char in ("'", '"'):
                quote = char
        out.append(quote)
    return tuple(out)


def _in_string(value: Any, quote: str) -> str:
    """``value`` as text inside a string literal quoted with ``quote`` (RFC 9535 escapes)."""
    text = value if isinstance(value, str) else json.dumps(value)
    escaped = text.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return "".join(c if ord(c) >= 0x20 else _SHORT_ESCAPES.get(c, f"\\u{ord(c):04x}") for c in escaped)


_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


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
    values: list[str] = []
    for ref in template.refs:
        value = _lookup(ref, node)
        if not (value is None or isinstance(value, (str, bool, int))) and not (
            isinstance(value, float) and math.isfinite(value)
        ):
            raise MissingValue(ref, f"{ref.source} is not a string, number, boolean or null")
        quote = template.quotes[len(values)] if template.quotes else ""
        values.append(_in_string(value, quote) if quote else json.dumps(value, ensure_ascii=False))
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
