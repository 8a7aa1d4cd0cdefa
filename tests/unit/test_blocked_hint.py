"""A blocked network call names the host and its most likely cause (containment.likely_cause)."""

from __future__ import annotations

import pytest

from kamera_cli.apiserver.transports.containment import NetworkBlocked, _network_blocked, likely_cause


@pytest.mark.parametrize(("address", "cause"), [
    ("localhost", "configuration was never loaded"),
    ("127.0.0.1:80", "configuration was never loaded"),
    ("/api/v1/pods", "configuration was never loaded"),
    ("localhost:8080", "configuration was never loaded"),
    ("[::1]:6443", "configuration was never loaded"),
    # another port on this machine is a local-development URL, not a client left unconfigured
    ("localhost:8090", "a service on the local machine (port 8090)"),
    ("127.0.0.1:5432", "a service on the local machine (port 5432)"),
    ("kubernetes.default.svc:443", "in-cluster name"),
    ("scheduler.default.svc:8786", "a Service inside the cluster"),
    ("dask.ns.svc.cluster.local", "a Service inside the cluster"),
    ("api.github.com:443", "outside the simulated cluster"),
])
def test_the_likely_cause_follows_the_host(address: str, cause: str) -> None:
    assert cause in likely_cause(address)


def test_the_message_names_the_address() -> None:
    exc = _network_blocked("scheduler.default.svc:8786")
    assert isinstance(exc, NetworkBlocked) and exc.blocked_address == "scheduler.default.svc:8786"
    assert "to scheduler.default.svc:8786 while" in str(exc)
    assert "a URL without a host (/x)" in str(_network_blocked("/x"))
