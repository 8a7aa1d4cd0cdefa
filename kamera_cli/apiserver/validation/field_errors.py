"""``field.Error`` as the real server words it, and the name checks of apimachinery's validation.

Why exact: a controller (or its test) may match on ``details.causes[].reason`` and on the message, and
the message of a 422 is the aggregate of these texts.  Upstream:
staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go (``ErrorBody``: how a bad value
is printed -- strings quoted, numbers and booleans bare, maps and structs as Go's ``%#v``) and
staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go (``IsDNS1123Label``,
``IsQualifiedName``, ``IsValidLabelValue``, ``IsValidPortName``, ``IsConfigMapKey``, ...).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

Cause = dict[str, str]


class GoRepr(str):
    """A value already rendered the way Go's ``%#v`` prints it (structs kamera does not model)."""


def go_value(value: Any) -> str:
    """A bad value as ``ErrorBody`` prints it."""
    if isinstance(value, GoRepr):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # Go's %q for the printable strings this sees
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        inner = ", ".join(f"{json.dumps(str(k))}:{json.dumps(v)}" for k, v in sorted(value.items()))
        return f"map[string]string{{{inner}}}"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def required(path: str, detail: str = "") -> Cause:
    return {"reason": "FieldValueRequired", "message": "Required value" + (f": {detail}" if detail else ""),
            "field": path}


def invalid(path: str, value: Any, detail: str) -> Cause:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {go_value(value)}: {detail}", "field": path}


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(json.dumps(s) for s in supported)
    return {"reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {go_value(value)}: supported values: {listed}", "field": path}


def duplicate(path: str, value: Any) -> Cause:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {go_value(value)}", "field": path}


def not_found(path: str, value: Any) -> Cause:
    return {"reason": "FieldValueNotFound", "message": f"Not found: {go_value(value)}", "field": path}


def forbidden(path: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": path}


def too_long(path: str, limit: int) -> Cause:
    return {"reason": "FieldValueTooLong", "message": f"Too long: may not be more than {limit} bytes", "field": path}


def nonnegative(path: str, value: Any) -> list[Cause]:
    """``ValidateNonnegativeField``."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = ",  or ".join(f"'{e}'" for e in examples)
    return f"{msg} (e.g. {shown}, regex used for validation is '{fmt}')"


_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(f"^{_LABEL_FMT}$")
_LABEL_MSG = _regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                          "and must start and end with an alphanumeric character", _LABEL_FMT, "my-name", "123-abc")
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN_FMT}$")
_SUBDOMAIN_MSG = _regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                              "'-' or '.', and must start and end with an alphanumeric character", _SUBDOMAIN_FMT,
                              "example.com")
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = _regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                            "alphabetic character, and end with an alphanumeric character", _DNS1035_FMT, "my-name",
                            "abc-123")
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME_FMT}$")
_NAME_MSG = _regex_error("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                         "end with an alphanumeric character", _NAME_FMT, "MyName", "my.name", "123-abc")
_VALUE_FMT = "(" + _NAME_FMT + ")?"
_VALUE_RE = re.compile(f"^{_VALUE_FMT}$")
_VALUE_MSG = _regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                          "'.', and must start and end with an alphanumeric character", _VALUE_FMT, "MyValue",
                          "my_value", "12345")
_KEY_FMT = "[-._a-zA-Z0-9]+"
_KEY_RE = re.compile(f"^{_KEY_FMT}$")
_KEY_MSG = _regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", _KEY_FMT,
                        "key.name", "KEY_NAME", "key-name")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_HAS_LETTER = re.compile("[a-z]")


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label(value: str) -> list[str]:
    out = [_max_len(63)] if len(value) > 63 else []
    return out + ([] if _LABEL_RE.match(value) else [_LABEL_MSG])


def dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label`` (Service names)."""
    out = [_max_len(63)] if len(value) > 63 else []
    return out + ([] if _DNS1035_RE.match(value) else [_DNS1035_MSG])


def dns1123_subdomain(value: str) -> list[str]:
    out = [_max_len(253)] if len(value) > 253 else []
    return out + ([] if _SUBDOMAIN_RE.match(value) else [_SUBDOMAIN_MSG])


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: label and annotation keys, finalizer names."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errs = ["prefix part must be non-empty"] if not prefix else [
            f"prefix part {m}" for m in dns1123_subdomain(prefix)]
    else:
        return [_regex_error("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                             "start and end with an alphanumeric character", _NAME_FMT, "MyName", "my.name",
                             "123-abc") + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        return [*errs, "name part must be non-empty"]
    if len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _NAME_RE.match(name):
        errs.append(_NAME_MSG)
    return errs


def label_value(value: str) -> list[str]:
    out = [_max_len(63)] if len(value) > 63 else []
    return out + ([] if _VALUE_RE.match(value) else [_VALUE_MSG])


ANNOTATIONS_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB


def labels_and_annotations(labels: Any, annotations: Any, path: str) -> list[Cause]:
    """``ValidateLabels`` and ``ValidateAnnotations`` of one object's (or template's) metadata at
    ``path.labels`` / ``path.annotations``: qualified keys (annotation keys lower-cased), label values,
    256 KiB of annotations in all.  Maps that are not maps of strings are the schema's to refuse."""
    out: list[Cause] = []
    labels = labels if isinstance(labels, Mapping) else {}
    for key in sorted(labels):
        out += each_invalid(f"{path}.labels", key, qualified_name(str(key)))
        out += each_invalid(f"{path}.labels", labels[key], label_value(str(labels[key])))
    annotations = annotations if isinstance(annotations, Mapping) else {}
    for key in sorted(annotations):
        out += each_invalid(f"{path}.annotations", key, qualified_name(str(key).lower()))
    if sum(len(str(k)) + len(str(v)) for k, v in annotations.items()) > ANNOTATIONS_LIMIT:
        out.append(too_long(f"{path}.annotations", ANNOTATIONS_LIMIT))
    return out


@functools.lru_cache(maxsize=4096)
def config_key(value: str) -> tuple[str, ...]:
    """``IsConfigMapKey`` (Secret keys too); keys repeat across writes, so the answer is cached."""
    out = [_max_len(253)] if len(value) > 253 else []
    if not _KEY_RE.match(value):
        out.append(_KEY_MSG)
    if value == ".":
        out.append("must not be '.'")
    elif value == "..":
        out.append("must not be '..'")
    elif value.startswith(".."):
        out.append("must not start with '..'")
    return tuple(out)


def port_name(value: str) -> list[str]:
    """``IsValidPortName`` (an IANA service name)."""
    out = []
    if len(value) > 15:
        out.append(_max_len(15))
    if not _PORT_NAME_CHARS.match(value):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        out.append("must not contain consecutive hyphens")
    if not _HAS_LETTER.search(value):
        out.append("must contain at least one letter (a-z)")
    if value.startswith("-") or value.endswith("-"):
        out.append("must not begin or end with a hyphen")
    return out


def port_number(value: Any) -> list[str]:
    """``IsValidPortNum``."""
    return [] if isinstance(value, int) and 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"  # validation.IsValidIP


def is_ip(text: Any) -> bool:
    """Whether ``text`` parses as an IP address (Go's ``ParseIPSloppy`` also takes IPv4 octets with
    leading zeros, which Python's ``ipaddress`` refuses)."""
    try:
        ipaddress.ip_address(str(text))
    except ValueError:
        return False
    return True


def each_invalid(path: str, value: Any, messages: Iterable[str]) -> list[Cause]:
    return [invalid(path, value, m) for m in messages]


def unique_name(path: str, name: str, seen: set[str], check: Any) -> list[Cause]:
    """A name checked by ``check`` (a list of messages) and, when valid, unique among ``seen``."""
    messages = check(name)
    if messages:
        return each_invalid(path, name, messages)
    if name in seen:
        return [duplicate(path, name)]
    seen.add(name)
    return []


def items(values: Any, path: str) -> list[tuple[str, Any]]:
    """The (path, item) pairs of a list's objects (other items are the schema check's business)."""
    return [(f"{path}[{i}]", v) for i, v in enumerate(values or ()) if isinstance(v, dict)]
