"""What a controller's process sees around its code: its environment, its ``sys.argv`` and its files.

Why: code written to run in a pod reads more than the API. A watch-loop program parses its command
line (``argparse`` reads ``sys.argv``, which in kamera's worker is kamera's own: ``check
scenario.yaml``); an operator reads a ConfigMap its Helm chart mounts at ``/config/settings.yaml``,
or its own namespace from the service-account mount. A :class:`ProcessView` is that surrounding, as
the scenario gives it, and :func:`process_scope` puts it in place for exactly as long as the
controller's code runs (its import included), then puts everything back.

Files are served without touching the real filesystem: while a scope with files is active,
``open``/``io.open`` (so ``pathlib.Path.open``/``read_text``/``read_bytes``), ``os.stat``/``os.lstat``
(so ``os.path.exists``/``isfile``/``isdir`` and ``Path.exists``/``is_file``/``is_dir``),
``os.listdir`` (``Path.iterdir``) and ``os.access`` answer for the mounted paths and their parent
folders from memory; every other path goes to the real functions unchanged. Mounts are read-only,
as a ConfigMap or Secret volume is: opening one for writing is ``OSError(EROFS)``.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import io
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SERVICE_ACCOUNT_DIR", "ProcessView", "environment", "process_scope", "service_account_files"]

#: where a pod's service-account token, namespace and CA bundle are mounted (``load_incluster_config``)
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

#: a made-up bearer token and CA bundle: nothing checks them, the simulated server is in-process
_FAKE_TOKEN = b"kamera-simulated-service-account-token"
_FAKE_CA = (b"-----BEGIN CERTIFICATE-----\n"
            b"a2FtZXJhIHNpbXVsYXRlZCBjbHVzdGVyIENBLCBub3QgYSByZWFsIGNlcnRpZmljYXRl\n"
            b"-----END CERTIFICATE-----\n")


def service_account_files(namespace: str) -> tuple[tuple[str, bytes], ...]:
    """The three files a pod's default service-account mount holds, for a pod in ``namespace``."""
    return ((f"{SERVICE_ACCOUNT_DIR}/ca.crt", _FAKE_CA),
            (f"{SERVICE_ACCOUNT_DIR}/namespace", namespace.encode()),
            (f"{SERVICE_ACCOUNT_DIR}/token", _FAKE_TOKEN))


@dataclass(frozen=True, slots=True)
class ProcessView:
    """A controller's environment variables, command line and mounted files (absolute path → content).

    ``args`` None leaves ``sys.argv`` alone (controllers that are not programs); otherwise the
    program sees ``[argv0, *args]``, where ``argv0`` is its file as the loader found it.
    """

    env: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] | None = None
    files: tuple[tuple[str, bytes], ...] = ()
    #: ``processes: allowed``: the code may start processes (the worker's audit hook refuses them otherwise)
    processes_allowed: bool = False

    @classmethod
    def in_pod(cls, env: tuple[tuple[str, str], ...], args: tuple[str, ...] | None,
               files: tuple[tuple[str, bytes], ...], *, processes_allowed: bool = False) -> ProcessView:
        """A controller's view in its pod: the service-account mount (namespace ``default``) under ``files``."""
        mounted = dict(service_account_files("default"))
        mounted.update(files)
        return cls(env=env, args=args, files=tuple(sorted(mounted.items())), processes_allowed=processes_allowed)

    @classmethod
    def of(cls, env: Mapping[str, str] | ProcessView | None) -> ProcessView:
        """A view from what a loader was given: a view, or a plain ``env:`` mapping (or nothing)."""
        if isinstance(env, ProcessView):
            return env
        return cls(env=tuple(sorted((env or {}).items())))


@contextlib.contextmanager
def process_scope(view: ProcessView, argv0: str) -> Iterator[None]:
    """Set ``view``'s environment, ``sys.argv`` and files for the block; restore all of it on any exit."""
    with environment(dict(view.env)), _argv(view.args, argv0), _mounted(view.files):
        yield


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """Set a controller's ``env:`` for the duration of its code, then put every variable back."""
    if not env:
        yield
        return
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _argv(args: tuple[str, ...] | None, argv0: str) -> Iterator[None]:
    if args is None:
        yield
        return
    saved = sys.argv
    sys.argv = [argv0, *args]
    try:
        yield
    finally:
        sys.argv = saved


# -- files -----------------------------------------------------------------------------------------------------

_REAL_OPEN = builtins.open
_REAL_STAT = os.stat
_REAL_LSTAT = os.lstat
_REAL_LISTDIR = os.listdir
_REAL_ACCESS = os.access
#: the files mounted now (absolute, normalised path → content) and the folders holding them
_FILES: dict[str, bytes] = {}
_FOLDERS: dict[str, set[str]] = {}


@contextlib.contextmanager
def _mounted(files: tuple[tuple[str, bytes], ...]) -> Iterator[None]:
    if not files:
        yield
        return
    # nested (a controller's scope inside another's): the inner one's files replace the outer's
    saved = (dict(_FILES), {k: set(v) for k, v in _FOLDERS.items()}) if _FILES else None
    _FILES.clear()
    _FOLDERS.clear()
    for path, content in files:
        _FILES[path] = content
        child, parent = path, os.path.dirname(path)
        while child != parent:
            _FOLDERS.setdefault(parent, set()).add(os.path.basename(child))
            child, parent = parent, os.path.dirname(parent)
    patches = ((builtins, "open", _open), (io, "open", _open), (os, "stat", _stat), (os, "lstat", _lstat),
               (os, "listdir", _listdir), (os, "access", _access))
    for owner, name, stand_in in patches:
        setattr(owner, name, stand_in)
    try:
        yield
    finally:
        builtins.open = io.open = _REAL_OPEN
        os.stat, os.lstat, os.listdir, os.access = _REAL_STAT, _REAL_LSTAT, _REAL_LISTDIR, _REAL_ACCESS
        _FILES.clear()
        _FOLDERS.clear()
        if saved is not None:
            _FILES.update(saved[0])
            _FOLDERS.update(saved[1])
            for owner, name, stand_in in patches:
                setattr(owner, name, stand_in)


def _key(path: Any) -> str | None:
    """The normalised absolute path a mounted file would have, or None for what is not a path string."""
    if isinstance(path, int):
        return None
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        return None
    return os.path.normpath(text if text.startswith("/") else os.path.join(os.getcwd(), text))


def _missing(path: Any) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))


def _open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    key = _key(file)
    if key is not None and key in _FILES:
        if any(c in mode for c in "wax+"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(file))
        raw = io.BytesIO(_FILES[key])
        raw.name = os.fspath(file)
        if "b" in mode:
            return raw
        encoding = kwargs.get("encoding") or (args[1] if len(args) > 1 else None)
        errors = kwargs.get("errors") or (args[2] if len(args) > 2 else None)
        newline = kwargs.get("newline", args[3] if len(args) > 3 else None)
        return io.TextIOWrapper(raw, encoding=encoding or "utf-8", errors=errors, newline=newline)
    if key is not None and key in _FOLDERS:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(file))
    return _REAL_OPEN(file, mode, *args, **kwargs)


def _stat_result(key: str) -> os.stat_result | None:
    if key in _FILES:
        return os.stat_result((stat.S_IFREG | 0o644, 0, 0, 1, 0, 0, len(_FILES[key]), 0, 0, 0))
    if key in _FOLDERS:
        return os.stat_result((stat.S_IFDIR | 0o755, 0, 0, 2, 0, 0, 0, 0, 0, 0))
    return None


def _stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
    key = _key(path)
    found = _stat_result(key) if key is not None and "dir_fd" not in kwargs else None
    return found if found is not None else _REAL_STAT(path, *args, **kwargs)


def _lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
    key = _key(path)
    found = _stat_result(key) if key is not None and "dir_fd" not in kwargs else None
    return found if found is not None else _REAL_LSTAT(path, *args, **kwargs)


def _listdir(path: Any = ".") -> list[Any]:
    key = _key(path)
    if key is not None and key in _FOLDERS:
        # only what is mounted (a real folder of the same name is hidden, as under a volume mount):
        # a listing must not depend on the machine kamera runs on
        names = sorted(_FOLDERS[key])
        return [os.fsencode(n) for n in names] if isinstance(path, bytes) else names
    if key is not None and key in _FILES:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(path))
    return _REAL_LISTDIR(path)


def _access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
    key = _key(path)
    if key is not None and (key in _FILES or key in _FOLDERS) and not args and not kwargs:
        return not mode & os.W_OK
    return _REAL_ACCESS(path, mode, *args, **kwargs)
