"""pykube-ng, routed into the simulated API server in-process (requests, not httpx).

Why ``KubernetesHTTPAdapter.send``: pykube's ``HTTPClient`` mounts this ``requests`` adapter for every
URL it calls, and its ``send`` is where credentials are applied (token, ``exec`` plugins, GCP and OIDC
refreshes, client certificates) before ``requests``' own ``HTTPAdapter`` opens a connection.  The
replacement skips all of that and answers with the pool-manager stand-in of ``apiserver/transports/containment.py``
— the official client's request path, whatever URL the configuration named, because this adapter
only ever talks to the Kubernetes API — and lets ``requests`` build its ``Response`` from that
``urllib3`` answer (``HTTPAdapter.build_response``), so ``raise_for_status``, ``json()`` and
``iter_lines()`` over a watch are ``requests``' own.  The configuration loaders
(``KubeConfig.from_env``/``from_file``/``from_service_account``) read no kubeconfig, token or
``KUBERNETES_SERVICE_HOST`` and name the containment's host.  A plain ``requests`` call elsewhere in a
controller still meets urllib3's guard (``NetworkBlocked``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["patch"]


def patch(set_attr: Callable[[Any, str, Any], None], host: Callable[[], str],
          send: Callable[[str, str, Mapping[str, str], bytes | None], Any]) -> None:
    """Replace pykube's configuration loaders and its adapter's ``send`` (``set_attr`` records originals)."""
    from pykube import config, http

    def simulated(cls: Any, *args: Any, **kwargs: Any) -> Any:
        return cls({"clusters": [{"name": "kamera", "cluster": {"server": host()}}],
                    "users": [{"name": "kamera", "user": {}}],
                    "contexts": [{"name": "kamera", "context": {"cluster": "kamera", "user": "kamera"}}],
                    "current-context": "kamera"})

    for name in ("from_env", "from_file", "from_service_account"):
        set_attr(config.KubeConfig, name, classmethod(simulated))

    def routed(adapter: Any, request: Any, **kwargs: Any) -> Any:
        body = request.body
        data = body.encode() if isinstance(body, str) else bytes(body) if body is not None else None
        return adapter.build_response(request, send(request.method, request.url, dict(request.headers), data))

    set_attr(http.KubernetesHTTPAdapter, "send", routed)
