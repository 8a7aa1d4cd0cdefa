"""No vacuous verdicts: an invariant that looked at nothing must not show as holding."""

from __future__ import annotations

import shutil
from pathlib import Path

import kamera_cli
from kamera_cli.invariants import vacuity_hint
from kamera_cli.model.result import Check, Verdict

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart"


def with_invariants(tmp_path: Path, invariants: str) -> Path:
    target = tmp_path / "scenario"
    shutil.copytree(QUICKSTART, target)
    text = (target / "scenario.yaml").read_text()
    text = text[: text.index("  invariants:")] + "  invariants:\n" + invariants
    (target / "scenario.yaml").write_text(text)
    return target


def only_invariant(path: Path) -> Check:
    (scenario,) = kamera_cli.check(path).scenarios
    (check,) = [c for c in scenario.checks if c.name.startswith("invariant:")]
    return check


def test_a_lower_case_kind_is_vacuous_with_a_hint(tmp_path: Path) -> None:
    check = only_invariant(with_invariants(tmp_path, """\
    - name: at most one config map per widget
      select: "$.items[?@.kind == 'configmap' && @.metadata.name == 'demo-config']"
      expect: {max: 1}
"""))
    assert check.verdict is Verdict.FAILED
    assert "vacuous: its select selected nothing in any of the 1 converged state" in check.message
    assert "did you mean 'ConfigMap'?" in check.message


def test_a_misspelt_field_in_foreach_is_vacuous_with_a_hint(tmp_path: Path) -> None:
    check = only_invariant(with_invariants(tmp_path, """\
    - name: widgets have a message
      forEach: "$.items[?@.kind == 'Widget' && @.spec.mesage]"
      select: "$.items[?@.kind == 'ConfigMap']"
      expect: {min: 1}
"""))
    assert check.verdict is Verdict.FAILED
    assert "its forEach selected nothing" in check.message
    assert "no object has a field 'mesage'; did you mean 'message'?" in check.message


def test_count_zero_must_allow_vacuity_explicitly(tmp_path: Path) -> None:
    invariant = """\
    - name: no secrets
      select: "$.items[?@.kind == 'Secret']"
      expect: {count: 0}
"""
    check = only_invariant(with_invariants(tmp_path / "a", invariant))
    assert check.verdict is Verdict.FAILED
    assert "vacuous: allowed" in check.message
    check = only_invariant(with_invariants(tmp_path / "b", invariant + "      vacuous: allowed\n"))
    assert check.verdict is Verdict.PASSED


def test_a_clean_up_invariant_whose_objects_existed_mid_run_is_not_vacuous(tmp_path: Path) -> None:
    """``count: 0`` at convergence over objects that existed before (widgets not yet Ready exist in the
    initial state): nothing is left, which is the point, and no ``vacuous: allowed`` is needed."""
    check = only_invariant(with_invariants(tmp_path, """\
    - name: no widget is left unready
      select: "$.items[?@.kind == 'Widget' && @.status.phase != 'Ready']"
      expect: {count: 0}
"""))
    assert check.verdict is Verdict.PASSED, check.message
    assert check.message == ("holds (1 converged state, 0 node(s) selected; its select selected something in an "
                             "explored state, so it is not vacuous)")


def test_a_kind_hint_only_for_a_comparison_on_kind_and_kinds_of_the_judged_states(tmp_path: Path) -> None:
    """'task' compared with a label is no kind, even with a kind spelled 'Task' around; the kinds listed
    are those of the converged states the invariant judged."""
    objects = [{"kind": "ConfigMap", "metadata": {"labels": {"app": "x"}}}, {"kind": "Task", "metadata": {}}]
    text = "$.items[?@.kind == 'ConfigMap' && @.metadata.labels.app == 'task']"
    assert vacuity_hint([text], objects) == "the kinds present are ConfigMap, Task"
    assert vacuity_hint(["$.items[?'task' == @.kind]"], objects) == "no object has kind 'task'; did you mean 'Task'?"
    check = only_invariant(with_invariants(tmp_path, """\
    - name: the demo's config
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.labels.app == 'widget']"
      expect: {max: 1}
"""))
    assert check.verdict is Verdict.FAILED
    # a path names fields, so the hint is about the field; 'widget' is compared with a label, not a kind
    assert check.message.endswith("nor in any other explored state (no object has a field 'app')"), check.message


def test_holding_says_how_much_was_checked(tmp_path: Path) -> None:
    check = only_invariant(with_invariants(tmp_path, """\
    - name: every widget is ready
      select: "$.items[?@.kind == 'Widget'].status.phase"
      expect: {equals: Ready}
"""))
    assert check.verdict is Verdict.PASSED
    assert check.message == "holds (1 converged state, 2 node(s) selected)"


def test_holding_tells_search_states_from_distinct_outcomes() -> None:
    """A crash perturbation leaves two converged search states (crash budget used or not) that are one
    outcome: the message counts both, as the stats and the converged list count outcomes."""
    from kamera_cli.runner import check_file

    result = check_file(Path(__file__).resolve().parents[2] / "scenarios" / "bugs" / "crash-between-writes" / "fixed"
                        / "scenario.yaml")
    (check,) = [c for c in result.checks if c.name.startswith("invariant")]
    assert check.message == "holds (2 converged states, 1 distinct outcome, 2 node(s) selected)"
    assert result.stats.converged_states == 1


def test_no_converged_state_means_not_checked(tmp_path: Path) -> None:
    target = tmp_path / "livelock"
    shutil.copytree(Path(__file__).resolve().parents[2] / "scenarios" / "bugs" / "livelock", target)
    with (target / "scenario.yaml").open("a") as fh:
        fh.write("  invariants:\n    - name: replicas set\n      select: \"$.items[*].data.replicas\"\n"
                 "      expect: {exists: true}\n")
    check = only_invariant(target)
    assert check.verdict is Verdict.INCONCLUSIVE
    assert check.message == "not checked: no execution converged"


def test_hint_lists_the_kinds_when_nothing_is_close() -> None:
    objects = [{"kind": "ConfigMap", "metadata": {"name": "a"}}, {"kind": "Widget", "metadata": {"name": "b"}}]
    assert vacuity_hint(["$.items[?@.kind == 'Banana']"], objects) == "the kinds present are ConfigMap, Widget"
    assert vacuity_hint(["$.items[?@.kind == 'configmap']"], objects) == (
        "no object has kind 'configmap'; did you mean 'ConfigMap'?")


def test_hint_names_the_external_stores() -> None:
    entry = {"apiVersion": "external.kamera.dev/v1", "kind": "Entry", "metadata": {"name": "aws:AKIA1"},
             "value": {"UserName": "team-a"}}
    objects = [{"kind": "Namespace", "metadata": {"name": "team-a"}}, entry]
    assert vacuity_hint(["$.external.awz[*]"], objects) == "no external store 'awz'; the stores are aws"
    assert vacuity_hint(["$.external.aws[?@.Username == 'x']"], objects) == (
        "no object has a field 'Username'; did you mean 'UserName'?")
    assert vacuity_hint(["$.external.aws[*]"], objects[:1]) == (
        "no external store 'aws'; no fake stored anything")


def test_a_seed_field_the_server_drops_is_a_located_warning(tmp_path: Path) -> None:
    target = tmp_path / "scenario"
    shutil.copytree(QUICKSTART, target)
    text = (target / "scenario.yaml").read_text()
    text = text.replace("spec: {message: world}", "spec: {message: world, mesage: typo}")
    (target / "scenario.yaml").write_text(text)
    (scenario,) = kamera_cli.check(target).scenarios
    (note,) = scenario.notes
    assert note.startswith(f"{target / 'scenario.yaml'}:19:30: example.com/v1/Widget default/second: ")  # at the field
    assert "unknown field 'spec.mesage' was dropped by the API server" in note
    (clean,) = kamera_cli.check(QUICKSTART).scenarios
    assert clean.notes == ()


def test_a_secret_seeded_with_string_data_is_no_dropped_field(tmp_path: Path) -> None:
    """``stringData`` is write-only: the server merges it into ``data`` and stores no ``stringData``,
    which is not a field it dropped (a user saw "unknown field 'stringData' was dropped")."""
    target = tmp_path / "scenario"
    shutil.copytree(QUICKSTART, target)
    text = (target / "scenario.yaml").read_text()
    secret = ("    - apiVersion: v1\n      kind: Secret\n      metadata: {name: creds, namespace: default}\n"
              "      stringData: {username: admin}\n      strin: typo\n")
    (target / "scenario.yaml").write_text(text.replace("  seed:\n", "  seed:\n" + secret, 1))
    (scenario,) = kamera_cli.check(target).scenarios
    (note,) = scenario.notes  # the typo next to it is still said
    assert "unknown field 'strin' was dropped" in note
