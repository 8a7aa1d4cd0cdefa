"""kubernetes_asyncio, pointed at the simulation: its config loaders land on the containment's host.

Why only the loaders: the client's HTTP goes through aiohttp, which ``transports.aiohttp`` already
answers in-process for the containment's host; what is left is making ``await
config.load_kube_config()`` / ``config.load_incluster_config()`` (and ``new_client_from_config``)
configure that host instead of whatever the kubeconfig or the pod environment names — never reading
a kubeconfig, never touching a token file, so nothing real is ever addressed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["patch"]


def patch(set_attr: Callable[[Any, str, Any], None], current: Callable[[], Any]) -> None:
    """Replace kubernetes_asyncio's kubeconfig and in-cluster loaders (``set_attr`` records originals)."""
    from kubernetes_asyncio.config import incluster_config, kube_config

    def point(configuration: Any) -> None:
        owner = current()
        configuration.host = owner.host if owner is not None else "http://kamera-unbound.invalid"
        configuration.verify_ssl = False
        configuration.api_key = {}
        configuration.proxy = None

    class _FakeKubeConfigLoader:
        """What ``_get_kube_config_loader_for_yaml_file`` returns: configures the simulation's host."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.current_context = {"name": "kamera", "context": {"cluster": "kamera", "user": "kamera"}}

        async def load_and_set(self, configuration: Any) -> None:
            point(configuration)

    class _FakeInClusterConfigLoader:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def load_and_set(self, configuration: Any = None) -> None:
            from kubernetes_asyncio.client import Configuration

            if configuration is None:
                configuration = type.__call__(Configuration)
                point(configuration)
                Configuration.set_default(configuration)
            else:
                point(configuration)

    def loader(*args: Any, **kwargs: Any) -> Any:
        return _FakeKubeConfigLoader()

    set_attr(kube_config, "_get_kube_config_loader_for_yaml_file", loader)
    if hasattr(kube_config, "_get_kube_config_loader"):
        set_attr(kube_config, "_get_kube_config_loader", loader)
    set_attr(incluster_config, "InClusterConfigLoader", _FakeInClusterConfigLoader)
    # the default configuration a loader sets (``Configuration.set_default``) names this simulation's
    # host: it starts empty under each containment and is put back after, so that a later scenario
    # in the same process never inherits an earlier one's (an unconfigured client stays unconfigured)
    from kubernetes_asyncio.client import Configuration

    set_attr(Configuration, "_default", None)
