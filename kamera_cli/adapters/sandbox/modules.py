"""Each loaded controller gets its own copy of the user's modules, as if it ran in its own process.

Why: two scenarios may both ship ``controllers/widget.py`` and a sibling ``helpers.py``; two
controllers of one scenario may share a file but must not share its module globals (a crash of one
restarts only that one); and a simulated crash must re-run module top-level code.  Python keeps one
module per name in ``sys.modules``, so a :class:`ModuleSet` owns the user's modules (those whose file
lies under the scenario folder, outside any site-packages, stdlib or kamera itself) and makes its own
copies the visible ones while it loads or runs (:meth:`ModuleSet.activate`).  Libraries (the
``kubernetes`` client, the stdlib, anything installed) stay shared: they are not the user's state.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["ModuleSet", "OwnPackageFake", "OwnPackageFakeMissing", "add_own_package_fake", "is_user_file",
           "module_state"]


def _forms(path: str) -> set[str]:
    """A directory as given and with symlinks resolved, each ending in a separator (for prefix tests)."""
    return {os.path.abspath(path).rstrip(os.sep) + os.sep, os.path.realpath(path).rstrip(os.sep) + os.sep}


def _library_dirs() -> tuple[str, ...]:
    dirs = _forms(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # kamera_cli itself
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if key in paths:
            dirs |= _forms(paths[key])
    return tuple(sorted(dirs))


_LIBRARY_DIRS = _library_dirs()
_MISSING = object()
_LIBRARY_PARTS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def is_user_file(file: str, roots: tuple[str, ...]) -> bool:
    """True for a source file under one of ``roots`` that is not part of an installed library.

    Prefix tests only (no filesystem access): ``roots`` holds each folder both as given and with
    symlinks resolved, and module files are named from the sys.path entries kamera inserted.
    """
    if not file.startswith(roots):
        return False
    if not file.startswith(_LIBRARY_DIRS) and not any(part in file for part in _LIBRARY_PARTS):
        return True
    # an installed package that is the entry's own (sandbox/loading.py, ``_entry_package``) is a root
    # inside a library folder
    return file.startswith(_installed_roots(roots))


@functools.lru_cache(maxsize=64)
def _installed_roots(roots: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(r for r in roots if r.startswith(_LIBRARY_DIRS) or any(part in r for part in _LIBRARY_PARTS))


def _module_file(module: object) -> str | None:
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return file
    # namespace packages have no __file__ but do have search locations
    spec = getattr(module, "__spec__", None)
    locations = getattr(spec, "submodule_search_locations", None) if spec is not None else None
    if locations:
        for location in locations:
            return str(location) + os.sep
    return None


#: the set whose modules are currently in sys.modules (at most one at a time)
_current: ModuleSet | None = None


@dataclass(frozen=True, slots=True)
class OwnPackageFake:
    """A ``replace:`` fake of a name inside a package a controller is loaded from (sandbox/loading.py,
    ``_entry_package``): that package is imported afresh for each controller and after each crash, so
    the fake is put in place in every copy, right after the copy is imported (``ModuleSet.put_fakes``)."""

    dotted: str
    value: Any
    #: the scenario entry's ``file:line``, for the error when the name is not there
    where: str


class OwnPackageFakeMissing(Exception):
    """The module or attribute an :class:`OwnPackageFake` names is not in the controller's package."""


#: the own-package fakes of the scenario being run (sandbox/fakes.py installs and removes them)
_own_package_fakes: list[OwnPackageFake] = []


def add_own_package_fake(fake: OwnPackageFake) -> Callable[[], None]:
    """Put ``fake`` in place in every copy imported from now on; the returned function stops that."""
    _own_package_fakes.append(fake)
    return lambda: _own_package_fakes.remove(fake)


def _is_trivially_shared(value: object) -> bool:
    """A value equal objects of which share identity by accident (small ints, interned strings, None):
    another module's global that is that object did not bind it from the faked name."""
    return not (callable(value) or isinstance(value, ModuleType))


class ModuleSet:
    """The user's modules as one controller (or mapper) sees them, plus the sys.path it needs."""

    def __init__(self, roots: tuple[Path, ...], path_entries: tuple[Path, ...]) -> None:
        self.roots = tuple(sorted(set().union(*(_forms(str(r)) for r in roots))))
        self.path_entries = tuple(dict.fromkeys(str(p) for p in path_entries))
        self.modules: dict[str, ModuleType] = {}
        #: modules under our roots that someone else had imported before we loaded (restored by unload)
        self.displaced: dict[str, ModuleType] = {}
        #: bumped whenever ``modules`` changes, so callers can cache what they derive from it
        self.generation = 0
        self._seen: set[str] = set()
        self._seen_len = -1
        #: modules outside the roots, by name, as last seen in sys.modules (``_displace_foreign``)
        self._foreign: dict[str, ModuleType] = {}

    # -- visibility ---------------------------------------------------------------------------------------------
    def activate(self) -> None:
        """Make this set's modules the ones ``import`` finds (a no-op when it already is)."""
        global _current
        if _current is self:
            return
        if _current is not None:
            _current._hide()
        for name, module in self.modules.items():
            sys.modules[name] = module
        _current = self

    def _hide(self) -> None:
        global _current
        for name, module in self.modules.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
        if _current is self:
            _current = None

    @contextmanager
    def on_path(self) -> Iterator[None]:
        """Put the scenario folder (and the entry file's folder) first on sys.path for the block."""
        entries = self.path_entries
        sys.path[:0] = entries
        try:
            yield
        finally:
            for entry in entries:
                with contextlib.suppress(ValueError):  # the user's code removed it itself
                    sys.path.remove(entry)

    # -- loading ------------------------------------------------------------------------------------------------
    @contextmanager
    def importing(self) -> Iterator[None]:
        """Import inside the block: anything new from under the roots becomes this set's."""
        self.activate()
        self._displace_foreign()
        before = set(sys.modules)
        try:
            with self.on_path():
                yield
        finally:
            self._adopt(set(sys.modules) - before)

    def put_fakes(self, top: str) -> None:
        """Put the own-package fakes of package ``top`` in place in this set's copy (inside ``importing``).

        As a fake of a library is in place before any controller imports it, so that every
        ``from lib import name`` binds the fake, a fake of the controller's own package must reach
        every binding the copy made while it was imported: the named attribute is set, and every
        global of the copy's modules that is the object the name held (the defining module's own
        global, a re-export by ``from .controller import *``, a ``from x import name``) is rebound.
        The module the name lives in is imported first, in this copy, as ``install_fakes`` imports a
        library's."""
        for fake in _own_package_fakes:
            if fake.dotted.partition(".")[0] == top:
                self._put_fake(fake)

    def _put_fake(self, fake: OwnPackageFake) -> None:
        parts = fake.dotted.split(".")
        owner: Any = None
        cut = len(parts) - 1
        while cut > 0 and owner is None:
            name = ".".join(parts[:cut])
            try:
                owner = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if not exc.name or not (name == exc.name or name.startswith(f"{exc.name}.")):
                    raise  # found, but something it imports is not: the loader reports it
                cut -= 1
        if owner is None:
            raise OwnPackageFakeMissing(f"{fake.where}: spec.fakes replace {fake.dotted!r}: no module "
                                        f"{parts[0]!r} in this controller's package")
        *path, attr = parts[cut:]
        for name in path:
            if not hasattr(owner, name):
                raise OwnPackageFakeMissing(f"{fake.where}: spec.fakes replace {fake.dotted!r}: "
                                            f"{getattr(owner, '__name__', owner)!r} has no attribute {name!r}")
            owner = getattr(owner, name)
        original = getattr(owner, attr, _MISSING)
        if original is _MISSING and not isinstance(fake.value, ModuleType):
            raise OwnPackageFakeMissing(f"{fake.where}: spec.fakes replace {fake.dotted!r}: "
                                        f"{getattr(owner, '__name__', owner)!r} has no attribute {attr!r}")
        setattr(owner, attr, fake.value)
        if original is _MISSING or _is_trivially_shared(original):
            return
        for module in list(sys.modules.values()):
            file = _module_file(module) if module is not None else None
            if file is None or not is_user_file(file, self.roots):
                continue
            namespace = vars(module)
            for name, value in list(namespace.items()):
                if value is original:
                    namespace[name] = fake.value

    def _displace_foreign(self) -> None:
        """Hide user-root modules this set does not own, so the import below runs the files afresh.

        A module already found foreign to the roots is remembered (by name, and compared by identity),
        so a program re-imported at every replay only looks up the files of modules new to
        ``sys.modules`` (it holds thousands)."""
        foreign = self._foreign
        for name, module in list(sys.modules.items()):
            if foreign.get(name) is module or name in self.modules:
                continue
            file = _module_file(module)
            if file is not None and is_user_file(file, self.roots):
                self.displaced.setdefault(name, module)
                del sys.modules[name]
            else:
                foreign[name] = module

    def _adopt(self, names: set[str]) -> None:
        changed = False
        for name in sorted(names):
            module = sys.modules.get(name)
            if module is None:
                continue
            file = _module_file(module)
            if file is not None and is_user_file(file, self.roots):
                self.modules[name] = module
                changed = True
        if changed:
            self.generation += 1
        self._seen = set(sys.modules)
        self._seen_len = len(sys.modules)

    def adopt_late_imports(self) -> None:
        """Pick up user modules a reconcile imported lazily (cheap when nothing was imported)."""
        if len(sys.modules) == self._seen_len:
            return
        self._adopt({name for name in sys.modules if name not in self._seen})

    def forget(self) -> None:
        """Drop this set's modules from sys.modules and from the set (before a re-import)."""
        self._hide()
        # a module imported again later (lazily, by a step) is new: ``adopt_late_imports`` must not
        # skip it as seen, nor skip the scan because sys.modules is back to the length it had
        self._seen.difference_update(self.modules)
        self._seen_len = -1
        self.modules.clear()
        self.generation += 1

    def unload(self) -> None:
        """Forget this set's modules and give back the ones it displaced."""
        self.forget()
        for name, module in self.displaced.items():
            sys.modules.setdefault(name, module)
        self.displaced.clear()


#: the name a file entry point is imported under (``loading._file_module_name``): its stem, then a digest
_FILE_ENTRY = re.compile(r"kamera_user_(\w+?)_[0-9a-f]{16}")
_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)


def module_state(modules: Iterable[types.ModuleType]) -> dict[str, Any]:
    """What the user's modules hold at module level, one level deep: each global's identity and, for
    a container or an object with attributes, the identities of what it holds. Cheap enough for every
    segment of a program with threads (and every step of a kopf operator run as several parts); it
    sees a rebinding or a change to a module-level dict, list, set or object of the modules' own
    classes, not a change deeper down."""
    modules = tuple(modules)
    own = {module.__name__ for module in modules}
    out: dict[str, Any] = {}
    for module in modules:
        # by the name it was imported under, so that two ``functions.py`` of two packages stay apart; a file
        # entry point's by its stem (the name kamera imports it under depends on the scenario's path)
        entry = _FILE_ENTRY.fullmatch(module.__name__)
        where = entry.group(1) if entry else module.__name__
        for name, value in list(vars(module).items()):
            if name.startswith("__") or isinstance(value, _CODE):
                continue
            out[f"{where}.{name}"] = (id(value), _shallow(value, own))
    return out


def _shallow(value: Any, own: set[str]) -> Any:
    """What a module-level value holds, by identity: a builtin container's items, or the attributes of
    an object of the program's own classes (a library's objects — the API client with its
    ``last_response`` — are taken as opaque)."""
    if isinstance(value, dict):
        return tuple((id(k), id(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)) or type(value).__name__ == "deque":
        return tuple(map(id, value))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(map(id, value)))
    attributes = getattr(value, "__dict__", None) if type(value).__module__ in own else None
    if isinstance(attributes, dict):
        return tuple((k, id(v)) for k, v in attributes.items())
    return None
