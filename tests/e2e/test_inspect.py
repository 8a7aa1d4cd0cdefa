"""``kamera inspect``: the command's errors, and the Textual app driven headless by its test pilot.

Covers: a missing file, a non-JSON file and a foreign document are usage errors (exit 2) with the
file named; the app, on a real result (a livelock, with its graph recorded), is navigated with the
keyboard only — down and enter open scenarios, checks, counterexamples and steps, and the detail
pane shows the selected step's diff; a state of the graph shows its objects; q quits.  The app part
skips, saying how to install, without the ``inspect`` extra.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kamera_cli.cli import app
from kamera_cli.model.result import CheckResult
from kamera_cli.report import from_json, to_json
from kamera_cli.runner import Overrides, check_file

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def test_unreadable_or_foreign_files_are_usage_errors(tmp_path: Path) -> None:
    code, _out, err = invoke("inspect", str(tmp_path / "missing.json"))
    assert code == 2 and "missing.json: cannot read" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    code, _out, err = invoke("inspect", str(bad))
    assert code == 2 and "bad.json:1:2: not JSON" in err
    bad.write_text(json.dumps({"version": "other/v9", "scenarios": []}), encoding="utf-8")
    code, _out, err = invoke("inspect", str(bad))
    assert code == 2 and "unsupported result format version 'other/v9'" in err


def test_without_a_terminal_it_refuses_with_exit_2(tmp_path: Path) -> None:
    result_file = tmp_path / "r.json"
    result_file.write_text(json.dumps(to_json(CheckResult(()))), encoding="utf-8")
    code, out, err = invoke("inspect", str(result_file))  # CliRunner's streams are not terminals
    assert (code, out) == (2, "")
    assert "kamera inspect is interactive and needs a terminal, but standard output is not one" in err
    # as a user piping it would: a real process whose stdout is a pipe ends at once
    run = subprocess.run([sys.executable, "-m", "kamera_cli", "inspect", str(result_file)], capture_output=True,
                         text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert run.returncode == 2 and "needs a terminal" in run.stderr and "\x1b" not in run.stdout


def _result() -> CheckResult:
    scenario = check_file(ROOT / "scenarios/bugs/livelock/scenario.yaml", Overrides(graph_states=100))
    return from_json(json.loads(json.dumps(to_json(CheckResult((scenario,))))))  # as read from a file


def test_the_app_is_browsed_with_the_keyboard() -> None:
    pytest.importorskip("textual", reason="the inspect extra is not installed: pip install -e '.[inspect]'")
    from textual.widgets import Static, Tree

    from kamera_cli.report.inspector import Inspector

    def detail(inspector: Any) -> str:
        return str(inspector.query_one("#detail", Static).render())

    async def drive() -> None:
        inspector = Inspector(_result(), "r.json")
        async with inspector.run_test(size=(160, 50)) as pilot:
            tree = inspector.query_one("#tree", Tree)
            assert "1 scenario: 1 failed" in detail(inspector)
            await pilot.press("down")  # the scenario
            assert "bug-livelock FAILED" in detail(inspector)
            await pilot.press("enter", "down")  # open it; its first check
            assert "converges" in detail(inspector) and "livelock" in detail(inspector)
            await pilot.press("enter", "down")  # open the check; its counterexample (the story)
            assert "↺ back to step 2" in detail(inspector)
            await pilot.press("enter", "down", "down")  # open it; its second step (the loop's first)
            text = detail(inspector)
            assert text.startswith("2. deployer reconcile default/web") and '~ /data/replicas: "5" → "3"' in text
            assert "read or wrote:" in text and "v1/ConfigMap default/web" in text
            cursor = tree.cursor_node
            assert cursor is not None and str(cursor.label).startswith("loop 2. deployer")
            # the recorded graph: jump to it, open it, open a state, look at an object
            graph = next(n for n in tree.root.children[0].children if str(n.label).startswith("state graph"))
            tree.move_cursor(graph)
            await pilot.press("enter", "down")
            assert detail(inspector).startswith("state 0, depth 0") and "tags: initial" in detail(inspector)
            await pilot.press("enter", "down")
            assert "apiVersion: v1" in detail(inspector)
            await pilot.press("q")
        assert inspector.return_code in (0, None)

    asyncio.run(drive())
