"""JSONPath spellings of document locations (``$.spec.controllers[0].name``), used in every problem."""

from __future__ import annotations

import re

Path_ = tuple["str | int", ...]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def render_path(parts: Path_) -> str:
    """``$.spec.seed[1]``; awkward keys quoted as ``$['app.kubernetes.io/name']`` (RFC 9535 normal form)."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(f".{part}")
        else:
            escaped = part.replace("\\", "\\\\").replace("'", "\\'")
            out.append(f"['{escaped}']")
    return "".join(out)
