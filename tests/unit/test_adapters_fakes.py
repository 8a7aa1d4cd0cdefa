"""Putting fakes in place of modules and callables for a scenario, and taking them out again."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from kamera_cli.adapters import load_reconciler
from kamera_cli.adapters.sandbox.fakes import install_fakes
from kamera_cli.errors import EntrypointError


def _write(base: Path, rel: str, text: str) -> None:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_an_attribute_of_an_installed_module(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/http.py", "def get(url, **kwargs):\n    return ('faked', url)\n")
    import requests

    real = requests.get
    fakes = install_fakes([("requests.get", "fakes/http.py:get")], tmp_path, scenario="s")
    try:
        assert requests.get("https://example.com") == ("faked", "https://example.com")
    finally:
        fakes.restore()
    assert requests.get is real


def test_an_installed_module_in_sys_modules(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/requests.py", "__all__ = ['get']\ndef get(url):\n    return 'whole'\n")
    _write(tmp_path, "ctrl.py", """
        import requests
        from requests import get

        def reconcile(request):
            return requests.get("u"), get("u"), requests.__all__
        """)
    import requests

    fakes = install_fakes([("requests", "fakes/requests.py")], tmp_path, scenario="s")
    factory = None
    try:
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="s", controller="c")
        assert factory.invoke(None, None) == ("whole", "whole", ["get"])  # type: ignore[arg-type]
        assert not hasattr(sys.modules["requests"], "__file__")  # a proxy: no file, so not hidden as the scenario's
    finally:
        if factory is not None:
            factory.unload()
        fakes.restore()
    assert sys.modules["requests"] is requests


def test_a_module_that_is_not_installed_is_made_up_for_the_scenario(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/aws.py", "def client(name):\n    return ('fake', name)\n")
    _write(tmp_path, "ctrl.py", """
        import kamera_absent_sdk.sub
        from kamera_absent_sdk.sub import client

        def reconcile(request):
            return None

        CLIENT = client("iam")
        """)
    fakes = install_fakes([("kamera_absent_sdk.sub.client", "fakes/aws.py:client")], tmp_path, scenario="s")
    factory = None
    try:
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="s", controller="c")
        assert factory.module is not None and factory.module.CLIENT == ("fake", "iam")
        factory.reload()  # a restarted controller imports the fake again, which is still there
        assert factory.module is not None and factory.module.CLIENT == ("fake", "iam")
    finally:
        if factory is not None:
            factory.unload()
        fakes.restore()
    assert "kamera_absent_sdk" not in sys.modules and "kamera_absent_sdk.sub" not in sys.modules
    with pytest.raises(ImportError):
        importlib.import_module("kamera_absent_sdk")


def test_a_whole_module(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/hvac.py", "class Client:\n    def read(self, path):\n        return {'data': path}\n")
    _write(tmp_path, "ctrl.py", """
        import kamera_absent_hvac

        def reconcile(request):
            return kamera_absent_hvac.Client().read("secret/app")
        """)
    fakes = install_fakes([("kamera_absent_hvac", "fakes/hvac.py")], tmp_path, scenario="s")
    factory = None
    try:
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="s", controller="c")
        assert factory.invoke(None, None) == {"data": "secret/app"}  # type: ignore[arg-type]
    finally:
        if factory is not None:
            factory.unload()
        fakes.restore()
    assert "kamera_absent_hvac" not in sys.modules


def test_a_fake_that_fails_to_import_is_a_usage_error_and_nothing_stays_replaced(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/good.py", "def client(name):\n    return name\n")
    _write(tmp_path, "fakes/bad.py", "raise RuntimeError('no credentials in the fake')\n")
    with pytest.raises(EntrypointError, match=r"fake 'fakes/bad.py:client': importing .*RuntimeError"):
        install_fakes([("kamera_absent_a.client", "fakes/good.py:client"),
                       ("kamera_absent_b.client", "fakes/bad.py:client")], tmp_path, scenario="s")
    assert "kamera_absent_a" not in sys.modules and "kamera_absent_b" not in sys.modules


def test_replacing_what_does_not_exist_below_a_real_module(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/f.py", "def f():\n    return 1\n")
    with pytest.raises(EntrypointError, match="cannot replace it"):
        install_fakes([("requests.nothing_here.f", "fakes/f.py:f")], tmp_path, scenario="s")
    import requests

    with pytest.raises(EntrypointError, match="cannot replace it: 'requests' has no attribute 'gett'"):
        install_fakes([("requests.gett", "fakes/f.py:f")], tmp_path, scenario="s")
    assert not hasattr(requests, "gett")


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` standing for installed libraries; what was imported from it is forgotten after."""
    folder = tmp_path / "lib"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    def inside(module: object) -> bool:
        places = [getattr(module, "__file__", None), *list(getattr(module, "__path__", None) or [])]
        return any(str(place).startswith(str(folder)) for place in places if place)

    for name in [name for name, module in sys.modules.items() if inside(module)]:
        del sys.modules[name]


def test_a_module_that_breaks_when_imported_is_a_usage_error(tmp_path: Path, library: Path) -> None:
    _write(tmp_path, "fakes/f.py", "def f():\n    return 1\n")
    _write(library, "kamera_broken_sdk.py", "raise RuntimeError('half installed')\n")
    with pytest.raises(EntrypointError, match=r"importing 'kamera_broken_sdk' raised RuntimeError: half installed"):
        install_fakes([("kamera_broken_sdk.client", "fakes/f.py:f")], tmp_path, scenario="s")


def test_a_library_that_bound_the_fake_during_the_scenario_is_unloaded(tmp_path: Path, library: Path) -> None:
    _write(tmp_path, "fakes/http.py", "def get(url, **kwargs):\n    return 'faked'\n")
    _write(library, "kamera_binding_lib.py", "from requests import get as fetch\n")
    _write(library, "kamera_plain_lib.py", "import requests\n")
    import requests

    fakes = install_fakes([("requests.get", "fakes/http.py:get")], tmp_path, scenario="s")
    try:
        binding = importlib.import_module("kamera_binding_lib")
        plain = importlib.import_module("kamera_plain_lib")
        assert binding.fetch("u") == "faked"
    finally:
        fakes.restore()
    assert "kamera_binding_lib" not in sys.modules  # it would go on calling the fake
    assert sys.modules["kamera_plain_lib"] is plain  # it looks requests.get up at each call
    assert importlib.import_module("kamera_binding_lib").fetch is requests.get


def test_a_fake_borrowed_from_the_standard_library_unloads_nothing(tmp_path: Path, library: Path) -> None:
    _write(library, "kamera_json_user.py", "from json import dumps\n")
    fakes = install_fakes([("requests.get", "json:dumps")], tmp_path, scenario="s")
    try:
        user = importlib.import_module("kamera_json_user")
    finally:
        fakes.restore()
    assert sys.modules["kamera_json_user"] is user  # it bound json.dumps, which was never replaced


def test_below_a_namespace_package_missing_parts_are_made_up(tmp_path: Path, library: Path) -> None:
    """``google`` or ``azure`` hold what other distributions install: ``google.cloud.storage`` missing is
    not a typo (below a regular package, ``requests.nothing_here``, it is)."""
    _write(library, "kamera_ns_cloud/auth.py", "TOKEN = 'real'\n")  # a namespace package: no __init__.py
    _write(tmp_path, "fakes/gcs.py", "class Client:\n    pass\n")
    _write(tmp_path, "ctrl.py", """
        from kamera_ns_cloud.storage import Client

        def reconcile(request):
            return Client
        """)
    fakes = install_fakes([("kamera_ns_cloud.storage.Client", "fakes/gcs.py:Client")], tmp_path, scenario="s")
    factory = None
    try:
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="s", controller="c")
        assert factory.invoke(None, None).__name__ == "Client"  # type: ignore[arg-type]
    finally:
        if factory is not None:
            factory.unload()
        fakes.restore()
    assert "kamera_ns_cloud.storage" not in sys.modules
    assert not hasattr(sys.modules["kamera_ns_cloud"], "storage")


def test_an_installed_module_missing_a_dependency_is_not_made_up(tmp_path: Path, library: Path) -> None:
    _write(tmp_path, "fakes/f.py", "def f():\n    return 1\n")
    _write(library, "kamera_half_sdk.py", "import kamera_missing_core\n")
    with pytest.raises(EntrypointError, match=r"importing 'kamera_half_sdk' raised ModuleNotFoundError: "
                                              r"No module named 'kamera_missing_core'"):
        install_fakes([("kamera_half_sdk.client", "fakes/f.py:f")], tmp_path, scenario="s")
    assert "kamera_half_sdk" not in sys.modules


def test_two_fakes_from_one_file_share_its_module(tmp_path: Path) -> None:
    _write(tmp_path, "fakes/aws.py", """
        class ClientError(Exception):
            pass

        def client(name):
            raise ClientError(name)
        """)
    _write(tmp_path, "ctrl.py", """
        import kamera_absent_boto
        from kamera_absent_botocore.exceptions import ClientError

        def reconcile(request):
            try:
                kamera_absent_boto.client("iam")
            except ClientError as exc:
                return "caught " + str(exc)
        """)
    fakes = install_fakes([("kamera_absent_boto.client", "fakes/aws.py:client"),
                           ("kamera_absent_botocore.exceptions", "fakes/aws.py")], tmp_path, scenario="s")
    factory = None
    try:
        assert len({id(fake.module) for fake in fakes.fakes}) == 1
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="s", controller="c")
        assert factory.invoke(None, None) == "caught iam"  # type: ignore[arg-type]
    finally:
        if factory is not None:
            factory.unload()
        fakes.restore()
    assert "kamera_absent_botocore.exceptions" not in sys.modules and "kamera_absent_boto" not in sys.modules


def _own_package(site: Path) -> None:
    """An operator installed as a package: its entry module re-exports the handler module (``from .ctrl
    import *``, as dask_kubernetes.operator.controller does), whose reconcile calls ``retire`` by its
    module-global name; a sibling bound ``retire`` by ``from ... import`` while the package was imported."""
    _write(site, "kamera_extop/__init__.py", "")
    _write(site, "kamera_extop/op/__init__.py", "from .ctrl import *\n")
    _write(site, "kamera_extop/op/ctrl.py", """
        from kamera_extop.op import sibling

        def retire(n):
            return ["real"] * n

        def reconcile(request):
            return retire(1), sibling.via(1)
        """)
    _write(site, "kamera_extop/op/sibling.py", """
        def via(n):
            from kamera_extop.op.ctrl import retire
            return retire(n)

        EARLY = None
        """)


def test_a_fake_of_the_package_a_controller_is_loaded_from_goes_in_every_copy(
        tmp_path: Path, library: Path) -> None:
    """``kopf run -m operator.main`` of an installed operator: each controller (and each crash) imports the
    package afresh, and the fake of a name inside it reaches every copy, also where the copy's modules
    bound the name (the defining module's own global, the package's re-export)."""
    _own_package(library)
    tmp_path = tmp_path / "scenario"  # a folder of its own, the operator installed elsewhere
    _write(tmp_path, "fakes/retire.py", "def retire(n):\n    return ['fake'] * n\n")
    where = {"kamera_extop.op.retire": "scenario.yaml:12"}
    fakes = install_fakes([("kamera_extop.op.retire", "fakes/retire.py:retire")], tmp_path, scenario="s",
                          own_packages={"kamera_extop"}, located=where)
    assert "kamera_extop" not in sys.modules  # nothing of the operator was imported as a library
    loaded = []
    try:
        for name in ("a", "b"):
            loaded.append(load_reconciler("kamera_extop.op:reconcile", tmp_path, scenario="s", controller=name))
        assert [f.invoke(None, None) for f in loaded] == [(["fake"], ["fake"])] * 2  # type: ignore[arg-type]
        loaded[0].reload()  # a crash re-imports the package: the fake goes in the new copy too
        assert loaded[0].invoke(None, None) == (["fake"], ["fake"])  # type: ignore[arg-type]
    finally:
        for factory in loaded:
            factory.unload()
        fakes.restore()
    real = load_reconciler("kamera_extop.op:reconcile", tmp_path, scenario="s", controller="after")
    try:  # the next scenario, without the fake, runs the operator's own
        assert real.invoke(None, None) == (["real"], ["real"])  # type: ignore[arg-type]
    finally:
        real.unload()


def test_a_fake_of_a_name_the_controllers_package_lacks_is_located(tmp_path: Path, library: Path) -> None:
    _own_package(library)
    tmp_path = tmp_path / "scenario"  # a folder of its own, the operator installed elsewhere
    _write(tmp_path, "fakes/retire.py", "def retire(n):\n    return []\n")
    for dotted, missing in (("kamera_extop.op.retyre", "'kamera_extop.op' has no attribute 'retyre'"),
                            ("kamera_extop.opp.retire", "'kamera_extop' has no attribute 'opp'")):
        fakes = install_fakes([(dotted, "fakes/retire.py:retire")], tmp_path, scenario="s",
                              own_packages={"kamera_extop"}, located={dotted: "scenario.yaml:12"})
        try:
            with pytest.raises(EntrypointError) as error:
                load_reconciler("kamera_extop.op:reconcile", tmp_path, scenario="s", controller="a")
        finally:
            fakes.restore()
        assert str(error.value).startswith(f"scenario.yaml:12: spec.fakes replace {dotted!r}: "
                                           f"{missing}\n  hint: "), error.value
        assert not any(name.startswith("kamera_extop") for name in sys.modules)


def test_a_whole_module_fake_of_a_module_of_the_controllers_package(tmp_path: Path, library: Path) -> None:
    """``replace: operator.networking, with: fakes/networking.py``: the copy's ``from . import`` and
    ``import`` of that module find the fake, in every copy."""
    _write(library, "kamera_extop2/__init__.py", "")
    _write(library, "kamera_extop2/networking.py", "def address():\n    return 'real'\n")
    _write(library, "kamera_extop2/ctrl.py", """
        from kamera_extop2 import networking
        from kamera_extop2.networking import address

        def reconcile(request):
            return networking.address(), address()
        """)
    tmp_path = tmp_path / "scenario"
    _write(tmp_path, "fakes/networking.py", "def address():\n    return 'fake'\n")
    fakes = install_fakes([("kamera_extop2.networking", "fakes/networking.py")], tmp_path, scenario="s",
                          own_packages={"kamera_extop2"})
    factory = None
    try:
        factory = load_reconciler("kamera_extop2.ctrl:reconcile", tmp_path, scenario="s", controller="a")
        assert factory.invoke(None, None) == ("fake", "fake")  # type: ignore[arg-type]
        factory.reload()
        assert factory.invoke(None, None) == ("fake", "fake")  # type: ignore[arg-type]
    finally:
        if factory is not None:
            factory.unload()
        fakes.restore()
    assert "kamera_extop2.networking" not in sys.modules
