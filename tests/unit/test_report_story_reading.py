"""A counterexample reads like a story: a traceback told once per path, changes shown where they are."""

from __future__ import annotations

import json

import pytest

from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import Counterexample, DiffEntry, Step, Write
from kamera_cli.report.story import story
from kamera_cli.report.text import format_change

TRACE = "Traceback (most recent call last):\n  File \"op.py\", line 3, in create\n    api.create()\nConflict: (409)\n"
OTHER = "Traceback (most recent call last):\n  File \"op.py\", line 9, in other\n    boom()\nKeyError: 'x'\n"
WIDGET = ObjectRef("example.com/v1", "Widget", "default", "demo")


def raising(index: int, error: str) -> Step:
    return Step(index, "reconcile", "widgets", "default/demo", note="raised", error=error)


def test_a_repeated_traceback_is_told_once_per_path_and_referred_back_to() -> None:
    cx = Counterexample("not-converged", "loops", steps=(raising(1, TRACE), raising(2, OTHER), raising(3, TRACE)),
                        loop=(raising(4, TRACE),))
    text = story(cx)
    assert text.count("api.create()") == 1 and text.count("boom()") == 1
    assert "  Conflict: (409) (the same traceback as step 1)" not in text  # the first line, not the last
    assert text.count("Traceback (most recent call last): (the same traceback as step 1)") == 2


def test_each_path_of_a_nondeterminism_tells_its_own_tracebacks() -> None:
    cx = Counterexample("nondeterministic", "two outcomes", steps=(raising(1, TRACE),),
                        alternative=(raising(1, TRACE),))
    assert story(cx).count("api.create()") == 2


def stamp(at: str) -> str:
    return json.dumps({"started": "2026-01-01T00:00:01.000000+00:00", "delayed": at, "purpose": "create",
                       "retries": 1, "success": False, "failure": False})


def test_a_long_change_shows_the_part_that_differs() -> None:
    old, new = stamp("2026-01-01T00:00:31.000000+00:00"), stamp("2026-01-01T00:01:01.000000+00:00")
    shown_old, shown_new = format_change(old, new)
    assert shown_old != shown_new
    assert "00:00:31" in shown_old and "00:01:01" in shown_new
    assert shown_old.startswith("…") and len(shown_old) <= 62
    step = Step(1, "reconcile", "widgets", "default/demo", writes=(
        Write("patched", WIDGET, diff=(DiffEntry("replace", "/metadata/annotations/x", old, new),)),))
    line = next(line for line in story(Counterexample("livelock", "x", steps=(step,)), verbose=False).splitlines()
                if line.lstrip().startswith("~"))
    before, _, after = line.partition(" → ")
    assert "00:00:31" in before and "00:01:01" in after


@pytest.mark.parametrize(
    ("old", "new"),
    [("a" * 100 + "X", "a" * 100 + "Y"), ("X" + "a" * 100, "Y" + "a" * 100), ("short", "other"),
     ({"k": "v" * 80}, {"k": "v" * 80, "j": 1}), ("a" * 70, "a" * 71)],
)
def test_the_two_sides_of_a_change_never_look_the_same(old: object, new: object) -> None:
    shown_old, shown_new = format_change(old, new)
    assert shown_old != shown_new
    assert max(len(shown_old), len(shown_new)) <= 62 or "…" not in shown_old + shown_new
