"""Routing of each client into the simulator, one module per HTTP client: the official client's urllib3
(``urllib3.py``, its loaders in ``kubeconfig.py``), aiohttp (kopf, kubernetes_asyncio), httpx (kr8s,
lightkube), requests (pykube-ng), the standard library's ``http.client`` and ``urllib.request``
(``http_client.py``: a hand-written client, and fakes by URL); ``containment.py`` binds a server and
guards the network; ``services.py`` routes the requests a fake by URL answers (``spec.fakes[].url``).

Imports no other package of the API server: the bound server is anything with ``handle``
(``containment.HttpServer``). kr8s's sync calls run on ``kamera_cli.virtualtime``'s loop.
docs/transport.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["install_other_clients"]


def install_other_clients(set_attr: Callable[[Any, str, Any], None], host: Callable[[], str],
                          send: Callable[[str, str, Mapping[str, str], bytes | None], Any],
                          blocked: Callable[[str], BaseException]) -> None:
    """httpx (kr8s, lightkube) and ``http.client`` answered by ``send``; kr8s's, lightkube's and pykube-ng's
    loaders pointed at ``host()``.

    Only installed packages are touched.  A release whose internals moved (outside the pinned ranges)
    is left unrouted rather than breaking every simulation in the process: its requests then meet the
    guards and are refused as network attempts.
    """
    from kamera_cli.apiserver.transports import http_client
    from kamera_cli.apiserver.transports import httpx as httpx_routing

    http_client.patch(set_attr, send, blocked)  # the standard library: always there
    for name in ("httpx", "httpx2"):  # httpx2: httpx renamed, lightkube 1.x's
        if importlib.util.find_spec(name) is not None:
            with contextlib.suppress(ImportError, AttributeError):
                httpx_routing.patch(name, set_attr, send, blocked)
    if importlib.util.find_spec("kr8s") is not None:
        from kamera_cli.apiserver.transports import kr8s

        with contextlib.suppress(ImportError, AttributeError):
            kr8s.patch(set_attr, host)
    if importlib.util.find_spec("lightkube") is not None:
        from kamera_cli.apiserver.transports import lightkube

        with contextlib.suppress(ImportError, AttributeError):
            lightkube.patch(set_attr, host)
    if importlib.util.find_spec("pykube") is not None:
        from kamera_cli.apiserver.transports import pykube

        with contextlib.suppress(ImportError, AttributeError):
            pykube.patch(set_attr, host, send)
