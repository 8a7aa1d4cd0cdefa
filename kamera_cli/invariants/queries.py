"""RFC 9535 JSONPath queries, compiled once per expression text.

Why python-jsonpath in strict mode: it is the library that passes the whole RFC 9535 compliance
suite (valid and invalid selectors alike), so what a user reads in the RFC is what kamera runs. The
non-standard extensions of its default environment are switched off on purpose, so an expression that
works here also works in any other conforming implementation.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jsonpath

from kamera_cli.errors import KameraError
from kamera_cli.invariants.iregexp import IMatch, ISearch
from kamera_cli.invariants.pushdown import cached_kind_scope, reduced, remap


class _Environment(jsonpath.JSONPathEnvironment):
    """Strict RFC 9535, with I-Regexp ``match``/``search`` that do not need the ``regex`` package."""

    def setup_function_extensions(self) -> None:
        super().setup_function_extensions()
        self.function_extensions["match"] = IMatch()
        self.function_extensions["search"] = ISearch()


_ENV = _Environment(strict=True)


class InvariantSyntaxError(KameraError):
    """An invariant's expression (JSONPath or ``{{ }}`` template) does not compile.

    ``message`` is one line, fit to follow ``file:line:col: $.path:`` in a scenario problem.
    """

    def __init__(self, message: str, hint: str = "") -> None:
        self.message = message
        self.hint = hint
        super().__init__(message)


#: the parser's token names, as a reader would say them
_TOKEN_WORDS = {
    "TOKEN_ROOT": "'$'", "TOKEN_DOT": "'.'", "TOKEN_DDOT": "'..'", "TOKEN_LBRACKET": "'['",
    "TOKEN_RBRACKET": "']'", "TOKEN_LPAREN": "'('", "TOKEN_RPAREN": "')'", "TOKEN_FILTER": "'?'",
    "TOKEN_SELF": "'@'", "TOKEN_WILD": "'*'", "TOKEN_COMMA": "','", "TOKEN_COLON": "':'",
    "TOKEN_EQ": "'=='", "TOKEN_NE": "'!='", "TOKEN_EOF": "the end of the expression",
    "TOKEN_NAME": "a name", "TOKEN_DOT_PROPERTY": "a name", "TOKEN_INT": "a number", "TOKEN_FLOAT": "a number",
}
_TOKEN = re.compile(r"'?(TOKEN_[A-Z_]+)'?")
_LONE_EQUALS = re.compile(r"(?<![=!<>])=(?!=)")


def _hint(text: str) -> str:
    """Recognise the usual slips: kubectl's JSONPath dialect and a missing root."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}") and not stripped.startswith("{{"):
        inner = stripped[1:-1].strip()
        suggestion = "$" + inner if inner.startswith((".", "[")) else inner
        return f"this is kubectl's JSONPath form; RFC 9535 has no braces: {suggestion}"
    if stripped.startswith((".", "[")):
        return f"a query must start with $ (the root): ${stripped}"
    if _LONE_EQUALS.search(stripped):
        return "compare with == (a single = is kubectl's form, not RFC 9535)"
    if not stripped.startswith("$"):
        return "a query must start with $ (the root), e.g. $.items[?@.kind == 'Pod']"
    return ""


def _describe(exc: jsonpath.JSONPathError, text: str) -> str:
    message = str(exc.args[0]) if exc.args else "invalid expression"
    message = message.splitlines()[0] if message else "invalid expression"
    message = _TOKEN.sub(lambda m: _TOKEN_WORDS.get(m.group(1), m.group(1)[6:].lower().replace("_", " ")), message)
    token = getattr(exc, "token", None)
    index = getattr(token, "index", -1)
    if isinstance(index, int) and 0 <= index < len(text):
        return f"invalid JSONPath {text!r}: {message} at character {index + 1}"
    return f"invalid JSONPath {text!r}: {message}"


@lru_cache(maxsize=4096)
def compile_query(text: str) -> Any:
    """Compile an RFC 9535 query; raises ``InvariantSyntaxError`` with the library's reason."""
    try:
        return _ENV.compile(text)
    except jsonpath.JSONPathError as exc:
        raise InvariantSyntaxError(_describe(exc, text), _hint(text)) from None
    except OverflowError:  # 1e400: no JSON number the state document can hold
        raise InvariantSyntaxError(f"invalid JSONPath {text!r}: a number is out of range") from None
    except (RecursionError, ValueError, TypeError) as exc:  # pathological input, still the user's
        raise InvariantSyntaxError(f"invalid JSONPath {text!r}: {exc}", _hint(text)) from None


def find(text: str, document: Any) -> list[Any]:
    """Every node ``text`` selects in ``document``, in RFC 9535 order."""
    query = compile_query(text)
    kind = cached_kind_scope(text, query)
    if kind is not None:
        scoped = reduced(document, kind)
        if scoped is not None:
            found: list[Any] = query.findall(scoped[0])
            return found
    result: list[Any] = query.findall(document)
    return result


def find_located(text: str, document: Any) -> list[tuple[str, Any]]:
    """Every selected node with its normalized path (``$['items'][0]``), for reports."""
    query = compile_query(text)
    kind = cached_kind_scope(text, query)
    if kind is not None:
        scoped = reduced(document, kind)
        if scoped is not None:
            smaller, indexes = scoped
            return [(remap(match.path, indexes), match.obj) for match in query.finditer(smaller)]
    return [(match.path, match.obj) for match in query.finditer(document)]
