"""The terminal report: golden stories per counterexample kind, colour, quiet/verbose, annotations.

The goldens are the contract a user reads; a change to them is a change to kamera's output.
"""

from __future__ import annotations

import re

from kamera_cli.model.result import Check, CheckResult, Counterexample, DiffEntry, ScenarioResult, Step, Verdict, Write
from kamera_cli.model.scenario import Position
from kamera_cli.report import github_annotations, progress_line, render, summary_line
from kamera_cli.report.story import story

try:
    from tests.unit.test_report_samples import (
        CM,
        FILE,
        controller_error,
        everything,
        inconclusive,
        invariant_failure,
        livelock,
        load_error,
        nondeterministic,
        passing,
    )
except ImportError:  # tests/unit is not a package: pytest put this folder on sys.path
    from test_report_samples import (  # type: ignore[no-redef]
        CM,
        FILE,
        controller_error,
        everything,
        inconclusive,
        invariant_failure,
        livelock,
        load_error,
        nondeterministic,
        passing,
    )

ANSI = re.compile(r"\x1b\[[0-9;]*m")
STATS = "412 states, 1203 transitions, 380 reconciles, memo 62.0%, {c} converged, depth 9, 0.84s, 490 states/s"

LIVELOCK_GOLDEN = f"""\
✗ widget-fight FAILED {STATS.format(c=0)}
  ✗ converges — no converged state is reachable from 1 state
    livelock: widget and sidecar keep rewriting default/demo-cfg
    1. widget reconcile default/demo → created v1/ConfigMap default/demo-cfg; patched status of example.com/v1/Widget default/demo
       v1/ConfigMap default/demo-cfg:
         + /data/key: "v"
       example.com/v1/Widget default/demo:
         ~ /status/phase: "Pending" → "Ready"
    loop:
      2. sidecar reconcile default/demo → updated v1/ConfigMap default/demo-cfg
         ~ /data/key: "v" → "w"
         - /metadata/labels/x
      3. widget reconcile default/demo → updated v1/ConfigMap default/demo-cfg
         ~ /data/key: "w" → "v"
      ↺ back to step 2
  ✓ deterministic

1 scenario: 1 failed (0.8s)
"""  # noqa: E501

CONTROLLER_ERROR_GOLDEN = f"""\
✗ widget-crash FAILED {STATS.format(c=1)}
  ✗ no controller errors — widget raised KeyError: 'replicas'
    controller-error: widget raised KeyError: 'replicas'
    1. widget reconcile default/demo → created v1/ConfigMap default/demo-cfg; patched status of example.com/v1/Widget default/demo
       v1/ConfigMap default/demo-cfg:
         + /data/key: "v"
       example.com/v1/Widget default/demo:
         ~ /status/phase: "Pending" → "Ready"
    2. widget reconcile default/demo — raised KeyError
       Traceback (most recent call last):
         … 6 lines omitted
         File "controllers/widget.py", line 40, in frame4
           call_4()
         File "controllers/widget.py", line 50, in frame5
           call_5()
         File "controllers/widget.py", line 60, in frame6
           call_6()
         File "controllers/widget.py", line 70, in frame7
           call_7()
         File "controllers/widget.py", line 80, in frame8
           call_8()
       KeyError: 'replicas'

1 scenario: 1 failed (0.8s)
"""  # noqa: E501

NONDETERMINISTIC_GOLDEN = f"""\
✗ widget-race FAILED {STATS.format(c=2)}
  ✗ deterministic — the order of reconciles decides the outcome
    nondeterministic: 2 different converged states
    path A:
      1. widget reconcile default/demo → created v1/ConfigMap default/demo-cfg; patched status of example.com/v1/Widget default/demo
         v1/ConfigMap default/demo-cfg:
           + /data/key: "v"
         example.com/v1/Widget default/demo:
           ~ /status/phase: "Pending" → "Ready"
    path B:
      1. sidecar reconcile default/demo → created v1/ConfigMap default/demo-cfg
         + /data/key: "w"
    the states differ:
      v1/ConfigMap default/demo-cfg
        ~ /data/key: "v" → "w"

1 scenario: 1 failed (0.8s)
"""  # noqa: E501

INVARIANT_GOLDEN = f"""\
✗ widget-leak FAILED {STATS.format(c=1)}
  ✗ invariant: one-configmap — expected count 1, got 2
    invariant: $.objects[?@.kind == 'ConfigMap'] has 2 nodes, expected count 1
    1. widget reconcile default/demo → created v1/ConfigMap default/demo-cfg; patched status of example.com/v1/Widget default/demo
       v1/ConfigMap default/demo-cfg:
         + /data/key: "v"
       example.com/v1/Widget default/demo:
         ~ /status/phase: "Pending" → "Ready"
    details:
      selected nodes:
        $.objects[1]: v1/ConfigMap default/demo-cfg
        $.objects[2]: v1/ConfigMap default/old

1 scenario: 1 failed (0.8s)
"""  # noqa: E501

INCONCLUSIVE_GOLDEN = """\
? widget-big INCONCLUSIVE 100000 states, 250000 transitions, 380 reconciles, memo 62.0%, 1 converged, depth 9, 12.5s, 8000 states/s, bound hit: maxStates 100000 reached
  ? converges — no counterexample in the states explored
  ✓ no controller errors

1 scenario: 1 inconclusive (12.5s)
"""  # noqa: E501

LOAD_ERROR_GOLDEN = """\
! broken ERROR scenarios/03-broken/scenario.yaml
    scenarios/03-broken/scenario.yaml:7:3: $.spec.controllers[0]: 'entrypoint' is a required property
    scenarios/03-broken/scenario.yaml:9:5: $.spec.seed: expected an array

1 scenario: 1 error (0.0s)
"""


def one(scenario: ScenarioResult) -> CheckResult:
    return CheckResult((scenario,))


def test_livelock_story_is_golden() -> None:
    assert render(one(livelock())) == LIVELOCK_GOLDEN


def test_controller_error_shows_the_last_frames_of_the_traceback() -> None:
    assert render(one(controller_error())) == CONTROLLER_ERROR_GOLDEN


def test_verbose_shows_the_whole_traceback() -> None:
    text = render(one(controller_error()), verbosity=1)
    assert "omitted" not in text
    assert "line 10, in frame1" in text


def test_nondeterminism_shows_both_paths_and_the_state_diff() -> None:
    assert render(one(nondeterministic())) == NONDETERMINISTIC_GOLDEN


def test_invariant_failure_shows_details() -> None:
    assert render(one(invariant_failure())) == INVARIANT_GOLDEN


def test_inconclusive_has_its_own_mark_and_the_bound() -> None:
    assert render(one(inconclusive())) == INCONCLUSIVE_GOLDEN


def test_load_error_prints_its_message() -> None:
    assert render(one(load_error())) == LOAD_ERROR_GOLDEN


def test_passing_scenario_lists_every_check() -> None:
    assert render(one(passing())) == (
        f"✓ widget-basic PASSED {STATS.format(c=1)}\n"
        "  ✓ converges\n"
        "  ✓ deterministic\n"
        "  ✓ no controller errors\n"
        "  ✓ invariant: one-configmap\n"
        "\n"
        "1 scenario: 1 passed (0.8s)\n"
    )


def test_summary_line_counts_every_verdict() -> None:
    assert summary_line(everything()) == "7 scenarios: 1 passed, 4 failed, 1 inconclusive, 1 error (16.7s)"
    assert summary_line(CheckResult(())) == "0 scenarios: nothing checked (0.0s)"
    two_errors = CheckResult((load_error(), load_error()))
    assert summary_line(two_errors) == "2 scenarios: 2 errors (0.0s)"


def test_quiet_shows_only_failing_scenarios_and_failing_checks() -> None:
    text = render(CheckResult((passing(), livelock())), verbosity=-1)
    assert "widget-basic" not in text
    assert "✓" not in text  # not even the passing check of the failing scenario
    assert text.startswith("✗ widget-fight FAILED")
    assert "↺ back to step 2" in text
    assert text.endswith("2 scenarios: 1 passed, 1 failed (1.7s)\n")


def test_quiet_with_everything_passing_is_just_the_summary() -> None:
    assert render(one(passing()), verbosity=-1) == "1 scenario: 1 passed (0.8s)\n"


def test_verbose_lists_converged_states_objects() -> None:
    text = render(one(passing()), verbosity=1)
    assert (
        "  converged states (1):\n"
        "    1. 3f9a0c1d2e4b (reached in 1 step, 2 objects)\n"
        "       example.com/v1/Widget default/demo\n"
        "       v1/ConfigMap default/demo-cfg\n"
    ) in text
    assert "    A widget owns one ConfigMap.\n" in text
    assert "converged states" not in render(one(passing()))


def test_colour_only_when_asked() -> None:
    plain = render(everything(), color=False)
    coloured = render(everything(), color=True)
    assert "\x1b" not in plain
    assert "\x1b[31m✗\x1b[0m" in coloured
    assert '\x1b[32m+ /data/key: "v"\x1b[0m' in coloured
    assert ANSI.sub("", coloured) == plain


def test_user_escape_sequences_never_reach_the_terminal() -> None:
    hostile = Check(
        "converges",
        Verdict.FAILED,
        "boom \x1b[2J\x1b[31mred\x1b[0m\rover",
        (Counterexample("controller-error", "x", (Step(1, "reconcile", "c", "ns/n", error="E\x1b[1mrr\x07"),)),),
    )
    result = one(ScenarioResult("s", FILE, Verdict.FAILED, (hostile,)))
    for color in (False, True):
        text = ANSI.sub("", render(result, color=color))
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    text = render(result)
    assert "boom red over" in text  # a carriage return cannot rewind the line
    assert "Err\\x07" in text


def test_long_values_are_cut_and_long_diffs_capped() -> None:
    big = "x" * 200
    entries = tuple(DiffEntry("add", f"/data/k{i:02d}", new=big) for i in range(15))
    step = Step(1, "reconcile", "c", "ns/n", (Write("created", CM, diff=entries),))
    lines = story(Counterexample("invariant", "s", (step,)), verbose=False).splitlines()
    assert lines[2] == '   + /data/k00: "' + "x" * 58 + "…"
    assert lines[-1] == "   … 3 more changes"
    full = story(Counterexample("invariant", "s", (step,)), verbose=True)
    assert big in full and "more change" not in full


def test_a_counterexample_with_no_steps_says_initial_state() -> None:
    text = story(Counterexample("invariant", "violated before any reconcile"))
    assert text == "invariant: violated before any reconcile\n(the initial state)"


def test_progress_line() -> None:
    assert progress_line(12345, 7, 1234.4, 10.25) == "exploring: 12345 states, depth 7, 1234 states/s, 10.2s"
    assert progress_line(1, 0, 2.5, 0.4) == "exploring: 1 state, depth 0, 2.5 states/s, 0.40s"


# --- GitHub annotations ---------------------------------------------------------------------------


def test_annotation_points_at_the_check_line() -> None:
    [annotation] = github_annotations(one(livelock()))
    head, _, message = annotation.partition("::")[2].partition("::")
    assert head == f"error file={FILE},line=20,title=widget-fight%3A converges"
    assert message.startswith("no converged state is reachable from 1 state%0A%0Alivelock: widget and sidecar")
    assert "%0A  ↺ back to step 2" in message
    assert "\n" not in annotation


def test_annotation_escaping_follows_githubs_rules() -> None:
    check = Check(
        "invariant: 100%, a:b",
        Verdict.FAILED,
        "50% of\r\nnodes",
        position=Position("dir,x/a:b.yaml", 3, 1),
    )
    result = one(ScenarioResult("n,a:m%", "ignored.yaml", Verdict.FAILED, (check,)))
    assert github_annotations(result) == [
        "::error file=dir%2Cx/a%3Ab.yaml,line=3,title=n%2Ca%3Am%25%3A invariant%3A 100%25%2C a%3Ab::50%25 of nodes"
    ]


def test_annotation_message_keeps_newlines_escaped() -> None:
    check = Check("converges", Verdict.FAILED, "one", (Counterexample("livelock", "a%b"),))
    [annotation] = github_annotations(one(ScenarioResult("s", "f.yaml", Verdict.FAILED, (check,))))
    assert annotation == "::error file=f.yaml,title=s%3A converges::one%0A%0Alivelock: a%25b%0A(the initial state)"


def test_annotations_for_inconclusive_and_load_errors() -> None:
    annotations = github_annotations(everything())
    assert len(annotations) == 6  # 4 failed checks, 1 inconclusive, 1 load error
    assert annotations[4].startswith(
        "::warning file=scenarios/02-big/scenario.yaml,line=14,title=widget-big%3A converges::"
    )
    assert annotations[5].startswith(
        "::error file=scenarios/03-broken/scenario.yaml,line=7,title=broken%3A load::scenarios/03-broken"
    )
    assert not github_annotations(one(passing()))


def test_github_mode_appends_annotations_after_the_report() -> None:
    text = render(one(livelock()), github=True, color=True)
    _, _, tail = text.partition("1 scenario: ")
    assert tail.splitlines()[1].startswith("::error file=")
    assert "\x1b" not in tail.splitlines()[1]
