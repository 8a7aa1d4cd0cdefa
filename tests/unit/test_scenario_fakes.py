"""``spec.fakes``: each bad entry is a located problem (file, line, column, field), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from kamera_cli.adapters import check_entrypoint
from kamera_cli.model.scenario import FakeSpec
from kamera_cli.scenario import load_scenario
from tests.unit.test_scenario_errors import HEAD, problems_of

FAKE = "def client(name):\n    return name\n"


def _scenario(fakes: str) -> str:
    return HEAD + "  seed: []\n  fakes:\n" + fakes


def _files(tmp_path: Path) -> None:
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "aws.py").write_text(FAKE)
    (tmp_path / "app.py").write_text("def reconcile(request):\n    return None\n")


def test_a_valid_fakes_section_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    (tmp_path / "scenario.yaml").write_text(_scenario(
        "    - {replace: boto3.client, with: fakes/aws.py:client}\n"
        "    - {replace: requests, with: fakes/aws.py}\n"
        "    - {replace: hvac.Client, with: json:loads}\n"))
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario("scenario.yaml", known_kind=lambda kind: True)
    assert [(f.replace, f.with_) for f in scenario.fakes] == [
        ("boto3.client", "fakes/aws.py:client"), ("requests", "fakes/aws.py"), ("hvac.Client", "json:loads")]
    assert all(isinstance(f, FakeSpec) and f.position.line for f in scenario.fakes)


@pytest.mark.parametrize(("entry", "expected"), [
    ("{replace: boto3.client}",
     "scenario.yaml:8:7: $.spec.fakes[0]: missing required field 'with'"),
    ("{replace: 'boto3 client', with: fakes/aws.py:client}",
     "scenario.yaml:8:17: $.spec.fakes[0].replace: \"boto3 client\" is not a valid value"),
    ("{replace: kamera_cli.check, with: fakes/aws.py:client}",
     "scenario.yaml:8:17: $.spec.fakes[0].replace: replace 'kamera_cli.check': kamera itself cannot be faked"),
    ("{replace: json.dumps, with: fakes/aws.py:client}",
     "scenario.yaml:8:17: $.spec.fakes[0].replace: replace 'json.dumps': 'json', a standard-library module, cannot"),
    ("{replace: app.client, with: fakes/aws.py:client}",
     "scenario.yaml:8:17: $.spec.fakes[0].replace: replace 'app.client': 'app' is a module of the scenario folder"),
    ("{replace: fakes.aws, with: fakes/aws.py}",
     "scenario.yaml:8:17: $.spec.fakes[0].replace: replace 'fakes.aws': 'fakes' is a module of the scenario folder"),
    ("{replace: boto3.client, with: 'kamera_no_such_fake:client'}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: fake 'kamera_no_such_fake:client': module 'kamera_no_such_fake' "
     "not found"),
    ("{replace: boto3.client, with: kamera_no_such_fake}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: fake 'kamera_no_such_fake': module 'kamera_no_such_fake' not found"),
    ("{replace: boto3.client, with: fakes/gcp.py:client}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: fake 'fakes/gcp.py:client': file 'fakes/gcp.py' not found"),
    ("{replace: boto3.client, with: 'fakes/aws.py:'}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: with 'fakes/aws.py:' is not 'path/to/file.py:attr'"),
    ("{replace: boto3.client, with: fakes/gcp.py}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: fake file 'fakes/gcp.py' not found"),
    ("{replace: boto3.client, with: 'fakes/aws.txt'}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: with 'fakes/aws.txt' is not a .py file"),
    ("{replace: boto3.client, with: 'not a module'}",
     "scenario.yaml:8:37: $.spec.fakes[0].with: with 'not a module' is neither a module, a .py file nor"),
    ("{replace: boto3.client, with: fakes/aws.py:client, name: aws}",
     "scenario.yaml:8:58: $.spec.fakes[0].name: unknown field 'name'"),
])
def test_a_bad_entry_is_located(entry: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": _scenario(f"    - {entry}\n")},
                      check_entrypoint=check_entrypoint)
    assert len(got) == 1 and got[0].startswith(expected), got


def test_a_folder_that_is_no_module_does_not_shadow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    (tmp_path / "requests").mkdir()  # fixtures, not Python: 'import requests' finds the installed one
    (tmp_path / "requests" / "team-a.json").write_text("{}")
    (tmp_path / "scenario.yaml").write_text(_scenario("    - {replace: requests.get, with: fakes/aws.py:client}\n"))
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario("scenario.yaml", known_kind=lambda kind: True)
    assert [f.replace for f in scenario.fakes] == ["requests.get"]


def test_the_same_name_replaced_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": _scenario(
        "    - {replace: boto3.client, with: fakes/aws.py:client}\n"
        "    - {replace: boto3.client, with: fakes/aws.py}\n")})
    assert got == ["scenario.yaml:9:17: $.spec.fakes[1].replace: 'boto3.client' is already replaced by "
                   "spec.fakes[0] (replace each name once)"]


def test_fakes_must_be_a_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": HEAD + "  seed: []\n  fakes: {replace: boto3}\n"})
    assert len(got) == 1 and got[0].startswith("scenario.yaml:7:10: $.spec.fakes:"), got


def test_a_fake_of_the_whole_package_a_controller_is_loaded_from_is_located(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller named by module (``kopf: operator.main``, an operator installed as a package) gets its own
    copy of that package; a fake of a name inside it goes in each copy, but a fake of the whole package would
    replace the code under test."""
    site = tmp_path / "site"
    (site / "extop").mkdir(parents=True)
    (site / "extop" / "__init__.py").write_text("")
    (site / "extop" / "ctrl.py").write_text("def reconcile(request):\n    return None\n\ndef helper():\n    pass\n")
    monkeypatch.syspath_prepend(str(site))
    _files(tmp_path)
    head = HEAD.replace('entrypoint: "app.py:reconcile"', 'entrypoint: "extop.ctrl:reconcile"')
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": head + "  seed: []\n  fakes:\n"
                                              "    - {replace: extop.ctrl.helper, with: fakes/aws.py:client}\n"
                                              "    - {replace: extop, with: fakes/aws.py}\n"},
                      check_entrypoint=check_entrypoint)
    assert got == ["scenario.yaml:9:17: $.spec.fakes[1].replace: replace 'extop': that is the whole package "
                   "controller 'app' is loaded from, the code under test (replace a name inside it "
                   "(package.module.function), or what it calls (a cloud SDK, a service by url:))"], got
