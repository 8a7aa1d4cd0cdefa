"""RFC 9535 JSONPath queries, compiled once per expression text.

Why python-jsonpath in strict mode: it is the library that passes the whole RFC 9535 compliance
suite (valid and invalid selectors alike), so what a user reads in the RFC is what kamera runs. The
non-standard extensions of its default environment are switched off on purpose, so an expression that
works here also works in any other conforming implementation.
"""

from __future__ import annotations

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

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def _describe(exc: jsonpath.JSONPathError, text: str) -> str:
    message = str(exc.args[0]) if exc.args else "invalid expression"
    message = message.splitlines()[0] if message else "invalid expression"
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
        raise InvariantSyntaxError(_describe(exc, text)) from None
    except (RecursionError, ValueError, TypeError) as exc:  # pathological input, still the user's
        raise InvariantSyntaxError(f"invalid JSONPath {text!r}: {exc}") from None


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
