"""Perturbations in a scenario (``spec.perturbations``): stale reads, crashes and conflicts, each
naming a controller the scenario has."""

from __future__ import annotations

from typing import Any

from kamera_cli.model.scenario import ConflictSpec, CrashSpec, Perturbations, StaleReadSpec
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.reading import Reader
from kamera_cli.scenario.schema import did_you_mean
from kamera_cli.scenario.values import as_dict, as_int, as_list


def controller_ref(ld: Reader, value: Any, path: Path_) -> str | None:
    """A controller's name, ``"*"``, or one part of a controller: ``<name>/<part>`` (a kopf timer or
    daemon, ``rmns/timer:cleanup``; a metacontroller's parent, ``name/Kind``), whose part is checked
    when the controllers are loaded (only then are a module's timers known)."""
    if not isinstance(value, str):
        return None
    owner, slash, part = value.partition("/")
    if slash and part and owner in ld.controller_names:
        return value
    if value != "*" and value not in ld.controller_names:
        names = ", ".join(ld.controller_names)
        listed = f'controllers: {names}, or "*" for all' if names else ""
        hint = did_you_mean(value, ld.controller_names) or listed
        ld.add(path, f"no controller named {value!r}", hint)
        return None
    return value

def read_perturbations(ld: Reader, raw: dict[str, Any]) -> Perturbations:
    stale: list[StaleReadSpec] = []
    for i, item in enumerate(as_list(raw.get("staleReads"))):
        path: Path_ = ("spec", "perturbations", "staleReads", i)
        item = as_dict(item)
        controller = controller_ref(ld, item.get("controller"), (*path, "controller"))
        kinds = [ld.kind_ref(v, (*path, "kinds", j)) for j, v in enumerate(as_list(item.get("kinds")))]
        if controller is not None and controller.partition("/")[0] in ld.program_names:
            ld.add((*path, "controller"), f"stale reads do not apply to {controller!r}, a program or handler",
                     "its watches already deliver one event at a time: a lagging view is one of the "
                     "interleavings explored")
        elif controller is not None:
            stale.append(
                StaleReadSpec(
                    controller,
                    tuple(k for k in kinds if k is not None),
                    max(1, as_int(item.get("maxLag"), 1)),
                    ld.position(path),
                )
            )
    crashes: list[CrashSpec] = []
    for i, item in enumerate(as_list(raw.get("crashes"))):
        path = ("spec", "perturbations", "crashes", i)
        item = as_dict(item)
        controller = controller_ref(ld, item.get("controller"), (*path, "controller"))
        after = tuple(sorted({n for n in as_list(item.get("afterWrites")) if as_int(n, -1) >= 0}))
        if controller is not None:
            crashes.append(CrashSpec(controller, after, max(1, as_int(item.get("max"), 1)), ld.position(path)))
    conflicts: list[ConflictSpec] = []
    for i, item in enumerate(as_list(raw.get("conflicts"))):
        path = ("spec", "perturbations", "conflicts", i)
        item = as_dict(item)
        controller = controller_ref(ld, item.get("controller"), (*path, "controller"))
        if controller is not None:
            conflicts.append(ConflictSpec(controller, max(1, as_int(item.get("max"), 1)), ld.position(path)))
    return Perturbations(tuple(stale), tuple(crashes), tuple(conflicts))
