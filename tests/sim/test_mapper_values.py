"""What a watch mapper returns is read under its budget: a finding with a located message, never a hang.

Why (issue #28): the mapper's answer was read in kamera's own thread, after the budgeted call; a
generator that never ends, or a name whose ``__hash__`` never returns, hung kamera past every budget.
"""

from __future__ import annotations

import pytest

from kamera_cli.model.objects import KindRef
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import ControllerSpec, WatchSpec
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}

CODE = """
import itertools


def reconcile(request):
    return None


class Name(str):
    def __hash__(self):
        raise TypeError("a name that cannot be hashed")


class Pair(list):
    def __len__(self):
        while True: pass  # hangs measuring


def spins(obj):
    while True: pass  # spins


def endless(obj):
    return (("default", "a") for _ in itertools.count())


def _never():
    while True: pass  # never yields
    yield


def hangs_iterating(obj):
    return _never()


def huge(obj):
    return [("default", f"n{i}") for i in range(20_000)]


def unhashable(obj):
    return [(["default"], "a")]


def str_subclass(obj):
    return [("default", Name("a"))]  # read as the plain string: its __hash__ is never called


def hangs_on_len(obj):
    return [Pair(["default", "a"])]


def ill_typed(obj):
    return [("default", 42)]


def number(obj):
    return 42


def plain(obj):
    return [("default", "a"), ("default", "a")]
"""


def _summary(make_scenario: MakeScenario, mapper: str) -> tuple[Verdict, str]:
    spec = ControllerSpec(name="m", entrypoint="ctrl.py:reconcile", for_kind=CONFIGMAP, timeout=0.5,
                          watches=(WatchSpec(KindRef("", "v1", "Namespace"), f"ctrl:{mapper}"),))
    result = explore(make_scenario(CODE, [spec], [CM])).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    return check.verdict, "\n".join(c.summary for c in check.counterexamples)


def _at(marker: str) -> str:
    """`` (at ctrl.py:N)`` for the line of ``ctrl.py`` holding ``marker``."""
    (number,) = [i for i, text in enumerate(CODE.splitlines(), 1) if marker in text]
    return f" (at ctrl.py:{number})"


TIMEOUT = ", called with v1/Namespace default: Timeout: did not return within 0.5 s"


@pytest.mark.parametrize(("mapper", "said"), [
    ("spins", _at("# spins") + TIMEOUT),
    ("hangs_iterating", _at("# never yields") + TIMEOUT),
    ("hangs_on_len", _at("# hangs measuring") + TIMEOUT),
    ("endless", ", called with v1/Namespace default: InvalidMapping: watch mapper returned more than 10000"),
    ("huge", ", called with v1/Namespace default: InvalidMapping: watch mapper returned more than 10000"),
    ("unhashable", ": InvalidMapping: watch mapper returned the pair (['default'], 'a'); namespace must be a string"),
    ("ill_typed", ": InvalidMapping: watch mapper returned the pair ('default', 42)"),
    ("number", ": InvalidMapping: watch mapper returned int 42"),
])
def test_a_mapper_answer_outside_the_budget_is_a_located_finding(make_scenario: MakeScenario, mapper: str,
                                                                 said: str) -> None:
    verdict, text = _summary(make_scenario, mapper)
    assert verdict is Verdict.FAILED
    assert f"watch mapper of controller 'm' failed: mapper ctrl:{mapper}" in text, text
    assert said in text, text


@pytest.mark.parametrize("mapper", ["plain", "str_subclass"])
def test_a_plain_mapper_answer_is_read_as_before(make_scenario: MakeScenario, mapper: str) -> None:
    verdict, text = _summary(make_scenario, mapper)
    assert verdict is Verdict.PASSED, text
