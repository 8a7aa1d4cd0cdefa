"""The scenario JSON Schema: finding it, and turning its errors into located, readable problems.

Why the translation: jsonschema's own messages name schema internals ("is not valid under any of the
given schemas") and point nowhere. A user needs the line of the offending node, the field that is
wrong and, when a name is misspelt, the name that was meant.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from kamera_cli.errors import InternalError, Problem, UsageError
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.yamldoc import Document

SCHEMA_NAME = "scenario.schema.json"
#: the ``kamera_cli`` package folder (not ``import kamera_cli``: the package root imports upper layers)
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def schema_path(name: str = SCHEMA_NAME) -> Path:
    """A bundled schema, in an installed wheel (``kamera_cli/schemas/``) or a source checkout (``schemas/``)."""
    package = PACKAGE_DIR
    for candidate in (package / "schemas" / name, package.parent / "schemas" / name):
        if candidate.is_file():
            return candidate
    raise InternalError(f"the schema {name} is missing from the installation (looked in {package})")


def schema_text(which: str = "scenario") -> str:
    """The text of ``schemas/<which>.schema.json`` (``scenario`` or ``result``), for ``kamera schema``."""
    if which not in ("scenario", "result"):
        raise UsageError(f"unknown schema {which!r}: choose 'scenario' or 'result'")
    return schema_path(f"{which}.schema.json").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    with open(schema_path(), encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


@lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    for python_type, name in _JSON_TYPES.items():
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _branch_matches_type(schema: Any, instance: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    if "enum" in schema:
        return any(json_type(choice) == json_type(instance) for choice in schema["enum"])
    wanted = schema.get("type")
    if wanted is None:
        return True
    names = wanted if isinstance(wanted, list) else [wanted]
    actual = json_type(instance)
    return actual in names or (actual == "integer" and "number" in names)


def schema_problems(doc: Document) -> list[Problem]:
    """Every schema violation of ``doc``, located and phrased for a person."""
    problems: dict[tuple[str, int, int, str], Problem] = {}
    for error in validator().iter_errors(doc.data):
        for problem in _translate(doc, error):
            problems.setdefault((problem.path, problem.line, problem.column, problem.message), problem)
    return list(problems.values())


def _translate(doc: Document, error: ValidationError) -> Iterator[Problem]:
    path: Path_ = tuple(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    kind = error.validator
    value: Any = error.validator_value
    instance = error.instance
    if kind in ("anyOf", "oneOf"):
        branches = value if isinstance(value, list) else []
        fitting = [i for i, branch in enumerate(branches) if _branch_matches_type(branch, instance)]
        if len(fitting) == 1:
            for sub in error.context or ():
                if sub.schema_path and sub.schema_path[0] == fitting[0]:
                    yield from _translate(doc, sub)
            return
        titles = [str(b.get("title") or b.get("type") or "value") for b in branches if isinstance(b, dict)]
        hint = _examples_hint(schema)
        yield doc.problem(path, f"expected {' or '.join(titles)}, got {json_type(instance)}", hint)
    elif kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        for key in instance:
            if key in allowed or any(p.search(key) for p in patterns):
                continue
            hint = did_you_mean(key, allowed) or (f"allowed here: {', '.join(allowed)}" if allowed else "")
            yield doc.problem((*path, key), f"unknown field {key!r}", hint, key=True)
    elif kind == "required" and isinstance(instance, dict):
        for name in value:
            if name not in instance:
                yield doc.problem(path, f"missing required field {name!r}")
    elif kind == "dependentRequired" and isinstance(instance, dict) and isinstance(value, dict):
        for name, needs in sorted(value.items()):
            missing = [n for n in needs if name in instance and n not in instance]
            if missing:
                yield doc.problem((*path, name), f"{name!r} goes with {', '.join(map(repr, missing))}, which is "
                                  "missing", key=True)
    elif kind == "type":
        wanted = value if isinstance(value, str) else " or ".join(value)
        yield doc.problem(path, f"expected {wanted}, got {json_type(instance)} {_short(instance)}")
    elif kind == "enum":
        choices = [str(c) for c in value]
        hint = did_you_mean(str(instance), choices) if isinstance(instance, str) else ""
        if path and path[-1] == "at" and not hint:
            hint = "or {afterSteps: N} to apply it after exactly N steps"
        yield doc.problem(path, f"must be one of {', '.join(choices)}; got {_short(instance)}", hint)
    elif kind == "const":
        yield doc.problem(path, f"must be {_short(value)}; got {_short(instance)}")
    elif kind == "pattern":
        title = schema.get("title") or "value"
        yield doc.problem(path, f"{_short(instance)} is not a valid {title}", _examples_hint(schema))
    elif kind == "format" and value == "regex":
        try:
            re.compile(str(instance))
            reason = "invalid"
        except re.error as exc:
            reason = str(exc)
        yield doc.problem(path, f"invalid regular expression {_short(instance)}: {reason}")
    elif kind == "minItems":
        yield doc.problem(path, f"must have at least {value} item{'s' if value != 1 else ''}")
    elif kind == "minProperties":
        names = ", ".join(sorted(schema.get("properties", {})))
        yield doc.problem(path, f"must have at least {value} field{'s' if value != 1 else ''}", f"one of {names}")
    elif kind == "minLength":
        yield doc.problem(path, "must not be empty")
    elif kind == "minimum":
        yield doc.problem(path, f"must be at least {value}; got {_short(instance)}")
    elif kind == "exclusiveMinimum":
        yield doc.problem(path, f"must be greater than {value}; got {_short(instance)}")
    else:
        yield doc.problem(path, error.message)


def _examples_hint(schema: dict[str, Any]) -> str:
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return "e.g. " + ", ".join(str(e) for e in examples[:4])
    return ""
