"""``kamera import``: a scenario scaffolded from what a real cluster prints (layer 6, beside runner).

May import: ``scenario``, ``apiserver``, ``model``, ``errors``; never ``runner`` or ``sim``.

Why its own package above ``scenario``: it reuses the scenario layer's hardened YAML reading and
manifest sources, and the API server's registry for kinds and uids, but nothing imports it except
the command line; the scenario loader stays a reader of scenarios only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from kamera_cli.errors import Problem, UsageError
from kamera_cli.importer.audit import AuditOptions, replay
from kamera_cli.importer.auditlog import parse_time
from kamera_cli.importer.cleaning import Options
from kamera_cli.importer.cluster import import_objects
from kamera_cli.importer.scaffold import Timeline, prepare, scenario_name, write


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """What ``kamera import`` was asked to do."""

    inputs: tuple[str, ...]
    out_dir: str
    namespaces: tuple[str, ...] = ()
    keep_status: bool = False
    force: bool = False
    name: str = ""
    #: audit logs to replay as spec.actions, and who counts as a user
    audit: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    exclude_users: tuple[str, ...] = ()
    at: Literal["any", "converged"] = "any"
    #: RFC 3339 times: replay only events that completed in this window (inclusive)
    since: str = ""
    until: str = ""


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What was written, and every warning and note the command prints."""

    out_dir: str
    files: tuple[str, ...]
    objects: int
    kinds: int
    crds: int
    actions: int
    warnings: tuple[Problem, ...]
    notes: tuple[str, ...]
    #: the built-in controllers the scaffold enabled (the scenario runs without one of the user's)
    builtins: tuple[str, ...] = ()


def _time(option: str, value: str) -> datetime | None:
    if not value:
        return None
    when = parse_time(value)
    if when is None:
        raise UsageError(f"{option} {value!r}: not an RFC 3339 time (e.g. 2025-11-20T10:00:00Z)")
    return when


def import_scenario(options: ImportOptions) -> ImportReport:
    """Read the inputs, write the scenario folder; ``ScenarioError``/``UsageError`` (exit 2) on bad input."""
    if not options.inputs and not options.audit:
        raise UsageError("nothing to import: give files or folders of manifests (what kubectl get -o yaml prints), "
                         "or --audit")
    if (options.since or options.until) and not options.audit:
        raise UsageError("--since and --until choose a window of an audit log: give --audit")
    since, until = _time("--since", options.since), _time("--until", options.until)
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {options.since} is after --until {options.until}: the window is empty")
    imported = import_objects(options.inputs, options.namespaces, Options(keep_status=options.keep_status))
    timeline = Timeline()
    warnings, notes = list(imported.warnings), list(imported.notes)
    if options.audit:
        replayed = replay(AuditOptions(files=options.audit, users=options.users, exclude_users=options.exclude_users,
                                       namespaces=options.namespaces, at=options.at, keep_status=options.keep_status,
                                       since=since, until=until),
                          imported.registry, [s.ref for s in imported.objects])
        timeline = Timeline(tuple(replayed.actions), tuple(replayed.comments), ", ".join(options.audit))
        warnings += replayed.warnings
        notes += replayed.notes
    name = scenario_name(options.name, options.out_dir)
    out = prepare(options.out_dir, options.force)
    written = write(out, imported, name=name, inputs=list(options.inputs), timeline=timeline)
    return ImportReport(
        out_dir=options.out_dir,
        files=tuple(written.files),
        objects=len(imported.objects),
        kinds=len({s.ref.kind_ref for s in imported.objects}),
        crds=len(imported.crds),
        builtins=written.builtins,
        actions=len(timeline.actions),
        warnings=tuple(sorted(warnings, key=Problem.sort_key)),
        notes=tuple(notes),
    )


__all__ = ["ImportOptions", "ImportReport", "import_scenario"]
