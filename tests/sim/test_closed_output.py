"""A reconcile that closes ``sys.stdout`` or ``sys.stderr`` is a finding, located (issue #28).

Why: kamera hands each step streams of its own, so closing one closed nothing and the run passed in
silence; in a real process every later print raises ``ValueError`` and the operator's logs are gone.
"""

from __future__ import annotations

import pytest

from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}

CODE = """
import sys


def closes_stdout(request):
    print("before")
    sys.stdout.close()  # closes stdout
    print("after")


def closes_stderr(request):
    sys.stderr.close()  # closes stderr


def prints(request):
    print("hello", file=sys.stderr)
"""


def _line(marker: str) -> int:
    (number,) = [i for i, text in enumerate(CODE.splitlines(), 1) if marker in text]
    return number


@pytest.mark.parametrize(("attr", "stream", "marker"), [
    ("closes_stdout", "sys.stdout", "# closes stdout"),
    ("closes_stderr", "sys.stderr", "# closes stderr"),
])
def test_closing_the_steps_output_is_a_located_finding(make_scenario: MakeScenario, attr: str, stream: str,
                                                       marker: str) -> None:
    result = explore(make_scenario(CODE, [("w", attr, CONFIGMAP)], [CM])).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is Verdict.FAILED
    (cex,) = check.counterexamples
    assert f"OutputClosed: closed {stream};" in cex.summary, cex.summary
    step = cex.steps[-1]
    assert f'File "ctrl.py", line {_line(marker)}, in {attr}' in step.error, step.error
    if attr == "closes_stdout":
        assert step.log == "before\nafter"  # what it printed after the close is still its log


def test_printing_to_stderr_is_no_finding(make_scenario: MakeScenario) -> None:
    result = explore(make_scenario(CODE, [("w", "prints", CONFIGMAP)], [CM])).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is Verdict.PASSED
