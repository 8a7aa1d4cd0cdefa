"""Loading controllers and mappers from entry points.

Covers: function and class entry points with both signatures; dotted-module and file entry points
(including a file inside a package that uses relative imports); every broken-entry-point case with
the message a user sees; check_entrypoint importing nothing; module isolation between two scenario
folders with identically named modules; reload re-initialising module globals; unload; mappers.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters import (
    InvalidMapping,
    Mapper,
    ReconcilerFactory,
    Request,
    VirtualClock,
    check_entrypoint,
    load_mapper,
    load_reconciler,
    requests_from_mapping,
    run_mapper,
    run_reconcile,
)
from kamera_cli.errors import EntrypointError, ExitCode, KameraError


def write(base: Path, rel: str, text: str) -> Path:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


Loaded = ReconcilerFactory | Mapper


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Callable[..., ReconcilerFactory]]:
    """load(entrypoint, base_dir=tmp_path) with every factory unloaded after the test."""
    made: list[Loaded] = []

    def _load(entrypoint: str, base_dir: Path | None = None, controller: str = "widget") -> ReconcilerFactory:
        factory = load_reconciler(entrypoint, base_dir or tmp_path, scenario="demo", controller=controller)
        made.append(factory)
        return factory

    yield _load
    for factory in made:
        factory.unload()


def call(factory: ReconcilerFactory, client: object = None, name: str = "a") -> Any:
    """Run a reconcile that returns a value in a dict under 'requeue_after'-free transport: use invoke directly."""
    factory.module_set.activate()
    return factory.invoke(Request("default", name), client)


def run(factory: ReconcilerFactory, client: object = None) -> Any:
    return run_reconcile(
        factory, Request("default", "a"), client, budget_seconds=5, clock=VirtualClock(1767225600.0), seed=b"s"
    )


# -- entry point shapes ------------------------------------------------------------------------------------------
def test_function_with_request_only(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "ctrl.py", "def reconcile(request):\n    return ('one', request.key)\n")
    factory = load("ctrl.py:reconcile")
    assert (factory.kind, factory.takes_client) == ("function", False)
    assert call(factory, client="C") == ("one", "default/a")


def test_function_with_request_and_client(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "ctrl.py", "def reconcile(request, client):\n    return (request.name, client)\n")
    factory = load("ctrl.py:reconcile")
    assert factory.takes_client
    assert call(factory, client="C") == ("a", "C")


def test_defaults_and_varargs_get_the_client(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(
        tmp_path,
        "ctrl.py",
        """
        def with_default(request, client=None):
            return client
        def with_varargs(*args):
            return args[1:]
        """,
    )
    assert call(load("ctrl.py:with_default"), client="C") == "C"
    assert call(load("ctrl.py:with_varargs"), client="C") == ("C",)


def test_class_is_instantiated_per_step(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(
        tmp_path,
        "ctrl.py",
        """
        MADE = []
        class Plain:
            def __init__(self):
                MADE.append(self)
            def reconcile(self, request):
                return len(MADE)
        class WithClient:
            def __init__(self, client):
                self.client = client
            def reconcile(self, request):
                return self.client
        class ClientPerCall:
            def reconcile(self, request, client):
                return (request.name, client)
        """,
    )
    plain = load("ctrl.py:Plain")
    assert plain.kind == "class"
    assert [call(plain), call(plain), call(plain)] == [1, 2, 3]
    assert call(load("ctrl.py:WithClient"), client="C") == "C"
    assert call(load("ctrl.py:ClientPerCall"), client="C") == ("a", "C")


def test_dotted_module_entry_point_is_found_in_the_scenario_folder(
    tmp_path: Path, load: Callable[..., ReconcilerFactory]
) -> None:
    write(tmp_path, "operators/__init__.py", "")
    write(tmp_path, "operators/widget.py", "from .shared import VALUE\ndef reconcile(request):\n    return VALUE\n")
    write(tmp_path, "operators/shared.py", "VALUE = 'from package'\n")
    assert call(load("operators.widget:reconcile")) == "from package"


def test_file_inside_a_package_may_use_relative_imports(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "ops/__init__.py", "")
    write(tmp_path, "ops/widget.py", "from . import shared\ndef reconcile(request):\n    return shared.VALUE\n")
    write(tmp_path, "ops/shared.py", "VALUE = 42\n")
    assert call(load("ops/widget.py:reconcile")) == 42


def test_file_entry_point_sees_its_sibling_modules(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "controllers/widget.py", "import helpers\ndef reconcile(request):\n    return helpers.NAME\n")
    write(tmp_path, "controllers/helpers.py", "NAME = 'sibling'\n")
    assert call(load("controllers/widget.py:reconcile")) == "sibling"


# -- broken entry points -------------------------------------------------------------------------------------------
def error_of(entrypoint: str, base: Path) -> str:
    with pytest.raises(EntrypointError) as info:
        load_reconciler(entrypoint, base, scenario="demo", controller="widget")
    assert info.value.exit_code == ExitCode.USAGE
    assert isinstance(info.value, KameraError)
    text = str(info.value)
    assert text.startswith("demo: controller 'widget': entry point "), text
    assert "\n  hint: " in text
    return text


@pytest.mark.parametrize(
    ("entrypoint", "expected"),
    [
        ("ctrl.py", "has no ':'; expected 'package.module:attr' or 'relative/path.py:attr'"),
        ("ctrl.py:", "names no attribute after ':'"),
        (":reconcile", "names no module or file before ':'"),
        ("ctrl/readme.txt:reconcile", "'ctrl/readme.txt' is not a .py file"),
        ("ctrl.py:not-a-name", "'not-a-name' is not a Python attribute name"),
        ("my-module:reconcile", "is neither a dotted module name nor a path to a .py file"),
    ],
)
def test_malformed_entry_points(tmp_path: Path, entrypoint: str, expected: str) -> None:
    problem = check_entrypoint(entrypoint, tmp_path)
    assert problem is not None and expected in problem
    assert expected in error_of(entrypoint, tmp_path)


def test_missing_file(tmp_path: Path) -> None:
    assert check_entrypoint("controllers/nope.py:reconcile", tmp_path) == (
        f"entry point 'controllers/nope.py:reconcile': file 'controllers/nope.py' not found "
        f"(looked for {tmp_path / 'controllers' / 'nope.py'})"
    )
    text = error_of("controllers/nope.py:reconcile", tmp_path)
    assert "file 'controllers/nope.py' not found" in text
    assert "relative to the scenario file's folder" in text


def test_missing_module(tmp_path: Path) -> None:
    problem = check_entrypoint("no_such_pkg.widget:reconcile", tmp_path)
    assert problem is not None and "module 'no_such_pkg.widget' not found" in problem
    text = error_of("no_such_pkg.widget:reconcile", tmp_path)
    assert "module 'no_such_pkg.widget' not found" in text
    assert "importable from the scenario folder" in text


def test_check_entrypoint_accepts_good_entry_points_without_importing(tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    write(tmp_path, "ctrl.py", f"open({str(marker)!r}, 'w').close()\ndef reconcile(request): pass\n")
    write(tmp_path, "pkg/__init__.py", f"open({str(marker)!r}, 'w').close()\n")
    write(tmp_path, "pkg/mod.py", "def reconcile(request): pass\n")
    assert check_entrypoint("ctrl.py:reconcile", tmp_path) is None
    assert check_entrypoint("pkg.mod:reconcile", tmp_path) is None
    assert check_entrypoint("pkg.missing:reconcile", tmp_path) is not None
    assert check_entrypoint("json:loads", tmp_path) is None
    assert not marker.exists()
    assert "pkg" not in sys.modules


def test_syntax_error_in_the_module(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "def reconcile(request):\n    return (\n\nx = 1\n")
    text = error_of("ctrl.py:reconcile", tmp_path)
    assert "entry point 'ctrl.py:reconcile': ctrl.py has a syntax error at line 2" in text


def test_syntax_error_in_a_sibling_module_names_the_sibling(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "import broken\ndef reconcile(request): pass\n")
    write(tmp_path, "broken.py", "def oops(:\n")
    assert "broken.py has a syntax error at line 1" in error_of("ctrl.py:reconcile", tmp_path)


def test_import_time_exception_shows_the_users_summary_not_a_kamera_traceback(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "import helper\ndef reconcile(request): pass\n")
    write(tmp_path, "helper.py", "SETTINGS = {}\nPORT = SETTINGS['port']\n")
    text = error_of("ctrl.py:reconcile", tmp_path)
    assert "importing ctrl.py raised KeyError: 'port' at helper.py:2" in text
    assert "Traceback" not in text and "kamera_cli" not in text
    assert "helper" not in sys.modules and "ctrl" not in sys.modules


def test_missing_dependency_is_not_reported_as_a_missing_entry_module(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "import not_installed_anywhere\ndef reconcile(request): pass\n")
    text = error_of("ctrl.py:reconcile", tmp_path)
    assert "raised ModuleNotFoundError: No module named 'not_installed_anywhere' at ctrl.py:1" in text
    assert "install 'not_installed_anywhere'" in text


def test_sys_exit_at_import(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "import sys\nsys.exit(3)\n")
    assert "importing ctrl.py called sys.exit(3)" in error_of("ctrl.py:reconcile", tmp_path)


@pytest.mark.parametrize("raised", ["KeyboardInterrupt", "GeneratorExit", "BaseException('odd')"])
def test_a_base_exception_at_import_is_a_load_error_naming_the_module(tmp_path: Path, raised: str) -> None:
    """Not kamera's own interrupt nor an internal error (exit 3): the module raised it (issue #28)."""
    write(tmp_path, "ctrl.py", f"def reconcile(request): pass\nraise {raised}\n")
    name = raised.split("(")[0]
    assert f"importing ctrl.py raised {name}" in error_of("ctrl.py:reconcile", tmp_path)


def test_missing_attribute_suggests_close_names(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "def reconcile(request): pass\ndef helper(): pass\nVALUE = 1\n")
    text = error_of("ctrl.py:reconcil", tmp_path)
    assert "entry point 'ctrl.py:reconcil': ctrl.py has no attribute 'reconcil'" in text
    assert "hint: did you mean 'reconcile'?" in text


def test_missing_attribute_lists_callables_when_nothing_is_close(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "def reconcile(request): pass\ndef helper(): pass\nVALUE = 1\n")
    text = error_of("ctrl.py:zzz", tmp_path)
    assert "hint: callables defined there: helper, reconcile" in text


def test_not_callable(tmp_path: Path) -> None:
    write(tmp_path, "ctrl.py", "reconcile = {'a': 1}\n")
    text = error_of("ctrl.py:reconcile", tmp_path)
    assert "'reconcile' in ctrl.py is a dict, not a function or class" in text


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "def reconcile():\n    pass\n",
            "function 'reconcile' in ctrl.py takes (); kamera calls it as reconcile(request)",
        ),
        ("def reconcile(a, b, c):\n    pass\n", "function 'reconcile' in ctrl.py takes (a, b, c)"),
        ("def reconcile(request, *, mode):\n    pass\n", "required keyword-only parameter(s) mode"),
        ("class reconcile:\n    pass\n", "class 'reconcile' in ctrl.py has no reconcile method"),
        (
            "class reconcile:\n    def __init__(self, a, b):\n        pass\n"
            "    def reconcile(self, r):\n        pass\n",
            "class 'reconcile' in ctrl.py is constructed as reconcile(a, b)",
        ),
        (
            "class reconcile:\n    def reconcile(self):\n        pass\n",
            "method reconcile.reconcile in ctrl.py takes ()",
        ),
        # async def reconciles run on a virtual-time loop; async generators are not reconciles
        ("async def reconcile(request):\n    yield None\n", "function 'reconcile' in ctrl.py is an async generator"),
        (
            "class reconcile:\n    async def reconcile(self, request):\n        yield None\n",
            "method reconcile.reconcile in ctrl.py is an async generator",
        ),
    ],
)
def test_wrong_signatures(tmp_path: Path, source: str, expected: str) -> None:
    write(tmp_path, "ctrl.py", source)
    text = error_of("ctrl.py:reconcile", tmp_path)
    assert expected in text
    assert any(hint in text for hint in ("hint: write `def reconcile(request)`",
                                         "hint: make it `async def reconcile(request)`"))


# -- module isolation, reload, unload ------------------------------------------------------------------------------
def test_two_scenarios_with_the_same_module_names_are_isolated(
    tmp_path: Path, load: Callable[..., ReconcilerFactory]
) -> None:
    for which, number in (("one", 1), ("two", 2)):
        write(
            tmp_path / which,
            "controllers/widget.py",
            "import helpers\ndef reconcile(request):\n    return {'requeue_after': helpers.NUMBER}\n",
        )
        write(tmp_path / which, "controllers/helpers.py", f"NUMBER = {number}\n")
    first = load("controllers/widget.py:reconcile", tmp_path / "one")
    second = load("controllers/widget.py:reconcile", tmp_path / "two")
    outcomes = [run(first), run(second), run(first)]
    assert [o.result.requeue_after if o.result else o for o in outcomes] == [1.0, 2.0, 1.0]
    assert [call(second), call(first)] == [{"requeue_after": 2}, {"requeue_after": 1}]


def test_unload_removes_the_users_modules(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "controllers/widget.py", "import helpers\ndef reconcile(request): pass\n")
    write(tmp_path, "controllers/helpers.py", "")
    factory = load("controllers/widget.py:reconcile")
    names = sorted(factory.module_set.modules)
    assert "helpers" in names and any(n.startswith("kamera_user_widget_") for n in names)
    factory.module_set.activate()
    assert all(name in sys.modules for name in names)
    factory.unload()
    assert not any(name in sys.modules for name in names)


def test_file_module_name_is_deterministic(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "ctrl.py", "def reconcile(request): pass\n")
    first = sorted(load("ctrl.py:reconcile").module_set.modules)
    second = sorted(load("ctrl.py:reconcile", controller="other").module_set.modules)
    assert first == second and len(first) == 1


def test_two_controllers_from_one_file_do_not_share_globals(
    tmp_path: Path, load: Callable[..., ReconcilerFactory]
) -> None:
    write(
        tmp_path, "ctrl.py", "SEEN = []\ndef reconcile(request):\n    SEEN.append(request.name)\n    return len(SEEN)\n"
    )
    a = load("ctrl.py:reconcile", controller="a")
    b = load("ctrl.py:reconcile", controller="b")
    assert [call(a), call(a), call(b)] == [1, 2, 1]


def test_reload_gives_fresh_module_globals(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(tmp_path, "ctrl.py", "import state\ndef reconcile(request):\n    state.COUNT += 1\n    return state.COUNT\n")
    write(tmp_path, "state.py", "COUNT = 0\n")
    factory = load("ctrl.py:reconcile")
    assert [call(factory), call(factory)] == [1, 2]
    factory.reload()
    assert [call(factory), call(factory)] == [1, 2]


def test_an_installed_package_named_as_the_entry_is_the_controllers_own(
    tmp_path: Path, load: Callable[..., ReconcilerFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kopf run -m operator.main`` of a pip-installed operator: the scenario lives elsewhere, and the
    package is still the code under test: a copy per controller, re-imported on a crash (before, it was
    shared as a library, and a kopf operator's handlers registered once, into the first registry)."""
    site = tmp_path / "venv" / "lib" / "site-packages"
    write(site, "extop/__init__.py", "")
    write(site, "extop/state.py", "SEEN = []\n")
    write(site, "extop/ctrl.py", "from extop import state\ndef reconcile(request):\n"
                                  "    state.SEEN.append(request.name)\n    return len(state.SEEN)\n")
    monkeypatch.syspath_prepend(str(site))
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    a = load("extop.ctrl:reconcile", scenario, controller="a")
    b = load("extop.ctrl:reconcile", scenario, controller="b")
    assert [call(a), call(a), call(b)] == [1, 2, 1]
    a.reload()
    assert call(a) == 1
    assert "extop.state" in a.module_set.modules


def test_reload_works_through_run_reconcile(tmp_path: Path, load: Callable[..., ReconcilerFactory]) -> None:
    write(
        tmp_path,
        "ctrl.py",
        "N = 0\ndef reconcile(request):\n    global N\n    N += 1\n    return {'requeue_after': N}\n",
    )
    factory = load("ctrl.py:reconcile")
    assert [run(factory).result.requeue_after, run(factory).result.requeue_after] == [1.0, 2.0]  # type: ignore[union-attr]
    factory.reload()
    assert run(factory).result.requeue_after == 1.0  # type: ignore[union-attr]


# -- mappers -------------------------------------------------------------------------------------------------------
def test_mapper_returns_sorted_distinct_requests(tmp_path: Path) -> None:
    write(
        tmp_path,
        "maps.py",
        """
        def by_label(obj):
            owner = obj["metadata"]["labels"]["owner"]
            return [("default", owner), ("default", owner), (None, "cluster-thing"), ("a", "x")]
        def broken(obj):
            return "default/web"
        """,
    )
    mapper = load_mapper("maps.py:by_label", tmp_path, scenario="demo", controller="widget")
    try:
        obj = {"metadata": {"labels": {"owner": "web"}}}
        assert mapper(obj) == (Request(None, "cluster-thing"), Request("a", "x"), Request("default", "web"))
        outcome = run_mapper(mapper, obj, budget_seconds=5, clock=VirtualClock(0), seed=b"")
        assert outcome.kind == "ok" and len(outcome.requests) == 3
    finally:
        mapper.unload()
    broken = load_mapper("maps.py:broken", tmp_path, scenario="demo", controller="widget")
    try:
        outcome = run_mapper(broken, {}, budget_seconds=5, clock=VirtualClock(0), seed=b"")
        assert outcome.kind == "exception" and outcome.error is not None
        assert outcome.error.type_name == "InvalidMapping"
        assert "watch mapper returned str 'default/web'" in outcome.error.message
    finally:
        broken.unload()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([("default",)], "each item must be a (namespace, name) pair"),
        ([("default", 3)], "name a non-empty string"),
        ([(1, "x")], "namespace must be a string"),
        (42, "watch mapper returned int 42"),
        ({"default": "x"}, "watch mapper returned dict"),
    ],
)
def test_bad_mapper_returns(value: Any, expected: str) -> None:
    with pytest.raises(InvalidMapping, match=None) as info:
        requests_from_mapping(value)
    assert expected in str(info.value)


def test_mapper_signature_is_checked(tmp_path: Path) -> None:
    write(tmp_path, "maps.py", "def two(a, b):\n    return []\n")
    with pytest.raises(EntrypointError) as info:
        load_mapper("maps.py:two", tmp_path, scenario="demo", controller="widget")
    assert "mapper 'two' in maps.py takes (a, b); kamera calls it as two(obj)" in str(info.value)


def test_the_whole_message_for_a_missing_attribute(tmp_path: Path) -> None:
    write(tmp_path, "controllers/widget.py", "def reconcile(request): pass\n")
    assert error_of("controllers/widget.py:reconcil", tmp_path) == (
        "demo: controller 'widget': entry point 'controllers/widget.py:reconcil': "
        "controllers/widget.py has no attribute 'reconcil'\n"
        "  hint: did you mean 'reconcile'?"
    )
