"""The docs map what exists: every docs page is in docs/index.md, every example folder in
scenarios/README.md, and every relative link of the README, the docs and the examples' README
points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_FILES = ("scenario.yaml", "scenario.yml")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(_LINK.findall(index))
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "index.md" and p.name not in linked]
    assert missing == [], f"docs/index.md does not list: {missing}"


def _scenario_folders() -> list[str]:
    base = ROOT / "scenarios"
    found = {p.parent for p in base.rglob("*") if p.name in SCENARIO_FILES or p.name.endswith((".scenario.yaml",
                                                                                                 ".scenario.yml"))}
    return sorted(p.relative_to(base).as_posix() for p in found)


def _listed(folder: str, lines: list[str]) -> bool:
    """``folder/`` has a row of its own, or an ancestor's row names it as ``(+ rest/)``."""
    if any(f"`{folder}/`" in line for line in lines):
        return True
    parts = folder.split("/")
    for cut in range(1, len(parts)):
        parent, rest = "/".join(parts[:cut]), "/".join(parts[cut:])
        if any(line.startswith(f"| `{parent}/`") and f"`{rest}/`" in line for line in lines):
            return True
    return False


def test_every_example_folder_is_in_the_examples_readme() -> None:
    lines = (ROOT / "scenarios" / "README.md").read_text(encoding="utf-8").splitlines()
    folders = _scenario_folders()
    assert len(folders) > 40
    missing = [f for f in folders if not _listed(f, lines)]
    assert missing == [], f"scenarios/README.md does not list: {missing}"
    # and every top-level group folder, scenarios of its own or not
    groups = sorted(p.name for p in (ROOT / "scenarios").iterdir() if p.is_dir())
    assert [g for g in groups if not any(f"`{g}/" in line for line in lines)] == []


@pytest.mark.parametrize("page", ["README.md", "scenarios/README.md",
                                  *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))])
def test_relative_links_point_at_files_that_exist(page: str) -> None:
    path = ROOT / page
    broken = []
    for target in _LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (path.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    assert broken == [], f"{page} links to what does not exist: {broken}"


def test_the_readme_links_the_docs_map_the_builtins_and_ci() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("docs/index.md", "docs/builtins.md", "docs/ci.md", "scenarios/README.md"):
        assert f"]({page}" in readme, page
