"""JSONPath spellings of document locations (``$.spec.controllers[0].name``), used in every problem."""

from __future__ import annotations

import re

from kamera_cli.invariants.locations import field_path

Path_ = tuple["str | int", ...]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def render_path(parts: Path_) -> str:
    """``$.spec.seed[1]``; awkward keys quoted as ``$['app.kubernetes.io/name']`` (RFC 9535 normal form)."""
    return "$" + field_path(parts, plain=_IDENT)
