"""A controller entry that names a metacontroller manifest: read it, check it against its ``hooks``.

Why in the loader: a manifest that is not a CompositeController or DecoratorController, a hook the
manifest defines without a Python mapping, an unknown update method — each is the user's mistake,
reported with the manifest's file, line and field (or the scenario's, for the ``hooks`` mapping)
before anything is imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kamera_cli.adapters.metacontroller import HOOK_NAMES, parse_manifest
from kamera_cli.adapters.metacontroller.manifest import KINDS as CONTROLLER_KINDS
from kamera_cli.errors import Problem
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.yamldoc import Document, read_documents

__all__ = ["read_metacontroller"]


def read_metacontroller(raw: dict[str, Any], path: Path_, base_dir: str, display_dir: str,
                        doc: Document, problems: list[Problem],
                        check_entrypoint: Callable[[Any, Path_], None]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The manifest as canonical JSON and the hook mapping; ("", ()) when there are problems."""
    ref = raw.get("metacontroller")
    hooks = raw.get("hooks")
    start = len(problems)
    mapped: dict[str, str] = {}
    if not isinstance(hooks, dict) or not hooks:
        problems.append(doc.problem(path, "a metacontroller controller needs 'hooks' mapping each hook of its "
                                          "manifest to Python", "hooks: {sync: hooks/sync.py:sync}", key=True))
    else:
        for hook, entry in sorted(hooks.items()):
            if hook not in HOOK_NAMES:
                problems.append(doc.problem((*path, "hooks", hook), f"unknown hook {hook!r}",
                                            "metacontroller's hooks are " + ", ".join(HOOK_NAMES), key=True))
            elif isinstance(entry, str):
                mapped[hook] = entry
                check_entrypoint(entry, (*path, "hooks", hook))
    if "for" in raw:
        problems.append(doc.problem((*path, "for"), "a metacontroller controller's parent resource comes from its "
                                    "manifest", "remove 'for' (spec.parentResource / spec.resources)", key=True))
    if not isinstance(ref, str) or not ref:
        return "", ()
    absolute = ref if os.path.isabs(ref) else str(Path(base_dir) / ref)
    if not os.path.isfile(absolute):
        problems.append(doc.problem((*path, "metacontroller"), f"metacontroller manifest {ref!r} not found "
                                    f"(looked for {absolute})", "paths are relative to the scenario file's folder"))
        return "", ()
    display = ref if os.path.isabs(ref) else os.path.join(display_dir, ref)
    documents = read_documents(absolute, display, problems)
    if documents is None:
        return "", ()
    found = [d for d in documents if d.data is not None]
    # a deployment file usually holds the hook server's Deployment and Service as well: take the
    # one controller document (when there is none, the first document is reported as not one)
    controllers = [d for d in found if isinstance(d.data, dict) and d.data.get("kind") in CONTROLLER_KINDS]
    if len(controllers) > 1:
        problems.append(controllers[1].problem(("kind",), f"{ref} holds {len(controllers)} metacontroller "
                                               "controllers; name a file with one",
                                               "one controller entry per manifest"))
        return "", ()
    if not found:
        problems.append(doc.problem((*path, "metacontroller"), f"{ref} holds no YAML document"))
        return "", ()
    manifest = controllers[0] if controllers else found[0]
    spec, issues = parse_manifest(manifest.data, mapped)
    for issue in issues:
        problems.append(manifest.problem(issue.path, issue.message, issue.hint))
    if spec is None or len(problems) > start:
        return "", ()
    return json.dumps(manifest.data, sort_keys=True), tuple(sorted(mapped.items()))
