"""Loading users' controllers and watch mappers from entry points, with errors that say how to fix them.

Why the checks happen here, once, at load: a controller with the wrong signature would otherwise
fail on every single reconcile of the exploration, drowning the one message that matters.  Every
failure becomes an :class:`~kamera_cli.errors.EntrypointError` naming the scenario, the controller,
what was tried and the fix; a user never sees a traceback from inside kamera for their mistake.

Each loaded factory owns a :class:`~kamera_cli.adapters.sandbox.modules.ModuleSet`: its own copies of the
user's modules, so scenarios with equally named files do not collide and :meth:`reload` can give a
restarted controller fresh module globals.  Imports run with the network fenced off and with
virtual time and seeded randomness (but without the datetime class swap, so that a library imported
for the first time keeps the real classes).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from kamera_cli.adapters.sandbox.entrypoints import EntrypointSyntaxError, ParsedEntrypoint, parse_entrypoint
from kamera_cli.adapters.sandbox.fence import (
    EMPTY_PLAN,
    PatchPlan,
    VirtualClock,
    plan_for_modules,
    sandboxed,
    unbind_stand_ins,
)
from kamera_cli.adapters.sandbox.modules import ModuleSet, OwnPackageFakeMissing, is_user_file
from kamera_cli.adapters.sandbox.process import ProcessView, process_scope
from kamera_cli.adapters.sandbox.values import Request, requests_from_mapping
from kamera_cli.errors import EntrypointError

__all__ = ["Mapper", "ReconcilerFactory", "load_mapper", "load_reconciler", "own_package"]

#: 2026-01-01T00:00:00Z, the simulation's epoch: module top-level code sees this time
IMPORT_EPOCH = 1767225600.0
IMPORT_SEED = b"kamera:import"

_SIGNATURE_HINT = (
    "write `def reconcile(request)` or `def reconcile(request, client)`, or a class whose constructor takes "
    "no arguments or (client) and whose `reconcile(self, request)` or `reconcile(self, request, client)` "
    "method does the work"
)
_MAPPER_HINT = "write `def map_object(obj)` taking the changed object (a dict) and returning (namespace, name) pairs"


@dataclass(frozen=True, slots=True)
class _Arity:
    required: int
    maximum: float  # math.inf with *args
    named: int  # positional parameters that have a name (not *args)
    required_keyword_only: tuple[str, ...]
    text: str

    def accepts(self, count: int) -> bool:
        return self.required <= count <= self.maximum and not self.required_keyword_only


def arity_of(obj: Callable[..., Any], *, drop_first: bool = False) -> _Arity | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if drop_first and params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    required = 0
    named = 0
    maximum: float = 0
    keyword_only: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            named += 1
            maximum += 1
            if p.default is p.empty:
                required += 1
        elif p.kind == p.VAR_POSITIONAL:
            maximum = float("inf")
        elif p.kind == p.KEYWORD_ONLY and p.default is p.empty:
            keyword_only.append(p.name)
    text = "(" + ", ".join(str(p) for p in params) + ")"
    return _Arity(required, maximum, named, tuple(keyword_only), text)


def _entry_package(module: str, base_dir: Path) -> list[Path]:
    """The folder of the entry module's top-level package when it lies outside the scenario folder: an
    operator installed as a package (``kopf run -m dask_kubernetes.operator.controller``) is the code
    under test, so it gets its own copy per controller, and a crash re-imports it, like a file entry.

    Only a regular package (one folder, an ``__init__``); never kamera itself nor a namespace package
    (which would take every installed distribution sharing its name)."""
    top = module.split(".")[0]
    if not top or top == __name__.split(".")[0]:
        return []
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.origin or not spec.submodule_search_locations:
        return []
    folder = Path(os.path.dirname(os.path.abspath(spec.origin)))
    if folder == base_dir or base_dir in folder.parents:
        return []
    return [folder]


def own_package(entry: str, base_dir: str | os.PathLike[str]) -> str:
    """The top-level package a controller named by module (``kopf: operator.main``) gets a copy of, or ""."""
    module = entry.partition(":")[0].strip()
    if not module or module.endswith(".py") or "/" in module or "\\" in module:
        return ""
    return module.split(".")[0] if _entry_package(module, Path(os.path.abspath(base_dir))) else ""


def _display(parsed: ParsedEntrypoint, base_dir: Path) -> str:
    if parsed.file is None:
        return f"module {parsed.module}"
    try:
        return str(parsed.file.relative_to(base_dir))
    except ValueError:
        return str(parsed.file)


def _file_module_name(file: Path) -> str:
    """A deterministic, collision-free module name for a file entry point (same path, same name)."""
    digest = hashlib.sha256(str(file).encode("utf-8")).hexdigest()[:16]
    stem = re.sub(r"\W", "_", file.stem)
    return f"kamera_user_{stem}_{digest}"


def package_chain(directory: Path) -> list[str]:
    """Names of the packages enclosing ``directory`` (innermost last); [] when it is not a package."""
    names: list[str] = []
    current = directory
    while (current / "__init__.py").is_file() and current.name.isidentifier():
        names.insert(0, current.name)
        if current.parent == current:
            break
        current = current.parent
    return names


def _short(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class EntrypointLoader:
    """Shared by controllers and mappers: import the entry point's module in its own module set."""

    #: whether a bare ``path.py`` (a script whose top level is the program) is an entry point here
    accepts_script = False
    #: whether fakes of the entry's own package are put in its copy (not in a fake's own modules)
    takes_own_fakes = True

    #: the hint of an import that raised (a subclass imported at other times says so)
    import_hint = ("the module's top-level code must run without errors; kamera imports it once per scenario "
                   "and again after each simulated crash")

    def __init__(self, entrypoint: str, base_dir: str | os.PathLike[str], *, scenario: str, controller: str,
                 env: Mapping[str, str] | ProcessView | None = None) -> None:
        #: environment variables, command line and files seen while this controller's code runs (its import
        #: included); ``env`` is a plain ``env:`` mapping or the whole view
        self.process = ProcessView.of(env)
        self.env: dict[str, str] = dict(self.process.env)
        self.entrypoint = entrypoint
        self.base_dir = Path(os.path.abspath(base_dir))
        self.scenario = scenario
        self.controller = controller
        try:
            self.parsed = parse_entrypoint(entrypoint, self.base_dir, script=self.accepts_script)
        except EntrypointSyntaxError as exc:
            raise self._error(str(exc), f"use {'package.module:attr'!r} or {'relative/path.py:attr'!r}") from None
        roots: list[Path] = [self.base_dir]
        path_entries: list[Path] = [self.base_dir]
        self._package = ""
        if self.parsed.file is not None:
            chain = package_chain(self.parsed.file.parent)
            if chain:
                top_parent = self.parsed.file.parent
                for _ in chain:
                    top_parent = top_parent.parent
                path_entries.append(top_parent)
                roots.append(top_parent / chain[0])
                self._package = ".".join(chain)
            else:
                path_entries.append(self.parsed.file.parent)
                roots.append(self.parsed.file.parent)
        own = [] if self.parsed.file is not None else _entry_package(self.parsed.module, self.base_dir)
        roots.extend(own)
        #: the top-level package copied for this controller ("" when none): fakes of it go in each copy
        self._own_top = self.parsed.module.split(".")[0] if own and self.takes_own_fakes else ""
        self.module_set = ModuleSet(tuple(roots), tuple(path_entries))
        self.module: ModuleType | None = None
        self._plan = EMPTY_PLAN
        self._plan_generation = -1
        importlib.invalidate_caches()
        self._target = self._load()

    def scope(self) -> contextlib.AbstractContextManager[None]:
        """The controller's environment, ``sys.argv`` and files, for as long as its code runs."""
        return process_scope(self.process, self._argv0())

    def _argv0(self) -> str:
        """``sys.argv[0]`` as ``python <file>`` from the scenario's folder (or ``python -m``) would set it."""
        parsed = self.parsed
        if parsed.file is not None:
            return os.path.relpath(parsed.file, self.base_dir)
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(parsed.module)
            if spec is not None and spec.origin:
                return spec.origin
        return parsed.module

    # -- errors -------------------------------------------------------------------------------------------------
    def _error(self, message: str, hint: str = "") -> EntrypointError:
        return EntrypointError(message, scenario=self.scenario, controller=self.controller, hint=hint)

    def _tried(self) -> str:
        return f"entry point {self.entrypoint!r}"

    # -- importing ----------------------------------------------------------------------------------------------
    def _load(self) -> Any:
        try:
            module = self._import()
        except BaseException:
            self.module_set.unload()
            raise
        self.module = module
        return self._resolve(module)

    def _import(self) -> ModuleType:
        parsed = self.parsed
        where = _display(parsed, self.base_dir)
        clock = VirtualClock(IMPORT_EPOCH)
        with self.module_set.importing(), self.scope(), \
                sandboxed(clock, IMPORT_SEED, importing=True) as run:
            run.processes_allowed = self.process.processes_allowed
            try:
                module = self._exec_entry_module()
                if self._own_top:
                    self.module_set.put_fakes(self._own_top)
            except OwnPackageFakeMissing as exc:
                raise EntrypointError(str(exc), hint="name a module of the package, or an attribute of one, as "
                                      "the controller's code finds it") from None
            except EntrypointError:  # a KeyboardInterrupt is the module's own: the user's Ctrl-C reaches the supervisor
                raise
            except SyntaxError as exc:
                raise self._syntax_error(exc) from None
            except ModuleNotFoundError as exc:
                raise self._not_found(exc, where) from None
            except SystemExit as exc:
                raise self._error(
                    f"{self._tried()}: importing {where} called sys.exit({exc.code!r})",
                    "module top-level code must not exit; move it under `if __name__ == '__main__':`",
                ) from None
            except BaseException as exc:
                if run.processes:  # the refusal escaped: the process is the finding, not its PermissionError
                    raise self._process_started(where, run.processes[0].describe()) from None
                location = self._user_location(exc)
                raise self._error(
                    f"{self._tried()}: importing {where} raised {_short(exc)}{location}", self.import_hint,
                ) from None
        unbind_stand_ins(self.module_set.modules.values())
        if run.processes:
            raise self._process_started(where, run.processes[0].describe())
        if run.network:
            raise self._error(
                f"{self._tried()}: importing {where} tried to open a network connection to {run.network[0].address}",
                "a controller under kamera talks only to the simulated API server through the kubernetes client; "
                "do not connect anywhere at import time",
            )
        return module

    def _process_started(self, where: str, call: str) -> EntrypointError:
        return self._error(f"{self._tried()}: importing {where} started a process: {call}",
                           "kamera cannot model what a child process does; fake the tool with `fakes:`, or set "
                           "`processes: allowed` on the controller")

    def _exec_entry_module(self) -> ModuleType:
        parsed = self.parsed
        if parsed.file is None:
            return importlib.import_module(parsed.module)
        if not parsed.file.is_file():
            shown = self.entrypoint.rpartition(":")[0].strip() if parsed.attr else self.entrypoint.strip()
            raise self._error(
                f"{self._tried()}: file {shown!r} not found (looked for {parsed.file})",
                "file entry points are relative to the scenario file's folder",
            )
        if self._package:
            return importlib.import_module(f"{self._package}.{parsed.file.stem}")
        name = _file_module_name(parsed.file)
        spec = importlib.util.spec_from_file_location(name, parsed.file)
        if spec is None or spec.loader is None:
            raise self._error(f"{self._tried()}: {parsed.file} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    def _syntax_error(self, exc: SyntaxError) -> EntrypointError:
        file = exc.filename or "?"
        try:
            shown = str(Path(file).resolve().relative_to(self.base_dir.resolve()))
        except (ValueError, OSError):
            shown = file
        return self._error(
            f"{self._tried()}: {shown} has a syntax error at line {exc.lineno}: {exc.msg}",
            "fix the syntax error (run `python -m py_compile` on the file to see it)",
        )

    def _not_found(self, exc: ModuleNotFoundError, where: str) -> EntrypointError:
        missing = exc.name or ""
        parsed = self.parsed
        target = parsed.module or self._package
        if target and missing and (target == missing or target.startswith(missing + ".")):
            return self._error(
                f"{self._tried()}: module {parsed.module or target!r} not found ({exc})",
                f"the module must be importable from the scenario folder ({self.base_dir}) or installed in this "
                "Python environment; for a file, write 'path/to/file.py:attr'",
            )
        return self._error(
            f"{self._tried()}: importing {where} raised {_short(exc)}{self._user_location(exc)}",
            f"install {missing!r} in the Python environment that runs kamera, or fix the import"
            if missing
            else "fix the import",
        )

    def _user_location(self, exc: BaseException) -> str:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename, self.module_set.roots)]
        if not frames:
            return ""
        last = frames[-1]
        try:
            shown = str(Path(last.filename).resolve().relative_to(self.base_dir.resolve()))
        except (ValueError, OSError):
            shown = last.filename
        return f" at {shown}:{last.lineno}"

    # -- resolving ----------------------------------------------------------------------------------------------
    def _resolve(self, module: ModuleType) -> Any:
        where = _display(self.parsed, self.base_dir)
        value: Any = module
        walked: list[str] = []
        for part in self.parsed.attr.split("."):
            if not hasattr(value, part):
                raise self._missing(value, part, where, walked)
            value = getattr(value, part)
            walked.append(part)
        return self._check_shape(value, where)

    def _missing(self, owner: Any, part: str, where: str, walked: list[str]) -> EntrypointError:
        inside = f"{where}" if not walked else f"{'.'.join(walked)} in {where}"
        names = (
            sorted(
                name
                for name, value in vars(owner).items()
                if callable(value) and (not name.startswith("_") or part.startswith("_"))
            )
            if hasattr(owner, "__dict__")
            else []
        )
        close = difflib.get_close_matches(part, names, n=3, cutoff=0.6)
        if close:
            hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
        elif names:
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            hint = f"callables defined there: {shown}"
        else:
            hint = f"define {part!r} there, or point the entry point at the module that defines it"
        return self._error(f"{self._tried()}: {inside} has no attribute {part!r}", hint)

    def _check_shape(self, value: Any, where: str) -> Any:
        raise NotImplementedError

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def patch_plan(self) -> PatchPlan:
        """The user-module bindings to virtualise (recomputed only when the module set changed)."""
        ms = self.module_set
        if self._plan_generation != ms.generation:
            self._plan = plan_for_modules(module for _name, module in sorted(ms.modules.items()))
            self._plan_generation = ms.generation
        return self._plan

    def reload(self) -> None:
        """Re-import the user's modules, as a restarted process would: module globals start afresh."""
        self.module_set.forget()
        self._target = self._load()

    def unload(self) -> None:
        """Remove this entry point's user modules from sys.modules (the next scenario gets its own)."""
        self.module_set.unload()
        self.module = None


@dataclass(frozen=True, slots=True)
class ReconcileShape:
    kind: Literal["function", "class"]
    #: how many arguments reconcile() gets: 1 (request) or 2 (request, client)
    reconcile_args: int
    #: whether the class constructor gets the client
    init_client: bool


class ReconcilerFactory(EntrypointLoader):
    """A loaded controller: builds a fresh reconcile callable per step, can reload and unload its modules."""

    _shape: ReconcileShape

    @property
    def kind(self) -> Literal["function", "class"]:
        return self._shape.kind

    @property
    def takes_client(self) -> bool:
        return self._shape.reconcile_args == 2 or self._shape.init_client

    def build(self, client: object) -> Callable[[Request], Any]:
        """A reconcile callable for one step (a class entry point is instantiated here: user code runs)."""
        shape = self._shape
        target = self._target
        if shape.kind == "class":
            instance = target(client) if shape.init_client else target()
            method = instance.reconcile
            if shape.reconcile_args == 2:
                return lambda request: method(request, client)
            return method  # type: ignore[no-any-return]
        if shape.reconcile_args == 2:
            return lambda request: target(request, client)
        return target  # type: ignore[no-any-return]

    def invoke(self, request: Request, client: object) -> Any:
        result = self.build(client)(request)
        if inspect.iscoroutine(result):  # async def reconcile: one fresh loop per step, virtual time
            from kamera_cli.adapters.asyncio.loop import run_async

            return run_async(result)
        return result

    def _check_shape(self, value: Any, where: str) -> Any:
        name = self.parsed.attr
        if inspect.isclass(value):
            self._shape = self._class_shape(value, name, where)
        elif callable(value):
            self._refuse_async(value, f"function {name!r} in {where}")
            arity = arity_of(value)
            args = self._reconcile_args(arity, f"function {name!r} in {where}")
            self._shape = ReconcileShape("function", args, False)
        else:
            raise self._error(
                f"{self._tried()}: {name!r} in {where} is {_a(type(value).__name__)}, not a function or class",
                _SIGNATURE_HINT,
            )
        return value

    def _refuse_async(self, func: Any, what: str) -> None:
        """``async def`` reconciles are run on a virtual-time loop; async generators are not reconciles."""
        if inspect.isasyncgenfunction(func):
            raise self._error(
                f"{self._tried()}: {what} is an async generator; a reconcile returns (or awaits) its result",
                "make it `async def reconcile(request)` returning None or a Result",
            )

    def _reconcile_args(self, arity: _Arity | None, what: str) -> int:
        if arity is None:  # a builtin or C callable: nothing to inspect, call it the simple way
            return 1
        if arity.required_keyword_only:
            raise self._error(
                f"{self._tried()}: {what} has required keyword-only parameter(s) "
                f"{', '.join(arity.required_keyword_only)}; kamera calls it as reconcile(request) or "
                "reconcile(request, client)",
                _SIGNATURE_HINT,
            )
        if arity.accepts(2):
            return 2
        if arity.accepts(1):
            return 1
        raise self._error(
            f"{self._tried()}: {what} takes {arity.text}; kamera calls it as reconcile(request) or "
            "reconcile(request, client)",
            _SIGNATURE_HINT,
        )

    def _class_shape(self, cls: type, name: str, where: str) -> ReconcileShape:
        init = arity_of(cls)
        if init is not None and init.required_keyword_only:
            raise self._error(
                f"{self._tried()}: class {name!r} in {where} needs keyword-only argument(s) "
                f"{', '.join(init.required_keyword_only)}; kamera constructs it with no arguments or with (client)",
                _SIGNATURE_HINT,
            )
        if init is None:
            init_client = False
        elif init.required > 1:
            raise self._error(
                f"{self._tried()}: class {name!r} in {where} is constructed as {name}{init.text}; kamera constructs "
                "it with no arguments or with (client)",
                _SIGNATURE_HINT,
            )
        else:
            init_client = init.required == 1 or init.named >= 1
        try:
            raw = inspect.getattr_static(cls, "reconcile")
        except AttributeError:
            raise self._error(
                f"{self._tried()}: class {name!r} in {where} has no reconcile method",
                _SIGNATURE_HINT,
            ) from None
        self._refuse_async(getattr(raw, "__func__", raw), f"method {name}.reconcile in {where}")
        if isinstance(raw, staticmethod):
            arity = arity_of(raw.__func__)
        elif isinstance(raw, classmethod):
            arity = arity_of(cls.reconcile)  # type: ignore[attr-defined]
        elif inspect.isfunction(raw):
            arity = arity_of(raw, drop_first=True)
        elif callable(raw) or hasattr(raw, "__get__"):
            arity = None
        else:
            raise self._error(
                f"{self._tried()}: {name}.reconcile in {where} is {_a(type(raw).__name__)}, not a method",
                _SIGNATURE_HINT,
            )
        args = self._reconcile_args(arity, f"method {name}.reconcile in {where}")
        return ReconcileShape("class", args, init_client)


class Mapper(EntrypointLoader):
    """A loaded watch mapper: ``mapper(obj) -> tuple[Request, ...]`` (sorted, without duplicates)."""

    def call(self, obj: dict[str, Any]) -> Any:
        """Run the user's function (no validation: see :func:`requests_from_mapping`)."""
        return self._target(obj)

    def __call__(self, obj: dict[str, Any]) -> tuple[Request, ...]:
        return requests_from_mapping(self.call(obj))

    def _check_shape(self, value: Any, where: str) -> Any:
        name = self.parsed.attr
        if not callable(value) or inspect.isclass(value):
            raise self._error(
                f"{self._tried()}: {name!r} in {where} is {_a(type(value).__name__)}, not a function", _MAPPER_HINT
            )
        arity = arity_of(value)
        if arity is not None and not arity.accepts(1):
            raise self._error(
                f"{self._tried()}: mapper {name!r} in {where} takes {arity.text}; kamera calls it as {name}(obj)",
                _MAPPER_HINT,
            )
        return value


def load_reconciler(
    entrypoint: str, base_dir: str | os.PathLike[str], *, scenario: str = "", controller: str = "",
    env: Mapping[str, str] | ProcessView | None = None,
) -> ReconcilerFactory:
    """Import a controller's entry point and check its shape; raise EntrypointError when it is unusable."""
    return ReconcilerFactory(entrypoint, base_dir, scenario=scenario, controller=controller, env=env)


def load_mapper(
    entrypoint: str, base_dir: str | os.PathLike[str], *, scenario: str = "", controller: str = ""
) -> Mapper:
    """Import a watch mapper ``module:function``; raise EntrypointError when it is unusable."""
    return Mapper(entrypoint, base_dir, scenario=scenario, controller=controller)


def _a(noun: str) -> str:
    """The noun with its indefinite article ("an int", "a str")."""
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"
