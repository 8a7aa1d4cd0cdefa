"""Reading parsed YAML leniently: the loader checks types against the schema and reports them once,
so the code that builds the model takes a wrong type as absent instead of failing again."""

from __future__ import annotations

from typing import Any


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
