"""``<string>.format(<list>)`` of cel-go's ``ext.Strings`` (version 1+, which Kubernetes enables), for
cel-python.

Why: ``messageExpression``s build their text with it (``'replicas must be at most %d, got %d'.format([...])``),
and a CRD's messages are what a controller's author reads in the 422.  Follows cel-go
ext/formatting.go: ``parseFormatString`` / ``parseFormattingClause`` (``%%``, an optional
``.precision``, then one of ``s d f e b x X o``), ``FormatString`` (lists as ``[a, b]`` with strings
quoted and doubles as ``%.6f``, maps with their entries sorted by key text, scalars as CEL's
``string()`` gives them -- a double as Go's shortest ``'g'`` form), and the clauses' type errors,
worded as upstream (``error during formatting: decimal clause can only be used on integers, was
given double``).  ``%f`` and ``%e`` go through golang.org/x/text's en-US printer upstream: ``%f``
groups thousands (``1,234.50``) and ``%e`` prints ``2.718280 × 10⁰⁰`` (narrow no-break spaces,
superscript exponent), as the library's documentation shows; both are reproduced for finite numbers.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from kamera_cli.apiserver.errors import go_quote

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


class FormatError(Exception):
    """A formatting failure, with cel-go's text."""


def _type_name(t: Any, value: Any) -> str:
    checks = (("bool", t.BoolType), ("int", t.IntType), ("uint", t.UintType), ("double", t.DoubleType),
              ("string", t.StringType), ("bytes", t.BytesType), ("list", t.ListType), ("map", t.MapType))
    for name, cls in checks:
        if isinstance(value, cls):
            return name
    return "null_type" if value is None else type(value).__name__


def go_shortest(x: float) -> str:
    """Go's ``strconv.FormatFloat(x, 'g', -1, 64)`` (CEL's ``string(double)``)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # digits before the decimal point
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        out = f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    elif point <= 0:
        out = "0." + "0" * -point + text
    elif point >= len(text):
        out = text + "0" * (point - len(text))
    else:
        out = text[:point] + "." + text[point:]
    return ("-" if sign else "") + out


def _string(t: Any, value: Any, nested: bool = False) -> str:
    """``FormatString`` (``nested``: inside a list or map, where ``quoteForCEL`` and ``%.6f`` apply)."""
    if isinstance(value, t.BoolType):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, t.ListType):
        return "[" + ", ".join(_string(t, v, True) for v in value) + "]"
    if isinstance(value, t.MapType):
        pairs = sorted((_string(t, k, True), _string(t, v, True)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"
    if isinstance(value, t.DoubleType):
        if nested:
            text = f"{float(value):.6f}" if math.isfinite(value) else go_shortest(float(value))
            return text if math.isfinite(value) else f'"{text}"'
        return go_shortest(float(value))
    if isinstance(value, (t.IntType, t.UintType)):
        return str(int(value))
    if isinstance(value, t.BytesType):
        text = bytes(value).decode("utf-8", "replace")
        return "b" + go_quote(text) if nested else text
    if isinstance(value, t.StringType):
        return go_quote(str(value)) if nested else str(value)
    raise FormatError("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
                      f"durations, and timestamps, was given {_type_name(t, value)}")


def _float_arg(t: Any, value: Any, clause: str) -> float:
    if isinstance(value, t.DoubleType):
        return float(value)
    if isinstance(value, t.StringType) and str(value) in ("NaN", "Infinity", "-Infinity"):
        return float(str(value).replace("Infinity", "inf"))
    raise FormatError(f"{clause} clause can only be used on doubles, was given {_type_name(t, value)}")


def _clause(t: Any, verb: str, precision: int | None, value: Any) -> str:
    ints = (t.IntType, t.UintType)
    if verb == "s":
        return _string(t, value)
    if verb == "d":
        if isinstance(value, ints) and not isinstance(value, t.BoolType):
            return str(int(value))
        raise FormatError(f"decimal clause can only be used on integers, was given {_type_name(t, value)}")
    if verb == "f":
        x = _float_arg(t, value, "fixed-point")
        return f"{x:,.{6 if precision is None else precision}f}" if math.isfinite(x) else go_shortest(x)
    if verb == "e":
        x = _float_arg(t, value, "scientific")
        if not math.isfinite(x):
            return go_shortest(x)
        mantissa, exp = f"{x:.6e}".split("e")
        return f"{mantissa}\u202f×\u202f10{str(int(exp)).zfill(2).translate(_SUPERSCRIPT)}"
    if verb == "b":
        if isinstance(value, t.BoolType):
            return "1" if value else "0"
        if isinstance(value, ints):
            return format(int(value), "b")
        raise FormatError(f"only integers and bools can be formatted as binary, was given {_type_name(t, value)}")
    if verb in "xX":
        if isinstance(value, (t.StringType, t.BytesType)):
            raw = str(value).encode() if isinstance(value, t.StringType) else bytes(value)
            text = raw.hex()
        elif isinstance(value, ints) and not isinstance(value, t.BoolType):
            text = format(int(value), "x")
        else:
            raise FormatError("only integers, byte buffers, and strings can be formatted as hex, was given "
                              f"{_type_name(t, value)}")
        return text.upper() if verb == "X" else text
    if isinstance(value, ints) and not isinstance(value, t.BoolType):  # 'o'
        return format(int(value), "o")
    raise FormatError(f"octal clause can only be used on integers, was given {_type_name(t, value)}")


def format_string(celpy: Any, template: Any, args: Any) -> Any:
    """``parseFormatString``: the formatted string, or a ``CELEvalError`` with cel-go's message."""
    t = celpy.celtypes
    text, out, i, index = str(template), [], 0, 0
    items = list(args)
    try:
        while i < len(text):
            if text[i] != "%":
                out.append(text[i])
                i += 1
                continue
            if text.startswith("%%", i):
                out.append("%")
                i += 2
                continue
            if index >= len(items):
                raise FormatError(f"index {index} out of range")
            if i + 1 >= len(text):
                raise FormatError("unexpected end of string")
            j, precision = i + 1, None
            if text[j] == ".":
                end = j + 1
                while end < len(text) and text[end].isascii() and text[end].isdigit():
                    end += 1
                if end >= len(text):
                    raise FormatError("could not parse formatting clause: error while parsing precision: could not "
                                      "find end of precision specifier")
                if end == j + 1:
                    raise FormatError('could not parse formatting clause: error while parsing precision: error while '
                                      'converting precision to integer: strconv.Atoi: parsing "": invalid syntax')
                precision, j = int(text[j + 1:end]), end
            verb = text[j]
            if verb not in "sdfebxXo":
                raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
            try:
                out.append(_clause(t, verb, precision, items[index]))
            except FormatError as exc:
                raise FormatError(f"error during formatting: {exc}") from None
            i, index = j + 1, index + 1
    except FormatError as exc:
        raise celpy.CELEvalError(str(exc)) from None
    return t.StringType("".join(out))
