"""Writing an imported cluster out as a scenario folder: ``scenario.yaml``, ``crds/``, ``seed/``.

Why text for ``scenario.yaml`` and a dumper for the manifests: the scaffold's value is in its
comments (what to fill in, what was found, what was skipped), which no YAML dumper writes; the
manifests are data and must read back exactly as they were cleaned, so they go through PyYAML with
block style and no anchors, and strings that YAML 1.1 would read as something else are quoted.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kamera_cli.errors import UsageError
from kamera_cli.importer.cluster import Imported, Seeded
from kamera_cli.model.objects import KindRef
from kamera_cli.scenario import API_VERSION, KIND

#: the built-in controllers (spec.cluster.builtins) that act on a built-in kind
_BUILTINS_FOR = {
    KindRef("apps", "v1", "Deployment"): ("deployment",),
    KindRef("apps", "v1", "ReplicaSet"): ("replicaset",),
    KindRef("apps", "v1", "StatefulSet"): ("statefulset",),
    KindRef("apps", "v1", "DaemonSet"): ("daemonset",),
    KindRef("batch", "v1", "Job"): ("job",),
    KindRef("", "v1", "Pod"): ("kubelet",),
    KindRef("", "v1", "PersistentVolumeClaim"): ("pvc-binder",),
}
#: built-ins the scaffold names but leaves off: they follow every pod change of every Service, which
#: multiplies the states of a search (the fixture's Deployment and two Services: 137 states with the
#: workload built-ins, more than 3,000 unfinished with these too); on when a controller reads Endpoints
_OPTIONAL_FOR = {
    KindRef("", "v1", "Service"): ("endpoints", "endpointslice"),
}
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$")  # the schema's metadata.name pattern
_CLUSTER_FILE = "_cluster"  # '_' cannot start a namespace name, so no namespace file collides


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # a lone surrogate (JSON may carry one, Unicode has none) cannot be in a YAML stream, escaped or
    # not: it is written as the text \udXXX, the way the JSON it came from spelled it
    value = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    style = "|" if "\n" in value else None  # the emitter falls back when a block cannot hold it
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=120)


def dump_documents(objects: Sequence[Any]) -> str:
    return "---\n".join(dump(o) for o in objects)


@dataclass(frozen=True, slots=True)
class Timeline:
    """User actions for ``spec.actions`` and comment lines saying what was not replayed."""

    actions: tuple[dict[str, Any], ...] = ()
    comments: tuple[str, ...] = ()
    source: str = ""


@dataclass
class Written:
    files: list[str] = field(default_factory=list)
    seed_files: list[str] = field(default_factory=list)
    crd_files: list[str] = field(default_factory=list)
    builtins: tuple[str, ...] = ()


#: spec.explore.maxDepth grows with the timeline (the scenario's default is 50 steps)
DEPTH_PER_ACTION = 10


def explore_depth(actions: int) -> int:
    """Room for every replayed action and the controllers' reactions, within the schema's bound."""
    return min(50 + DEPTH_PER_ACTION * actions, 100_000)


def scenario_name(given: str, out_dir: str) -> str:
    """``given``, or the folder's name made into a valid scenario name."""
    if given:
        if not _NAME.match(given):
            raise UsageError(f"--name {given!r}: a scenario name is lower-case letters, digits, '-', '.' and '_', "
                             "starting and ending with a letter or digit")
        return given
    base = os.path.basename(os.path.normpath(os.path.abspath(out_dir))).lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", base).strip("-._")
    return name or "imported"


def prepare(out_dir: str, force: bool) -> Path:
    """The output folder, created; refuses a non-empty one unless ``force``."""
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise UsageError(f"-o {out_dir}: is a file; give a folder for the scenario")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise UsageError(f"-o {out_dir}: the folder is not empty; choose another or pass --force to overwrite "
                         "the files the import writes")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out_dir}: cannot create the folder: {exc.strerror or exc}") from exc
    return path


def _seed_groups(objects: Sequence[Seeded]) -> list[tuple[str, list[Seeded]]]:
    groups: dict[str, list[Seeded]] = {}
    for s in objects:
        groups.setdefault(s.ref.namespace or _CLUSTER_FILE, []).append(s)
    return sorted(groups.items(), key=lambda kv: (kv[0] != _CLUSTER_FILE, kv[0]))


def write(out: Path, imported: Imported, *, name: str, inputs: Sequence[str], timeline: Timeline) -> Written:
    written = Written()

    def put(rel: str, text: str) -> None:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
        written.files.append(rel)

    for crd in imported.crds:
        rel = f"crds/{crd.ref.name or 'crd'}.yaml"
        put(rel, dump(crd.obj))
        written.crd_files.append(rel)
    for group, members in _seed_groups(imported.objects):
        rel = f"seed/{group}.yaml"
        put(rel, dump_documents([s.obj for s in members]))
        written.seed_files.append(rel)
    put("scenario.yaml", scenario_text(imported, name=name, inputs=inputs, timeline=timeline, written=written))
    return written


def _kind_counts(imported: Imported) -> list[tuple[KindRef, int]]:
    counts: dict[KindRef, int] = {}
    for s in imported.objects:
        counts[s.ref.kind_ref] = counts.get(s.ref.kind_ref, 0) + 1
    return sorted(counts.items(), key=lambda kv: (kv[0].group, kv[0].kind, kv[0].version))


def _example_kind(imported: Imported, counts: list[tuple[KindRef, int]]) -> KindRef:
    custom = [k for k, _ in counts if (info := imported.registry.lookup(k.api_version, k.kind)) and info.custom]
    ordinary = [k for k, _ in counts if k.kind != "Namespace"]
    return (custom or ordinary or [KindRef("example.com", "v1", "Widget")])[0]


#: what YAML does not allow in a stream (control characters, surrogates, U+FFFE/U+FFFF) or reads as a
#: line break (which would end a comment and make the rest of the line YAML)
_NOT_IN_A_LINE = re.compile("[^\t\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _printable(line: str) -> str:
    """One line of the text the scaffold writes itself, with file names, user and object names escaped.

    Why: the comments quote what the inputs hold (an audit log's user names, paths); a line break in
    one would turn the rest of the comment into YAML, a control character makes the file unreadable.
    """
    return _NOT_IN_A_LINE.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) < 0x10000
                              else f"\\U{ord(m.group()):08x}", line)


def scenario_text(imported: Imported, *, name: str, inputs: Sequence[str], timeline: Timeline,
                  written: Written) -> str:
    counts = _kind_counts(imported)
    example = _example_kind(imported, counts)
    found = sorted({b for k, _ in counts for b in _BUILTINS_FOR.get(k, ())})
    # with an audit timeline, every placement of every action among the built-ins' steps multiplies the
    # search (the fixture's 7 actions: 53 states with one controller, unfinished after 10 minutes with
    # the deployment and kubelet built-ins too): there they are offered, not enabled
    builtins = [] if timeline.actions else found
    written.builtins = tuple(builtins)
    optional = sorted({b for k, _ in counts for b in _OPTIONAL_FOR.get(k, ())})
    sources = ", ".join(inputs) if inputs else "no manifests"
    and_log = f" and {timeline.source}" if timeline.source else ""
    lines = [
        f"# Scaffolded by `kamera import` from {sources}{and_log}.",
        f"# {len(imported.objects)} seed object(s) of {len(counts)} kind(s) in {len(written.seed_files)} file(s), "
        f"{len(imported.crds)} CustomResourceDefinition(s)"
        + (f", {len(timeline.actions)} user action(s) from the audit log." if timeline.source else "."),
        ("# It runs as it is: the built-in controllers for the workload kinds found are enabled below. Next: add"
         if builtins else "# Next:")
        + " your controllers where the TODO says, add invariants, then run kamera check on this folder.",
        f"apiVersion: {API_VERSION}",
        f"kind: {KIND}",
        "metadata:",
        f"  name: {json.dumps(name)}",
        f"  description: {json.dumps('Imported from ' + sources + and_log, ensure_ascii=False)}",
        "spec:",
        "  # TODO(kamera import): your controllers under test go here."
        + ("" if builtins else ' Until at least one is named (or a'),
        *([] if builtins else
          ['  # built-in under spec.cluster.builtins), kamera check stops with "no controllers to check".']),
        "  # The seed holds these kinds:",
        *[f"  #   {k} ({n})" for k, n in counts],
        "  # For example:",
        f"  #   - name: {example.kind.lower()}",
        "  #     entrypoint: controllers/my_controller.py:reconcile   # relative to this folder",
        f"  #     for: {example}",
        "  #     owns: [v1/ConfigMap]",
        "  controllers: []",
    ]
    if builtins:
        lines += [
            "  # The built-in controllers that act on the kinds found above, enabled so that kamera validate and",
            "  # kamera check run on this folder at once (docs/builtins.md); they run with your controllers.",
            "  cluster:",
            f"    builtins: [{', '.join(builtins)}]",
        ]
        if optional:
            lines += [f"    # {', '.join(optional)}: left off, since they react to every pod of every Service, which",
                      "    # multiplies the states to explore; add them when your controllers read Endpoints."]
    elif found:
        lines += [
            "  # Built-in controllers acting on the kinds found above, left off because every placement of the",
            "  # replayed actions among their steps multiplies the search; uncomment when your controllers wait",
            "  # for workloads (docs/builtins.md):",
            "  # cluster:",
            f"  #   builtins: [{', '.join(found)}]",
        ]
    elif optional:
        lines += [
            f"  # Built-ins for the Services found ({', '.join(optional)}), left off: add them under",
            "  # spec.cluster.builtins when your controllers read Endpoints or EndpointSlices.",
        ]
    if written.crd_files:
        lines += ["  crds:", *[f"    - {f}" for f in written.crd_files]]
    lines += ["  seed:" if written.seed_files else "  seed: []", *[f"    - {f}" for f in written.seed_files]]
    if timeline.actions:
        lines += [
            f"  # The default 50 steps plus {DEPTH_PER_ACTION} per replayed action: the longest path holds every",
            "  # action and the controllers' reactions. Raise it if a check says \"not converged within N steps\".",
            "  explore:",
            f"    maxDepth: {explore_depth(len(timeline.actions))}",
        ]
    if timeline.source:
        lines.append(f"  # User actions replayed from {timeline.source}, in recorded order. `at: any` explores every")
        lines.append("  # placement of each among the controllers' steps (`at: converged` waits for convergence).")
        lines += [f"  # {c}" for c in timeline.comments]
    lines = [_printable(line) for line in lines]
    if timeline.actions:
        lines.append("  actions:")
        body = dump(list(timeline.actions))
        lines += ["    " + line if line else line for line in body.rstrip("\n").split("\n")]
    return "\n".join(lines) + "\n"
