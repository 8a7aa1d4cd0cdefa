"""Copies of the quickstart scenario whose controller misbehaves in one chosen way."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart"


def scenario_with(tmp_path: Path, code: str, *, at_import: bool = False, processes_allowed: bool = False) -> Path:
    """The quickstart scenario whose controller runs ``code`` first in every reconcile (or at import);
    ``processes_allowed`` gives the controller ``processes: allowed``."""
    target = tmp_path / "scenario"
    shutil.copytree(QUICKSTART, target)
    if processes_allowed:
        spec = target / "scenario.yaml"
        entry = "      entrypoint: controllers/widget.py:reconcile\n"
        spec.write_text(spec.read_text().replace(entry, entry + "      processes: allowed\n"))
    ctrl = target / "controllers" / "widget.py"
    text = ctrl.read_text()
    if at_import:
        text = text.replace("config.load_kube_config()\n", "config.load_kube_config()\n" + textwrap.dedent(code) + "\n")
    else:
        body = textwrap.indent(textwrap.dedent(code), "    ")
        text = text.replace("def reconcile(request):\n", "def reconcile(request):\n" + body + "\n")
    ctrl.write_text(text)
    return target
