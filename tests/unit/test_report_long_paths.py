"""Long paths (a cut at maxDepth) are shortened on the terminal, never in JUnit or with -v."""

from __future__ import annotations

from kamera_cli.model.result import Counterexample, Step
from kamera_cli.report.story import story, story_lines

STEPS = tuple(Step(index=i, kind="reconcile", actor="c", request="default/x") for i in range(1, 31))
CEX = Counterexample(kind="not-converged", summary="not converged within 30 steps", steps=STEPS)


def test_terminal_shows_the_ends_of_a_long_path() -> None:
    lines = story_lines(CEX)
    assert lines[1].startswith("1. ") and lines[-1].startswith("30. ")
    assert "… 18 more steps" in "\n".join(lines)
    assert not any(line.startswith("7. ") for line in lines)


def test_verbose_and_junit_text_keep_every_step() -> None:
    text = story(CEX)  # the JUnit/JSON story is verbose
    assert all(f"{i}. c reconcile" in text for i in range(1, 31))
    assert "more steps" not in text
