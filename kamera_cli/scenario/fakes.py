"""``spec.fakes``: stand-ins for the external systems controllers call (clouds, HTTP APIs).

Why its own module: each entry is checked beyond the schema, and located at its field — a
``replace`` that is not a dotted Python name or names kamera itself, a ``url`` that is not a valid
pattern (``model/services.py``), a ``with`` whose file is missing or whose entry point is malformed,
the same name replaced (or URL faked) twice — without importing the fake (that happens when the
scenario runs, where an import error is reported like a controller's).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kamera_cli.errors import KameraError
from kamera_cli.model.scenario import FakeSpec, Position
from kamera_cli.model.services import parse_url_pattern
from kamera_cli.scenario.paths import Path_

_ENTRYPOINT = re.compile(r"[^:\s][^:]*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
#: replacing these would change kamera's own behaviour (fingerprints, the sandbox, the containment), not
#: only the controller's: kamera itself, and the standard library it is written against
_UNFAKEABLE = frozenset({"kamera_cli", *sys.stdlib_module_names})
_HINT = "for example: replace: boto3.client, with: fakes/aws.py:client"


def parse_fakes(raw: Any, *, base_dir: str, add: Callable[[Path_, str, str], None],
                position: Callable[[Path_], Position],
                check_entrypoint: Callable[[str, str], str | None] | None,
                entry_packages: Mapping[str, str] | None = None) -> tuple[FakeSpec, ...]:
    """The valid entries of ``spec.fakes``; every problem goes to ``add`` with its path.

    ``entry_packages``: the top-level package of each controller loaded by module name (``kopf:
    operator.main``), with that controller's name.  kamera copies such a package per controller and puts
    a fake of a name inside it in every copy (sandbox/modules.py, ``ModuleSet.put_fakes``); a fake of
    the whole package would replace the code under test, and is refused."""
    entry_packages = entry_packages or {}
    if not isinstance(raw, list):
        return ()  # absent, or the schema reports the wrong type
    out: list[FakeSpec] = []
    seen: dict[str, int] = {}
    urls: dict[str, int] = {}
    for i, entry in enumerate(raw):
        path: Path_ = ("spec", "fakes", i)
        if not isinstance(entry, dict):
            continue  # the schema's
        replace, target = entry.get("replace"), entry.get("with")
        if "url" in entry or "replace" not in entry:
            spec = _url_fake(entry, path, base_dir, add, position, check_entrypoint, urls)
            if spec is not None:
                out.append(spec)
            continue
        ok = True
        if not isinstance(replace, str) or not _DOTTED.fullmatch(replace):
            ok = False  # the schema's pattern reports it
        elif replace.partition(".")[0] in _UNFAKEABLE:
            ok = False
            top = replace.partition(".")[0]
            what = "kamera itself" if top == "kamera_cli" else f"{top!r}, a standard-library module,"
            add((*path, "replace"), f"replace {replace!r}: {what} cannot be faked",
                "kamera runs in the same process and uses it too; replace the library your controller calls "
                "(a cloud SDK, requests.get, ...)")
        elif _in_folder(replace.partition(".")[0], base_dir):
            ok = False
            add((*path, "replace"), f"replace {replace!r}: {replace.partition('.')[0]!r} is a module of the scenario "
                "folder, which kamera imports afresh for each controller (and again after each crash)",
                "fake what that module calls (a cloud SDK, requests.get), or have the controller import the fake")
        elif replace in entry_packages:
            ok = False
            add((*path, "replace"), f"replace {replace!r}: that is the whole package controller "
                f"{entry_packages[replace]!r} is loaded from, the code under test",
                "replace a name inside it (package.module.function), or what it calls (a cloud SDK, a service "
                "by url:)")
        elif replace in seen:
            ok = False
            add((*path, "replace"), f"{replace!r} is already replaced by spec.fakes[{seen[replace]}]",
                "replace each name once")
        target_ok = isinstance(target, str) and bool(target.strip())
        if not target_ok or not _target_ok(str(target).strip(), (*path, "with"), base_dir, add, check_entrypoint):
            ok = False
        if ok and isinstance(replace, str) and isinstance(target, str):
            seen[replace] = i
            out.append(FakeSpec(replace, target.strip(), position(path)))
    return tuple(out)


def _url_fake(entry: dict[str, Any], path: Path_, base_dir: str, add: Callable[[Path_, str, str], None],
              position: Callable[[Path_], Position], check_entrypoint: Callable[[str, str], str | None] | None,
              urls: dict[str, int]) -> FakeSpec | None:
    """A fake by URL (``url`` + ``with``), or None after reporting what is wrong with it."""
    url, target = entry.get("url"), entry.get("with")
    ok = True
    if "url" not in entry:
        add(path, "a fake needs 'replace' (a Python name) or 'url' (an HTTP service)", _HINT + _URL_HINT)
        return None
    if "replace" in entry:
        add((*path, "url"), "a fake has either 'replace' or 'url', not both",
            "replace: swaps a Python name; url: answers HTTP requests whatever client sends them")
        ok = False
    elif isinstance(url, str):
        try:
            parse_url_pattern(url)
        except ValueError as exc:
            add((*path, "url"), str(exc), _URL_SYNTAX)
            ok = False
        else:
            if url in urls:
                add((*path, "url"), f"url {url!r} is already faked by spec.fakes[{urls[url]}]", "fake each URL once")
                ok = False
    else:
        ok = False  # the schema reports the type
    if isinstance(target, str) and target.strip() and ":" not in target:
        add((*path, "with"), f"with {target!r} names a module; a fake by URL names an object in one: "
            "path/to/file.py:app or package.module:app", "for example" + _URL_HINT.removeprefix("; or"))
        return None
    if not (isinstance(target, str) and target.strip()) or not _target_ok(target.strip(), (*path, "with"), base_dir,
                                                                       add, check_entrypoint):
        return None
    if not ok or not isinstance(url, str):
        return None
    urls[url] = int(path[-1])
    return FakeSpec("", target.strip(), position(path), url=url)


_URL_HINT = "; or url: http://*-scheduler.*.svc:8787, with: fakes/scheduler.py:app"
_URL_SYNTAX = ("scheme://host[:port][/path]: '*' matches within one host label or path segment, a whole '**' label "
               "or segment several; docs/controllers.md, 'HTTP services: fakes by URL'")


def _in_folder(top: str, base_dir: str) -> bool:
    """Whether ``import top`` from a controller of this folder finds the folder's own module.

    A module file or a regular package shadows an installed one (the folder comes first on the path);
    a plain directory of Python files is a namespace package, which only wins when nothing installed
    has that name.  A directory without Python files (manifests, fixtures) is not a module.
    """
    base = Path(base_dir)
    if (base / f"{top}.py").is_file() or (base / top / "__init__.py").is_file():
        return True
    if not (base / top).is_dir() or not any((base / top).glob("*.py")):
        return False
    return importlib.util.find_spec(top) is None


def _target_ok(target: str, path: Path_, base_dir: str, add: Callable[[Path_, str, str], None],
               check_entrypoint: Callable[[str, str], str | None] | None) -> bool:
    if ":" in target:  # an object in a module: checked like a controller's entry point (imports nothing)
        if not _ENTRYPOINT.fullmatch(target):
            add(path, f"with {target!r} is not 'path/to/file.py:attr' or 'package.module:attr'", _HINT)
            return False
        try:
            message = check_entrypoint(target, base_dir) if check_entrypoint is not None else None
        except KameraError as exc:
            message = " ".join(str(exc).split())
        if message:
            add(path, message.replace("entry point", "fake", 1), "paths are relative to the scenario file's folder")
            return False
        return True
    if target.endswith(".py") or "/" in target or "\\" in target:
        if not target.endswith(".py"):
            add(path, f"with {target!r} is not a .py file", _HINT)
            return False
        file = Path(target) if Path(target).is_absolute() else Path(base_dir) / target
        if not file.is_file():
            add(path, f"fake file {target!r} not found (looked for {file})",
                "paths are relative to the scenario file's folder")
            return False
        return True
    if not _DOTTED.fullmatch(target):
        add(path, f"with {target!r} is neither a module, a .py file nor 'module:attr'", _HINT)
        return False
    # a whole module: checked as the entry point of any of its attributes would be (imports nothing)
    message = check_entrypoint(f"{target}:__name__", base_dir) if check_entrypoint is not None else None
    if message:
        add(path, message.replace(f"entry point {target + ':__name__'!r}", f"fake {target!r}"),
            "name a module of the scenario folder or the Python environment, or a path/to/file.py")
        return False
    return True
