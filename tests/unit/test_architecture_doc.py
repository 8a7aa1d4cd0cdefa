"""docs/architecture.md names every package and top-level module of kamera_cli in its layer table.

Why a test: the table is how a newcomer finds the folder that owns a concept; a package added
without a row would be a room missing from the map, and nothing else would notice.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kamera_cli"


def table_names(text: str) -> set[str]:
    """What the layer table names in its package column: ``judging/``, ``apiserver/patch/``, ``cli.py``."""
    names: set[str] = set()
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) > 3 and cells[1].isdigit():
            names.update(re.findall(r"`([^`]+)`", cells[2]))
    return names


def rooms() -> list[str]:
    """Every package under kamera_cli/ (as ``a/b/``) and every top-level module but the entry points."""
    packages = sorted(f"{p.parent.relative_to(PACKAGE).as_posix()}/" for p in PACKAGE.rglob("__init__.py")
                      if p.parent != PACKAGE)
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    return packages + modules


def missing(text: str) -> list[str]:
    named = table_names(text)
    return [room for room in rooms() if room not in named]


def test_every_package_and_top_level_module_has_a_row() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert missing(text) == []


def test_a_package_without_a_row_is_found() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    without = "\n".join(line for line in text.splitlines() if "`judging/`" not in line)
    assert missing(without) == ["judging/"]
    assert "judging/" in rooms() and "cli.py" in rooms()
