"""lightkube, pointed at the simulation: every configuration it loads or is given names the containment.

Why two places: ``KubeConfig.from_env``/``from_file``/``from_service_account`` read ``KUBECONFIG``,
``~/.kube/config`` or the pod's service account (token, ``KUBERNETES_SERVICE_HOST``); replaced, they
read nothing and return a configuration for the containment's host.  A configuration built by hand
(``KubeConfig.from_server(url)``, ``from_dict``) never passes through them, so the adapter that turns
a configuration into an httpx client (``GenericClient.AdapterClient``, sync and async) swaps the
cluster and user for the simulation's — no token file, no ``exec`` plugin, no certificate is used —
keeping only the context's namespace.  The httpx client it builds is answered in-process by
``transports.httpx``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["patch"]


def patch(set_attr: Callable[[Any, str, Any], None], host: Callable[[], str]) -> None:
    """Replace lightkube's configuration loaders and client adapters (``set_attr`` records originals)."""
    from lightkube.config import client_adapter
    from lightkube.config.kubeconfig import KubeConfig, SingleConfig
    from lightkube.config.models import Cluster, Context, User
    from lightkube.core import generic_client

    def _cluster() -> Any:
        # insecure: plain http to an in-process host, so no CA bundle is loaded for each client
        return Cluster(server=host(), insecure=True)

    def simulated(*args: Any, **kwargs: Any) -> Any:
        return KubeConfig.from_one(cluster=_cluster(), user=User(), context_name="kamera")

    loader = classmethod(lambda cls, *args, **kwargs: simulated())
    for name in ("from_env", "from_file", "from_service_account"):
        set_attr(KubeConfig, name, loader)

    def pointed(config: Any) -> Any:
        namespace = getattr(getattr(config, "context", None), "namespace", None)
        return SingleConfig(context_name="kamera", context=Context(cluster="kamera", user="kamera",
                                                                   namespace=namespace),
                            cluster=_cluster(), user=User())

    def adapter(original: Callable[[Any, Any], Any]) -> Any:
        return staticmethod(lambda config, conn_params: original(pointed(config), conn_params))

    set_attr(generic_client.GenericClient, "AdapterClient", adapter(client_adapter.Client))
    set_attr(generic_client.GenericAsyncClient, "AdapterClient", adapter(client_adapter.AsyncClient))
