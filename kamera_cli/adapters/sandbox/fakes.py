"""Fakes: the user's stand-ins for external systems, put in place of a module or callable for a scenario.

Why before the controllers load: a controller binds what it calls at import (``import boto3``,
``from requests import get``), so the stand-in must already be where the import finds it.  A fake
is loaded like a controller's module (its own module set, imported in the sandbox at the simulation's
epoch) and stays loaded for the whole scenario: when a controller crashes and restarts, the external
system keeps running, as a real one would; its *state* lives in kamera's external store, in the
explored state (``apiserver/external_store.py`` over ``apiserver/storage/external.py``), so it forks,
survives and is judged with the cluster.

What ``replace`` names is found at run time: the longest importable module prefix, then attributes.
``boto3.client`` with boto3 installed sets ``boto3.client``; without it, an empty ``boto3`` module is
made for the scenario, so a controller can import what it fakes without installing it.  A name with
no attribute part (``replace: boto3``) puts the fake itself in ``sys.modules``.  Everything replaced
is put back when the scenario ends, and a module imported meanwhile that bound a fake is unloaded.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from kamera_cli.adapters.sandbox.entrypoints import EntrypointSyntaxError, parse_entrypoint
from kamera_cli.adapters.sandbox.loading import EntrypointLoader
from kamera_cli.adapters.sandbox.modules import OwnPackageFake, add_own_package_fake
from kamera_cli.adapters.sandbox.services import SHAPES, Handler, handler_for
from kamera_cli.errors import EntrypointError

__all__ = ["FakeSet", "install_fakes"]


class _Fake(EntrypointLoader):
    """One ``with:`` target: ``path.py:attr``/``module:attr`` (an object) or ``path.py``/``module`` (the module)."""

    import_hint = ("a fake's top-level code must run without errors; kamera imports it once per scenario, "
                   "before the controllers")
    takes_own_fakes = False

    def __init__(self, target: str, base_dir: str | os.PathLike[str], *, scenario: str,
                 loaded: dict[str, _Fake] | None = None) -> None:
        self.whole_module = ":" not in target
        entrypoint = f"{target}:__name__" if self.whole_module else target
        # Two fakes from one file share its module: a ClientError the whole-module fake of
        # ``botocore.exceptions`` exports must be the class the fake ``boto3.client`` raises.
        self._key = _module_key(entrypoint, base_dir)
        self._shared = (loaded or {}).get(self._key) if self._key else None
        super().__init__(entrypoint, base_dir, scenario=scenario, controller=f"fake {target}")
        self.value: Any = self._target
        if loaded is not None and self._key and self._shared is None:
            loaded[self._key] = self

    def _load(self) -> Any:
        if self._shared is None:
            return super()._load()
        self.module = self._shared.module
        assert self.module is not None
        return self._resolve(self.module)

    def _error(self, message: str, hint: str = "") -> EntrypointError:
        return EntrypointError(message, scenario=self.scenario, hint=hint)  # the message names the fake

    def _tried(self) -> str:
        return f"fake {self.entrypoint.removesuffix(':__name__')!r}"

    def _resolve(self, module: types.ModuleType) -> Any:
        return module if self.whole_module else super()._resolve(module)

    def _check_shape(self, value: Any, where: str) -> Any:
        return value


_ABSENT = object()
_NO_FILE = frozenset({"__file__", "__path__", "__cached__"})


class _ModuleProxy(types.ModuleType):
    """A whole-module fake as ``sys.modules`` holds it.

    Why not the fake's module itself: it is a file under the scenario folder, and loading a controller
    hides such modules it does not own, so ``import boto3`` would miss it.  The proxy has no file and
    reads every attribute from the fake's module.
    """

    def __init__(self, name: str, fake: types.ModuleType) -> None:
        super().__init__(name, fake.__doc__)
        object.__setattr__(self, "_kamera_fake", fake)

    def __getattr__(self, name: str) -> Any:
        if name in _NO_FILE:  # a proxy has no file and no submodules (``__all__``, ``__version__`` pass through)
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_kamera_fake"), name)


class FakeSet:
    """The fakes of one scenario, installed; ``restore()`` puts every replaced name back.

    Each change pushes the closure that undoes it, so ``restore`` unwinds in reverse order whatever
    mix of ``sys.modules`` entries and attributes a replacement touched (also after a partial failure).
    """

    def __init__(self) -> None:
        self.fakes: list[_Fake] = []
        #: the fakes by URL, each as its pattern's text and one function of a request
        self.services: list[tuple[str, Handler]] = []
        self._undo: list[Callable[[], None]] = []
        #: the modules loaded before any fake was put in place, and every object that stands in for something
        self._preexisting = frozenset(sys.modules)
        self._stand_ins: list[Any] = []

    def replace(self, dotted: str, fake: _Fake) -> None:
        parts = dotted.split(".")
        value = fake.value
        if fake.whole_module:  # a module stands in for a module: ``import boto3`` must find it
            value = _ModuleProxy(dotted, value)
            self._set_module(dotted, value)
            if len(parts) == 1:
                return
        elif len(parts) == 1:
            self._set_module(dotted, value)
            return
        owner, rest = self._owner(parts)
        for name in rest[:-1]:
            child = getattr(owner, name, None)
            if child is None and self._open(owner):
                child = self._make_module(f"{owner.__name__}.{name}")
                self._set_attribute(owner, name, child)
            if child is None:
                raise AttributeError(f"{_name_of(owner)!r} has no attribute {name!r}")
            owner = child
        if not fake.whole_module and not hasattr(owner, rest[-1]) and not self._open(owner):
            # below a real module, a name that is not there is a typo: nothing would ever call the fake
            raise AttributeError(f"{_name_of(owner)!r} has no attribute {rest[-1]!r}")
        self._set_attribute(owner, rest[-1], value)

    def replace_own(self, dotted: str, fake: _Fake, where: str) -> None:
        """A name inside a controller's own package (``dask_kubernetes.operator.controller.retire_workers``):
        nothing is imported now; each copy of the package gets the fake as it is imported
        (``ModuleSet.put_fakes``).  A whole-module fake is in ``sys.modules`` already, where the copy's
        ``import`` finds it instead of the file."""
        value = fake.value
        if fake.whole_module:
            value = _ModuleProxy(dotted, value)
            self._set_module(dotted, value)
        else:
            self._stand_ins.append(value)
        self._undo.append(add_own_package_fake(OwnPackageFake(dotted, value, where)))

    def _open(self, owner: Any) -> bool:
        """Whether kamera may add names below ``owner``: a module it made up, or a namespace package
        (``google``, ``azure``: other distributions add to them, so a missing part is not a typo)."""
        if any(owner is made for made in self._stand_ins):
            return True
        return isinstance(owner, types.ModuleType) and getattr(owner, "__file__", None) is None \
            and hasattr(owner, "__path__")

    def _make_module(self, name: str) -> types.ModuleType:
        module = types.ModuleType(name, "made by kamera for a scenario's fake")
        self._set_module(name, module)
        return module

    def _set_module(self, name: str, module: Any) -> None:
        previous: Any = sys.modules.get(name, _ABSENT)

        def undo() -> None:
            if previous is _ABSENT:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous

        self._undo.append(undo)
        self._stand_ins.append(module)
        sys.modules[name] = module

    def _set_attribute(self, owner: Any, name: str, value: Any) -> None:
        had, previous = hasattr(owner, name), getattr(owner, name, None)

        def undo() -> None:
            if had:
                setattr(owner, name, previous)
            else:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)

        self._undo.append(undo)
        self._stand_ins.append(value)
        setattr(owner, name, value)

    def _owner(self, parts: list[str]) -> tuple[Any, list[str]]:
        """The deepest importable module along ``parts`` (or a made-up one) and the attribute path below it."""
        for cut in range(len(parts) - 1, 0, -1):
            module = _importable(".".join(parts[:cut]))
            if module is not None:
                return module, parts[cut:]
        # nothing importable: make up what the controller will import, for this scenario only
        return self._make_module(parts[0]), parts[1:]

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()
        for fake in self.fakes:
            fake.unload()
        self.fakes.clear()
        self._forget_bound()

    def _forget_bound(self) -> None:
        """Unload the modules first imported during the scenario that bound a stand-in.

        Why: a library a controller imported (not one of the scenario's own modules, which are
        unloaded anyway) may have done ``from requests import get`` while the fake was in place and
        would keep calling it in the next scenario of the process.  Removed from ``sys.modules``, it is
        imported afresh, against the real names, by whoever needs it next.
        """
        # a fake borrowed from the standard library or kamera (``with: json:loads``) is bound by modules
        # that never saw the fake; unloading those would duplicate their classes, so they are left alone
        stand_ins = {id(value) for value in self._stand_ins if not _shared(value)}
        self._stand_ins.clear()
        for name, module in list(sys.modules.items()):
            if name in self._preexisting or module is None:
                continue
            with contextlib.suppress(Exception):  # an odd module's namespace is not ours to fail on
                if any(id(value) in stand_ins for value in list(vars(module).values())):
                    del sys.modules[name]


def _module_key(entrypoint: str, base_dir: str | os.PathLike[str]) -> str:
    """What identifies the module an entry point names (its file, or its dotted name); "" if malformed."""
    try:
        parsed = parse_entrypoint(entrypoint, Path(os.path.abspath(base_dir)))
    except EntrypointSyntaxError:
        return ""
    return str(parsed.file) if parsed.file is not None else parsed.module


def _name_of(owner: Any) -> str:
    return str(getattr(owner, "__name__", type(owner).__name__))


def _shared(value: Any) -> bool:
    """Whether ``value`` comes from the standard library or kamera (not from a fake's own code)."""
    home = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    top = str(home or "").partition(".")[0]
    return top in sys.stdlib_module_names or top == "kamera_cli"


class _ImportFailed(Exception):
    """Importing a module that ``replace`` names raised something other than "not found"."""


def _importable(name: str) -> types.ModuleType | None:
    """The module, or None when it is not installed (a made-up one then stands in for it)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            return None
        failure: Exception = exc  # found, but something it imports is not: faking it whole would hide that
    except Exception as exc:  # a broken installation: the user's to fix, reported as such
        failure = exc
    raise _ImportFailed(f"importing {name!r} raised {type(failure).__name__}: {failure}")


def install_fakes(fakes: Iterable[tuple[str, str]], base_dir: str | os.PathLike[str], *, scenario: str,
                  services: Iterable[tuple[str, str, str]] = (), own_packages: Collection[str] = (),
                  located: Mapping[str, str] | None = None) -> FakeSet:
    """Load each ``(replace, with)`` fake and put it in place; on any error, undo what was done and raise.

    ``services`` are the fakes by URL, ``(url, with, where)`` (``where``: the entry's ``file:line``): each
    is loaded and made a function of a request (``FakeSet.services``), which the caller routes to.
    ``own_packages``: the top-level packages controllers are loaded from (``loading.own_package``); a
    fake of a name inside one goes in each controller's copy (``FakeSet.replace_own``), located at
    ``located[replace]`` (the entry's ``file:line``) when the copy lacks the name.
    """
    installed = FakeSet()
    loaded: dict[str, _Fake] = {}
    try:
        for url, target, where in services:
            try:
                fake = _Fake(target, base_dir, scenario=scenario, loaded=loaded)
            except EntrypointError as exc:
                # located at the entry (its file:line already names the scenario)
                raise EntrypointError(f"{where}: spec.fakes url {url!r}: {str(exc).removeprefix(scenario + ': ')}") \
                    from None
            installed.fakes.append(fake)
            handler = handler_for(fake.value, repr(target))
            if handler is None:
                raise EntrypointError(f"{where}: spec.fakes url {url!r}: with {target!r} is "
                                      f"{type(fake.value).__name__}, none of the shapes a fake by URL may have",
                                      hint=f"name {SHAPES}")
            installed.services.append((url, handler))
        for dotted, target in fakes:
            fake = _Fake(target, base_dir, scenario=scenario, loaded=loaded)
            installed.fakes.append(fake)
            if dotted.partition(".")[0] in own_packages:
                installed.replace_own(dotted, fake, (located or {}).get(dotted, scenario))
                continue
            try:
                installed.replace(dotted, fake)
            except (AttributeError, _ImportFailed) as exc:
                raise EntrypointError(f"fake for {dotted!r}: cannot replace it: {exc}", scenario=scenario,
                                      hint="replace names a module, or an attribute of one (boto3.client)") from None
    except BaseException:
        installed.restore()
        raise
    return installed
