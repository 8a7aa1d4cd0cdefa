"""The GitHub Action's step (action.yml): run `kamera check` the way a pull request is gated.

Kept as a script of its own, rather than inline shell in action.yml, so that tests run exactly what the
Action runs (tests/e2e/test_ci_recipes.py) with the environment a runner gives: GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY and GITHUB_ACTIONS=true. Inputs come as environment variables (never spliced into
shell text, so a path cannot inject a command):

- KAMERA_PATHS: scenario files or folders, separated by white space (quotes allowed, as in a shell);
- KAMERA_ARGS: more options for `kamera check`;
- KAMERA_OUTPUT_DIR: where kamera.xml (JUnit), kamera.json and kamera.html are written.

The script exits with kamera's own exit code, so the job fails exactly when `kamera check` would; the
Action's upload step runs whatever the outcome. Failing checks are annotated by kamera itself (with
GITHUB_ACTIONS=true it prints `::error file=...,line=...` for each), which GitHub shows on the pull
request's diff.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

_MARK = {"passed": "✅", "failed": "❌", "error": "⛔", "inconclusive": "⚠️"}


def _append(variable: str, text: str) -> None:
    """Append to the file a runner names in `variable` (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY), if any."""
    target = os.environ.get(variable)
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text)


def summary(result: dict[str, Any]) -> str:
    """The job summary: one row per scenario, failing ones first, with the checks that did not pass."""
    order = {"error": 0, "failed": 1, "inconclusive": 2, "passed": 3}
    rows = sorted(result.get("scenarios", []), key=lambda s: (order.get(s.get("verdict", ""), 4), s.get("name", "")))
    lines = ["## kamera check", "", "| | scenario | checks not passed |", "|---|---|---|"]
    for scenario in rows:
        verdict = scenario.get("verdict", "")
        checks = scenario.get("checks", [])
        bad = [f"{c['name']}: {c.get('message', '')}" for c in checks if c.get("verdict") != "passed"]
        if scenario.get("error"):
            bad.insert(0, str(scenario["error"]).splitlines()[0])
        cell = "<br>".join(text.replace("|", "\\|") for text in bad) or "—"
        lines.append(f"| {_MARK.get(verdict, verdict)} | {scenario.get('name', '')} | {cell} |")
    totals = result.get("summary", {})
    lines += ["", ", ".join(f"{totals.get(k, 0)} {k}" for k in ("passed", "failed", "error", "inconclusive")), ""]
    return "\n".join(lines)


def main() -> int:
    paths = shlex.split(os.environ.get("KAMERA_PATHS", "") or "scenarios/")
    extra = shlex.split(os.environ.get("KAMERA_ARGS", ""))
    out = Path(os.environ.get("KAMERA_OUTPUT_DIR", "") or "kamera-report")
    out.mkdir(parents=True, exist_ok=True)
    junit, html, result_json = out / "kamera.xml", out / "kamera.html", out / "kamera.json"
    command = [sys.executable, "-m", "kamera_cli", "check", *paths, "--junit", str(junit), "--json", str(result_json),
               "--html", str(html), *extra]
    print("$ " + shlex.join(["kamera", *command[3:]]), flush=True)
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    code = subprocess.run(command, env=env, check=False).returncode
    _append("GITHUB_OUTPUT", f"exit-code={code}\njunit={junit}\nhtml={html}\njson={result_json}\n")
    if result_json.is_file():
        _append("GITHUB_STEP_SUMMARY", summary(json.loads(result_json.read_text(encoding="utf-8"))))
    else:
        _append("GITHUB_STEP_SUMMARY", f"## kamera check\n\nno result was written (exit code {code}): see the log\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
