"""``fieldValidation``: what the server does with fields the schema does not know.

Why: the real server drops unknown fields, and since 1.27 tells the client so -- a ``Warning`` header
per field by default (``Warn``), a 400 when the client asks for ``Strict`` (kubectl does), nothing
with ``Ignore``.  A controller that misspells a field and a test that asks for ``Strict`` must see
exactly that.  Upstream: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go
(``fieldValidation``), the strict decoders' ``runtime.StrictDecodingError`` ("strict decoding error:
unknown field ...") and ``transformDecodeError``; the option's validation in
apimachinery/pkg/apis/meta/v1/validation (``ValidateFieldValidation``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.apiserver.errors import ApiError
from kamera_cli.apiserver.validation.schema import omitted_zero

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

DIRECTIVES = ("", "Ignore", "Strict", "Warn")
_OPTIONS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def directive(verb: str, query: dict[str, str]) -> str:
    """The request's directive (``Warn`` when absent), or a 422 for a value the server does not know."""
    value = query.get("fieldValidation", "")
    if value not in DIRECTIVES:
        options = _OPTIONS.get(verb, "CreateOptions")
        listed = ", ".join(f'"{d}"' for d in DIRECTIVES)
        message = f'Unsupported value: "{value}": supported values: {listed}'
        raise E.error(422, "Invalid", f'{options}.meta.k8s.io "" is invalid: fieldValidation: {message}',
                      group="meta.k8s.io", kind=options,
                      causes=[E.cause("FieldValueNotSupported", "fieldValidation", message)])
    return value or "Warn"


def unknown_fields(sent: Any, kept: Any, path: str = "",
                   omitted: Callable[[str, Any], bool] | None = None) -> list[str]:
    """Paths (``spec.containers[0].foo``) present, and not null, in what was sent but not in what was kept.

    ``omitted(path, value)`` tells a known field the server drops at its zero value (``omitempty``)
    from an unknown one; see ``dropped_fields``.
    """
    out: list[str] = []
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, value in sent.items():
            child = f"{path}.{key}" if path else str(key)
            if key not in kept:
                if value is not None and not (omitted is not None and omitted(child, value)):
                    out.append(child)
            elif value is not kept[key]:
                out.extend(unknown_fields(value, kept[key], child, omitted))
    elif isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept) and sent is not kept:
        for i, (a, b) in enumerate(zip(sent, kept)):
            out.extend(unknown_fields(a, b, f"{path}[{i}]", omitted))
    return out


#: fields a write consumes and the server never stores: not dropped, applied (a Secret's ``stringData``
#: is merged into ``data``)
_WRITE_ONLY: dict[str, tuple[str, ...]] = {"io.k8s.api.core.v1.Secret": ("stringData",)}


def dropped_fields(definitions: Mapping[str, Any], root: str | None, sent: Any, kept: Any) -> list[str]:
    """The unknown fields of a write: what was dropped, minus known fields omitted at their zero value.

    ``root``: the built-in's definition, or None for a custom resource (only its metadata is typed).
    """
    def omitted(path: str, value: Any) -> bool:
        if root is not None:
            return path in _WRITE_ONLY.get(root, ()) or omitted_zero(definitions, root, path, value)
        return path.startswith("metadata.") and omitted_zero(definitions, _OBJECT_META, path[9:], value)

    return unknown_fields(sent, kept, omitted=omitted)


def refuse_or_warn(mode: str, kind: str, version: str, fields: list[str], warnings: list[str]) -> None:
    """``Strict``: the decoder's 400; ``Warn``: one warning per field; ``Ignore``: nothing."""
    if not fields or mode == "Ignore":
        return
    texts = [f'unknown field "{f}"' for f in fields]
    if mode == "Strict":
        raise ApiError(400, E.status_body(400, "BadRequest", f'{kind} in version "{version}" cannot be handled as a '
                                                             f"{kind}: strict decoding error: {', '.join(texts)}"))
    warnings.extend(texts)


def warning_header(warnings: list[str]) -> str:
    """RFC 7234 warn-code 299, one value per warning, comma-joined into one header."""
    return ", ".join('299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in warnings)
