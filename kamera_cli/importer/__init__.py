"""``kamera import``: a scenario scaffolded from what a real cluster prints (layer 4, beside runner).

Why its own package above ``scenario``: it reuses the scenario layer's hardened YAML reading and
manifest sources, and the API server's registry for kinds and uids, but nothing imports it except
the command line; the scenario loader stays a reader of scenarios only.
"""

from __future__ import annotations

from dataclasses import dataclass

from kamera_cli.errors import Problem, UsageError
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


def import_scenario(options: ImportOptions) -> ImportReport:
    """Read the inputs, write the scenario folder; ``ScenarioError``/``UsageError`` (exit 2) on bad input."""
    if not options.inputs:
        raise UsageError("nothing to import: give files or folders of manifests (what kubectl get -o yaml prints)")
    imported = import_objects(options.inputs, options.namespaces, Options(keep_status=options.keep_status))
    out = prepare(options.out_dir, options.force)
    name = scenario_name(options.name, options.out_dir)
    written = write(out, imported, name=name, inputs=list(options.inputs), timeline=Timeline())
    return ImportReport(
        out_dir=options.out_dir,
        files=tuple(written.files),
        objects=len(imported.objects),
        kinds=len({s.ref.kind_ref for s in imported.objects}),
        crds=len(imported.crds),
        actions=0,
        warnings=tuple(sorted(imported.warnings, key=Problem.sort_key)),
        notes=tuple(imported.notes),
    )


__all__ = ["ImportOptions", "ImportReport", "import_scenario"]
