"""Parsing and statically checking controller entry points, without importing anything.

Why static: ``kamera validate`` must report a mistyped entry point without running the user's
module (whose top-level code may be slow, or wrong in a way the loader reports later with more
context).  Two spellings are accepted, as kopf does: ``package.module:attr`` (found on the scenario
folder and then on ``sys.path``) and ``relative/path.py:attr`` (relative to the scenario's folder).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ParsedEntrypoint", "check_entrypoint", "is_script", "parse_entrypoint"]

_FORMS = "'package.module:attr' or 'relative/path.py:attr'"


def is_script(entrypoint: str) -> bool:
    """A program's *script* form: a ``.py`` file with no attribute, whose top level is the program
    (run as ``python path.py`` runs it, ``__name__ == "__main__"``)."""
    text = entrypoint.strip()
    return ":" not in text and text.endswith(".py")


@dataclass(frozen=True, slots=True)
class ParsedEntrypoint:
    text: str
    #: the dotted module name, or "" for a file entry point
    module: str
    #: the resolved absolute file, or None for a dotted entry point
    file: Path | None
    #: the attribute path inside the module (``reconcile`` or ``Widget``; dots walk attributes)
    attr: str

    @property
    def target(self) -> str:
        """How messages name where the attribute lives."""
        return self.module if self.file is None else str(self.file)


class EntrypointSyntaxError(ValueError):
    """The entry point text is malformed (the message says how)."""


def parse_entrypoint(entrypoint: str, base_dir: Path, *, script: bool = False) -> ParsedEntrypoint:
    """Split and resolve an entry point; raise :class:`EntrypointSyntaxError` for malformed text.
    ``script``: a bare ``path.py`` is a program's script form (``attr`` "")."""
    text = entrypoint.strip()
    if script and is_script(text):
        path = Path(text)
        return ParsedEntrypoint(text, "", Path(os.path.abspath(path if path.is_absolute() else base_dir / path)), "")
    where, sep, attr = text.rpartition(":")
    if not sep:
        raise EntrypointSyntaxError(f"entry point {entrypoint!r} has no ':'; expected {_FORMS}")
    if not where:
        raise EntrypointSyntaxError(f"entry point {entrypoint!r} names no module or file before ':'; expected {_FORMS}")
    if not attr:
        raise EntrypointSyntaxError(
            f"entry point {entrypoint!r} names no attribute after ':'; expected {_FORMS} "
            "(the attribute is the reconcile function or the controller class)"
        )
    if not all(part.isidentifier() for part in attr.split(".")):
        raise EntrypointSyntaxError(f"entry point {entrypoint!r}: {attr!r} is not a Python attribute name")
    if _looks_like_path(where):
        if not where.endswith(".py"):
            raise EntrypointSyntaxError(f"entry point {entrypoint!r}: {where!r} is not a .py file; expected {_FORMS}")
        path = Path(where)
        file = path if path.is_absolute() else base_dir / path
        return ParsedEntrypoint(text, "", Path(os.path.abspath(file)), attr)
    if not all(part.isidentifier() for part in where.split(".")):
        raise EntrypointSyntaxError(
            f"entry point {entrypoint!r}: {where!r} is neither a dotted module name nor a path to a .py file"
        )
    return ParsedEntrypoint(text, where, None, attr)


def _looks_like_path(where: str) -> bool:
    return "/" in where or "\\" in where or where.endswith(".py")


def check_entrypoint(entrypoint: str, base_dir: str | os.PathLike[str], *, script: bool = False) -> str | None:
    """Return a problem message for a malformed or unresolvable entry point, or None; imports nothing.
    ``script``: a program's entry point, which may be a bare ``path.py`` (its script form)."""
    base = Path(base_dir)
    try:
        parsed = parse_entrypoint(entrypoint, base, script=script)
    except EntrypointSyntaxError as exc:
        return str(exc)
    if parsed.file is not None:
        shown = entrypoint.rpartition(":")[0].strip() if parsed.attr else entrypoint.strip()
        if not parsed.file.exists():
            return f"entry point {entrypoint!r}: file {shown!r} not found (looked for {parsed.file})"
        if not parsed.file.is_file():
            return f"entry point {entrypoint!r}: {shown!r} is not a file"
        return None
    if not module_exists(parsed.module, base):
        return (
            f"entry point {entrypoint!r}: module {parsed.module!r} not found in the scenario folder ({base}) "
            "or the Python environment"
        )
    return None


def module_exists(dotted: str, base_dir: Path) -> bool:
    """Find a dotted module on ``[base_dir, *sys.path]`` without executing any package's code."""
    parts = dotted.split(".")
    top = parts[0]
    loaded = sys.modules.get(top)
    if loaded is not None:
        spec = getattr(loaded, "__spec__", None)
    elif top in sys.builtin_module_names:
        return len(parts) == 1
    else:
        spec = _find_top_level(top, base_dir)
    if spec is None:
        return loaded is not None and len(parts) == 1
    locations = list(spec.submodule_search_locations or [])
    for part in parts[1:]:
        if not locations:
            return False
        spec = importlib.machinery.PathFinder.find_spec(part, locations)
        if spec is None:
            return False
        locations = list(spec.submodule_search_locations or [])
    return True


def _find_top_level(name: str, base_dir: Path) -> importlib.machinery.ModuleSpec | None:
    spec = importlib.machinery.PathFinder.find_spec(name, [str(base_dir), *sys.path])
    if spec is not None:
        return spec
    # meta-path finders (editable installs, zip imports) resolve top-level names without running code
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None or finder is importlib.machinery.PathFinder:
            continue
        try:
            found = find(name, None)
        except Exception:
            continue
        if isinstance(found, importlib.machinery.ModuleSpec):
            return found
    return None
