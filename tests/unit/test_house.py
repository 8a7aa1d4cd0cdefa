"""The house rules of issue #25, read from the source with ``ast``, reported folder by folder.

(a) no module imports another module's ``_private`` name (nor reads one off a module it imported);
(b) no import circle between modules, counting every import: top-level, deferred inside functions
    and ``if TYPE_CHECKING`` ones alike (a type-only circle is still a circle for a reader);
(c) no folder holds more than ``MAX_MODULES`` modules.
A package's ``__init__`` importing its own modules is not a circle: importing ``a.b`` runs ``a``'s
``__init__`` implicitly, which these rules, like import-linter, do not count.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import kamera_cli

PACKAGE = Path(kamera_cli.__file__).resolve().parent
MAX_MODULES = 20
#: Folders whose violations another part of issue #25 removes; each xfails (not strict, so a fix
#: shows as XPASS) until its entry is deleted here.
PENDING: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Module:
    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module, and the name taken from it (None: the module itself)."""

    module: str
    name: str | None
    line: int


def modules(root: Path) -> dict[str, Module]:
    """Every module of the package at ``root``, by dotted name."""
    found: dict[str, Module] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(module: Module, known: dict[str, Module]) -> Iterator[Import]:
    """The package-internal imports of ``module``, wherever they stand in it."""
    tree = _parse(module.path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield Import(alias.name, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    yield Import(f"{source}.{alias.name}", None, node.lineno)
                elif source in known:
                    yield Import(source, alias.name, node.lineno)


def _module_aliases(module: Module, known: dict[str, Module]) -> dict[str, str]:
    """Local names bound to package modules by ``import a.b as x`` / ``from a import b``."""
    tree = _parse(module.path)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known and alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    return aliases


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(module: Module, known: dict[str, Module]) -> Iterator[str]:
    """``from m import _x``, ``import m._x`` and ``m._x`` where ``m`` is another module of the package."""
    for imp in imports(module, known):
        if imp.module == module.name:
            continue
        taken = imp.name if imp.name is not None else imp.module.rsplit(".", 1)[-1]
        if _is_private(taken):
            yield f"{module.path}:{imp.line}: imports {imp.module}:{taken}"
    aliases = _module_aliases(module, known)
    tree = _parse(module.path)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and aliases[node.value.id] != module.name and _is_private(node.attr)):
            yield f"{module.path}:{node.lineno}: reads {aliases[node.value.id]}.{node.attr}"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def violations(root: Path) -> dict[str, list[str]]:
    """Every broken rule, by the top-level folder it belongs to."""
    known = modules(root)
    out: dict[str, list[str]] = {}
    graph = {name: {i.module for i in imports(m, known)} - {name} for name, m in known.items()}
    for name, module in known.items():
        for use in private_uses(module, known):
            out.setdefault(_folder(root, name), []).append(use)
    for component in cycles(graph):
        out.setdefault(_folder(root, component[0]), []).append("import circle among " + ", ".join(component))
    sizes: dict[Path, int] = {}
    for module in known.values():
        if not module.is_package:
            sizes[module.path.parent] = sizes.get(module.path.parent, 0) + 1
    for directory, count in sorted(sizes.items()):
        if count > MAX_MODULES:
            name = ".".join(directory.relative_to(root.parent).parts)
            out.setdefault(_folder(root, name + ".x"), []).append(f"{directory}: {count} modules (> {MAX_MODULES})")
    return out


def _folder(root: Path, name: str) -> str:
    """The top-level folder a module belongs to (the package's name for its own modules)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (root / parts[1]).is_dir()) else parts[0]


@cache
def _package_violations() -> dict[str, list[str]]:
    return violations(PACKAGE)


FOLDERS = sorted({_folder(PACKAGE, name) for name in modules(PACKAGE)})


@pytest.mark.parametrize("folder", [
    pytest.param(f, marks=pytest.mark.xfail(reason=PENDING[f], strict=False)) if f in PENDING else f
    for f in FOLDERS
])
def test_the_folder_keeps_the_house_rules(folder: str) -> None:
    found = _package_violations().get(folder, [])
    assert not found, "\n".join(found)


def test_every_pending_folder_exists() -> None:
    assert set(PENDING) <= set(FOLDERS)


def test_virtualtime_imports_only_the_standard_library() -> None:
    """It sits at layer 1 so that adapters/ and apiserver/transports/ can share it."""
    for path in sorted((PACKAGE / "virtualtime").rglob("*.py")):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name.startswith("kamera_cli.virtualtime") or (
                    top == "__future__"), f"{path}:{node.lineno}: imports {name}"


# -- the checker itself catches each kind of violation ------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_checker_finds_a_private_import_and_a_private_read(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "", "a/__init__.py": "", "a/x.py": "_hidden = 1\nshown = 2\n",
        "a/y.py": "from pkg.a.x import _hidden, shown\n",
        "a/z.py": "from pkg.a import x\nvalue = x._hidden + x.shown\n",
        "a/ok.py": "from __future__ import annotations\nfrom .x import shown\n",
    })
    found = violations(root)["a"]
    assert len(found) == 2
    assert "y.py:1: imports pkg.a.x:_hidden" in found[0] and "z.py:2: reads pkg.a.x._hidden" in found[1]


def test_the_checker_finds_deferred_and_type_only_circles(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "", "b/__init__.py": "",
        "b/p.py": "def f():\n    from pkg.b import q\n",
        "b/q.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b.p import f\n",
        "b/r.py": "from . import p\n",
    })
    assert violations(root) == {"b": ["import circle among pkg.b.p, pkg.b.q"]}


def test_the_checker_finds_a_crowded_folder(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"__init__.py": "", "c/__init__.py": "",
                            **{f"c/m{i}.py": "" for i in range(MAX_MODULES + 1)}})
    assert list(violations(root)) == ["c"]
    root_ok = _tree(tmp_path / "ok", {"__init__.py": "", "c/__init__.py": "",
                                      **{f"c/m{i}.py": "" for i in range(MAX_MODULES)}})
    assert violations(root_ok) == {}
