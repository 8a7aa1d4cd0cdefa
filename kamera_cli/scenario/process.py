"""A controller's command line, files and sweep schedule (``args:``, ``files:``, ``schedule:``, ``firstTick:``;
docs/scenario.md, "spec.controllers").

Why after the seed: a file may be a ConfigMap's or Secret's key, mounted as a volume would mount it,
so the seeded objects must be known; and why at load time: the contents are fixed when the pod
starts (kamera does not update a mounted file when its ConfigMap changes), so the loader resolves
them once, with every problem located, and the model carries plain bytes.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from kamera_cli.controlplane.cronjob import schedule_times
from kamera_cli.model.objects import Manifest
from kamera_cli.model.scenario import ControllerSpec
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.values import as_dict, as_list, as_str

__all__ = ["with_process"]

#: (path, message, hint) -> None
Add = Callable[[Path_, str, str], None]


def with_process(raw_controllers: Sequence[Any], controllers: tuple[ControllerSpec, ...], seed: Sequence[Manifest],
                 base_dir: str, add: Add) -> tuple[ControllerSpec, ...]:
    """The controllers with their ``args`` and ``files`` read from their scenario entries (matched by name)."""
    by_name = {spec.name: spec for spec in controllers}
    done: dict[str, ControllerSpec] = {}
    for i, raw in enumerate(raw_controllers):
        if not isinstance(raw, dict) or as_str(raw.get("name")) not in by_name:
            continue
        spec = by_name[raw["name"]]
        path: Path_ = ("spec", "controllers", i)
        args: tuple[str, ...] | None = None
        if spec.shape in ("program", "sweep", "handler", "metacontroller"):  # run as a command of their own
            args = tuple(a for a in as_list(raw.get("args")) if isinstance(a, str))
        elif "args" in raw:
            add((*path, "args"), "'args' is a program's command line (sys.argv after its file)",
                "give args to a program, sweep, handler or metacontroller hook server; reconcilers and kopf "
                "operators are not run as a command of their own")
        files = _files(as_dict(raw.get("files")), (*path, "files"), seed, base_dir, add)
        schedule = as_str(raw.get("schedule")) or None if spec.program is not None else None
        if schedule is not None and not _valid_cron(schedule, (*path, "schedule"), add):
            schedule = None
        first_tick: Literal["start", "afterPeriod"] = "afterPeriod" if raw.get("firstTick") == "afterPeriod" \
            else "start"
        done[spec.name] = replace(spec, args=args, files=files, schedule=schedule, first_tick=first_tick)
    return tuple(done.get(spec.name, spec) for spec in controllers)


def _valid_cron(expression: str, at: Path_, add: Add) -> bool:
    """A sweep's ``schedule`` is a five-field cron expression (or ``@hourly``...), as a CronJob's."""
    try:
        next(schedule_times(expression, 0.0, datetime.timezone.utc), None)
    except ValueError as exc:
        add(at, f"{expression!r} is not a cron schedule: {exc}", "write five fields, as a CronJob's: '*/5 * * * *'")
        return False
    return True


def _files(raw: Mapping[str, Any], path: Path_, seed: Sequence[Manifest], base_dir: str,
           add: Add) -> tuple[tuple[str, bytes], ...]:
    found: dict[str, bytes] = {}
    for target, source in raw.items():
        at: Path_ = (*path, target)
        if not target.startswith("/") or os.path.normpath(target) in ("/", "//"):
            add(at, f"{target!r} is not an absolute path below /",
                "write the path the controller opens, as in its pod: /config/settings.yaml")
            continue
        for name, content in _contents(os.path.normpath(target), source, at, seed, base_dir, add):
            if name in found:
                add(at, f"{name!r} is mounted twice", "give each file one source")
            found[name] = content
    return tuple(sorted(found.items()))


def _contents(target: str, source: Any, at: Path_, seed: Sequence[Manifest], base_dir: str,
              add: Add) -> list[tuple[str, bytes]]:
    """What one ``files:`` entry mounts: one file, or a folder of a ConfigMap's or Secret's keys."""
    if isinstance(source, str):
        source = {"file": source}
    if not isinstance(source, dict):
        return []  # the schema reports it
    if "content" in source:
        return [(target, as_str(source["content"]).encode())]
    if "file" in source:
        name = as_str(source["file"])
        full = os.path.join(base_dir, name)
        try:
            with open(full, "rb") as handle:
                return [(target, handle.read())]
        except OSError as exc:
            add(at, f"cannot read {name!r}: {exc.strerror or exc}", "paths are relative to the scenario's folder")
            return []
    kind = "ConfigMap" if "fromConfigMap" in source else "Secret"
    name = as_str(source.get("fromConfigMap", source.get("fromSecret")))
    namespace = as_str(source.get("namespace")) or "default"
    obj = next((o for o in seed if o.get("apiVersion") == "v1" and o.get("kind") == kind
                and as_dict(o.get("metadata")).get("name") == name
                and (as_dict(o.get("metadata")).get("namespace") or "default") == namespace), None)
    if obj is None:
        add(at, f"no {kind} {namespace}/{name} in the seed", f"seed the {kind} the volume mounts")
        return []
    keys = _keys(obj, kind, at, add)
    if "key" in source:
        key = as_str(source["key"])
        if key not in keys:
            add((*at, "key"), f"{kind} {namespace}/{name} has no key {key!r}",
                f"its keys: {', '.join(sorted(keys)) or 'none'}")
            return []
        return [(target, keys[key])]
    return [(f"{target}/{key}", content) for key, content in sorted(keys.items())]


def _keys(obj: Manifest, kind: str, at: Path_, add: Add) -> dict[str, bytes]:
    """A ConfigMap's ``data`` and ``binaryData``, or a Secret's ``data`` (decoded) and ``stringData``."""
    keys: dict[str, bytes] = {}
    encoded = "binaryData" if kind == "ConfigMap" else "data"
    plain = "data" if kind == "ConfigMap" else "stringData"
    for key, value in as_dict(obj.get(encoded)).items():
        try:
            keys[key] = base64.b64decode(as_str(value), validate=True)
        except (binascii.Error, ValueError):
            add(at, f"{kind} key {key!r} in {encoded} is not base64", "fix the seeded object")
    for key, value in as_dict(obj.get(plain)).items():
        keys[key] = as_str(value).encode()
    return keys
