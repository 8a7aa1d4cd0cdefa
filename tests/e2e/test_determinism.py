"""Same scenario, same verdict, same counterexample, same state counts — in any process, any hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _strip_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_timings(v) for k, v in value.items()
                if k not in ("elapsed_seconds", "states_per_second", "started_at", "time")}
    if isinstance(value, list):
        return [_strip_timings(v) for v in value]
    return value


def test_results_are_identical_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    outputs = []
    scenarios = [str(ROOT / "scenarios" / "bugs" / name) for name in ("order-dependent", "stale-read")]
    scenarios.append(str(ROOT / "scenarios" / "shapes" / "metacontroller"))  # a hook server, its engine
    for seed in ("0", "4242"):
        out = tmp_path / f"{seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": seed, "NO_COLOR": "1"}
        proc = subprocess.run([sys.executable, "-m", "kamera_cli", "check", *scenarios, "--json", str(out)],
                              env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert proc.returncode == 1, proc.stderr
        outputs.append(_strip_timings(json.loads(out.read_text())))
    assert outputs[0] == outputs[1]
