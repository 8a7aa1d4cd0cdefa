"""A path cut by the depth bound that is one controller failing again and again says so."""

from __future__ import annotations

from dataclasses import dataclass

from kamera_cli.judging.verdicts import _retried


@dataclass(frozen=True)
class _Label:
    actor: str
    error: str = ""
    note: str = ""


@dataclass(frozen=True)
class _Edge:
    label: _Label


WRAPPED = ("kamera_cli.adapters.kopf.events.KopfHandlerError: Handler 'create_fn' failed with an exception and "
           "will try again in 60 seconds: boom\nTraceback (most recent call last): ...")


def test_the_same_failure_retried_is_named_with_what_it_wraps() -> None:
    path = [_Edge(_Label("db")), *[_Edge(_Label("db", WRAPPED)), _Edge(_Label("db"))] * 3]
    said = _retried(path)
    assert said.startswith(": 'db' failed 3 times on this path with the same error and was retried after each failure")
    assert "(Handler 'create_fn' failed with an exception and will try again in 60 seconds: boom)" in said
    assert "kamera_cli" not in said and "Traceback" not in said


def test_a_path_without_a_repeated_failure_says_nothing_more() -> None:
    assert _retried([_Edge(_Label("a")), _Edge(_Label("a", "one")), _Edge(_Label("b", "two"))]) == ""
    assert _retried([_Edge(_Label("a", "x")), _Edge(_Label("a", "y")), _Edge(_Label("a", "z"))]) == ""
    assert _retried([]) == ""


def test_a_long_error_is_cut() -> None:
    said = _retried([_Edge(_Label("c", "E" * 400))] * 4)
    assert said.endswith("…)") and len(said) < 300


def test_a_stack_header_is_not_what_is_named() -> None:
    # a traceback names its exception on its last line; a stack with no exception line (a thread's start
    # site, a refused connection's frames) is named by the step's note
    raised = "Traceback (most recent call last):\n  File \"op.py\", line 3, in f\n    g()\nValueError: bad spec\n"
    said = _retried([_Edge(_Label("a", raised))] * 3)
    assert said.endswith("(ValueError: bad spec)")
    thread = "Where the thread was started (most recent call last):\n  File \"net.py\", line 92, in probe\n"
    said = _retried([_Edge(_Label("dask", thread, "opened a network connection of its own"))] * 3)
    assert said.endswith("(opened a network connection of its own)")
