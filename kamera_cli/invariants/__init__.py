"""RFC 9535 JSONPath invariants over a state document (layer 3): queries, templates, evaluation,
the state document itself and vacuity hints.

May import: ``apiserver`` (for the external store's entries in the state document), ``model``,
``errors``. Imported by ``scenario`` (to check expressions), ``sim`` and ``judging``. See
docs/scenario.md, "Invariants".
"""

from __future__ import annotations

from kamera_cli.invariants.document import state_document
from kamera_cli.invariants.evaluation import CompiledInvariant, Violation, compile_invariant
from kamera_cli.invariants.queries import InvariantSyntaxError, compile_query, find, find_located
from kamera_cli.invariants.templates import ValueTemplateError, parse_template, parse_value_template
from kamera_cli.invariants.vacuity import vacuity_hint

__all__ = [
    "CompiledInvariant",
    "InvariantSyntaxError",
    "ValueTemplateError",
    "Violation",
    "compile_invariant",
    "compile_query",
    "find",
    "find_located",
    "parse_template",
    "parse_value_template",
    "state_document",
    "vacuity_hint",
]
