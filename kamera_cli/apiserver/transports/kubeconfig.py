"""The official client's configuration loaders, pointed at the simulation: whatever the kubeconfig or
the pod environment say, the cluster a controller configures is the containment's dummy host.

Why the loaders and not the public functions: ``load_kube_config``, ``load_incluster_config`` and
``new_client_from_config`` all go through these at run time, so references a controller took before
the containment (``from kubernetes.config import load_kube_config``) are covered as well, and no
kubeconfig file or token is ever read.  ``kubernetes_asyncio.py`` does the same for that client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["patch"]


def patch(set_attr: Callable[[Any, str, Any], None], host: Callable[[], str]) -> None:
    """Replace the kubeconfig and in-cluster loaders (``set_attr`` records the originals)."""
    from kubernetes import client, config
    from kubernetes.config import incluster_config, kube_config

    def point(cfg: Any) -> None:
        cfg.host = host()
        cfg.proxy = None

    class KubeConfigLoaderStandIn:
        """Stands in for ``KubeConfigLoader``: whatever the file says, the cluster is the simulation."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.current_context = {"name": "kamera", "context": {"cluster": "kamera", "user": "kamera"}}

        def list_contexts(self) -> list[dict[str, Any]]:
            return [self.current_context]

        def load_and_set(self, client_configuration: Any = None) -> None:
            point(client_configuration)

    class InClusterConfigLoaderStandIn:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def load_and_set(self, client_configuration: Any = None) -> None:
            if client_configuration is None:
                cfg = type.__call__(client.Configuration)
                point(cfg)
                client.Configuration.set_default(cfg)
            else:
                point(client_configuration)

    def get_loader(*args: Any, **kwargs: Any) -> KubeConfigLoaderStandIn:
        return KubeConfigLoaderStandIn()

    def load_config(**kwargs: Any) -> None:
        kwargs.pop("kube_config_path", None)
        kwargs.pop("try_refresh_token", None)
        load: Any = kube_config.load_kube_config
        load(**kwargs)

    set_attr(kube_config, "_get_kube_config_loader", get_loader)
    set_attr(kube_config, "KubeConfigLoader", KubeConfigLoaderStandIn)
    set_attr(incluster_config, "InClusterConfigLoader", InClusterConfigLoaderStandIn)
    set_attr(config, "load_config", load_config)
