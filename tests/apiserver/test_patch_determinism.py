"""Patch results and managedFields are byte-identical whatever the interpreter's hash seed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json
from pathlib import Path
import kamera_cli.apiserver as pkg
from kamera_cli.apiserver.patch.functions import (builtin_field_lookup, server_side_apply, strategic_merge_patch,
                                           update_managed_fields)
defs = json.loads((Path(pkg.__file__).parent / "data" / "builtin.json").read_text())["definitions"]
f = builtin_field_lookup(defs, "io.k8s.api.apps.v1.Deployment")
cfg = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"z": "1", "a": "2"},
       "finalizers": ["x/b", "x/a"]},
       "spec": {"replicas": 1, "template": {"spec": {"containers": [
           {"name": n, "image": n, "ports": [{"containerPort": p, "protocol": "TCP"} for p in (90, 80)],
            "env": [{"name": e, "value": e} for e in ("Z", "A", "M")]} for n in ("c", "a", "b")]}}}}
live = server_side_apply(None, cfg, manager="m", force=False, fields=f, now="2026-01-01T00:00:00Z",
                         api_version="apps/v1")
patched = strategic_merge_patch(live, {"metadata": {"finalizers": ["x/c"], "labels": {"z": None}},
    "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b2"}, {"name": "n", "image": "n"}]}}}}, f)
patched["metadata"] = dict(patched["metadata"])
patched["metadata"]["managedFields"] = update_managed_fields(live, patched, manager="u", operation="Update",
    now="2026-01-01T00:00:01Z", api_version="apps/v1", fields=f)
print(json.dumps([live, patched]))
'''


def _run(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout


def test_output_does_not_depend_on_the_hash_seed() -> None:
    first = _run("1")
    assert first.strip()
    assert _run("2") == first
    assert _run("12345") == first
